"""Lines without a clock of their own are placed, never dropped (docs/formats/SGLANG.md, "Lines
without a time"): a crash dump, a bare message, a bare stats line takes the time of the nearest
timed line above it in its input, else the nearest below, else (an event) its file's time, and
`ts_placed` says which; the timeline, its chart and the evidence show it where it was placed and
say so.

The dumps are written from what CPython's faulthandler and SGLang print, not from our generator.
"""

from __future__ import annotations

import datetime as dt
import json
import os

import polars as pl

from forensics.analysis import detail
from forensics.analysis import timeline as tl
from forensics.analysis.session import Session
from forensics.core.inputs import Scan
from forensics.parsers import server_log
from forensics.parsers.base import Source
from forensics.reports import text as text_report
from forensics.store import Store
from tests.conftest import ingest_paths, sql
from tests.test_pool import _same

# faulthandler's dump of a segfault: no clock anywhere in it
SEGV = (
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Thread 0x00007f3a5c9ff640 (most recent call first):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/disaggregation/nixl/conn.py", line 412 in _transfer\n'
    '  File "/usr/lib/python3.10/threading.py", line 953 in run\n'
    "\n"
    "Current thread 0x00007f3b1d7fe640 (most recent call first):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 1001 in '
    "event_loop_normal_disagg_decode\n"
)
STATS = (
    "[2025-09-17 16:23:{s:02d} DP0 TP0] Decode batch, #running-req: 12, #token: 40960, token usage: 0.31, "
    "pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, "
    "gen throughput (token/s): 812.40, #queue-req: 3\n"
)
# the file date of the dumps: a copy's, days after the incident
MTIME = dt.datetime(2025, 9, 20, 8, 0, 5, tzinfo=dt.timezone.utc)


def _write(path, text: str):
    path.write_text(text)
    os.utime(path, (MTIME.timestamp(), MTIME.timestamp()))
    return path


def _parse(path) -> pl.DataFrame:
    from forensics.parsers.base import Context

    src = Source(path=path.name, fs_path=str(path), size=path.stat().st_size, mtime=path.stat().st_mtime)
    out = list(server_log.parse(src, Context(host="h")))
    return pl.concat([o["events"] for o in out if o["events"].height])


def test_a_dump_below_a_timed_line_takes_its_time(tmp_path):
    ev = _parse(_write(tmp_path / "decode.log", STATS.format(s=1) + STATS.format(s=4) + SEGV))
    crash = ev.filter(pl.col("kind") == "crash").row(0, named=True)
    assert crash["ts"] == dt.datetime(2025, 9, 17, 16, 23, 4, tzinfo=dt.timezone.utc)
    assert crash["ts_placed"] == "line_above" and crash["ts_raw"] is None


def test_a_dump_before_any_timed_line_takes_the_first_below(tmp_path):
    ev = _parse(_write(tmp_path / "decode.log", SEGV + STATS.format(s=7)))
    crash = ev.filter(pl.col("kind") == "crash").row(0, named=True)
    assert crash["ts"] == dt.datetime(2025, 9, 17, 16, 23, 7, tzinfo=dt.timezone.utc)
    assert crash["ts_placed"] == "line_below"


def test_a_line_with_its_own_clock_is_not_placed(tmp_path):
    err = "[2025-09-17 16:23:09 DP0 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='a1'\n"
    ev = _parse(_write(tmp_path / "decode.log", err))
    assert ev["ts_placed"].to_list() == [None]


def test_a_dump_at_the_top_of_a_later_pass_takes_the_clock_of_the_passes_before(tmp_path):
    """Passes of a few lines, on a pool as in one process: the dump's pass has no timed line above
    it, the pass before does."""
    p = _write(tmp_path / "decode.log", "".join(STATS.format(s=s) for s in range(6)) + SEGV + STATS.format(s=30))
    pool = _same(str(p), Scan(block_bytes=300, group_blocks=1))
    ev = pl.concat([b["events"] for b in pool.parts.values() if b["events"].height])
    crash = ev.filter(pl.col("kind") == "crash").row(0, named=True)
    assert crash["ts_placed"] == "line_above"
    assert crash["ts"] == dt.datetime(2025, 9, 17, 16, 23, 5, tzinfo=dt.timezone.utc)


