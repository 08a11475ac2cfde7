"""One bad input costs nothing else: each case is one fixture, named after what it used to break.

Every case states its expected outcome: which lines land in `unparsed` and why, that the good
input beside it keeps every row, the exit code and the note. Memory on huge lines is measured in
bench/longlines.py, not here.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile

import pytest
from click.testing import CliRunner

from tests.conftest import ingest_paths, sql

GOOD = (
    "[2026-10-30 10:00:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
)
GOOD_LINES = 2089  # the server log given beside the bad input in the report


def good(n: int = GOOD_LINES, start: int = 0) -> str:
    return "".join(GOOD.format(s=(start + i) % 60, n=i) for i in range(n))


def _cli(*args):
    from forensics.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def _batches(store) -> int:
    return int(sql(store, "SELECT count(*) n FROM batches")["n"][0])


def _unparsed(store) -> list[tuple]:
    df = sql(
        store, "SELECT source_file, line_no, reason, length(line) AS n FROM unparsed ORDER BY source_file, line_no"
    )
    return list(df.iter_rows())


def _accounted(store) -> None:
    """Every line of every read input is a row or in unparsed, and files says so."""
    f = sql(
        store,
        "SELECT sum(lines) l, sum(parsed_lines + continuation_lines + unparsed_lines) a, "
        "sum(unparsed_lines) u FROM files WHERE status <> 'skipped'",
    )
    assert f["l"][0] == f["a"][0]
    assert f["u"][0] == len(_unparsed(store))


def _good_log(dump, host="decode-0"):
    (dump / host).mkdir(parents=True, exist_ok=True)
    (dump / host / "server.log").write_text(good())


CLAUDE_LINE = '{"type":"user","sessionId":"s1","uuid":"u%d","message":{"role":"user","content":"hi"}}\n'
TRACE_LINE = (
    '{"ts":1793354400.5,"host":"node-p0","pid":1,"side":"prefill","engine_rank":0,"room":%d,"kind":"kv",'
    '"event":"post"}\n'
)


# -- fixtures: one per case ------------------------------------------------------------------
@pytest.fixture
def deep_json_in_a_transcript(tmp_path):
    """A Claude Code line nested 10,000 deep (RecursionError in json.loads) beside a good log."""
    dump = tmp_path / "dump"
    _good_log(dump)
    deep = '{"type":"user","sessionId":"s1","uuid":"u9","message":' + "[" * 10_000 + "]" * 10_000 + "}\n"
    (dump / "agent").mkdir()
    (dump / "agent" / "session.jsonl").write_text(CLAUDE_LINE % 1 + deep + CLAUDE_LINE % 2)
    return dump


@pytest.fixture
def deep_json_in_a_trace(tmp_path):
    """A transfer-trace line nested 10,000 deep beside a good log (the sniffs decode it too)."""
    dump = tmp_path / "dump"
    _good_log(dump)
    deep = TRACE_LINE.replace('"event":"post"', '"event":"post","x":' + "[" * 10_000 + "]" * 10_000) % 2
    (dump / "trace.jsonl").write_text(TRACE_LINE % 1 + deep)
    return dump


@pytest.fixture
def parser_bug(tmp_path, monkeypatch):
    """The transfer-trace parser raises after its first batch (any bug of any parser)."""
    from forensics.parsers import transfer_trace

    real = transfer_trace.parse

    def broken(source, ctx):
        yield from real(source, ctx)
        raise KeyError("a bug in the parser")

    monkeypatch.setattr(transfer_trace, "parse", broken)
    dump = tmp_path / "dump"
    _good_log(dump)
    (dump / "trace.jsonl").write_text("".join(TRACE_LINE % i for i in range(1, 8)))
    return dump


@pytest.fixture
def sniff_bug(tmp_path, monkeypatch):
    """A parser's sniff raises on one input: detection itself fails."""
    from forensics.parsers import claude_code

    real = claude_code.sniff

    def broken(head, path):
        if path.endswith("odd.log"):
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "a decoder error")
        return real(head, path)

    monkeypatch.setattr(claude_code, "sniff", broken)
    dump = tmp_path / "dump"
    _good_log(dump)
    (dump / "odd.log").write_text("line one\nline two\nline three")
    return dump


@pytest.fixture
def fifo_in_the_dump(tmp_path):
    """A named pipe beside a good log: opening it would block until a writer comes."""
    dump = tmp_path / "dump"
    _good_log(dump)
    os.mkfifo(dump / "decode-0" / "pipe.log")
    return dump


