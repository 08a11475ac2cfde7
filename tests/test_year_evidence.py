"""Years from evidence, not from the mtime: the note that a year came from the file
date only where a line needed one, and a warning for lines dated after their file was written.

Lines written by hand from docs/formats/SGLANG.md, "Line prefix" and "Time zones and dates" (the
`MM-DD` variant), and NIXL.md, "Abseil log lines" (glog / abseil `E0917 16:23:13.419399 ...`, no
year)."""

from __future__ import annotations

import datetime as dt
import os

from click.testing import CliRunner

from forensics.cli import main
from forensics.parsers import server_log
from forensics.parsers.base import Context, Source

UTC = dt.timezone.utc
GLOG = "E0917 16:23:13.419399 12345 transfer_engine.cpp:42] Failed to complete transfers after 3 retries\n"
CRASH = (
    "Fatal Python error: Segmentation fault\n\n"
    "Thread 0x00007f3c5d7fe640 (most recent call first):\n"
    '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n'
)
DATED = "[2026-09-17 16:23:14 TP0] Scheduler hit an exception: boom\n"


def _write(path, text: str, mtime: dt.datetime | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def _parse(path, **kw) -> Context:
    ctx = Context(host="h", **kw)
    st = os.stat(path)
    for _ in server_log.parse(Source(path=path.name, fs_path=str(path), size=st.st_size, mtime=st.st_mtime), ctx):
        pass
    return ctx


def _year_notes(ctx) -> list[str]:
    return [n for n in ctx.notes if "taken from the file date" in n]


def test_an_input_without_any_timestamp_says_nothing_of_a_year(tmp_path):
    ctx = _parse(_write(tmp_path / "crash.log", CRASH, dt.datetime(2025, 3, 1, tzinfo=UTC)))
    assert _year_notes(ctx) == [] and ctx.warnings == []


def test_a_yearless_glog_file_says_where_its_year_came_from(tmp_path):
    ctx = _parse(_write(tmp_path / "mooncake.log", GLOG * 3, dt.datetime(2026, 9, 18, 2, tzinfo=UTC)))
    (note,) = _year_notes(ctx)
    assert "year 2026 taken from the file date" in note and "(3 lines without a year)" in note


def test_a_dated_line_gives_the_year_and_no_note(tmp_path):
    ctx = _parse(_write(tmp_path / "sglang.log", DATED + GLOG, dt.datetime(2026, 9, 18, tzinfo=UTC)))
    assert _year_notes(ctx) == []


def test_year_given_on_the_command_line_needs_no_note(tmp_path):
    ctx = _parse(_write(tmp_path / "mooncake.log", GLOG, dt.datetime(2026, 9, 18, tzinfo=UTC)), year=2026)
    assert _year_notes(ctx) == []


def test_lines_dated_after_their_file_was_written_are_a_warning(tmp_path):
    """A copy dated by an mtime in March: its September glog lines are half a year after it."""
    text = DATED.replace("2026-09-17", "2025-02-27") + GLOG + GLOG.replace("E0917", "W0918")
    ctx = _parse(_write(tmp_path / "mooncake.log", text, dt.datetime(2025, 3, 1, tzinfo=UTC)))
    (w,) = ctx.warnings
    assert w.startswith("2 lines dated more than a day after the file was last written (2025-03-01 00:00 UTC)")
    assert "first at line 2" in w


def test_lines_within_a_day_of_the_file_date_are_not(tmp_path):
    ctx = _parse(_write(tmp_path / "sglang.log", DATED, dt.datetime(2026, 9, 16, 20, tzinfo=UTC)))
    assert ctx.warnings == []


def test_a_line_later_than_now_is_a_warning(tmp_path):
    future = dt.datetime.now(UTC) + dt.timedelta(days=400)
    text = DATED + f"[{future:%Y-%m-%d %H:%M:%S} TP0] Scheduler hit an exception: later\n"
    path = _write(tmp_path / "sglang.log", text)
    st = os.stat(path)
    ctx = Context(host="h")
    for _ in server_log.parse(Source(path=path.name, fs_path=str(path), size=st.st_size), ctx):  # no file date
        pass
    (w,) = ctx.warnings
    assert w.startswith("1 line dated later than now") and "first at line 2" in w


def test_ingest_prints_the_warning_once_with_the_input(tmp_path):
    _write(tmp_path / "decode-0" / "mooncake.log", GLOG * 5, dt.datetime(2025, 3, 1, tzinfo=UTC))
    _write(tmp_path / "decode-0" / "crash.log", CRASH, dt.datetime(2025, 3, 1, tzinfo=UTC))
    res = CliRunner().invoke(main, ["ingest", str(tmp_path / "decode-0"), "--store", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    out = res.output.replace("\n", "")  # the console wraps long lines
    assert out.count("warning: ") >= 1 and out.count("5 lines dated more than a day after") == 1, res.output
    assert out.count("taken from the file date") == 1 and "crash.log: no dated line" not in out, res.output


def test_a_yearless_file_takes_the_year_of_its_hosts_dated_log_not_of_its_copy(tmp_path):
    """A Mooncake glog file beside its SGLang log, both copied (mtime: the day of the copy, a year
    later): the glog lines take the SGLang log's year. Another host's glog file has no dated
    input beside it: the file date still gives its year, said as before."""
    copied = dt.datetime(2026, 12, 1, tzinfo=UTC)
    _write(tmp_path / "dump" / "decode-0" / "sglang.log", DATED.replace("2026-09-17", "2025-09-17"), copied)
    _write(tmp_path / "dump" / "decode-0" / "mooncake.log", GLOG * 2, copied)
    # in other minutes than any dated line: nothing but its file date says its year
    _write(tmp_path / "dump" / "prefill-0" / "mooncake.log", GLOG.replace("E0917 16:23", "E0918 03:05"), copied)
    store = tmp_path / "s"
    res = CliRunner().invoke(main, ["ingest", str(tmp_path / "dump"), "--store", str(store)])
    assert res.exit_code == 0, res.output
    from tests.conftest import sql

    got = sql(
        store, "SELECT host, year(ts) AS y, count(*) AS n FROM events WHERE source = 'glog' GROUP BY ALL ORDER BY host"
    )
    assert got.rows() == [("decode-0", 2025, 2), ("prefill-0", 2026, 1)]
    out = res.output.replace("\n", "")
    assert "year 2025 taken from " in out and "sglang.log, an input of the same host" in out, res.output
    assert out.count("taken from the file date") == 1, res.output


ROOM = 4127750395128840213
# the prefill side dated, the decode side in the `MM-DD` prefix of some 2025 builds
PREFILL_FAILED = (
    "[2025-09-17 16:23:10 DP0 TP0] Prefill transfer failed for request rank=0 req.rid='5b02aee35dae49aba98a333ce89964e6' "
    f"req.bootstrap_room={ROOM} with exception KVTransferError(bootstrap_room={ROOM}): Failed to send kv chunk\n"
)
DECODE_FAILED = (
    "[09-17 16:31:40 DP0 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='a1af5d2d90324da292ed07c52b30467b' "
    f"decode_req.req.bootstrap_room={ROOM} with exception KVTransferError(bootstrap_room={ROOM}): Aborted by AbortReq.\n"
)


def _ingest(store, *paths):
    res = CliRunner().invoke(main, ["ingest", "--store", str(store), *map(str, paths)])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def _years(store, host: str) -> list[int]:
    from tests.conftest import sql

    return sql(store, "SELECT DISTINCT year(ts) FROM events WHERE host = $h", h=host).to_series().to_list()


def test_a_yearless_input_takes_the_year_of_another_hosts_input_naming_its_room(tmp_path):
    copied = dt.datetime(2026, 12, 1, tzinfo=UTC)
    _write(tmp_path / "dump" / "prefill-0" / "sglang.log", PREFILL_FAILED, copied)
    _write(tmp_path / "dump" / "decode-0" / "sglang.log", DECODE_FAILED, copied)
    out = _ingest(tmp_path / "s", tmp_path / "dump")
    assert _years(tmp_path / "s", "decode-0") == [2025]
    assert f"an input of another host naming the same room ({ROOM})" in out


def test_a_yearless_input_takes_the_year_of_a_stored_input_naming_its_room(tmp_path):
    """The prefill side was ingested yesterday; the decode side comes today, alone."""
    copied = dt.datetime(2026, 12, 1, tzinfo=UTC)
    _write(tmp_path / "a" / "prefill-0" / "sglang.log", PREFILL_FAILED, copied)
    _write(tmp_path / "b" / "decode-0" / "sglang.log", DECODE_FAILED, copied)
    _ingest(tmp_path / "s", tmp_path / "a")
    out = _ingest(tmp_path / "s", tmp_path / "b")
    assert _years(tmp_path / "s", "decode-0") == [2025]
    assert "an input already in the store naming the same room" in out


def test_a_yearless_glog_file_takes_the_year_of_lines_in_the_same_minutes(tmp_path):
    """A Mooncake glog file of a host with no SGLang log, its lines in the minute another host's
    dated line is in: one incident."""
    copied = dt.datetime(2026, 12, 1, tzinfo=UTC)
    _write(tmp_path / "dump" / "decode-0" / "sglang.log", DATED.replace("2026-09-17", "2025-09-17"), copied)
    _write(tmp_path / "dump" / "mooncake-store" / "mooncake.log", GLOG, copied)
    out = _ingest(tmp_path / "s", tmp_path / "dump")
    assert _years(tmp_path / "s", "mooncake-store") == [2025]
    assert "an input with lines in the same minutes" in out