def test_a_dump_without_any_clock_is_in_the_timeline_its_chart_and_the_evidence(tmp_path):
    dump = _write(tmp_path / "crash.log", SEGV)
    store = str(tmp_path / "store")
    ingest_paths([dump], store)
    got = sql(store, "SELECT ts, ts_placed, kind FROM events").to_dicts()
    assert got == [{"ts": MTIME, "ts_placed": "file_time", "kind": "crash"}]
    # the input's span is its lines': a file date is none of them
    assert sql(store, "SELECT first_ts, last_ts FROM files").row(0) == (None, None)

    with Session.open(Store(store)) as s:
        model = tl.build(s)
        chart = detail.gather(s, model, "png")
    rows = model.rows
    assert rows.height == 1 and rows["failure_signals"].to_list() == [1]
    assert rows["bucket_start"][0] <= MTIME
    placed = [n for n in model.notes if "ts_placed" in n]
    assert placed == ["placed in time, having no clock of their own (ts_placed): crash 1 at its file's time"]
    # the chart draws the crash where it was placed, and its title carries the notes
    assert [(c["reason"], c["ts_placed"]) for c in chart["crashes"]] == [("sigsegv", "file_time")]

    # the text and Markdown timelines say it in their own output, not only on stderr
    import io

    for fmt in ("table", "markdown", "json"):
        buf = io.StringIO()
        text_report.render_timeline(model, fmt, buf)
        assert "crash 1 at its file's time" in buf.getvalue(), fmt

    out = tmp_path / "t.png"
    from click.testing import CliRunner

    from forensics.cli import main

    r = CliRunner().invoke(main, ["timeline", "--store", store, "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 0

    # the page's marks and Perfetto's events carry how their time was placed
    with Session.open(Store(store)) as s:
        page = detail.gather(s, tl.build(s), "html")
    assert [(m["kind"], m["ts_placed"]) for m in page["marks"]] == [("crash", "file_time")]
    trace = tmp_path / "t.json"
    r = CliRunner().invoke(main, ["timeline", "--store", store, "--format", "perfetto", "-o", str(trace)])
    assert r.exit_code == 0, r.output
    events = json.loads(trace.read_text())["traceEvents"]
    assert [e["args"]["ts_placed"] for e in events if e.get("cat") == "error"] == ["file_time"]

    r = CliRunner().invoke(main, ["evidence", "--store", store])
    assert r.exit_code == 0, r.output
    assert "crash 1 at its file's time" in r.output
    assert "| file_time |" in r.output


def test_lines_before_the_first_timed_line_wait_for_it_across_passes(tmp_path):
    """The dump and a bare stats line open the file; the first timed line is passes later. One
    process and a pool place them alike, at that line (`line_below`)."""
    bare = (
        "Decode batch. #running-req: 3, #token: 96, token usage: 0.00, gen throughput (token/s): 9.10, #queue-req: 0\n"
    )
    p = _write(tmp_path / "decode.log", SEGV + bare * 3 + STATS.format(s=12) + SEGV)
    pool = _same(str(p), Scan(block_bytes=500, group_blocks=1))
    assert len(pool.parts) > 2
    got = {t: pl.concat([b[t] for b in pool.parts.values() if b[t].height]) for t in ("events", "batches")}
    crashes = got["events"].filter(pl.col("kind") == "crash")
    at = dt.datetime(2025, 9, 17, 16, 23, 12, tzinfo=dt.timezone.utc)
    assert crashes.select("ts", "ts_placed").rows() == [(at, "line_below"), (at, "line_above")]
    stats = got["batches"].sort("line_no")
    assert stats["ts"].to_list() == [at] * 4
    assert stats["ts_placed"].to_list() == ["line_below"] * 3 + [None]
