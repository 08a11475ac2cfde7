"""A failed request is one request: failure lines grouped across ranks, sides and hosts.

The fixture logs are written here by hand, line by line, in the shapes SGLang prints (docs/formats/SGLANG.md,
"PD transfer and bootstrap failures"): eight TP ranks repeating one failure, a request that fails on both PD sides in one second,
failure lines that name no request (`Session <ip:port> failed.`, bootstrap info fetch errors), a
request that only a rid names, and a crash. The expected counts are read off those lines.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import _materialize, ingest_paths, sql

T = "2026-02-19 16:32"

# room 111: decode only, its 8 TP ranks each log the same failure
ROOM_TP8 = 7451786167023312285
# room 222: both sides fail in the same second, each with a reason of the same cause rank
ROOM_BOTH = 687467831379323517
RID_ONLY = "c3a81f0e6b2d4f57a9e0d1c2b3a49586"


def _decode_tp8() -> str:
    return "".join(
        f"[{T}:10 TP{r}] Decode transfer failed for request rank={r} decode_req.req.rid='978c4d7b91514b25bcf5bf3547f06b2c' "
        f"decode_req.req.bootstrap_room={ROOM_TP8} with exception KVTransferError(bootstrap_room={ROOM_TP8}): "
        "Failed to get kvcache from prefill instance, it might be dead\n"
        for r in range(8)
    )


def _prefill() -> str:
    stats = (
        f"[{T}:05 TP0] Prefill batch, #new-seq: 1, #new-token: 11, #cached-token: 1, token usage: 0.00, "
        "#running-req: 0, #queue-req: 3, #prealloc-req: 0, #inflight-req: 0, input throughput (token/s): 0.02, \n"
    )
    sessions = "".join(f"[{T}:42 TP{r}] Session 10.82.101.249:1{r}177 failed.\n" for r in range(4))
    both = "".join(
        f"[{T}:42 TP{r}] Prefill transfer failed for request rank={r} req.rid='e030e49c59ad4d02ba84620cfb7e57c8' "
        f"req.bootstrap_room={ROOM_BOTH} with exception KVTransferError(bootstrap_room={ROOM_BOTH}): "
        f"Failed to send kv chunk of {ROOM_BOTH} to 10.82.101.249:4099{r}\n"
        for r in range(4)
    )
    return stats + sessions + both


def _decode_both() -> str:
    fetch = "".join(
        f"[{T}:42 TP{r}] Error fetching prefill parallel info from bootstrap: HTTPConnectionPool(host='10.99.91.41', "
        'port=8998): Max retries exceeded with url: /route?engine_rank=-1 (Caused by NewConnectionError("Failed to '
        'establish a new connection: [Errno 111] Connection refused"))\n'
        for r in range(3)
    )
    both = "".join(
        f"[{T}:42 TP{r}] Decode transfer failed for request rank={r} decode_req.req.rid='45ebc41130344271a823975baf7621b6' "
        f"decode_req.req.bootstrap_room={ROOM_BOTH} with exception KVTransferError(bootstrap_room={ROOM_BOTH}): "
        "Failed to get kvcache from prefill instance, it might be dead\n"
        for r in range(4)
    )
    return fetch + both


def _unified_rid_only() -> str:
    # the request timeout names a rid and no room; four TP ranks log it, then the process crashes
    return "".join(f"[{T}:50 TP{r}] Request running timeout reached, rid='{RID_ONLY}'\n" for r in range(4)) + (
        f"[{T}:55] Child process unexpectedly failed with exitcode=-11. pid=1234\n"
    )


# the tests read the logs and their store; none changes either
@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("failed") / "logs"
    for host, text in {
        "prefill-a": _prefill(),
        "decode-a": _decode_tp8() + _decode_both(),
        "unified-a": _unified_rid_only(),
    }.items():
        (root / host).mkdir(parents=True)
        (root / host / "sglang.log").write_text(text)
    return root


@pytest.fixture(scope="module")
def store(logs):
    s = logs.parent / "store"
    ingest_paths([logs], s)
    _materialize(s)  # as `forensics ingest` leaves it, whichever test reads it first
    return s


def _requests(store) -> dict:
    return {r["request_key"]: r for r in sql(store, "SELECT * FROM failed_requests").iter_rows(named=True)}


def test_columns_are_the_documented_ones(store):
    from forensics.catalog import model

    for name in ("failed_requests", "failure_signals"):
        got = sql(store, f"SELECT * FROM {name} LIMIT 0")
        assert got.columns == [c.name for c in model.tables()[name].columns], name
        assert [str(t) for t in got.dtypes] == [str(c.dtype) for c in model.tables()[name].columns], name


def test_eight_ranks_logging_one_failure_are_one_request(store):
    r = _requests(store)[f"room:{ROOM_TP8}"]
    assert (r["n_lines"], r["n_ranks"], r["n_hosts"], r["hosts"], r["sides"]) == (8, 8, 1, ["decode-a"], "decode")
    assert (r["outcome"], r["first_reason"], r["first_simultaneous"]) == ("transfer_failed", "node_failure", False)
    assert r["rid_decode"] == "978c4d7b91514b25bcf5bf3547f06b2c" and r["rid_prefill"] is None


def test_a_request_failing_on_both_sides_is_one_request_and_its_tie_is_said(store):
    r = _requests(store)[f"room:{ROOM_BOTH}"]
    assert (r["n_lines"], r["n_ranks"], r["n_hosts"], r["sides"]) == (8, 8, 2, "prefill+decode")
    assert r["hosts"] == ["decode-a", "prefill-a"]
    assert (r["rid_prefill"], r["rid_decode"]) == (
        "e030e49c59ad4d02ba84620cfb7e57c8",
        "45ebc41130344271a823975baf7621b6",
    )
    # transport on prefill and node_failure on decode, both whole-second lines of 16:32:42
    assert r["first_simultaneous"] is True
    res = CliRunner().invoke(main, ["room", str(ROOM_BOTH), "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert "simultaneous failures:" in res.output and "first failure:" not in res.output
    assert "logged by 8 ranks (8 lines) on decode-a, prefill-a" in res.output


def test_a_request_known_only_by_rid(store):
    r = _requests(store)[f"rid:{RID_ONLY}"]
    assert r["bootstrap_room"] is None
    assert (r["n_lines"], r["n_ranks"], r["hosts"], r["outcome"], r["first_reason"]) == (
        4,
        4,
        ["unified-a"],
        "aborted",
        "request_timeout",
    )


def test_lines_that_name_no_request_are_signals_not_requests(store):
    assert len(_requests(store)) == 3
    sig = {
        (r["host"], r["kind"], r["reason"]): r["n_lines"]
        for r in sql(store, "SELECT * FROM failure_signals").iter_rows(named=True)
    }
    assert sig[("prefill-a", "transfer_failed", "transport")] == 4
    assert sig[("decode-a", "bootstrap_failed", "bootstrap_unreachable")] == 3
    assert sig[("unified-a", "crash", "other")] == 1


def test_a_rid_tied_to_a_room_joins_that_rooms_request(tmp_path):
    """A timeout line naming only decode's rid of room 111 is that room's request, not a new one."""
    host = tmp_path / "logs" / "decode-a"
    host.mkdir(parents=True)
    (host / "sglang.log").write_text(
        _decode_tp8() + f"[{T}:20 TP0] Request running timeout reached, rid='978c4d7b91514b25bcf5bf3547f06b2c'\n"
    )
    s = tmp_path / "s2"
    ingest_paths([host], s)
    reqs = _requests(s)
    assert list(reqs) == [f"room:{ROOM_TP8}"]
    assert reqs[f"room:{ROOM_TP8}"]["n_lines"] == 9


def test_summary_counts_requests_lines_and_signals(store):
    res = CliRunner().invoke(main, ["summary", "--format", "json", "--store", str(store)])
    assert res.exit_code == 0, res.output
    f = json.loads(res.output)["failures"]
    # 8 + 8 + 4 failure lines; 4 session + 3 fetch + 1 crash signal lines
    assert (f["requests"], f["lines"], f["signals"]) == (3, 20, 8)
    assert {r["reason"]: r["requests"] for r in f["by_reason"]} == {
        "node_failure": 2,
        "request_timeout": 1,
    } or {r["reason"]: r["requests"] for r in f["by_reason"]} == {
        "node_failure": 1,
        "transport": 1,
        "request_timeout": 1,
    }
    hosts = {h["host"]: h for h in f["by_host"]}
    assert (hosts["decode-a"]["requests"], hosts["decode-a"]["lines"], hosts["decode-a"]["signals"]) == (2, 12, 3)
    assert hosts["unified-a"]["crashes"] == 1
    text = CliRunner().invoke(main, ["summary", "--store", str(store)]).output
    assert "failures: 3 failed requests (20 failure lines); 8 signal lines naming no request" in text


def test_timeline_counts_each_request_once_at_its_first_failure(store):
    res = CliRunner().invoke(main, ["timeline", "--bucket", "1m", "--format", "json", "--store", str(store)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["rows"]
    [row] = [r for r in rows if r["failed_requests"]]
    # failure_lines counts transfer / bootstrap failure lines (8 + 4 + 4), not the 4 timeout aborts
    assert (row["failed_requests"], row["failure_lines"], row["failure_signals"]) == (3, 16, 8)
    assert row["anomaly"].startswith("3 requests failed: ")
    assert "signals: " in row["anomaly"] and "unified-a crash/other 1" in row["anomaly"]
    ten = json.loads(
        CliRunner().invoke(main, ["timeline", "--bucket", "10s", "--format", "json", "--store", str(store)]).output
    )["rows"]
    by = {r["bucket_start"][11:19]: r["failed_requests"] for r in ten if r["failed_requests"]}
    assert by == {"16:32:10": 1, "16:32:40": 1, "16:32:50": 1}


def test_evidence_without_transcripts_tells_the_servers_story(store):
    res = CliRunner().invoke(main, ["evidence", "--store", str(store)])
    assert res.exit_code == 0, res.output
    md = res.output
    assert "### The incident as the server logs tell it" in md
    assert "3 failed requests (20 failure lines" in md
    assert "_none found_" not in md and "No replies in the store" not in md
    for room in (ROOM_TP8, ROOM_BOTH):
        assert str(room) in md
    assert RID_ONLY in md
    # the first failure of the incident, and what the prefill host logged before it
    assert re.search(r"First failure: 2026-02-19 16:32:10 on decode-a \(decode\), node_failure", md)
    assert "| prefill-a | 2026-02-19 16:32:05" in md
    assert "### Warnings and failure signals" in md and "### Crashes" in md
    doc = json.loads(CliRunner().invoke(main, ["evidence", "--format", "json", "--store", str(store)]).output)
    sv = doc["servers"]
    assert sv["failures"]["requests"] == 3
    # 63-bit rooms as text in JSON
    assert {r["bootstrap_room"] for r in sv["failed_requests"]} == {str(ROOM_TP8), str(ROOM_BOTH), None}
    assert sv["first_failure"]["bootstrap_room"] == str(ROOM_TP8)


def test_clocks_say_why_a_shared_room_gives_no_bound(store):
    res = CliRunner().invoke(main, ["clocks", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert "no clock bound: decode-a and prefill-a share 1 room" in res.output
    assert "only through failure lines" in res.output
    assert "┏" not in res.output  # no empty table


def test_chart_without_replies_draws_failed_requests_and_no_replies_panel(store, tmp_path):
    out = tmp_path / "t.svg"
    res = CliRunner().invoke(
        main, ["timeline", "--bucket", "10s", "--format", "svg", "-o", str(out), "--store", str(store)]
    )
    assert res.exit_code == 0, res.output
    svg = out.read_text()
    assert "replies by class" not in svg
    assert svg.count(" 1 failed") >= 3  # decode-a twice (rooms 111, 222), prefill-a once, unified-a once


def test_html_draws_one_marker_per_failed_request(store, tmp_path):
    out = tmp_path / "t.html"
    res = CliRunner().invoke(
        main, ["timeline", "--bucket", "10s", "--format", "html", "-o", str(out), "--store", str(store)]
    )
    assert res.exit_code == 0, res.output
    page = out.read_text()
    data = json.loads(
        re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', page, re.S).group(1)
    )
    rooms = sorted(str(r["room"]) for r in data["failed_requests"])
    assert rooms == sorted([str(ROOM_TP8), str(ROOM_BOTH), "None"])


def test_an_extended_snapshot_set_equals_a_whole_computation(tmp_path, logs, monkeypatch):
    """failed_requests is computed whole from the room-level snapshots: a set extended by new inputs
    holds the rows a fresh computation of the same store gives."""
    from forensics import catalog
    from forensics.catalog import refresh
    from forensics.store import Store

    monkeypatch.setattr(refresh, "_MAX_SHARE", 1.0)
    s = tmp_path / "inc"
    ingest_paths([logs / "decode-a"], s)
    catalog.connect(Store(s), materialize=True).close()
    ingest_paths([logs / "prefill-a", logs / "unified-a"], s)
    catalog.connect(Store(s), materialize=True).close()
    [ext] = [p for p in (s / "derived").iterdir() if re.fullmatch(r"[0-9a-f]{24}", p.name)]
    assert "extends" in json.loads((ext / "MANIFEST.json").read_text())
    whole = tmp_path / "whole"
    shutil.copytree(s, whole)
    shutil.rmtree(whole / "derived" / ext.name)
    q = "SELECT * FROM failed_requests ORDER BY request_key"
    assert sql(whole, q).rows() == sql(s, q).rows()
    assert len(sql(s, q)) == 3


# The real mooncake dump (the real excerpts' mooncake_incident folder), counted by reading its raw lines:
# every `Prefill/Decode transfer failed` and `Prefill bootstrap failed` line names its room in
# `bootstrap_room=N`; the distinct rooms per file (and over a pair, a room both files name once) are
# the failed requests. `Session <ip:port> failed.` (25, 8 lines) and `Error fetching prefill parallel
# info` (26, 7 lines) name no room: signals. 23 and 24 are one TP16 pair (23: decode ranks TP0-7,
# 24: prefill ranks TP8-15).
REAL_CASES = {
    # 25: room 687467831379323517 (TP0-7, send failed) and 2148295886124306552 (TP0-7, aborted)
    "25": ({"prefill-1": ["25_"]}, 2),
    # 26: rooms 4751139391711345681 (TP0-7) and 687467831379323517 (TP0-7)
    "26": ({"decode-1": ["26_"]}, 2),
    # 687467831379323517 is named by both: 2 + 2 - 1
    "25+26": ({"prefill-1": ["25_"], "decode-1": ["26_"]}, 3),
    # 23: rooms 7451786167023312285 and 4186199307863526971, eight TP lines each
    "23": ({"decode-1": ["23_"]}, 2),
    # 24: room 4186199307863526971 (TP8 once) and 8364186821847407707 (TP8-15)
    "24": ({"prefill-1": ["24_"]}, 2),
    # 4186199307863526971 is named by both: 2 + 2 - 1
    "23+24": ({"decode-1": ["23_"], "prefill-1": ["24_"]}, 3),
    # 27: decode stats lines only
    "27": ({"decode-1": ["27_"]}, 0),
}


@pytest.mark.parametrize("case", sorted(REAL_CASES))
def test_real_mooncake_dump_gives_the_requests_a_reader_counts(case, real_logs, tmp_path):
    layout, want = REAL_CASES[case]
    src = real_logs / "mooncake_incident"
    for host, prefixes in layout.items():
        (tmp_path / "in" / host).mkdir(parents=True)
        for p in prefixes:
            [f] = src.glob(f"{p}*.log")
            shutil.copy(f, tmp_path / "in" / host / f.name)
    store = tmp_path / "store"
    ingest_paths([tmp_path / "in"], store)
    assert len(_requests(store)) == want
    assert sql(store, "SELECT count(*) AS n FROM rooms")["n"][0] == want
    if case == "25+26":
        signals = {
            (r["host"], r["reason"]): r["n"]
            for r in sql(
                store,
                "SELECT host, reason, sum(n_lines) AS n FROM failure_signals WHERE kind IN "
                "('transfer_failed', 'bootstrap_failed') GROUP BY ALL",
            ).iter_rows(named=True)
        }
        assert signals == {("prefill-1", "transport"): 8, ("decode-1", "bootstrap_unreachable"): 7}
        both = _requests(store)["room:687467831379323517"]
        assert (both["n_lines"], both["n_ranks"], both["sides"], both["first_simultaneous"]) == (
            16,
            16,
            "prefill+decode",
            True,
        )


def test_the_sample_incident_in_requests(incident_store):
    """The planted incident (sample_logs/incident/planted.json, written by tools/samplegen.py from its
    own parameters) read as failed requests: the storm's aborted rooms, the wedge's stuck rooms and
    the transfer failure rooms are each one failed request, with the outcome planted."""
    from tests.conftest import INCIDENT

    planted = json.loads((INCIDENT / "planted.json").read_text())
    w = planted["windows"]
    store = incident_store
    reqs = {r["bootstrap_room"]: r for r in sql(store, "SELECT * FROM failed_requests").iter_rows(named=True)}
    # every failed room is one request, and nothing else is
    failed_rooms = set(
        sql(store, "SELECT bootstrap_room FROM rooms WHERE outcome NOT IN ('ok', 'unknown')")["bootstrap_room"]
    )
    assert set(reqs) == failed_rooms
    assert set(w["storm"]["aborted_rooms"]) <= set(reqs)
    assert {reqs[r]["outcome"] for r in w["storm"]["aborted_rooms"]} == {"aborted"}
    assert set(w["wedge"]["bootstrap_timeout_rooms"]) <= set(reqs)
    tf = w["transfer_failures"]
    assert set(tf["rooms"]) <= set(reqs)
    assert all(reqs[r]["n_lines"] >= 1 for r in tf["rooms"])
    # the storm's bucket speaks in requests
    rows = json.loads(
        CliRunner().invoke(main, ["timeline", "--bucket", "10s", "--format", "json", "--store", str(store)]).stdout
    )["rows"]
    storm = [r for r in rows if r["abort_storm_hosts"] and r["failed_requests"]]
    assert storm and any(re.search(r"\d+ requests failed: aborted \d+", r["anomaly"]) for r in storm)
    assert sum(r["failed_requests"] for r in rows) == len(reqs)


def test_evidence_names_every_failed_room_past_its_table(tmp_path):
    """More failed requests than the evidence's table lists: the rest are named after it, in order."""
    from forensics.analysis.failures import MAX_LISTED

    rooms = [7_000_000_000_000_000_000 + 7919 * i for i in range(MAX_LISTED + 25)]
    text = "".join(
        f"[2026-03-02 10:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode transfer failed for request rank=0 "
        f"decode_req.req.rid='r{i:05d}' decode_req.req.bootstrap_room={room} with exception "
        f"KVTransferError(bootstrap_room={room}): Prefill instance might be dead\n"
        for i, room in enumerate(rooms)
    )
    host = tmp_path / "dump" / "decode-z"
    host.mkdir(parents=True)
    (host / "sglang.log").write_text(text)
    store = tmp_path / "store"
    ingest_paths([tmp_path / "dump"], store, jobs=1)
    res = CliRunner().invoke(main, ["evidence", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert all(str(r) in res.output for r in rooms)
    assert f"_the first {MAX_LISTED:,} of {len(rooms):,};" in res.output


def test_a_finish_line_echoing_a_prefill_error_stays_on_its_files_side(tmp_path):
    """A decode `Finish:` line repeats the abort message, here prefill-side connector text: the decode
    file's role names its side, so prefill_host is the prefill server, never the decode one."""
    room = 2347773765981786812
    echoed = f"KVTransferError(bootstrap_room={room}): NIXL transfer encountered ERR room={room}"
    req = f"GenerateReqInput(rid='ba1e877f', bootstrap_host='10.0.0.2', bootstrap_room={room})"
    decode = (
        f"[{T}:20 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='ba1e877f' "
        f"decode_req.req.bootstrap_room={room} with exception {echoed}\n"
        f"[{T}:20] Finish: obj={req}, out={{'meta_info': {{'id': 'ba1e877f', 'finish_reason': {{'type': 'abort', "
        f"'message': '{echoed}', 'status_code': 500}}, 'prompt_tokens': 7743, 'completion_tokens': 0}}}}\n"
    )
    prefill = (
        f"[{T}:20 TP0] Prefill transfer failed for request rank=0 req.rid='64b6cea9' req.bootstrap_room={room} "
        f"with exception {echoed}\n"
    )
    for host, text in {"decode-a": decode, "prefill-a": prefill}.items():
        (tmp_path / "logs" / host).mkdir(parents=True)
        (tmp_path / "logs" / host / "sglang.log").write_text(text)
    ingest_paths([tmp_path / "logs"], tmp_path / "store")
    sides = sql(tmp_path / "store", "SELECT host, kind, side FROM room_events ORDER BY host, line_no").rows()
    assert sides == [
        ("decode-a", "transfer_failed", "decode"),
        ("decode-a", "request_finished", "decode"),
        ("prefill-a", "transfer_failed", "prefill"),
    ]
    [r] = sql(tmp_path / "store", "SELECT prefill_host, decode_host, rid_prefill FROM rooms").rows()
    assert r == ("prefill-a", "decode-a", "64b6cea9")
