"""Dates that cannot be right are warned about in every report, not only while ingesting: lines
dated after their input was ingested or more than a day after its file was last written, and
hosts of one store more than a day apart (forensics.analysis.clocks.date_warnings).

The lines are SGLang's stats lines as the servers print them; the wrong years are what a copy's
file date or a mistyped --year gives."""

from __future__ import annotations

import datetime as dt
import json
import os

from click.testing import CliRunner

from forensics.cli import main

LINE = (
    "[{day} 16:23:0{s} DP0 TP0] Decode batch, #running-req: 12, #token: 40960, token usage: 0.31, "
    "gen throughput (token/s): 812.40, #queue-req: 3\n"
)


def _log(path, day: str, mtime: dt.datetime | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    # each host's lines its own: the same content twice is one input
    path.write_text("".join(LINE.format(day=day, s=s) for s in range(3)) + f"# {path.parent.name}\n")
    if mtime:
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def _run(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.stdout


def _summary_warnings(store) -> list[str]:
    return json.loads(_run("summary", "--store", store, "--format", "json"))["warnings"]


def test_lines_dated_after_the_ingest_are_warned_about_in_summary_and_evidence(tmp_path):
    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=400)).strftime("%Y-%m-%d")
    store = tmp_path / "store"
    _run("ingest", _log(tmp_path / "dump" / "decode-0" / "sglang.log", future), "--store", store)
    late = [w for w in _summary_warnings(store) if "after it was ingested" in w]
    assert len(late) == 1 and f"lines dated up to {future} 16:23 UTC" in late[0]
    assert "--year, --date or --tz" in late[0]
    evidence = " ".join(_run("evidence", "--store", store).split())
    assert "after it was ingested" in evidence


def test_lines_dated_long_after_their_file_date_are_warned_about(tmp_path):
    # a glog-style year from the wrong place: the lines a year after the file was last written
    written = dt.datetime(2025, 9, 18, 8, 0, tzinfo=dt.timezone.utc)
    store = tmp_path / "store"
    _run("ingest", _log(tmp_path / "dump" / "decode-0" / "sglang.log", "2026-09-17", written), "--store", store)
    late = [w for w in _summary_warnings(store) if "after its file was last written" in w]
    assert len(late) == 1 and "(2025-09-18 08:00 UTC)" in late[0]


def test_hosts_a_day_apart_are_warned_about_and_hosts_of_one_day_are_not(tmp_path):
    store = tmp_path / "store"
    _log(tmp_path / "dump" / "decode-0" / "sglang.log", "2025-09-17")
    _log(tmp_path / "dump" / "prefill-0" / "sglang.log", "2025-09-17")
    _run("ingest", tmp_path / "dump", "--store", store)
    assert not [w for w in _summary_warnings(store) if "a day apart" in w]
    _log(tmp_path / "more" / "decode-1" / "sglang.log", "2024-09-17")
    _run("ingest", tmp_path / "more", "--store", store)
    apart = [w for w in _summary_warnings(store) if "a day apart" in w]
    assert len(apart) == 1
    assert "decode-1 2024-09-17 16:23 UTC to 2024-09-17 16:23 UTC" in apart[0]
    assert "decode-0, prefill-0 2025-09-17" in apart[0]
