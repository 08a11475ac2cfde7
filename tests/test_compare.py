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
        truth = sql(
            store,
            "SELECT count(*) n, count(*) FILTER (WHERE corrupted) k FROM replies WHERE corruption_class <> 'config'",
        )
        assert (row["replies"], row["corrupted"]) == (truth["n"][0], truth["k"][0])
        assert (row["ci_low"], row["ci_high"]) == stats.wilson(row["corrupted"], row["replies"])
    base, other = c.row(0, named=True), c.row(1, named=True)
    assert base["verdict"] == "baseline"
    p = stats.fisher_exact(
        other["corrupted"],
        other["replies"] - other["corrupted"],
        base["corrupted"],
        base["replies"] - base["corrupted"],
    )
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


_LEAK = (
    'Reading it.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="read">\n<｜DSML｜parameter '
    'name="filePath" string="true">config.py</｜DSML｜parameter>\n</｜DSML｜invoke>'
)
_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]},
        },
    }
]


def _proxy_run(path, replies, corrupted):
    """A proxy log of `replies` exchanges, `corrupted` of them leaking DSML, spread after clean ones."""
    leaks = {replies - 1 - i * (replies // corrupted) for i in range(corrupted)} if corrupted else set()
    assert len(leaks) == corrupted and 0 not in leaks
    lines = []
    for i in range(replies):
        t0 = 1793354400 + 20 * i
        body = {"model": "deepseek-v3.2", "tools": _TOOLS, "messages": [{"role": "user", "content": f"question {i}"}]}
        # the clean replies call the tool properly, so the leaks are not a session-wide template problem
        msg, finish = (
            ({"role": "assistant", "content": _LEAK}, "stop")
            if i in leaks
            else (
                {
                    "role": "assistant",
                    "content": "Reading it.",
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": "read", "arguments": json.dumps({"filePath": f"m{i}.py"})},
                        }
                    ],
                },
                "tool_calls",
            )
        )
        lines.append({"ts": t0, "dir": "req", "conn": f"c-{i}", "body": body})
        lines.append(
            {
                "ts": t0 + 5,
                "dir": "resp",
                "conn": f"c-{i}",
                "status": 200,
                "body": {
                    "id": f"chatcmpl-{i}",
                    "object": "chat.completion",
                    "model": "deepseek-v3.2",
                    "choices": [{"index": 0, "finish_reason": finish, "message": msg}],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 41},
                },
            }
        )
    path.mkdir(parents=True)
    (path / "proxy.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))


@pytest.fixture(scope="module")
def rates_22_17(tmp_path_factory):
    root = tmp_path_factory.mktemp("rates")
    _proxy_run(root / "in22", 100, 22)
    _proxy_run(root / "in17", 100, 17)
    a, b = root / "r22", root / "r17"
    ingest_paths([root / "in22"], a, jobs=1)
    ingest_paths([root / "in17"], b, jobs=1)
    return str(a), str(b)


def test_22_vs_17_percent_is_a_test_with_p_and_intervals(rates_22_17):
    a, b = rates_22_17
    res = compare.build([a, b])
    assert res["baseline"] == {"run": "r22", "store": a, "chosen_by": "the first store given"}
    base, other = res["corruption"].rows(named=True)
    assert (base["run"], base["replies"], base["corrupted"], base["verdict"]) == ("r22", 100, 22, "baseline")
    assert base["p_value"] is None and base["difference"] is None
    assert (other["run"], other["corrupted"], other["vs"]) == ("r17", 17, "r22")
    # Fisher exact on [[17, 83], [22, 78]]: p = 0.4756 (scipy.stats.fisher_exact)
    assert other["p_value"] == pytest.approx(0.4756, abs=1e-4) and other["q_value"] == other["p_value"]
    assert other["difference"] == pytest.approx(-0.05)
    assert (other["difference_low"], other["difference_high"]) == stats.rate_difference_ci(17, 100, 22, 100)
    assert other["difference_low"] < 0 < other["difference_high"]
    assert other["risk_ratio"] == pytest.approx(17 / 22)
    assert other["risk_ratio_low"] < 1 < other["risk_ratio_high"]
    assert other["verdict"] == "within noise"


def test_baseline_flag_picks_the_run_and_the_header_says_which(rates_22_17):
    a, b = rates_22_17
    res = compare.build([a, b], baseline=b)
    assert res["baseline"]["run"] == "r17" and res["baseline"]["chosen_by"] == "--baseline"
    assert [r["run"] for r in res["corruption"].rows(named=True)] == ["r17", "r22"]
    other = res["corruption"].row(1, named=True)
    assert other["difference"] == pytest.approx(0.05) and other["risk_ratio"] == pytest.approx(22 / 17)
    # a baseline store not listed is compared too, as the baseline
    assert compare.build([a], baseline=b)["baseline"]["run"] == "r17"
    r = CliRunner().invoke(main, ["compare", a, b])
    assert r.exit_code == 0, r.output
    assert f"Baseline: run `r22` of store `{a}` (the first store given" in r.output
    assert "0.48" in r.output and "-5.0 pts" in r.output and "within noise" in r.output
    r = CliRunner().invoke(main, ["compare", a, b, "--baseline", "r17", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["baseline"]["run"] == "r17" and doc["corruption"][0]["verdict"] == "baseline"
    r = CliRunner().invoke(main, ["compare", a, b, "--baseline", "nope"])
    assert r.exit_code == 2 and "neither a store nor a single run label" in r.output and "r17, r22" in r.output


def test_several_runs_against_one_baseline_are_corrected(rates_22_17, tmp_path):
    a, b = rates_22_17
    _proxy_run(tmp_path / "in5", 100, 5)
    c = tmp_path / "r5"
    ingest_paths([tmp_path / "in5"], c, jobs=1)
    rows = compare.build([a, b, str(c)])["corruption"].rows(named=True)
    ps = [r["p_value"] for r in rows[1:]]
    assert [r["q_value"] for r in rows[1:]] == pytest.approx(stats.benjamini_hochberg(ps))
    # 5% against 22%: Fisher p = 0.00068 (scipy), the smaller of two, so q = 2 * p / 1: significant
    five = next(r for r in rows if r["run"] == "r5")
    assert five["p_value"] < 0.001 and five["verdict"] == "significant" and five["difference_high"] < 0


def test_a_run_without_corrupted_replies_has_a_ratio_inside_its_interval(tmp_path):
    _proxy_run(tmp_path / "in_clean", 40, 0)
    _proxy_run(tmp_path / "in_bad", 40, 6)
    ingest_paths([tmp_path / "in_clean"], tmp_path / "clean", jobs=1)
    ingest_paths([tmp_path / "in_bad"], tmp_path / "bad", jobs=1)
    [_, clean] = compare.build([str(tmp_path / "bad"), str(tmp_path / "clean")])["corruption"].rows(named=True)
    assert clean["risk_ratio"] == 0 == clean["risk_ratio_low"] < clean["risk_ratio_high"] < 2
    [_, bad] = compare.build([str(tmp_path / "clean"), str(tmp_path / "bad")])["corruption"].rows(named=True)
    assert 0 < bad["risk_ratio_low"] < bad["risk_ratio"] == bad["risk_ratio_high"] == float("inf")
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "bad"), str(tmp_path / "clean")])
    assert "| clean | 40 | 0 | 0.0% (0.0-8.8) | bad | -15.0 pts (-29.1 to -3.2) | 0 (0-1.32) |" in r.stdout