@pytest.fixture
def tarball_of_many_members(tmp_path):
    """A .tar.gz of 300 one-line logs on 30 hosts: each member used to re-read the archive."""
    p = tmp_path / "incident.tar.gz"
    with tarfile.open(p, "w:gz") as tf:
        for i in range(300):
            data = GOOD.format(s=i % 60, n=i).encode()
            info = tarfile.TarInfo(f"dump/decode-{i % 30}/server-{i}.log")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return p


@pytest.fixture
def store_inside_the_dump(tmp_path):
    dump = tmp_path / "dump"
    _good_log(dump)
    return dump


@pytest.fixture
def host_folder_with_a_bang(tmp_path):
    dump = tmp_path / "dump"
    _good_log(dump, "decode!7")
    return dump


@pytest.fixture
def copytruncate_nul_head(tmp_path):
    """logrotate's copytruncate: the writer keeps its offset, the file starts with a hole of NULs."""
    dump = tmp_path / "dump"
    (dump / "decode-0").mkdir(parents=True)
    (dump / "decode-0" / "server.log").write_bytes(b"\0" * (3 << 20) + good().encode())
    return dump


@pytest.fixture
def cr_only_line_ends(tmp_path):
    dump = tmp_path / "dump"
    (dump / "decode-0").mkdir(parents=True)
    (dump / "decode-0" / "server.log").write_bytes(good().replace("\n", "\r").encode())
    return dump


@pytest.fixture
def line_past_the_limit(tmp_path):
    """A 3 MiB line in a server log, and a 2 MiB line in a transcript, each between good lines."""
    dump = tmp_path / "dump"
    (dump / "decode-0").mkdir(parents=True)
    long = "[2026-10-30 10:00:10 DP0 TP0] Receive: obj=" + "x" * (3 << 20) + "\n"
    (dump / "decode-0" / "server.log").write_text(good(100) + long + good(100, 30))
    big = CLAUDE_LINE.replace('"hi"', '"' + "y" * (2 << 20) + '"') % 5
    (dump / "agent").mkdir()
    (dump / "agent" / "session.jsonl").write_text(CLAUDE_LINE % 1 + big + CLAUDE_LINE % 2)
    return dump, len(long) - 1, len(big) - 1


# -- the cases ---------------------------------------------------------------------------------
def test_deep_json_in_a_transcript_costs_one_line(deep_json_in_a_transcript, tmp_path):
    store = tmp_path / "store"
    r = _cli("ingest", deep_json_in_a_transcript, "--store", store, "-j", "1")
    assert r.exit_code == 0, r.output
    assert "internal error" not in r.output
    assert _batches(store) == GOOD_LINES
    assert [(os.path.basename(f), n, why) for f, n, why, _ in _unparsed(store)] == [("session.jsonl", 2, "too_deep")]
    f = sql(
        store,
        "SELECT status, parsed_lines + continuation_lines p, unparsed_lines u FROM files "
        "WHERE path LIKE '%session.jsonl'",
    )
    assert f.row(0) == ("ingested", 2, 1)
    _accounted(store)


def test_deep_json_in_a_trace_costs_one_line(deep_json_in_a_trace, tmp_path):
    store = tmp_path / "store"
    r = _cli("ingest", deep_json_in_a_trace, "--store", store, "-j", "1")
    assert r.exit_code == 0, r.output
    assert _batches(store) == GOOD_LINES
    assert sql(store, "SELECT count(*) n FROM transfer_events")["n"][0] == 2
    _accounted(store)


def test_parser_bug_fails_its_input_alone(parser_bug, tmp_path):
    store = tmp_path / "store"
    r = _cli("ingest", parser_bug, "--store", store, "-j", "1")
    assert r.exit_code == 1
    # one summary line names the failed input; the reason is the exception, not "internal error"
    assert "error: 1 of 2 inputs failed:" in r.output and "trace.jsonl" in r.output.split("error: 1 of 2")[1]
    assert "internal error" not in r.output and "KeyError" in r.output
    assert _batches(store) == GOOD_LINES
    # the batch it yielded before the bug is not kept: every line is in unparsed, with the reason
    assert sql(store, "SELECT count(*) n FROM transfer_events")["n"][0] == 0
    rows = _unparsed(store)
    assert [(n, why) for _, n, why, _ in rows] == [(i, "parser_failed:KeyError") for i in range(1, 8)]
    f = sql(store, "SELECT status, format, lines, unparsed_lines, skip_reason FROM files WHERE path LIKE '%trace%'")
    assert f.row(0) == ("failed", "transfer_trace", 7, 7, "KeyError: 'a bug in the parser'")
    _accounted(store)
    # the same failure again adds nothing
    r = _cli("ingest", parser_bug, "--store", store, "-j", "1")
    assert r.exit_code == 1 and len(_unparsed(store)) == 7


