"""Inputs whose bytes are damaged or hostile: each must cost at most its own lines, never the good log beside it."""

from __future__ import annotations

import gzip
import json

from tests.attacks import Attack, attack, good, lines_in, readable_gzip

CLAUDE = '{{"type":"user","sessionId":"s1","uuid":"u{i}","message":{{"role":"user","content":"hi {i}"}}}}\n'
TRACE = (
    '{{"ts":{ts},"host":"node-p0","pid":1,"side":"prefill","engine_rank":0,"room":{i},"kind":"kv","event":"post"}}\n'
)


def _deep(rng) -> tuple[str, str]:
    depth = rng.randint(10_000, 40_000)
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    return opener * depth + "1" + closer * depth, f"{depth} deep"


@attack
def deep_json_costs_one_line(t: Attack) -> None:
    """A transcript line and a transfer-trace line nested 10,000+ deep beside a good server log: the transcript's
    deep line is in unparsed as too_deep, the trace line keeps its event (the deep value is a field no one
    reads), every other line of all three inputs is ingested, exit 0."""
    _, n_good = t.good_log()
    deep, _ = _deep(t.rng)
    n = t.rng.randint(2, 6)
    at = t.rng.randint(1, n)  # the deep line's place among the good ones
    chat = [CLAUDE.format(i=i) for i in range(n)]
    chat.insert(at, '{"type":"user","sessionId":"s1","uuid":"deep","message":' + deep + "}\n")
    t.write("dump/agent/session.jsonl", "".join(chat))
    trace = [TRACE.format(ts=1793354400.5 + i, i=i) for i in range(n)]
    trace.insert(at, TRACE.format(ts=1793354400.0, i=99).replace('"event":"post"', '"event":"post","x":' + deep))
    t.write("dump/trace.jsonl", "".join(trace))
    t.ingest(t.root / "dump", subprocess_run=True)
    assert t.count("batches") == n_good
    assert t.count("transfer_events") == n + 1
    assert t.count("transfer_events", "bootstrap_room = 99") == 1
    got = t.sql("SELECT regexp_extract(source_file, '[^/]+$') AS f, line_no, reason FROM unparsed ORDER BY f").rows()
    assert got == [("session.jsonl", at + 1, "too_deep")]


@attack
def invalid_utf8_keeps_every_line(t: Attack) -> None:
    """Invalid UTF-8 (stray continuation bytes, a lone surrogate, a cut sequence) inside and between log lines:
    the file is ingested, every good line is a batch, the garbage lines are in unparsed with their bytes shown
    as \\xNN escapes, exit 0."""
    garbage = [b"\xff\xfe", b"\xed\xa0\x80", b"\xc3(", b"\x80\x80\x80", b"\xf4\x90\x80\x80"]
    lines = good(t.rng.randint(50, 300)).encode().splitlines(keepends=True)
    n_good = len(lines)
    for _ in range(t.rng.randint(1, 4)):  # bytes inside a good line's free text: it still parses
        i = t.rng.randrange(len(lines))
        lines[i] = lines[i].replace(b"cuda graph", b"cuda" + t.rng.choice(garbage) + b" graph", 1)
    bad_lines = t.rng.randint(1, 5)
    for _ in range(bad_lines):
        lines.insert(t.rng.randrange(len(lines) + 1), b"".join(t.rng.sample(garbage, 3)) + b" broken\n")
    t.write("dump/decode-0/server.log", b"".join(lines))
    t.ingest(t.root / "dump")
    assert t.count("batches") == n_good
    shown = t.sql("SELECT line FROM unparsed")["line"].to_list()
    assert len(shown) == bad_lines and all(s.startswith("\\x") and s.endswith(" broken") for s in shown), shown


