"""`forensics timeline` and `forensics evidence` on the generated incident report every planted fact.

The facts come from sample_logs/incident/planted.json (written by tools.samplegen).
"""

import datetime as dt
import json

import polars as pl
import pytest
from click.testing import CliRunner

from forensics.analysis import evidence, timeline
from forensics.catalog import named as queries
from forensics.catalog.sql import run_sql
from forensics.cli import main
from forensics.store import Store
from tests.conftest import ROOT, ingest_paths

INCIDENT = ROOT / "sample_logs" / "incident"
PLANTED = json.loads((INCIDENT / "planted.json").read_text())


def t(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def store(planted_store):
    """The incident with its planted clock offset set (tests/conftest.py)."""
    return Store(planted_store)


@pytest.fixture(scope="module")
def tl(store):
    return timeline.build(store, "10s")


def _window(rows, start, end):
    return rows.filter(
        (pl.col("bucket_start") >= t(start) - dt.timedelta(seconds=10)) & (pl.col("bucket_start") < t(end))
    )


@pytest.fixture(scope="module")
def report(store):
    return evidence.build(store)


def test_timeline_shows_the_prefill_slam(tl):
    slam = PLANTED["windows"]["slam"]
    rows = tl["rows"]
    inside = _window(rows, slam["start"], slam["end"])
    before = rows.filter(pl.col("bucket_start") < t(slam["start"]) - dt.timedelta(seconds=30))
    assert inside["prefill_queue_req"].max() >= 0.8 * slam["peak_queue_req"]
    assert (before["prefill_queue_req"].max() or 0) <= slam["baseline_peak_queue_req"] + 1
    assert inside["prefill_new_tokens_per_s"].max() > 5 * before["prefill_new_tokens_per_s"].drop_nulls().median()


def test_timeline_marks_the_abort_storm(tl):
    storm = PLANTED["windows"]["storm"]
    rows = tl["rows"]
    marked = rows.filter(pl.col("abort_storm_hosts").list.contains(storm["host"]))
    assert marked.height >= 1
    assert t(storm["start"]) - dt.timedelta(seconds=10) <= marked["bucket_start"].min() <= t(storm["end"])
    # the anomalous buckets say why
    assert rows.filter(pl.col("aborts") > 0)["aborts"].sum() >= storm["aborted_in_transfer"]


# The planted wedge (tools/samplegen writes it into planted.json from its own parameters):
# decode-1's scheduler stops for five minutes with requests in flight while its HTTP side keeps
# logging 503 probes, `Health check failed` lines and new requests. The reports must find it by
# the scheduler's progress; edges within 15 s of the planted last stats line and first timeout.
WEDGE = PLANTED["windows"]["wedge"]
EDGE_S = 15


def _planted_wedge_rows(df: pl.DataFrame) -> pl.DataFrame:
    """Wedge rows of the planted host that overlap the planted window."""
    return df.filter(
        (pl.col("host") == WEDGE["host"])
        & (pl.col("t_start") < t(WEDGE["end"]))
        & (pl.col("t_end") > t(WEDGE["start"]))
    )


def _check_wedge_row(row: dict) -> None:
    assert abs((row["t_start"] - t(WEDGE["start"])).total_seconds()) <= EDGE_S
    assert abs((row["t_end"] - t(WEDGE["end"])).total_seconds()) <= EDGE_S
    assert row["in_flight"] == WEDGE["in_flight"]
    assert {str(r) for r in WEDGE["stuck_rooms"]} <= set(row["rooms"])
    assert "waiting_timeout" in row["ended_by"]


def test_timeline_marks_the_wedge(tl):
    rows = tl["rows"]
    wedged = rows.filter(pl.col("wedged_hosts").list.contains(WEDGE["host"]))["bucket_start"]
    span = (t(WEDGE["end"]) - t(WEDGE["start"])).total_seconds()
    # every bucket inside the wedge is marked, and the marking does not spill more than one bucket out
    assert wedged.len() >= span // 10 - 1
    assert wedged.min() >= t(WEDGE["start"]) - dt.timedelta(seconds=10)
    assert wedged.max() <= t(WEDGE["end"]) + dt.timedelta(seconds=10)
    w = _planted_wedge_rows(tl["wedges"])
    assert w.height == 1
    _check_wedge_row(w.row(0, named=True))


def test_wedge_rows(store):
    w = _planted_wedge_rows(queries.run(store, "wedges"))
    assert w.height == 1
    _check_wedge_row(w.row(0, named=True))
    # decode-0 idles through the same minutes with nothing in flight: that is not a wedge
    assert queries.run(store, "wedges").filter(pl.col("host") == "decode-0").height == 0


def test_stuck_rooms_fail_first_on_decode(store):
    """Each stuck room's outcome is its first failure, the decode-side waiting timeout; prefill's
    bootstrap timeout two seconds later is kept beside it as a later failure."""
    stuck = {s["room"]: s for s in WEDGE["stuck"]}
    assert len(stuck) == len(WEDGE["stuck_rooms"]) and len(WEDGE["bootstrap_timeout_rooms"]) == 20
    assert all(s["outcome"] == "waiting_timeout" for s in stuck.values())
    rooms = run_sql(store, "SELECT * FROM rooms").filter(pl.col("bootstrap_room").is_in(list(stuck)))
    assert rooms.height == len(stuck)
    for row in rooms.iter_rows(named=True):
        s = stuck[row["bootstrap_room"]]
        assert (row["decode_host"], row["decode_rank"]) == (WEDGE["host"], s["decode_rank"])
        assert row["outcome"] == "waiting_timeout", row["bootstrap_room"]
        later = [str(x) for x in (row["later_failures"] or [])]
        assert any("bootstrap_timeout" in x for x in later) == bool(s["later_failures"]), (row["bootstrap_room"], later)


def test_evidence_shows_the_wedge(report, store):
    w = _planted_wedge_rows(report["wedges"])
    assert w.height == 1
    _check_wedge_row(w.row(0, named=True))
    r = CliRunner().invoke(main, ["evidence", "--store", str(store.root)])
    assert r.exit_code == 0, r.output
    section = r.output[r.output.lower().index("wedge") :]
    assert WEDGE["host"] in section


def test_abort_storm_rows(store):
    storm = PLANTED["windows"]["storm"]
    s = queries.run(store, "abort_storms")
    # one kill, one storm: the prefill host and both decode hosts within seconds of each other
    assert s.height == 1
    row = s.row(0, named=True)
    per_host = {h["host"]: h["n_aborts"] for h in row["per_host"]}
    assert set(per_host) == {"prefill-0", "decode-0", "decode-1"} == set(row["hosts"])
    # each decode host counts the requests it aborted once, whatever number of lines each wrote
    for host, n in storm["aborted_requests_by_host"].items():
        assert per_host[host] == n
    # prefill aborted every one of them, and a request on both sides is one request
    assert per_host["prefill-0"] == row["n_aborts"] == sum(storm["aborted_requests_by_host"].values())
    assert row["host_aborts"] == sum(per_host.values())
    assert t(storm["start"]) - dt.timedelta(seconds=1) <= row["t_start"] <= t(storm["end"])
    assert (row["t_end"] - row["t_start"]).total_seconds() <= 5


def test_evidence_counts_the_corrupted_replies(report):
    s = report["summary"]
    assert s["replies"] == PLANTED["replies"]["total"]
    assert s["corrupted"] == PLANTED["replies"]["corrupted"]


def test_evidence_ties_corruption_to_prefill_load(report):
    comp = report["comparisons"]
    top = comp.row(0, named=True)
    # the strongest difference is about prefill load, and it is significant
    assert top["column"] in ("prefill_queue_req", "prefill_new_tokens_per_s") and top["p_value"] < 0.001
    # heavier prefill against lighter: the strongest split of the prefill rate, read as a risk
    split = comp.filter((pl.col("column") == "prefill_new_tokens_per_s") & (pl.col("effect") == "raises")).row(
        0, named=True
    )
    assert split["bucket"].startswith("above") and split["rate"] > 2 * split["rest_rate"]
    for r in comp.iter_rows(named=True):
        assert r["ci_low"] <= r["rate"] <= r["ci_high"] and 0 <= r["p_value"] <= 1


def test_evidence_ties_corruption_to_failures_on_the_same_host(report):
    comp = report["comparisons"]
    yes = comp.filter((pl.col("column") == "failures_before") & (pl.col("bucket") == "yes")).row(0, named=True)
    # few replies follow the planted link fault, so the effect is directional rather than significant here
    assert yes["rate"] > yes["rest_rate"]
    win = next(w for w in PLANTED["windows"]["elevated_corruption"] if w["reason"] == "after_transfer_failures")
    ctx = report["corrupted_replies"].filter(
        (pl.col("t_start") >= t(win["start"]))
        & (pl.col("t_start") <= t(win["end"]))
        & (pl.col("decode_host") == win["host"])
    )
    assert ctx.height >= 1
    for evs in ctx["events"].to_list():
        assert any(e["kind"] == "transfer_failed" for e in evs)


def test_quoted_log_reply_is_not_corrupted(store):
    """An engineer's clean reply quoting the incident's own log lines (a `> Decode transfer failed …`
    quote and a fenced excerpt of the wedge) is a hard negative: no signature fires on it."""
    (q,) = [h for h in PLANTED["hard_negatives"] if h["kind"] == "quoted_log"]
    rep = run_sql(store, "SELECT * FROM replies").filter(pl.col("turn_id") == q["reply_id"])
    text = run_sql(store, "SELECT turn_id, content FROM turns").filter(pl.col("turn_id") == q["reply_id"])
    assert rep.height == text.height == 1
    row = rep.row(0, named=True)
    for x in q["quoted"]:
        assert x["text"] in text["content"][0]  # ingest kept the quote verbatim
    assert (row["corrupted"], row["signatures"] or [], row["corruption_class"]) == (False, [], "clean")


def test_hard_negatives_stay_clean(store):
    kinds = {h["reply_id"]: h["kind"] for h in PLANTED["hard_negatives"]}
    rep = run_sql(store, "SELECT turn_id, corrupted, signatures FROM replies").filter(
        pl.col("turn_id").is_in(list(kinds))
    )
    assert rep.height == len(kinds)
    flagged = {
        r["turn_id"]: (kinds[r["turn_id"]], r["signatures"]) for r in rep.iter_rows(named=True) if r["corrupted"]
    }
    assert flagged == {}


def test_evidence_lists_the_checksum_mismatches(report):
    planted = {str(r["room"]) for r in PLANTED["checksum_mismatch_rooms"]}
    cm = report["checksum_mismatches"]
    assert set(cm.filter(pl.col("source") == "trace")["bootstrap_room"]) == planted


def test_json_shapes_are_stable(store, tmp_path):
    r = CliRunner().invoke(main, ["timeline", "--store", str(store.root), "--format", "json", "--bucket", "30s"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "forensics.timeline" and doc["version"] == 1
    assert doc["clock_offsets"] == {"decode-1": 2.5}
    assert {"bucket_start", "replies", "corrupted_rate", "decode_hosts", "wedged_hosts", "anomaly"} <= set(
        doc["columns"]
    )
    assert doc["wedges"] and doc["abort_storms"]
    r = CliRunner().invoke(main, ["evidence", "--store", str(store.root), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc) >= {
        "kind",
        "version",
        "clock_offsets",
        "summary",
        "comparisons",
        "corrupted_replies",
        "wedges",
        "abort_storms",
        "checksum_mismatches",
    }
    assert all(isinstance(x["bootstrap_room"], str) for x in doc["checksum_mismatches"])


def test_redact_masks_hosts_and_addresses(store):
    r = CliRunner().invoke(main, ["evidence", "--store", str(store.root), "--redact"])
    assert r.exit_code == 0
    for host in PLANTED["hosts"]:
        assert host not in r.output
    for h in PLANTED["hosts"].values():
        assert h["ip"] not in r.output
    assert "host-" in r.output


def test_auto_bucket_keeps_a_long_dump_readable(store, tmp_path):
    import shutil

    spans = (None, 0, 1_200, 5_000, 6 * 3600, 30 * 86400, 365 * 86400)
    assert [timeline.auto_bucket(s) for s in spans] == [10, 10, 10, 10, 60, 7200, 86400]
    # the incident spans minutes: 10 s buckets, as if --bucket 10s had been given
    assert timeline.build(store)["bucket_s"] == 10
    # a small stray log a year older (under 1% of the lines) does not widen them
    copy = tmp_path / "store"
    shutil.copytree(store.root, copy)
    old = tmp_path / "old.log"
    old.write_text("[2025-11-20 14:00:00] Decode batch, #running-req: 1\n")
    ingest_paths([old], copy)
    assert timeline.build(Store(copy))["bucket_s"] == 10
    assert timeline.build(Store(copy), since="2026-11-20T00:00:00", until="2026-11-21T00:00:00")["bucket_s"] == 300