def test_parser_fixed_replaces_the_failed_record(parser_bug, tmp_path, monkeypatch):
    store = tmp_path / "store"
    assert _cli("ingest", parser_bug, "--store", store, "-j", "1").exit_code == 1
    monkeypatch.undo()  # the parser is fixed
    r = _cli("ingest", parser_bug, "--store", store, "-j", "1")
    assert r.exit_code == 0, r.output
    assert sql(store, "SELECT count(*) n FROM transfer_events")["n"][0] == 7
    assert _unparsed(store) == []  # its lines are not kept twice
    assert sql(store, "SELECT status FROM files WHERE path LIKE '%trace%'")["status"].to_list() == ["ingested"]


def test_sniff_bug_fails_its_input_alone(sniff_bug, tmp_path):
    store = tmp_path / "store"
    results = ingest_paths([sniff_bug], store, jobs=1)
    by_name = {os.path.basename(r.path): r for r in results}
    assert by_name["odd.log"].status == "failed" and "UnicodeDecodeError" in by_name["odd.log"].error
    assert by_name["server.log"].status == "ingested"
    assert [(n, why) for _, n, why, _ in _unparsed(store)] == [
        (i, "parser_failed:UnicodeDecodeError") for i in (1, 2, 3)
    ]
    _accounted(store)


