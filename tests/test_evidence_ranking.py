"""Evidence ranks comparisons honestly: BH q beside p, risk-raising buckets first, the count of tests said."""

import io
import math
import random

import polars as pl
import pytest

from forensics.analysis import evidence, stats
from forensics.analysis.models import Evidence
from forensics.reports.text import render_evidence


def _features(seed=4, n=900):
    """Replies where heavy prefill raises corruption (5% -> 25%) and decode rank and host do nothing.

    `decode_running_req` carries a weak effect that one uncorrected test at 0.05 may call real.
    """
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        rate = rnd.uniform(0, 30000)
        running = rnd.randint(0, 60)
        p = (0.25 if rate > 20000 else 0.05) + (0.04 if running > 40 else 0.0)
        rows.append(
            {
                "corruption_class": "parse_leak" if rnd.random() < p else "clean",
                "prefill_new_tokens_per_s": rate,
                "decode_running_req": running,
                "decode_rank": str(rnd.randrange(4)),
                "decode_host": f"decode-{rnd.randrange(2)}",
                "aborts_before": rnd.choice([0, 0, 0, 1]),
            }
        )
    df = pl.DataFrame(rows)
    return df.with_columns(corrupted=pl.col("corruption_class") != "clean")


@pytest.fixture(scope="module")
def comp():
    return evidence.compare_dimensions(_features())


def test_the_real_effect_ranks_first_and_survives_bh(comp):
    top = comp.row(0, named=True)
    assert (top["column"], top["effect"], top["significant"]) == ("prefill_new_tokens_per_s", "raises", True)
    assert top["bucket"].startswith("above") and top["q_value"] < 1e-6
    assert top["difference_low"] > 0.1 and top["risk_ratio_low"] > 2
    # the light-prefill tertile is protective: shown as its complement, the same test read as a risk
    prefill = comp.filter(pl.col("column") == "prefill_new_tokens_per_s")
    assert prefill["effect"].to_list() == ["raises", "raises", "protective"]
    second = prefill.row(1, named=True)
    assert second["bucket"] == "above " + prefill["bucket"][2].split(" to ")[0] and second["significant"]
    assert second["replies"] + second["rest_replies"] == 900


def test_a_split_is_one_comparison_not_two():
    comp = evidence.compare_dimensions(_features())
    # two-valued dimensions give one row; the tertile ends are never both a bucket and its complement
    assert comp.filter(pl.col("column") == "decode_host").height == 1
    assert comp.filter(pl.col("column") == "aborts_before").height == 1
    for col in ("prefill_new_tokens_per_s", "decode_running_req"):
        labels = comp.filter(pl.col("column") == col)["bucket"].to_list()
        assert len(labels) == 3 and len(set(labels)) == 3
    # a complement carries the other side's figures exactly
    top = comp.row(0, named=True)
    assert top["corrupted"] + round(top["rest_rate"] * top["rest_replies"]) == comp["all_corrupted"][0]


def test_null_dimensions_are_not_significant(comp):
    null = comp.filter(pl.col("column").is_in(["decode_rank", "decode_host", "aborts_before"]))
    assert null.height == 4 + 1 + 1
    assert not null["significant"].any() and null["q_value"].min() >= 0.05


def test_q_values_are_bh_over_every_comparison(comp):
    assert comp["q_value"].to_list() == pytest.approx(stats.benjamini_hochberg(comp["p_value"].to_list()))
    assert (comp["q_value"] >= comp["p_value"]).all()
    assert comp["significant"].to_list() == [q < 0.05 for q in comp["q_value"]]


def test_order_is_raising_then_protective_each_by_q_then_effect(comp):
    effects = comp["effect"].to_list()
    assert effects == sorted(effects, key=["raises", "protective", "none"].index)
    for effect in ("raises", "protective"):
        g = comp.filter(pl.col("effect") == effect).rows(named=True)
        for a, b in zip(g, g[1:]):
            assert a["q_value"] < b["q_value"] or (
                a["q_value"] == b["q_value"] and abs(a["difference"]) >= abs(b["difference"])
            )
    for r in comp.iter_rows(named=True):
        assert (r["difference"] > 0) == (r["effect"] == "raises")
        assert r["difference_low"] <= r["difference"] <= r["difference_high"]
        if math.isfinite(r["risk_ratio"]) and r["risk_ratio"] > 0:
            assert r["risk_ratio_low"] <= r["risk_ratio"] <= r["risk_ratio_high"]


