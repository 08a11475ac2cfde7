"""Two stamps on one line: a launcher's or shipper's stamp before SGLang's own. The line
takes the engine's stamp: the one with an explicit zone, else the later one in the line (SGLang's
bracketed prefix); when the two differ by more than a minute, the input's notes say so, once.

Lines written by hand from docs/formats/SGLANG.md, "Line prefix" and "Shipper and launcher
wrappers" (journald, docker `-t`, kubectl `--timestamps`, k8s CRI files)."""

from __future__ import annotations

import datetime as dt

import pytest
from click.testing import CliRunner

from forensics.cli import main
from forensics.parsers import server_log
from tests.helpers import parse_text

UTC = dt.timezone.utc
PREFILL = (
    "Prefill batch. #new-seq: 1, #new-token: 2048, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0"
)
DECODE = (
    "Decode batch. #running-req: 1, #token: 900, token usage: 0.01, gen throughput (token/s): 120.00, #queue-req: 0"
)
EXC = "Scheduler hit an exception: Traceback (most recent call last):"

PATHS = [pytest.param(False, id="polars"), pytest.param(True, id="native", marks=pytest.mark.native)]


def _parse(text: str, monkeypatch, use_native: bool, **kw):
    monkeypatch.setenv("FORENSICS_NATIVE", "1" if use_native else "0")
    return parse_text(server_log, text, **kw)


def _rows(tables) -> dict[int, dict]:
    out = {}
    for t in ("events", "batches"):
        if t in tables:
            for r in tables[t].iter_rows(named=True):
                out[r["line_no"]] = {**r, "table": t}
    return out


def _notes(ctx, what: str) -> list[str]:
    return [n for n in ctx.notes if what in n]


@pytest.mark.parametrize("use_native", PATHS)
def test_a_launcher_stamp_before_sglangs_dates_nothing(monkeypatch, use_native):
    """The launcher writes its local time (UTC-8) in brackets; SGLang's own stamp (UTC) dates the line."""
    text = (
        f"[2026-09-17 08:23:13] [launcher] [2026-09-17 16:23:13 TP0] {PREFILL}\n"
        f"[2026-09-17 08:23:14] [launcher] [2026-09-17 16:23:14 TP0] {EXC}\n"
        f"[2026-09-17 08:23:15,020][launch.py:88][INFO]: [2026-09-17 16:23:15 TP1] {DECODE}\n"
    )
    tables, ctx = _parse(text, monkeypatch, use_native)
    rows = _rows(tables)
    assert rows[1]["table"] == "batches" and rows[1]["kind"] == "prefill" and rows[1]["new_token"] == 2048
    assert rows[2]["kind"] == "exception" and rows[2]["message"].startswith("Scheduler hit an exception")
    assert rows[3]["table"] == "batches" and rows[3]["tp_rank"] == 1
    for line, sec in ((1, 13), (2, 14), (3, 15)):
        assert rows[line]["ts"] == dt.datetime(2026, 9, 17, 16, 23, sec, tzinfo=UTC), line
        assert rows[line]["ts_raw"] == f"2026-09-17 16:23:{sec}"
    assert rows[1]["prefix"].startswith("[2026-09-17 08:23:13] [launcher]")
    assert rows[3]["prefix"].startswith("[2026-09-17 08:23:15,020][launch.py:88][INFO]:")
    (note,) = _notes(ctx, "launcher's stamp")
    assert note.startswith("3 lines carry a launcher's stamp before SGLang's own, 8.00 h apart (first at line 1)")


@pytest.mark.parametrize("use_native", PATHS)
def test_an_unbracketed_or_journald_prefix_gives_way_to_sglangs_stamp(monkeypatch, use_native):
    text = (
        f"2026-09-17 08:23:13 [launcher] [2026-09-17 16:23:13] {PREFILL}\n"
        f"2026-09-17 08:23:14,501 - launcher - INFO - [2026-09-17 16:23:14 TP0] {EXC}\n"
        f"Sep 17 08:23:15 gpu-node-3 sglang[4411]: [2026-09-17 16:23:15 TP0] {EXC}\n"
    )
    tables, ctx = _parse(text, monkeypatch, use_native)
    rows = _rows(tables)
    for line, sec in ((1, 13), (2, 14), (3, 15)):
        assert rows[line]["ts"] == dt.datetime(2026, 9, 17, 16, 23, sec, tzinfo=UTC), line
    # journald's stamp has no year: nothing to compare it with, so it is not counted
    (note,) = _notes(ctx, "launcher's stamp")
    assert note.startswith("2 lines carry")


