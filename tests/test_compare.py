"""`forensics compare`: corruption rate per run with intervals and a verdict, throughput by band."""

import json

import pytest
from click.testing import CliRunner

from forensics.analysis import compare, stats
from forensics.cli import main
from tests.conftest import ingest_paths, sql
from tools.samplegen import generate


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    generate(root / "small", seed=3, scale=0.4)
    a, b = root / "before", root / "after"
    ingest_paths([root / "small"], a, run="before")
    ingest_paths([root / "small" / "agent"], b, run="after")
    return str(a), str(b)


def test_rates_intervals_and_verdict(stores):
    a, b = stores
    res = compare.build([a, b])
    c = res["corruption"]
    assert c["run"].to_list() == ["before", "after"]
    for store, row in zip(stores, c.iter_rows(named=True)):
        truth = sql(store, "SELECT count(*) n, count(*) FILTER (WHERE corrupted) k FROM replies "
                           "WHERE corruption_class <> 'config'")
        assert (row["replies"], row["corrupted"]) == (truth["n"][0], truth["k"][0])
        assert (row["ci_low"], row["ci_high"]) == stats.wilson(row["corrupted"], row["replies"])
    base, other = c.row(0, named=True), c.row(1, named=True)
    assert base["verdict"] == "baseline"
    p = stats.fisher_exact(other["corrupted"], other["replies"] - other["corrupted"],
                           base["corrupted"], base["replies"] - base["corrupted"])
    assert other["p_value"] == p
    assert other["verdict"] == ("significant" if p < 0.05 else "within noise")


def test_throughput_bands_and_cli(stores):
    a, b = stores
    res = compare.build([a, b])
    bands = res["throughput"]
    assert set(bands["run"]) == {"before"}  # the second store holds transcripts only
    assert set(bands["band"]) <= {"low", "mid", "high"} and bands["stats_lines"].sum() > 0
    r = CliRunner().invoke(main, ["compare", a, b, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [x["run"] for x in doc["corruption"]] == ["before", "after"]
    r = CliRunner().invoke(main, ["compare", a, b])
    assert "Corruption rate per run" in r.output and "Decode throughput by concurrency band" in r.output