@attack
def truncated_gzip_keeps_what_is_readable(t: Attack) -> None:
    """A rotated log whose .gz is cut at a drawn point beside a good log: the readable lines are ingested,
    the cut is noted naming the file, exit 0."""
    _, n_good = t.good_log()
    gz = gzip.compress(good(t.rng.randint(2000, 6000), 300).encode())
    cut = gz[: int(len(gz) * t.rng.uniform(0.2, 0.9))]
    t.write("dump/decode-0/server.log.1.gz", cut)
    readable = readable_gzip(cut)
    whole = readable.count(b"\n")
    run = t.ingest(t.root / "dump", lines={"server.log.1.gz": lines_in(readable)})
    notes = [ln for ln in run.stderr.splitlines() if "server.log.1.gz" in ln and "cut" in ln]
    assert notes, run.stderr
    # the last line may be cut mid-way: it is a row or in unparsed, never lost
    assert t.count("batches") + t.count("unparsed") - n_good in (whole, whole + 1)


@attack
def binary_named_log_is_skipped(t: Attack) -> None:
    """A .log that is binary (a core dump, random bytes): skipped with a note saying binary, not read as lines,
    the good log beside it ingested, exit 0."""
    _, n_good = t.good_log()
    t.write("dump/decode-0/crash.log", bytes(t.rng.randrange(256) for _ in range(t.rng.randint(4096, 65536))))
    run = t.ingest(t.root / "dump")
    f = t.files()["crash.log"]
    assert (f["status"], f["skip_kind"]) == ("skipped", "binary")
    assert "1 binary" in run.stderr
    assert t.count("batches") == n_good and t.count("unparsed") == 0


@attack
def empty_and_blank_files_are_skipped(t: Attack) -> None:
    """An empty .log and one holding only newlines: both skipped as empty with the reason in `files`,
    the good log ingested, exit 0."""
    _, n_good = t.good_log()
    t.write("dump/decode-0/empty.log", b"")
    t.write("dump/decode-0/blank.log", b"\n" * t.rng.randint(1, 5000))
    run = t.ingest(t.root / "dump")
    f = t.files()
    assert (f["empty.log"]["status"], f["empty.log"]["skip_reason"]) == ("skipped", "an empty file")
    assert (f["blank.log"]["status"], f["blank.log"]["skip_reason"]) == ("skipped", "only blank lines")
    assert "2 empty" in run.stderr
    assert t.count("batches") == n_good


@attack
def nul_run_at_the_head_keeps_every_line(t: Attack) -> None:
    """A log that starts with a run of NULs, as logrotate's copytruncate leaves it: the run is skipped with a
    note, every real line is a batch, exit 0."""
    n = t.rng.randint(100, 2000)
    nuls = t.rng.randint(4096, 3 << 20)
    t.write("dump/decode-0/server.log", b"\0" * nuls + good(n).encode())
    run = t.ingest(t.root / "dump")
    assert f"run of NULs skipped ({nuls} bytes" in run.stderr, run.stderr
    assert t.count("batches") == n and t.count("unparsed") == 0


@attack
def cr_only_endings_are_line_ends(t: Attack) -> None:
    """A log with CR-only line endings (old Mac, some serial consoles): every CR ends a line, every line is a
    batch, the file's lines count them, exit 0."""
    n = t.rng.randint(50, 2000)
    t.write("dump/decode-0/server.log", good(n).replace("\n", "\r").encode())
    t.ingest(t.root / "dump", lines={"server.log": n})
    assert t.count("batches") == n


@attack
def line_of_50mb_stays_under_1gib(t: Attack) -> None:
    """A 50 MB single line between good lines (a dumped tensor, a reply logged whole), run as its own process:
    peak RSS under 1 GiB, the long line keeps its head and length (a note says so), every good line is a
    batch, exit 0."""
    before, after = t.rng.randint(10, 500), t.rng.randint(10, 500)
    size = 50_000_000 + t.rng.randrange(1 << 20)
    p = t.path("dump", "decode-0", "server.log")
    with open(p, "wb") as f:
        f.write(good(before).encode())
        f.write(b"[2026-10-30 10:00:10 DP0 TP0] Receive: obj=")
        chunk = bytes(t.rng.choice(b"abcdef0123456789") for _ in range(1 << 16))
        left = size
        while left > 0:
            f.write(chunk[:left])
            left -= len(chunk)
        f.write(b"\n" + good(after, 100).encode())
    run = t.ingest(t.root / "dump", subprocess_run=True)
    assert f"longest {size + len('[2026-10-30 10:00:10 DP0 TP0] Receive: obj=')} bytes" in run.stderr, run.stderr
    assert t.count("batches") == before + after