@pytest.mark.slow
def test_fifo_is_skipped_never_opened(fifo_in_the_dump, tmp_path):
    store = tmp_path / "store"
    # a subprocess with a deadline: the old ingest blocked on the FIFO forever
    for target in (fifo_in_the_dump, fifo_in_the_dump / "decode-0" / "pipe.log"):
        p = subprocess.run(
            [sys.executable, "-m", "forensics.cli", "ingest", str(target), "--store", str(store)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        # the FIFO alone is an ingest that recognised nothing: exit 1, saying what it saw
        assert p.returncode == (0 if target == fifo_in_the_dump else 1), p.stderr
        assert "a FIFO, not a file: never opened" in p.stderr
        assert ("saw 1 file that is not a log: 1 special" in p.stderr) == (target != fifo_in_the_dump)
    f = sql(store, "SELECT status, skip_kind FROM files WHERE path LIKE '%pipe.log'")
    assert f.rows() == [("skipped", "special")]
    assert _batches(store) == GOOD_LINES


@pytest.mark.slow
def test_tarball_members_are_read_in_place(tarball_of_many_members, tmp_path, monkeypatch):
    opened = []
    real = tarfile.open

    def counting(*a, **k):
        opened.append(a[0] if a else k.get("name"))
        return real(*a, **k)

    monkeypatch.setattr(tarfile, "open", counting)
    store = tmp_path / "store"
    results = ingest_paths([tarball_of_many_members], store, jobs=1)
    assert len(results) == 300 and {r.status for r in results} == {"ingested"}
    # the archive is listed once; no member opens it again (that was a scan per member per read)
    assert len(opened) <= 2, opened[:5]
    assert _batches(store) == 300
    assert sql(store, "SELECT count(DISTINCT host) n FROM batches")["n"][0] == 30
    assert not (store / ".tmp" / "archives").exists()  # the decompressed copy is scratch


def test_store_inside_the_dump_is_never_an_input(store_inside_the_dump, tmp_path):
    dump = store_inside_the_dump
    for _ in range(2):
        r = _cli("ingest", dump, "--store", dump / "store")
        assert r.exit_code == 0, r.output
    assert sql(dump / "store", "SELECT count(*) n FROM files")["n"][0] == 1
    # a store under any name is recognised by its marker files, also when ingesting elsewhere
    os.rename(dump / "store", dump / "old-results")
    r = _cli("ingest", dump, "--store", tmp_path / "other")
    assert r.exit_code == 0, r.output
    assert sql(tmp_path / "other", "SELECT path FROM files")["path"].to_list() == [
        str(dump / "decode-0" / "server.log")
    ]


def test_host_folder_keeps_its_name(host_folder_with_a_bang, tmp_path):
    store = tmp_path / "store"
    ingest_paths([host_folder_with_a_bang], store)
    assert sql(store, "SELECT DISTINCT host FROM batches")["host"].to_list() == ["decode!7"]
    assert sql(store, "SELECT host FROM files")["host"].to_list() == ["decode!7"]


@pytest.mark.parametrize("native", ["1", "0"])
def test_copytruncate_nul_head_keeps_every_line(copytruncate_nul_head, tmp_path, monkeypatch, native):
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    store = tmp_path / "store"
    [r] = ingest_paths([copytruncate_nul_head], store)
    assert r.status == "ingested" and r.format == "server_log"
    assert _batches(store) == GOOD_LINES and r.unparsed == 0
    assert any("run of NULs skipped (3145728 bytes" in n for n in r.notes), r.notes


def test_cr_only_line_ends_are_line_ends(cr_only_line_ends, tmp_path):
    store = tmp_path / "store"
    [r] = ingest_paths([cr_only_line_ends], store)
    assert r.lines == GOOD_LINES and _batches(store) == GOOD_LINES
    assert any("CR alone" in n for n in r.notes)


@pytest.mark.parametrize("native", ["1", "0"])
def test_line_past_the_limit_keeps_its_head_and_length(line_past_the_limit, tmp_path, monkeypatch, native):
    from forensics.parsers.lines import MAX_LINE_BYTES, cut_length

    monkeypatch.setenv("FORENSICS_NATIVE", native)
    dump, long_len, big_len = line_past_the_limit
    store = tmp_path / "store"
    results = ingest_paths([dump], store, jobs=1)
    by_name = {os.path.basename(r.path): r for r in results}
    assert {r.status for r in results} == {"ingested"}
    assert _batches(store) == 200
    assert any(f"longest {long_len} bytes" in n for n in by_name["server.log"].notes)
    # the server log's long line became an event whose message is its head and length
    ev = sql(store, "SELECT line_no, message FROM events WHERE line_no = 101")
    if ev.height:
        msg = ev["message"][0]
        assert msg.startswith("Receive: obj=xxx") and cut_length(msg) == long_len
    else:
        [(_, n, _, length)] = [u for u in _unparsed(store) if u[0].endswith("server.log")]
        assert n == 101 and length <= MAX_LINE_BYTES + 100
    # the transcript's long line is in unparsed, said to be too long, with its length in the line
    [(_, n, why, _)] = [u for u in _unparsed(store) if u[0].endswith("session.jsonl")]
    assert (n, why) == (2, "line_too_long")
    line = sql(store, "SELECT line FROM unparsed WHERE reason = 'line_too_long'")["line"][0]
    assert line.startswith('{"type":"user"')
    assert cut_length(line) is None or cut_length(line) == big_len  # unparsed keeps the first 64 KiB
    _accounted(store)


# -- the stream every text parser reads ----------------------------------------------------------
def _through(data: bytes, **kw) -> tuple[bytes, object]:
    from forensics.parsers.lines import TextStream

    ts = TextStream(io.BufferedReader(io.BytesIO(data), buffer_size=7), **kw)
    out = b"".join(iter(lambda: ts.read1(5), b""))
    return out, ts


@pytest.mark.parametrize("max_line", [4, 9, 64])
def test_text_stream_cuts_only_lines_past_the_limit(max_line):
    from forensics.parsers.lines import cut_length

    lines = [b"a" * n for n in (0, 1, 3, 4, 5, 8, 9, 10, 30, 2, 64, 65)]
    out, ts = _through(b"\n".join(lines))
    out, ts = _through(b"\n".join(lines), max_line=max_line)
    got = out.split(b"\n")
    assert len(got) == len(lines)
    for raw, line in zip(lines, got):
        if len(raw) <= max_line:
            assert line == raw
        else:
            assert line.startswith(raw[:max_line]) and cut_length(line.decode()) == len(raw)
    assert ts.cut_lines == sum(len(x) > max_line for x in lines)


def test_text_stream_drops_nul_runs_across_reads():
    from forensics.parsers.lines import NUL_RUN

    data = b"\0" * 100 + b"one\n" + b"tw\0o\n" + b"\0" * (NUL_RUN - 1) + b"three\n" + b"\0" * NUL_RUN + b"four"
    out, ts = _through(data)
    assert out == b"one\ntw\0o\n" + b"\0" * (NUL_RUN - 1) + b"three\nfour"
    assert (ts.nul_runs, ts.nul_bytes) == (2, 100 + NUL_RUN)


def test_text_stream_keeps_cr_inside_lf_lines():
    out, ts = _through(b"progress 10%\rprogress 20%\nnext\r\n")
    assert out == b"progress 10%\rprogress 20%\nnext\r\n" and not ts.cr_only
    out, ts = _through(b"one\rtwo\rthree")
    assert out == b"one\ntwo\nthree" and ts.cr_only