@pytest.mark.parametrize("use_native", PATHS)
def test_a_shippers_stamp_with_a_zone_dates_the_line_and_the_gap_is_noted(monkeypatch, use_native):
    """CRI and kubectl `--timestamps` stamps are absolute; SGLang's is local (here UTC+8, read in
    --tz UTC): the zoned stamp dates the line, and the note names SGLang's zone."""
    text = (
        f"2026-09-17T08:23:13.120000000Z stdout F [2026-09-17 16:23:13 TP0] {PREFILL}\n"
        f"2026-09-17T08:23:14.250000000Z stderr F [2026-09-17 16:23:14 TP0] {EXC}\n"
        f"2026-09-17T08:23:15.5Z [2026-09-17 16:23:15 TP0] {EXC}\n"
    )
    tables, ctx = _parse(text, monkeypatch, use_native)
    rows = _rows(tables)
    assert rows[1]["ts"] == dt.datetime(2026, 9, 17, 8, 23, 13, 120000, tzinfo=UTC)
    assert rows[2]["ts"] == dt.datetime(2026, 9, 17, 8, 23, 14, 250000, tzinfo=UTC)
    assert rows[3]["ts"] == dt.datetime(2026, 9, 17, 8, 23, 15, 500000, tzinfo=UTC)
    assert rows[2]["ts_raw"] == "2026-09-17 16:23:14"
    (note,) = _notes(ctx, "shipper's stamp")
    assert note.startswith("3 lines carry a shipper's stamp with a zone and SGLang's own, which runs +8.00 h")
    assert "(first at line 1)" in note and "--tz Etc/GMT-8" in note


@pytest.mark.parametrize("use_native", PATHS)
def test_stamps_that_agree_or_a_prefix_alone_note_nothing(monkeypatch, use_native):
    text = (
        # a zoned stamp at -08:00 and SGLang's in UTC: the same instant
        f"2026-09-17T08:23:13-08:00 stdout F [2026-09-17 16:23:13 TP0] {PREFILL}\n"
        f"2026-09-17T08:23:14-08:00 [2026-09-17 16:23:14 TP0] {EXC}\n"
        # a launcher's stamp 30 s off: within a minute
        f"[2026-09-17 16:22:45] [launcher] [2026-09-17 16:23:15 TP0] {EXC}\n"
        # the prefix's time is the only one: it dates the line
        f"2026-09-17T08:23:16-08:00 stdout F {EXC}\n"
        f"2026-09-17 16:23:17 [launcher] {DECODE}\n"
    )
    tables, ctx = _parse(text, monkeypatch, use_native)
    rows = _rows(tables)
    assert rows[1]["ts"] == dt.datetime(2026, 9, 17, 16, 23, 13, tzinfo=UTC)
    assert rows[2]["ts"] == dt.datetime(2026, 9, 17, 16, 23, 14, tzinfo=UTC)
    assert rows[3]["ts"] == dt.datetime(2026, 9, 17, 16, 23, 15, tzinfo=UTC)
    assert rows[4]["ts"] == dt.datetime(2026, 9, 17, 16, 23, 16, tzinfo=UTC)
    assert rows[5]["ts"] == dt.datetime(2026, 9, 17, 16, 23, 17, tzinfo=UTC) and rows[5]["table"] == "batches"
    assert not _notes(ctx, "stamp"), ctx.notes


def test_a_bracketed_message_is_no_launcher_stamp(monkeypatch):
    """Only a stamp-shaped bracket before SGLang's prefix is a lead: a message that begins with a
    bracket keeps it, and its line keeps its own time."""
    text = f"[2026-09-17 16:23:13 TP0] [req-7] finished in [2026-09-17 16:23:12 TP0] {EXC}\n"
    tables, ctx = _parse(text, monkeypatch, False)
    (row,) = _rows(tables).values()
    assert row["ts"] == dt.datetime(2026, 9, 17, 16, 23, 13, tzinfo=UTC)
    assert row["message"].startswith("[req-7]") and row["prefix"] is None
    assert not _notes(ctx, "stamp")


def test_ingest_prints_the_note_once_per_input(tmp_path):
    lines = "".join(
        f"[2026-09-17 08:23:{s:02d}] [launcher] [2026-09-17 16:23:{s:02d} TP0] {PREFILL}\n" for s in range(10, 40)
    )
    (tmp_path / "prefill-0").mkdir()
    (tmp_path / "prefill-0" / "sglang.log").write_text(lines)
    res = CliRunner().invoke(main, ["ingest", str(tmp_path / "prefill-0"), "--store", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    said = [ln for ln in res.output.splitlines() if "launcher's stamp" in ln]
    assert len(said) == 1 and "30 lines carry" in said[0], res.output