@attack
def line_with_100k_fields(t: Attack) -> None:
    """A batch line with 100,000 `#key: value` fields and a transcript line whose message has 100,000 keys:
    both files ingested, every other line a row, each long line parsed or in unparsed (never lost), exit 0."""
    n = t.rng.randint(5, 50)
    fields = ", ".join(f"#f{i}: {t.rng.randrange(10**6)}" for i in range(100_000))
    wide = f"[2026-10-30 10:00:05 DP0 TP0] Decode batch, #running-req: 1, {fields}, #queue-req: 0\n"
    t.write("dump/decode-0/server.log", good(n) + wide + good(n, 30))
    msg = {"role": "user", "content": "hi", **{f"k{i}": i for i in range(100_000)}}
    line = json.dumps({"type": "user", "sessionId": "s1", "uuid": "wide", "message": msg}) + "\n"
    t.write("dump/agent/session.jsonl", CLAUDE.format(i=1) + line + CLAUDE.format(i=2))
    t.ingest(t.root / "dump", subprocess_run=True)
    assert 2 * n <= t.count("batches") <= 2 * n + 1
    assert t.count("batches") + t.count("unparsed", "source_file LIKE '%server.log'") == 2 * n + 1


@attack
def timestamps_backwards_and_far_dates(t: Attack) -> None:
    """A clock stepping backwards mid-file, and lines dated 1970-01-01 and 2099-12-31 (an unset RTC, a
    bad NTP step): every line is a batch with the date as written, reports run, exit 0."""
    n = t.rng.randint(20, 200)
    back = good(n, 600) + good(n, 0)  # ten minutes back mid-file
    far = good(3).replace("2026-10-30", "1970-01-01") + good(3, 30).replace("2026-10-30", "2099-12-31")
    t.write("dump/decode-0/server.log", back + far)
    t.ingest(t.root / "dump")
    assert t.count("batches") == 2 * n + 6
    years = t.sql("SELECT year(ts) AS y, count(*) AS n FROM batches GROUP BY ALL ORDER BY y").rows()
    assert years == [(1970, 3), (2026, 2 * n), (2099, 3)]
    store = t.root / "store"
    t.cli("evidence", "--store", store)
    # the incident's own day, as a user narrows the window past the outliers
    out = t.cli(
        "timeline",
        "--store",
        store,
        "--format",
        "json",
        "--since",
        "2026-10-30T00:00:00",
        "--until",
        "2026-10-31T00:00:00",
    ).stdout
    assert json.loads(out)


@attack
def proxy_reply_of_50mb_stays_under_1gib(t: Attack) -> None:
    """An OpenAI-compatible proxy log whose one response holds a 50 MB reply (a runaway generation), run as
    its own process beside a good server log: peak RSS under 1 GiB, the request line is read, the long
    line is kept as its head and length (in unparsed or cut), the good log ingested whole, exit 0."""
    _, n_good = t.good_log()
    reply = "".join(t.rng.choice("abc xyz\n") for _ in range(1 << 12)) * (50_000_000 >> 12)
    req = {
        "ts": "2026-10-30T10:00:10.000Z",
        "dir": "req",
        "conn": "c-1",
        "upstream": "http://router/v1/chat/completions",
        "body": {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]},
    }
    resp = {
        "ts": "2026-10-30T10:00:15.000Z",
        "dir": "resp",
        "conn": "c-1",
        "status": 200,
        "latency_ms": 5000,
        "body": {
            "id": "x",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "length"}],
        },
    }
    t.write("dump/agent/proxy.jsonl", json.dumps(req) + "\n" + json.dumps(resp) + "\n")
    run = t.ingest(t.root / "dump", subprocess_run=True)
    assert "proxy.jsonl" in run.stderr and "longer than" in run.stderr, run.stderr
    assert t.count("batches") == n_good
    f = t.files()["proxy.jsonl"]
    assert (f["status"], f["lines"]) == ("ingested", 2)
