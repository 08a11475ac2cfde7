"""Other engines' P/D failures as a person reading their logs counts them: vLLM's NIXL and Mooncake
connectors, TensorRT-LLM's cache transceiver, Dynamo's KV router.

The lines are written for these tests from the engines' logger formats and message templates
(docs/formats/OTHER_ENGINES.md, "What is read of them"), not taken from the project's generator.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from forensics.cli import main

# a vLLM P/D pair: decode fails to read one request's KV from prefill and the next one's handshake;
# prefill, 480 s later, frees the blocks decode never read. Two TP workers log the same failure.
VLLM_DECODE = """\
(APIServer pid=100) INFO 09-04 10:52:40 [api_server.py:1800] vLLM API server version 0.11.0
(Worker_TP0 pid=2290) ERROR 09-04 10:52:47 [nixl_connector.py:1612] NIXL transfer failed for request cmpl-aa11-0 with state ERR. Marking blocks as invalid.
(Worker_TP1 pid=2291) ERROR 09-04 10:52:47 [nixl_connector.py:1612] NIXL transfer failed for request cmpl-aa11-0 with state ERR. Marking blocks as invalid.
(EngineCore_DP0 pid=2211) WARNING 09-04 10:52:47 [scheduler.py:1402] Recovered from KV load failure: 1 request(s) rescheduled (2048 tokens affected).
(Worker_TP0 pid=2290) ERROR 09-04 10:52:50 [nixl_connector.py:905] Handshake with 7d3f0c4e-1a2b-4c5d-9e8f-0a1b2c3d4e5f failed
(Worker_TP0 pid=2290) ERROR 09-04 10:52:50 [nixl_connector.py:905] Traceback (most recent call last):
(Worker_TP0 pid=2290) ERROR 09-04 10:52:50 [nixl_connector.py:905]   File "/opt/vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", line 880, in _nixl_handshake
(Worker_TP0 pid=2290) ERROR 09-04 10:52:50 [nixl_connector.py:905]     metadata_bytes = sock.recv()
(Worker_TP0 pid=2290) ERROR 09-04 10:52:50 [nixl_connector.py:905] zmq.error.Again: Resource temporarily unavailable
(Worker_TP0 pid=2290) ERROR 09-04 10:52:50 [nixl_connector.py:930] Handshake failed for request cmpl-bb22-0, marking blocks as invalid
(EngineCore_DP0 pid=2211) INFO 09-04 10:53:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%, Prefix cache hit rate: 0.0%
"""
VLLM_PREFILL = """\
(EngineCore_DP0 pid=881) INFO 09-04 10:52:30 [core.py:71] Initializing a V1 LLM engine (v0.11.0) with config: model='m'
(EngineCore_DP0 pid=881) WARNING 09-04 11:00:47 [nixl_connector.py:1560] Releasing expired KV blocks for request cmpl-aa11-0 which were retrieved by 0 decode worker(s) within 480 seconds.
"""

# TensorRT-LLM's context server: the C++ logger's error names the request, carries no time, and the
# executor's timeout warning for the same request follows it
TRTLLM_CTX = """\
[TensorRT-LLM] TensorRT-LLM version: 1.1.0
[09/17/2025-16:23:13] [TRT-LLM] [RANK 0] [I] iter = 812, global_rank = 0, rank = 0, currank_total_requests = 4/16
[TensorRT-LLM][ERROR] Error occurred during context transfer for request 2251799813685249: AgentConnection::send failed
[09/17/2025-16:24:02] [TRT-LLM] [RANK 0] [W] Terminating context request 2251799813685249 due to KV cache transfer timeout
"""

# Dynamo's frontend: an INFO line that quotes an exception is no failure; the KV router's WARN for a
# lost prefill leg names its request
DYNAMO = """\
2026-07-06T02:45:29.886032Z  INFO dynamo_runtime::distributed: Initialized distributed runtime namespace=dynamo
2026-07-06T02:45:30.100000Z  INFO dynamo_runtime::pipeline::network: Exception: stream closed by peer, reconnecting
2026-07-06T02:45:41.102544Z  WARN http-request:completions: dynamo_llm::kv_router: Failed to mark prefill completed for request 3b9d2f4e-6c1a-4e8b-9f0d-2a7c5e1b8d34: Request ID not found in request_to_worker mapping method=POST
"""


def run(*args) -> str:
    r = CliRunner(env={"COLUMNS": "200", "TZ": "UTC"}).invoke(main, [str(a) for a in args])
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    assert r.exit_code == 0, r.output
    return r.stdout


def _store(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        p = tmp_path / "dump" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    store = tmp_path / "store"
    run("ingest", tmp_path / "dump", "--store", store, "--year", "2025")
    return store


def _rows(store, sql: str) -> list[dict]:
    return json.loads(run("sql", sql, "--store", store, "--format", "json"))


def test_a_vllm_pd_pairs_failures_are_requests_by_their_ids(tmp_path):
    store = _store(tmp_path, {"decode-0/vllm.log": VLLM_DECODE, "prefill-0/vllm.log": VLLM_PREFILL})
    got = _rows(
        store,
        "SELECT request_key, sides, hosts, first_side, first_reason, n_lines, n_ranks FROM failed_requests ORDER BY 1",
    )
    # one request however many workers logged it, its two sides joined by its id; the handshake
    # failure naming no request is a signal, not a request
    assert got == [
        {
            "request_key": "rid:cmpl-aa11-0",
            "sides": "prefill+decode",
            "hosts": ["decode-0", "prefill-0"],
            "first_side": "decode",
            "first_reason": "transport",
            "n_lines": 3,
            "n_ranks": 3,
        },
        {
            "request_key": "rid:cmpl-bb22-0",
            "sides": "decode",
            "hosts": ["decode-0"],
            "first_side": "decode",
            "first_reason": "bootstrap_info",
            "n_lines": 1,
            "n_ranks": 1,
        },
    ]
    signals = _rows(store, "SELECT kind, host, n_lines FROM failure_signals ORDER BY t_first")
    assert [(s["kind"], s["host"]) for s in signals] == [
        ("transport_warning", "decode-0"),
        ("bootstrap_failed", "decode-0"),
    ]
    # the handshake's traceback is one record: its frames and exception type, no event per line
    (hs,) = _rows(store, "SELECT traceback FROM events WHERE message LIKE 'Handshake with%'")
    assert hs["traceback"].count("\n") == 3 and hs["traceback"].endswith(
        "zmq.error.Again: Resource temporarily unavailable"
    )
    assert _rows(store, "SELECT count(*) AS n FROM unparsed")[0]["n"] == 0


def test_tensorrt_llms_context_failure_and_timeout_are_one_request(tmp_path):
    store = _store(tmp_path, {"ctx-0/trtllm.log": TRTLLM_CTX})
    (req,) = _rows(store, "SELECT request_key, sides, first_reason, n_lines, later_failures FROM failed_requests")
    assert req["request_key"] == "rid:2251799813685249" and req["sides"] == "prefill" and req["n_lines"] == 2
    # the untimed C++ line takes the time of the line above it
    (err,) = _rows(store, "SELECT ts, ts_placed FROM events WHERE message LIKE 'Error occurred%'")
    assert err["ts"].startswith("2025-09-17T16:23:13") and err["ts_placed"]
    assert _rows(store, "SELECT count(*) AS n FROM failure_signals")[0]["n"] == 0


def test_dynamos_lines_are_its_own_and_an_info_line_quoting_an_exception_is_none(tmp_path):
    store = _store(tmp_path, {"frontend/dynamo.log": DYNAMO})
    kinds = _rows(store, "SELECT kind, severity, source FROM events ORDER BY line_no")
    assert kinds == [
        {"kind": "dynamo_log", "severity": "info", "source": "dynamo"},
        {"kind": "dynamo_log", "severity": "info", "source": "dynamo"},
        {"kind": "transfer_failed", "severity": "warning", "source": "dynamo"},
    ]
    (req,) = _rows(store, "SELECT request_key, t_first FROM failed_requests")
    assert req["request_key"] == "rid:3b9d2f4e-6c1a-4e8b-9f0d-2a7c5e1b8d34"
    assert req["t_first"].startswith("2026-07-06T02:45:41.102544")
    assert _rows(store, "SELECT count(*) AS n FROM failure_signals")[0]["n"] == 0
