"""Clock offsets: estimated from paired room events, applied in views, reported by every report."""

import pytest
from click.testing import CliRunner

from forensics.analysis.clocks import estimate
from forensics.analysis.room import room_story
from forensics.cli import main
from forensics.store import Store
from tests.bundle import DECODE, PREFILL, write_bundle
from tests.conftest import ingest_paths, sql

VIOLATIONS = (
    "SELECT count(*) FILTER (WHERE t_notif < t_post) AS notif, count(*) FILTER (WHERE t_done < t_post) AS done "
    "FROM transfers"
)


@pytest.fixture
def bundle(tmp_path):
    truth = write_bundle(tmp_path / "dump", decode_offset_s=-2.5)
    ingest_paths([tmp_path / "dump"], tmp_path / "store")
    return tmp_path / "store", truth


def test_planted_offset_is_recovered_within_the_reported_bounds(bundle):
    store, truth = bundle
    report = estimate(Store(store))
    [pair] = report.pairs
    assert (pair.host_a, pair.host_b) == (PREFILL, DECODE)
    assert pair.lower <= truth.decode_offset_s <= pair.upper
    assert pair.lower <= pair.estimate <= pair.upper
    assert abs(pair.estimate - truth.decode_offset_s) < 0.5
    assert pair.n_lower > 0 and pair.n_upper > 0 and pair.consistent
    assert report.offsets == {} and not pair.in_force_ok


@pytest.mark.slow
def test_with_the_estimate_applied_no_transfer_completes_before_it_was_posted(bundle):
    store, _ = bundle
    raw = sql(store, VIOLATIONS).row(0, named=True)
    assert raw["notif"] > 0  # the planted offset is visible without a correction
    runner = CliRunner()
    est = estimate(Store(store)).pairs[0].estimate
    res = runner.invoke(main, ["clocks", "set", DECODE, f"{est}", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert f"{DECODE} {est:+g} s" in res.output
    assert sql(store, VIOLATIONS).row(0, named=True) == {"notif": 0, "done": 0}
    assert estimate(Store(store)).pairs[0].in_force_ok


def test_clocks_command_prints_estimate_bounds_pairs_and_offsets_in_force(bundle):
    store, _ = bundle
    runner = CliRunner()
    assert runner.invoke(main, ["clocks", "set", DECODE, "-1", "--store", str(store)]).exit_code == 0
    res = runner.invoke(main, ["clocks", "--store", str(store), "--format", "markdown"])
    assert res.exit_code == 0, res.output
    first, *table = res.output.splitlines()
    assert first == f"clock offsets applied: {DECODE} -1 s"
    assert table[0].startswith("| host_a | host_b | estimate_s | lower_s | upper_s | pairs |")
    assert f"| {PREFILL} | {DECODE} |" in table[2]


def test_room_story_is_in_corrected_order_and_marks_corrections(bundle):
    store, truth = bundle
    room = sorted(truth.failed)[0]
    Store(store).set_clock(DECODE, truth.decode_offset_s)
    story = room_story(Store(store), room)
    assert story.offsets == {DECODE: truth.decode_offset_s}
    tl = story.timeline
    ts = tl["ts"].drop_nulls().to_list()
    assert ts == sorted(ts)
    assert set(tl.filter(tl["host"] == DECODE)["clock_correction"]) == {"+2.500000s"}
    assert tl.filter(tl["host"] == PREFILL)["clock_correction"].is_null().all()
    assert {"trace", "request_log", "sglang"} <= set(tl["source"])
    res = CliRunner().invoke(main, ["room", str(room), "--store", str(store), "--format", "csv"])
    assert res.exit_code == 0
    assert f"clock offsets applied: {DECODE} -2.5 s" in res.output
    assert "outcome=transfer_failed" in res.output


def test_room_errors_are_short_and_typed(bundle):
    store, _ = bundle
    runner = CliRunner()
    bad = runner.invoke(main, ["room", "12x", "--store", str(store)])
    assert bad.exit_code == 2 and bad.output.startswith("error: a room is a decimal integer")
    missing = runner.invoke(main, ["room", "1", "--store", str(store)])
    assert missing.exit_code == 1 and "no line or trace event names room 1" in missing.output
