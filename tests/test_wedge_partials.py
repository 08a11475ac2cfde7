"""Wedges from what ingest summarised of each input (forensics/ingest/derive.py) are the wedges of the
stored lines: `wedge_intervals(via := 'auto')` against `via := 'tables'`, on the wedge cases of
tests/test_wedges.py, the sample incident (with and without clock offsets), the real excerpts, and
one host's log cut into two files at awkward places."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from forensics.catalog import connect
from forensics.ingest import derive
from forensics.store import Store
from tests import test_wedges as cases
from tests.conftest import ingest_paths

PARAMS = [
    "",
    "min_gap_s := 20, factor := 3",
    "min_gap_s := 5, factor := 2",
    "min_gap_s := 10, max_gap_s := 30",
    "min_gap_s := 400",
]


def _rows(con, params: str, via: str) -> list:
    args = ", ".join(a for a in (params, f"via := '{via}'") if a)
    return con.execute(f"SELECT * FROM wedge_intervals({args}) ORDER BY ALL").fetchall()


def _same_both_ways(store, offsets=None) -> int:
    """Every parameter set gives the same rows both ways; the number of rows seen."""
    con = connect(Store(store), offsets=offsets)
    try:
        assert con.execute("SELECT count(*) FROM wedge_unsummarised").fetchone()[0] == 0
        seen = 0
        for params in PARAMS:
            auto, tables = _rows(con, params, "auto"), _rows(con, params, "tables")
            assert auto == tables, params
            seen += len(auto)
        return seen
    finally:
        con.close()


def _write(folder, name: str, rows: list[tuple]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(line + "\n" for _, line in rows))


@pytest.fixture(scope="module")
def wedge_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("wedge-partials")
    for host, make in cases.CASES.items():
        _write(root / "logs" / host, "server.log", sorted(make(), key=lambda r: r[0]))
    ingest_paths([root / "logs"], root / "store")
    return root / "store"


def test_every_input_is_summarised(wedge_store):
    con = connect(Store(wedge_store))
    try:
        hosts = {h for (h,) in con.execute("SELECT DISTINCT host FROM wedge_streams WHERE stream = 'lines'").fetchall()}
        kinds = {k for (k,) in con.execute("SELECT DISTINCT what FROM wedge_streams").fetchall()}
        signalled = {h for (h,) in con.execute("SELECT DISTINCT host FROM wedge_signals").fetchall()}
        sigs = {k for (k,) in con.execute("SELECT DISTINCT sig FROM wedge_signals").fetchall()}
    finally:
        con.close()
    assert hosts == signalled == set(cases.CASES)
    assert kinds == {"first", "last", "gap", "hist", "peer"}
    # the cases hold health checks, the watchdog, timeouts and a dead thread
    assert {"/health 200", "watchdog", "death"} <= sigs


def test_wedge_cases_both_ways(wedge_store):
    assert _same_both_ways(wedge_store) > 10
    assert _same_both_ways(wedge_store, offsets={"decode-5": cases.E_OFFSET, "decode-1": 2.5, "prefill-0": -0.75}) > 10


def test_sample_incident_both_ways(incident_store):
    _same_both_ways(incident_store)
    _same_both_ways(incident_store, offsets={"decode-1": 2.5, "decode-0": 0.001})


@pytest.mark.real_data
def test_real_logs_both_ways(real_logs, tmp_path):
    ingest_paths([real_logs], tmp_path / "store")
    _same_both_ways(tmp_path / "store")


def _traceback(t: dt.datetime) -> list[tuple]:
    # a scheduler exception as SGLang logs it (docs/formats/SGLANG.md, "Tracebacks and continuation lines"): one prefixed
    # line, then the traceback's own unprefixed lines
    text = [
        f"{cases.prefix(t)} Exception in ModelTpServer:",
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2134, in event_loop_normal',
        "    self.process_input_requests(recv_reqs)",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1120, in process_input_requests',
        "    raise ValueError(msg)",
        "ValueError: request 7f3a rejected",
    ]
    return [(t, line) for line in text]


def _cut(rows: list[tuple], at: int, root, host: str) -> None:
    _write(root / host, "server-1.log", rows[:at])
    _write(root / host, "server-2.log", rows[at:])


def _index(rows, pred) -> int:
    return next(i for i, (_, line) in enumerate(rows) if pred(line))


def _wedges(store, host: str) -> pl.DataFrame:
    con = connect(Store(store))
    try:
        return con.sql(f"SELECT * FROM wedge_intervals() WHERE host = '{host}' ORDER BY ALL").pl()
    finally:
        con.close()


@pytest.mark.parametrize("where", ["at a gap", "at a stats line inside a wedge", "inside a traceback"])
def test_a_log_cut_in_two_has_the_wedges_of_the_whole(tmp_path, where):
    host = "decode-0" if where != "at a stats line inside a wedge" else "decode-1"
    rows = sorted(cases.CASES[host](), key=lambda r: r[0])
    if where == "inside a traceback":
        t = cases.at(9, 5, 1)
        i = _index(rows, lambda line: line.startswith(cases.prefix(t)))
        rows[i:i] = _traceback(t)
        at = i + 3
    elif where == "at a gap":
        # the first line after the scheduler stopped: a /health line inside decode-0's stop
        at = _index(rows, lambda line: "GET /health" in line and line > cases.prefix(cases.A_START))
    else:
        # a peer's stats line while DP2 of decode-1 is stopped
        after = cases.prefix(cases.B_START + dt.timedelta(seconds=30))
        at = _index(rows, lambda line: "Decode batch" in line and line[: len(after)] > after)
    _write(tmp_path / "whole" / host, "server.log", rows)
    _cut(rows, at, tmp_path / "cut", host)
    ingest_paths([tmp_path / "whole"], tmp_path / "whole-store")
    ingest_paths([tmp_path / "cut"], tmp_path / "cut-store")
    whole = _wedges(tmp_path / "whole-store", host)
    assert whole.height >= 1
    assert _wedges(tmp_path / "cut-store", host).equals(whole)
    _same_both_ways(tmp_path / "cut-store")


def test_the_macro_keeps_the_floor_ingest_keeps():
    from forensics.catalog import model

    sql = model.derived()["wedge_intervals"].sql
    assert f"min_gap_s < {derive.MIN_STOP_S} OR max_gap_s < {derive.MIN_STOP_S}" in sql
