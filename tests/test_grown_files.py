"""A file that grew since it was ingested adds its new lines once; its old ones never again."""

from __future__ import annotations

import gzip
import json

from tests.conftest import ingest_paths, sql

STATS = (
    "[2026-10-30 10:{m:02d}:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
)
TIME_ONLY = "[10:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {n}, #token: 10, token usage: 0.01, #queue-req: 0\n"


def stats(first: int, n: int, fmt: str = STATS) -> str:
    return "".join(fmt.format(m=(i // 60) % 60, s=i % 60, n=i) for i in range(first, first + n))


def _append(path, text: str | bytes) -> None:
    with open(path, "ab") as f:
        f.write(text.encode() if isinstance(text, str) else text)


def _wc_l(path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def _no_duplicate_lines(store) -> None:
    for t in ("batches", "events", "unparsed"):
        d = sql(
            store, f"SELECT count(*) n FROM (SELECT source_file, line_no FROM {t} GROUP BY ALL HAVING count(*) > 1)"
        )
        assert d["n"][0] == 0, t
    # a line is a row of one table only
    d = sql(
        store,
        "SELECT count(*) n FROM (SELECT source_file, line_no FROM (SELECT source_file, line_no FROM batches "
        "UNION ALL SELECT source_file, line_no FROM events UNION ALL SELECT source_file, line_no FROM "
        "unparsed) GROUP BY ALL HAVING count(*) > 1)",
    )
    assert d["n"][0] == 0


def _pieces(store):
    return sql(
        store,
        "SELECT piece, byte_start, byte_end, line_start, line_end, grown, lines, bytes, sha256, "
        "replaced_sha256, replaced_bytes FROM files WHERE status = 'ingested' ORDER BY byte_start",
    )


def test_a_log_appended_twice_gives_every_line_once(tmp_path):
    log = tmp_path / "dump" / "decode-0" / "sglang.log"
    log.parent.mkdir(parents=True)
    log.write_text(stats(0, 3000))
    store = tmp_path / "s"
    ingest_paths([tmp_path / "dump"], store)
    _append(log, stats(3000, 2000))
    r = ingest_paths([tmp_path / "dump"], store)
    assert [x.status for x in r] == ["ingested"] and r[0].lines == 2000
    _append(log, stats(5000, 1500))
    ingest_paths([tmp_path / "dump"], store)
    _no_duplicate_lines(store)
    n = sql(store, "SELECT count(*) n, min(line_no) lo, max(line_no) hi, count(DISTINCT running_req) k FROM batches")
    assert n["n"][0] == n["hi"][0] == n["k"][0] == _wc_l(log) == 6500 and n["lo"][0] == 1
    p = _pieces(store)
    assert p["piece"].to_list() == [1, 2, 3]
    assert p["grown"].to_list() == [None, "appended", "appended"]
    assert p["byte_start"].to_list()[1:] == p["byte_end"].to_list()[:-1]
    assert p["byte_end"][-1] == log.stat().st_size
    assert p["line_start"].to_list() == [1, 3001, 5001] and p["line_end"].to_list() == [3000, 5000, 6500]
    assert p["lines"].sum() == 6500 and p["bytes"].sum() == log.stat().st_size
    # the files count what the tables hold
    assert sql(store, "SELECT sum(parsed_lines) p FROM files")["p"][0] == 6500


def test_an_unchanged_file_ingested_again_adds_nothing(tmp_path):
    log = tmp_path / "decode-0.log"
    log.write_text(stats(0, 500))
    store = tmp_path / "s"
    ingest_paths([log], store)
    _append(log, stats(500, 10))
    ingest_paths([log], store)
    r = ingest_paths([log], store)
    assert [x.status for x in r] == ["duplicate"]
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 510
    assert sql(store, "SELECT count(*) n FROM files")["n"][0] == 2


def test_the_new_lines_keep_the_clock_of_the_old_ones(tmp_path):
    """Time-only prefixes (2024 builds) take the date of the dated line above them, across pieces."""
    log = tmp_path / "prefill-0.log"
    log.write_text(
        stats(0, 5) + "[2026-03-04 23:59:50] Prefill batch. #new-seq: 1, #new-token: 8, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0\n"
    )
    store = tmp_path / "s"
    ingest_paths([log], store, date=None)
    _append(
        log,
        "[23:59:58 TP0] Decode batch, #running-req: 1, #token: 10, token usage: 0.01, #queue-req: 0\n"
        "[00:00:03 TP0] Decode batch, #running-req: 2, #token: 10, token usage: 0.01, #queue-req: 0\n",
    )
    ingest_paths([log], store)
    got = sql(store, "SELECT line_no, strftime(ts, '%Y-%m-%d %H:%M:%S') t FROM batches WHERE line_no > 6 ORDER BY 1")
    assert got["line_no"].to_list() == [7, 8]
    assert got["t"].to_list() == ["2026-03-04 23:59:58", "2026-03-05 00:00:03"]
    assert _pieces(store)["grown"].to_list() == [None, "appended"]


def test_a_traceback_across_the_boundary_is_read_whole(tmp_path):
    log = tmp_path / "decode-0.log"
    head = stats(0, 50) + (
        "[2026-10-30 10:01:00 DP0 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/scheduler.py", line 10, in event_loop\n'
    )
    log.write_text(head)
    store = tmp_path / "s"
    ingest_paths([log], store)
    _append(
        log,
        '    self.process_batch()\n  File "/sgl/disagg.py", line 20, in process_batch\n'
        "    raise RuntimeError('boom')\nRuntimeError: boom\n" + stats(100, 20),
    )
    r = ingest_paths([log], store)
    assert r[0].status == "ingested", r[0].error
    _no_duplicate_lines(store)
    ev = sql(store, "SELECT line_no, exc_type, traceback FROM events WHERE exc_type IS NOT NULL")
    assert ev.height == 1 and ev["line_no"][0] == 51 and ev["exc_type"][0] == "RuntimeError"
    assert "disagg.py" in ev["traceback"][0] and "scheduler.py" in ev["traceback"][0]
    p = _pieces(store)
    assert p.height == 1 and p["grown"][0] == "replaced" and p["byte_end"][0] == log.stat().st_size
    assert p["replaced_bytes"][0] == len(head.encode())
    f = sql(store, "SELECT sum(lines) n, sum(parsed_lines + continuation_lines + unparsed_lines) m FROM files")
    assert f["n"][0] == f["m"][0] == _wc_l(log)


def test_a_partial_last_line_is_replaced_not_stored_half(tmp_path):
    log = tmp_path / "decode-0.log"
    full = stats(0, 200)
    cut = len(full) - 40  # the last line half written when the file was copied
    log.write_bytes(full[:cut].encode())
    store = tmp_path / "s"
    ingest_paths([log], store)
    assert sql(store, "SELECT count(*) n FROM batches WHERE truncated")["n"][0] == 1
    _append(log, full[cut:] + stats(200, 100))
    ingest_paths([log], store)
    _no_duplicate_lines(store)
    b = sql(store, "SELECT count(*) n, count(*) FILTER (WHERE truncated) t, max(line_no) hi FROM batches")
    assert b["n"][0] == b["hi"][0] == 300 == _wc_l(log) and b["t"][0] == 0
    p = _pieces(store)
    assert p["grown"].to_list() == ["replaced"] and p["replaced_bytes"][0] == cut


def test_a_partial_line_in_a_later_piece_replaces_that_piece_only(tmp_path):
    log = tmp_path / "decode-0.log"
    log.write_text(stats(0, 100))
    store = tmp_path / "s"
    ingest_paths([log], store)
    more = stats(100, 100)
    _append(log, more[:-30])
    ingest_paths([log], store)
    _append(log, more[-30:] + stats(200, 50))
    ingest_paths([log], store)
    _no_duplicate_lines(store)
    assert sql(store, "SELECT count(*) n FROM batches WHERE NOT truncated")["n"][0] == 250 == _wc_l(log)
    p = _pieces(store)
    assert p["piece"].to_list() == [1, 2] and p["grown"].to_list() == [None, "replaced"]
    assert p["line_start"][1] == 101 and p["line_end"][1] == 250


def test_a_rewritten_file_is_a_new_input(tmp_path):
    """copytruncate and new lines: no prefix of what was committed, so read as a new input."""
    log = tmp_path / "decode-0.log"
    log.write_text(stats(0, 100))
    store = tmp_path / "s"
    ingest_paths([log], store)
    log.write_text(stats(1000, 150))
    ingest_paths([log], store)
    f = sql(store, "SELECT piece, grown, lines FROM files ORDER BY ingested_at")
    assert (
        f["piece"].to_list() == [1, 1] and f["grown"].to_list() == [None, None] and f["lines"].to_list() == [100, 150]
    )
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 250
    # it grows on from its new version
    _append(log, stats(1150, 10))
    ingest_paths([log], store)
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 260
    assert sql(store, "SELECT max(line_no) n FROM batches")["n"][0] == 160


def test_same_bytes_at_a_longer_length_but_another_prefix_is_new(tmp_path):
    log = tmp_path / "decode-0.log"
    log.write_text(stats(0, 100))
    store = tmp_path / "s"
    ingest_paths([log], store)
    text = log.read_text()
    log.write_text("X" + text[1:] + stats(100, 5))  # as long and longer, but not the same first bytes
    ingest_paths([log], store)
    assert sql(store, "SELECT count(*) n FROM files WHERE grown IS NOT NULL")["n"][0] == 0


def test_a_grown_gzip_replaces_its_earlier_version(tmp_path):
    log = tmp_path / "decode-0.log.gz"
    first = stats(0, 300)
    log.write_bytes(gzip.compress(first.encode()))
    store = tmp_path / "s"
    ingest_paths([log], store)
    log.write_bytes(gzip.compress((first + stats(300, 200)).encode()))
    ingest_paths([log], store)
    _no_duplicate_lines(store)
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 500
    p = _pieces(store)
    assert p["grown"].to_list() == ["replaced"] and p["replaced_bytes"][0] == len(first)


def test_a_grown_transfer_trace_adds_its_new_lines(tmp_path):
    line = (
        '{{"ts":{t}.5,"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3,'
        '"room":{r},"rid":"r{r}","kind":"kv","chunk":0,"is_last":true,"event":"post","bytes":4096}}\n'
    )
    trace = tmp_path / "node-p0" / "transfer_trace.jsonl"
    trace.parent.mkdir()
    trace.write_text("".join(line.format(t=1761818400 + i, r=i + 1) for i in range(40)))
    store = tmp_path / "s"
    ingest_paths([tmp_path / "node-p0"], store)
    _append(trace, "".join(line.format(t=1761818400 + i, r=i + 1) for i in range(40, 70)))
    ingest_paths([tmp_path / "node-p0"], store)
    t = sql(store, "SELECT count(*) n, count(DISTINCT line_no) d, max(line_no) hi FROM transfer_events")
    assert t["n"][0] == t["d"][0] == t["hi"][0] == 70 == _wc_l(trace)
    assert _pieces(store)["grown"].to_list() == [None, "appended"]


def test_a_grown_claude_code_transcript_gives_each_turn_once(tmp_path):
    """A message whose blocks are written on either side of the copy is one turn, not two."""
    session = "0b7c7e4e-1f1c-4d0e-9b8a-4b1a2c3d4e5f"

    def rec(i: int, kind: str, **kw) -> str:
        o = {"type": kind, "sessionId": session, "uuid": f"u{i}", "timestamp": f"2026-10-30T10:00:{i:02d}Z", **kw}
        return json.dumps(o) + "\n"

    def block(i: int, mid: str, content: list, stop=None) -> str:
        return rec(
            i,
            "assistant",
            message={
                "id": mid,
                "role": "assistant",
                "model": "claude-x",
                "content": content,
                "stop_reason": stop,
                "usage": {"input_tokens": 10, "output_tokens": i},
            },
        )

    path = tmp_path / "agent" / f"{session}.jsonl"
    path.parent.mkdir()
    first = rec(0, "user", message={"role": "user", "content": "hello"}) + block(
        1, "msg_1", [{"type": "thinking", "thinking": "hm"}]
    )
    path.write_text(first)
    store = tmp_path / "s"
    ingest_paths([tmp_path / "agent"], store)
    before = sql(store, "SELECT count(*) n FROM turns")["n"][0]
    _append(
        path,
        block(2, "msg_1", [{"type": "text", "text": "hi there"}], stop="end_turn")
        + rec(3, "user", message={"role": "user", "content": "again"})
        + block(4, "msg_2", [{"type": "text", "text": "sure"}], stop="end_turn"),
    )
    ingest_paths([tmp_path / "agent"], store)
    turns = sql(store, "SELECT count(*) n, count(DISTINCT line_no) d FROM turns")
    assert before >= 1 and turns["n"][0] == turns["d"][0] == before + 1
    assert sql(store, "SELECT count(*) n FROM files WHERE status = 'ingested'")["n"][0] == 1
    assert _pieces(store)["grown"].to_list() == ["replaced"]


def test_a_store_without_its_list_of_pieces_still_finds_them(tmp_path):
    """A store written before pieces were listed by path: its files rows are read once."""
    import shutil

    log = tmp_path / "decode-0.log"
    log.write_text(stats(0, 100))
    store = tmp_path / "s"
    ingest_paths([log], store)
    shutil.rmtree(store / "pieces")
    _append(log, stats(100, 20))
    ingest_paths([log], store)
    assert (store / "pieces").is_dir()
    _append(log, stats(120, 5))
    ingest_paths([log], store)
    _no_duplicate_lines(store)
    assert _pieces(store)["grown"].to_list() == [None, "appended", "appended"]
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 125 == _wc_l(log)
