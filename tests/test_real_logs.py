"""Every line of every real excerpt (tests/conftest.py's REAL_LOGS) is parsed or lands in unparsed with a reason."""

import pytest

from tests.conftest import ingest_paths, sql

pytestmark = pytest.mark.real_data

# file -> (stats lines, checks on batches (line_no -> {column: value}))
EXPECTED = {
    "01_pd_prefill_stats_dp_tp_ep_unbootstrapped.log": (
        6,
        {
            1: {
                "kind": "prefill",
                "dp_rank": 14,
                "tp_rank": 14,
                "ep_rank": 14,
                "new_token": 68,
                "bootstrap_req": 0,
                "inflight_req": 1,
                "input_throughput": 1326.0,
            },
            6: {"queue_req": 2, "inflight_req": 1, "input_throughput": None, "tail": "input throughput (token/s):"},
        },
    ),
    "04_pd_mooncake_te_metrics_prefill_stats_v04.log": (
        2,
        {
            9: {"dp_rank": 8, "new_seq": 7, "running_req": 0, "bootstrap_req": 375, "inflight_req": 166},
            10: {"dp_rank": 12, "bootstrap_req": 304, "inflight_req": 16},
        },
    ),
    "07_pd_decode_stats_kibana_prefix_glm51.log": (
        3,
        {
            2: {
                "kind": "decode",
                "dp_rank": 2,
                "num_token": 31936,
                "accept_len": 2.1,
                "accept_rate": 0.37,
                "prealloc_usage": 0.0,
                "transfer_req": 0,
                "retracted_req": 0,
                "gen_throughput": 0.39,
            },
            3: {"gen_throughput": 43.98, "accept_len": 2.6},
        },
    ),
    "13_prefill_stats_2024_cache_hit_rate.log": (
        8,
        {
            1: {"cached_token": 888, "cache_hit_rate": 0.0, "token_usage": 0.11, "running_req": 69, "queue_req": 130},
            7: {"cached_token": 786, "queue_req": 124},
        },
    ),
    "15a_mixed_prefill_uvicorn_tqdm_prefix_apr2026.log": (
        5,
        {
            1: {"new_token": 148, "running_req": 31, "cuda_graph": True, "input_throughput": 2074.38},
            9: {"new_token": 172, "input_throughput": 4042.2},
        },
    ),
    "18_decode_stats_multinode_dp_tp.log": (
        9,
        {
            1: {"dp_rank": 9, "tp_rank": 9, "running_req": 12, "num_token": 768, "gen_throughput": 3.83},
            8: {"dp_rank": 8},
        },
    ),
    "nixl_01_nixl1983_sglang_prefill_ucx_srd_flush_errors.log": (
        1,
        {
            2: {"pending_token": 0, "bootstrap_req": 0, "inflight_req": 1, "input_throughput": 178.18},
        },
    ),
    "nixl_08_sglang5709_nixl_agent_init_prefill_warmup.log": (1, {13: {"new_token": 4, "bootstrap_req": 0}}),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory, request):
    from tests.conftest import REAL_LOGS, missing

    if not REAL_LOGS.is_dir():
        missing("the real excerpts are not present")
    d = tmp_path_factory.mktemp("real")
    ingest_paths(sorted(REAL_LOGS.glob("*.log")), d, jobs=1)
    return d


def test_accounting_is_exact(store, real_logs):
    files = sql(store, "SELECT path, lines, parsed_lines, continuation_lines, unparsed_lines FROM files")
    assert files.height == len(list(real_logs.glob("*.log")))
    for r in files.iter_rows(named=True):
        raw = open(r["path"], "rb").read()
        n = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
        assert r["lines"] == n == r["parsed_lines"] + r["continuation_lines"] + r["unparsed_lines"], r
        unparsed = sql(store, "SELECT count(*) n FROM unparsed WHERE source_file = $p", p=r["path"])["n"][0]
        assert unparsed == r["unparsed_lines"]
    assert sql(store, "SELECT count(*) n FROM unparsed WHERE reason IS NULL")["n"][0] == 0


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stats_lines(store, name):
    count, checks = EXPECTED[name]
    df = sql(store, "SELECT * FROM batches WHERE source_file LIKE '%/' || $n ORDER BY line_no", n=name)
    assert df.height == count
    rows = {r["line_no"]: r for r in df.iter_rows(named=True)}
    for line_no, exp in checks.items():
        for k, v in exp.items():
            assert rows[line_no][k] == v, (name, line_no, k)


def test_failure_lines_carry_their_room(store):
    df = sql(
        store,
        "SELECT source_file, line_no, bootstrap_room, reason, rid FROM events "
        "WHERE kind IN ('transfer_failed', 'bootstrap_failed') ORDER BY source_file, line_no",
    )
    assert df.height == 5
    assert df["bootstrap_room"].null_count() == 0
    by = {(r["source_file"].rsplit("/", 1)[1], r["line_no"]): r for r in df.iter_rows(named=True)}
    assert by[("03_pd_mooncake_decode_abort_kvtransfererror.log", 8)]["bootstrap_room"] == 4793981895866140836
    assert by[("03_pd_mooncake_decode_abort_kvtransfererror.log", 8)]["reason"] == "aborted"
    p = by[("nixl_05_llmd2433_sglang_nixl_transfer_worker_error.log", 9)]
    d = by[("nixl_05_llmd2433_sglang_nixl_transfer_worker_error.log", 13)]
    assert p["bootstrap_room"] == d["bootstrap_room"] == 1788380104266545413
    assert p["rid"] != d["rid"]


def test_kibana_and_k8s_times(store):
    # Kibana's viewer clock is UTC+8 against the UTC container: the access line with no inner time
    # gets the calibrated outer time.
    t = sql(store, "SELECT strftime(ts, '%H:%M:%S.%g') t FROM events WHERE source_file LIKE '%07_pd_%' AND line_no = 1")
    assert t["t"][0] == "12:44:54.728"
    tb = sql(store, "SELECT exc_type, traceback FROM events WHERE source_file LIKE '%20_k8s%' AND kind = 'exception'")
    assert tb.height == 1 and "serving_chat.py" in tb["traceback"][0]
    ucx = sql(store, "SELECT count(*) n FROM events WHERE kind = 'ucx_error' AND message LIKE '%Flushed%'")
    assert ucx["n"][0] == 3