def test_a_p_below_005_is_not_enough_among_many_comparisons(comp):
    # noise: decode rank 0 looks protective at p = 0.020, but not among a dozen comparisons
    rank0 = comp.filter((pl.col("column") == "decode_rank") & (pl.col("bucket") == "0")).row(0, named=True)
    assert rank0["effect"] == "protective" and rank0["p_value"] == pytest.approx(0.0198, abs=1e-4)
    assert rank0["q_value"] >= 0.05 and comp.height == 12
    # the weak real effect is not claimed either: this many replies cannot tell it from noise
    weak = comp.filter((pl.col("column") == "decode_running_req") & (pl.col("effect") == "raises")).row(0, named=True)
    assert weak["p_value"] < 0.05 and not weak["significant"]
    assert weak["difference_low"] > 0  # a 95% interval by itself, uncorrected, excludes zero


def test_summary_and_markdown_say_how_many_comparisons():
    comp = evidence.compare_dimensions(_features())
    summary = evidence._summary((900, int(comp["all_corrupted"][0]), 0, 0), comp)
    assert summary["comparisons"] == comp.height
    assert summary["significant"] == int(comp["significant"].sum()) >= 2
    assert summary["significant_raising"] == comp.filter(pl.col("significant") & (pl.col("effect") == "raises")).height
    report = Evidence(
        clock_offsets={},
        clock_warnings=[],
        summary={**summary, "corrupted_rate": summary["corrupted"] / 900},
        comparisons=comp,
        corrupted_replies=pl.DataFrame(),
        wedges=pl.DataFrame(),
        abort_storms=pl.DataFrame(),
        checksum_mismatches=pl.DataFrame(),
        servers=None,
    )
    out = io.StringIO()
    render_evidence(report, "markdown", out)
    text = out.getvalue()
    assert (
        f"{comp.height} comparisons made (each bucket of a dimension against the rest); "
        f"{summary['significant']} significant at Benjamini–Hochberg q < 0.05"
    ) in text
    assert "| BH q |" in text and "| Fisher p |" in text
    table = [
        ln
        for ln in text.splitlines()
        if ln.startswith("| prefill") or ln.startswith("| decode") or ln.startswith("| aborts")
    ]
    assert table[0].startswith("| prefill new-token rate") and "| raises * |" in table[0]
    first_protective = next(i for i, ln in enumerate(table) if "| protective" in ln)
    assert all("| raises" in ln for ln in table[:first_protective])


def test_no_replies_no_comparisons():
    empty = _features().head(0)
    comp = evidence.compare_dimensions(empty)
    assert comp.height == 0 and set(evidence.COMPARISON_SCHEMA) <= set(comp.columns)


@pytest.fixture(scope="module")
def incident_report(tmp_path_factory):
    """An incident other than the checked-in one (another seed), through ingest and evidence."""
    from forensics.store import Store
    from tests.conftest import ingest_paths
    from tools.samplegen import generate

    root = tmp_path_factory.mktemp("rank_incident")
    generate(root / "incident", seed=11, scale=0.6)
    ingest_paths([root / "incident"], root / "store")
    return evidence.build(Store(str(root / "store")))


def test_prefill_load_tops_the_incident_after_correction(incident_report):
    comp, s = incident_report["comparisons"], incident_report["summary"]
    top = comp.row(0, named=True)
    assert top["column"] in ("prefill_new_tokens_per_s", "prefill_queue_req")
    assert top["effect"] == "raises" and top["significant"] and top["difference_low"] > 0
    assert not comp.filter(pl.col("column") == "decode_rank")["significant"].any()
    assert s["comparisons"] == comp.height and 1 <= s["significant"] < s["comparisons"]
