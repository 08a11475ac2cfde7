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
    # its failed requests lie years apart: more 1 min rows than a terminal shows, so the window is the
    # stretch of the first one, and the note says what it left out
    assert notes[1].startswith(
        "note: window 2025-06-02 10:01:17 to 10:01:19 UTC, where the first failed request is (1 of 7 in it); "
    )
    assert "outside it: 2024-11-28 09:12:03 to 09:12:04 UTC (eras: 3 rows);" in notes[1]
    assert len(doc["rows"]) == 1 and doc["rows"][0]["failed_requests"] == 1


def test_a_dense_default_window_is_kept(sample_store):
    doc, notes = _json(sample_store)
    assert not any("where most of the rows are" in n for n in notes)
    assert (doc["since"], doc["bucket_s"], len(doc["rows"])) == ("2026-11-20T13:58:25+00:00", 10.0, 139)


def _con(rows: list[tuple[str, str]], untimed: int = 0, failures: list[tuple[str, str]] = ()):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE batches (ts TIMESTAMPTZ, host VARCHAR)")
    con.execute("CREATE TABLE events (ts TIMESTAMPTZ, host VARCHAR)")
    con.execute("CREATE TABLE replies (t_start TIMESTAMPTZ, server_host VARCHAR)")
    con.execute("CREATE TABLE files (lines BIGINT, first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ)")
    con.execute(
        "CREATE TABLE failed_requests (request_key VARCHAR, bootstrap_room BIGINT, rid_prefill VARCHAR, "
        "rid_decode VARCHAR, hosts VARCHAR[], t_first TIMESTAMPTZ, first_host VARCHAR, first_reason VARCHAR, "
        "outcome VARCHAR, n_lines BIGINT, n_ranks BIGINT, first_simultaneous BOOLEAN)"
    )
    con.executemany("INSERT INTO events VALUES (?, ?)", rows + list(failures))
    for i, (t, host) in enumerate(failures):
        con.execute(
            "INSERT INTO failed_requests (request_key, hosts, t_first) VALUES (?, [?], ?)", [f"rid:{i}", host, t]
        )
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


def test_a_cut_window_keeps_the_failed_requests_however_few_their_rows():
    # the 5 decode-1 lines of 18:39:48 are one failed request; the dense stretch has none
    con = _con(DUMP, failures=[("2026-02-19 18:39:49+00", "decode-1")])
    # a request whose failure has no time (a crash dump's lines) is in no stretch
    con.execute("INSERT INTO failed_requests (request_key, hosts, t_first) VALUES ('rid:crash', ['decode-2'], NULL)")
    since, until, notes, _ = tl._to_the_data(con, None, None, "auto", 3600.0, None)
    assert (since, until) == ("2026-02-19T18:39:48+00:00", "2026-02-19T18:39:49+00:00")
    assert notes == [
        "window 2026-02-19 18:39:48 to 18:39:49 UTC, where the 1 failed request is (1 more without a time); outside it: "
        "2026-02-19 16:30:00 to 16:33:09 UTC (prefill-1: 16 rows); 2026-03-02 14:44:10 to 14:44:12 UTC "
        "(decode-2: 2 rows); pass --since / --until to see them"
    ]
    # failures in two stretches: the window runs from the first one's to the last one's
    con = _con(DUMP, failures=[("2026-02-19 16:31:03+00", "prefill-1"), ("2026-02-19 18:39:48+00", "decode-1")])
    since, until, notes, _ = tl._to_the_data(con, None, None, "auto", 3600.0, None)
    assert (since, until) == ("2026-02-19T16:30:00+00:00", "2026-02-19T18:39:48+00:00")
    assert notes[0].startswith("window 2026-02-19 16:30:00 to 18:39:48 UTC, where the 2 failed requests are; ")
    assert "2026-03-02 14:44:10 to 14:44:12 UTC (decode-2: 2 rows)" in notes[0]


def test_a_window_with_rows_in_most_buckets_is_not_cut():
    con = _con([(f"2026-02-19 16:{m:02d}:00+00", "prefill-1") for m in range(0, 60)])
    assert tl._to_the_data(con, None, None, "auto", 60.0, None) == (None, None, [], 60.0)


@pytest.mark.parametrize(
    "n, text", [(0, None), (1, "1 reply has no start time and is in no bucket"), (3, "3 replies have")]
)
def test_replies_without_a_start_time_are_counted(n, text):
    notes = tl._untimed_replies(_con(DUMP, untimed=n), None)
    assert notes[0].startswith(text) if text else notes == [], notes


def test_the_default_window_of_a_pd_pair_shows_its_first_failure_in_a_sparse_second(tmp_path):
    """Prefill logs a stats line a second for two minutes; forty minutes earlier decode logged one
    transfer failure (SGLang's own wording, docs/formats/SGLANG.md, "PD transfer and bootstrap
    failures") and little else. The density of rows alone would show the prefill minutes."""
    prefill = tmp_path / "dump" / "prefill-0"
    decode = tmp_path / "dump" / "decode-0"
    prefill.mkdir(parents=True)
    decode.mkdir(parents=True)
    (prefill / "server.log").write_text(
        "".join(
            f"[2026-03-04 14:{i // 60:02d}:{i % 60:02d} TP0] Prefill batch. #new-seq: 2, #new-token: 2048, "
            "#cached-token: 0, token usage: 0.05, #unbootstrapped-req: 0, #queue-req: 3, #transferring-req: 1, "
            "input throughput (token/s): 9000.00, \n"
            for i in range(120)
        )
    )
    (decode / "server.log").write_text(
        "[2026-03-04 13:20:00 TP0] Decode batch. #running-req: 4, #token: 9000, token usage: 0.02, "
        "gen throughput (token/s): 300.00, #queue-req: 0, \n"
        "[2026-03-04 13:20:01 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='9f2c' "
        "decode_req.bootstrap_room=8317201550201367 with exception KVTransferError(bootstrap_room=8317201550201367): "
        "Failed to get kvcache from prefill instance, it might be dead\n"
    )
    store = str(tmp_path / "store")
    r = CliRunner().invoke(main, ["ingest", str(tmp_path / "dump"), "--store", store])
    assert r.exit_code == 0, r.output
    doc, notes = _json(store)
    failed = [row for row in doc["rows"] if row["failed_requests"]]
    assert failed and failed[0]["bucket_start"].startswith("2026-03-04T13:20:00"), doc["rows"][:3]
    assert any("where the 1 failed request is" in n and "prefill-0: 120 rows" in n for n in notes), notes


def test_the_default_window_of_the_real_excerpts_names_their_failed_requests(real_logs, tmp_path):
    """The excerpts span two years, a few seconds each; their failed requests, one of them known only
    from lines without a time, choose the window and the note counts them as the store has them."""
    from tests.conftest import ingest_paths, sql

    store = tmp_path / "store"
    ingest_paths([real_logs], store)
    counts = sql(store, "SELECT count(t_first) AS timed, count(*) - count(t_first) AS untimed FROM failed_requests")
    timed, untimed = counts.row(0)
    assert timed >= 2
    doc, notes = _json(str(store))
    (note,) = [n for n in notes if "failed request" in n]
    assert f"where the {timed} failed requests are" in note or f"of {timed} in it" in note, note
    assert (f"({untimed} more without a time)" in note) == bool(untimed), note
    assert sum(r["failed_requests"] for r in doc["rows"]) >= 1
