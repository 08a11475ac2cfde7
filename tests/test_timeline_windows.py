"""The timeline's default window fits the data: `--host` narrows it to that host's span, a window of
mostly empty buckets is cut to where the rows are (with a note naming what lies outside), and
replies without a start time are counted in a note."""

from __future__ import annotations

import json

import duckdb
import pytest
from click.testing import CliRunner

from forensics.analysis import timeline as tl
from forensics.cli import main


def _json(store, *args):
    r = CliRunner().invoke(main, ["timeline", "--store", store, "--format", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), [ln for ln in r.stderr.splitlines() if ln.startswith("note: ")]


def test_host_narrows_the_default_window_to_its_span(sample_store):
    # the era samples' host logged over two years, a few seconds at a time; the store's main span is
    # the incident of 2026-11-20, where that host has no row
    doc, notes = _json(sample_store, "--host", "eras", "--bucket", "1m")
    assert notes[0] == (
        "note: window 2024-11-28 09:12:03 to 2026-11-30 10:00:01 UTC: the span of host eras; "
        "pass --since / --until for another"
    )
    assert notes[1].startswith("note: window 2026-10-30 10:00:00 to 10:02:02 UTC, where most of the rows are; ")
    assert "outside it: 2024-11-28 09:12:03 to 09:12:04 UTC (eras: 3 rows);" in notes[1]
    assert len(doc["rows"]) == 3 and sum(r["errors"] + r["failure_lines"] for r in doc["rows"]) > 0


def test_a_dense_default_window_is_kept(sample_store):
    doc, notes = _json(sample_store)
    assert not any("where most of the rows are" in n for n in notes)
    assert (doc["since"], doc["bucket_s"], len(doc["rows"])) == ("2026-11-20T13:58:25+00:00", 10.0, 139)


def _con(rows: list[tuple[str, str]], untimed: int = 0):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE batches (ts TIMESTAMPTZ, host VARCHAR)")
    con.execute("CREATE TABLE events (ts TIMESTAMPTZ, host VARCHAR)")
    con.execute("CREATE TABLE replies (t_start TIMESTAMPTZ, server_host VARCHAR)")
    con.execute("CREATE TABLE files (lines BIGINT, first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ)")
    con.executemany("INSERT INTO events VALUES (?, ?)", rows)
    for _ in range(untimed):
        con.execute("INSERT INTO replies VALUES (NULL, 'decode-1')")
    return con


# two TP16 pairs of one Mooncake dump two hours apart, and a decode node's stats eleven days later
DUMP = (
    [(f"2026-02-19 16:3{m}:0{s}+00", "prefill-1") for m in range(4) for s in range(0, 10, 3)]
    + [("2026-02-19 18:39:48+00", "decode-1")] * 5
    + [("2026-03-02 14:44:10+00", "decode-2"), ("2026-03-02 14:44:12+00", "decode-2")]
)


def test_a_mostly_empty_default_window_is_cut_to_where_most_rows_are():
    con = _con(DUMP)
    since, until, notes, bucket_s = tl._to_the_data(con, None, None, "auto", 3600.0, None)
    assert (since, until, bucket_s) == ("2026-02-19T16:30:00+00:00", "2026-02-19T16:33:09+00:00", 10.0)
    assert notes == [
        "window 2026-02-19 16:30:00 to 16:33:09 UTC, where most of the rows are; outside it: "
        "2026-02-19 18:39:48 UTC (decode-1: 5 rows); 2026-03-02 14:44:10 to 14:44:12 UTC (decode-2: 2 rows); "
        "pass --since / --until to see them"
    ]
    # a --bucket given is kept
    assert tl._to_the_data(con, None, None, "1m", 60.0, None)[3] == 60.0


def test_a_window_with_rows_in_most_buckets_is_not_cut():
    con = _con([(f"2026-02-19 16:{m:02d}:00+00", "prefill-1") for m in range(0, 60)])
    assert tl._to_the_data(con, None, None, "auto", 60.0, None) == (None, None, [], 60.0)


@pytest.mark.parametrize(
    "n, text", [(0, None), (1, "1 reply has no start time and is in no bucket"), (3, "3 replies have")]
)
def test_replies_without_a_start_time_are_counted(n, text):
    notes = tl._untimed_replies(_con(DUMP, untimed=n), None)
    assert notes[0].startswith(text) if text else notes == [], notes
