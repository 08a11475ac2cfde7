"""Other engines' lines among the parser's samples: vLLM, TensorRT-LLM and Dynamo, written in the
shapes their loggers print (docs/formats/OTHER_ENGINES.md, "What is read of them"); the message
texts follow the templates in their sources. parsers/server_log/samples.py lists them last."""

import datetime

from forensics.parsers.base import Sample

engine_samples = [
    Sample(
        "vllm_engine_core_fatal_error",
        # the formatter repeats the record's head on every line of its traceback: one record
        "(APIServer pid=100) INFO 09-17 16:23:11 [api_server.py:1800] vLLM API server version 0.10.2\n"
        "(EngineCore_DP0 pid=123) ERROR 09-17 16:23:13 [core.py:712] EngineCore encountered a fatal error.\n"
        "(EngineCore_DP0 pid=123) ERROR 09-17 16:23:13 [core.py:712] Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid=123) ERROR 09-17 16:23:13 [core.py:712]   File "/opt/vllm/v1/engine/core.py", line 703, '
        "in run_engine_core\n"
        "(EngineCore_DP0 pid=123) ERROR 09-17 16:23:13 [core.py:712]     engine_core.run_busy_loop()\n"
        "(EngineCore_DP0 pid=123) ERROR 09-17 16:23:13 [core.py:712] RuntimeError: CUDA error: an illegal memory "
        "access was encountered\n"
        "(APIServer pid=100) ERROR 09-17 16:23:14 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.\n",
        {
            "events": [
                {"kind": "vllm_log", "source": "vllm", "severity": "info", "ts_raw": "09-17 16:23:11"},
                {
                    "kind": "exception",
                    "source": "vllm",
                    "severity": "error",
                    "dp_rank": 0,
                    "exc_type": "RuntimeError",
                    "message": "EngineCore encountered a fatal error.",
                },
                {"kind": "exception", "severity": "error", "line_no": 7},
            ]
        },
    ),
    Sample(
        "vllm_nixl_connector_failures",
        "(Worker_TP1 pid=2290) ERROR 09-04 10:52:46 [nixl_connector.py:905] Handshake with "
        "7d3f0c4e-1a2b-4c5d-9e8f-0a1b2c3d4e5f failed\n"
        "(EngineCore_DP0 pid=2211) ERROR 09-04 10:52:47 [nixl_connector.py:1612] NIXL transfer failed for request "
        "cmpl-5f1c2a9e7b3d4e10-0 with state ERR. Marking blocks as invalid.\n"
        "(EngineCore_DP0 pid=2211) WARNING 09-04 10:52:47 [scheduler.py:1402] Recovered from KV load failure: "
        "1 request(s) rescheduled (2048 tokens affected).\n"
        "(Worker_DP0_PP0_TP3_EP3 pid=2291) ERROR 09-04 10:52:48 [nixl_connector.py:920] Handshake failed for request "
        "cmpl-99-0, marking blocks as invalid\n"
        "WARNING 09-04 10:54:50 nixl_connector.py:1560] Releasing expired KV blocks for request cmpl-5f1c2a9e7b3d4e10-0 "
        "which were retrieved by 0 decode worker(s) within 480 seconds.\n"
        "(VllmWorker rank=2 pid=9) ERROR 09-04 10:54:51 [nixl_connector.py:1580] Potentially invalid KV blocks for "
        "unrecognized request cmpl-42-0 were retrieved by a decode worker. They may have expired.\n"
        "(Worker_TP0 pid=2289) ERROR 09-04 10:54:52 [nixl_connector.py:880] RuntimeError: NIXL compatibility hash "
        "mismatch. Local: 1a2b, Remote: 3c4d.\n",
        {
            "events": [
                {"kind": "bootstrap_failed", "reason": "bootstrap_info", "rid": None, "tp_rank": 1},
                {
                    "kind": "transfer_failed",
                    "source": "vllm",
                    "severity": "error",
                    "rid": "cmpl-5f1c2a9e7b3d4e10-0",
                    "reason": "transport",
                    "dp_rank": 0,
                },
                {"kind": "transport_warning", "severity": "warning", "rid": None},
                {"kind": "bootstrap_failed", "rid": "cmpl-99-0", "dp_rank": 0, "tp_rank": 3},
                {
                    "kind": "transfer_failed",
                    "severity": "warning",
                    "reason": "release_timeout",
                    "ts_raw": "09-04 10:54:50",
                },
                {"kind": "transfer_failed", "reason": "state_deleted", "rid": "cmpl-42-0", "tp_rank": 2},
                {"kind": "bootstrap_failed", "reason": "config"},
            ]
        },
    ),
    Sample(
        "vllm_mooncake_connector_failures",
        "(EngineCore_DP0 pid=31) ERROR 11-19 23:10:25 [mooncake_connector.py:501] Error happens during tranfering "
        "kvcache for ['cmpl-a1-0', 'cmpl-b2-0'], see logs in prefiller.\n"
        "(EngineCore_DP0 pid=77) WARNING 11-19 23:11:25 [mooncake_connector.py:390] Request cmpl-c3-0 timed out "
        "after 480 seconds without being sent. Freeing its blocks on the producer side.\n"
        "(EngineCore_DP0 pid=77) ERROR 11-19 23:11:26 [mooncake_connector.py:420] Error processing Mooncake "
        "handshake: Error in batch_transfer_sync_write: -1\n"
        "(EngineCore_DP0 pid=77) WARNING 11-19 23:11:27 [mooncake_connector.py:360] Request cmpl-d4-0 not found in "
        "reqs_need_send\n"
        # a vendored fork's wording, the request named by decode's id for it
        "(EngineCore_DP0 pid=31) ERROR 11-19 23:12:00 [mooncake_connector.py:610] Mooncake transfer failed for "
        "request. remote_request_id=cmpl-e5-0, ret=-1\n",
        {
            "events": [
                {"kind": "transfer_failed", "rid": "cmpl-a1-0", "reason": "transfer_error"},
                {"kind": "transfer_failed", "rid": "cmpl-c3-0", "reason": "release_timeout"},
                {"kind": "bootstrap_failed", "rid": None, "reason": "bootstrap_info"},
                {"kind": "transport_warning", "rid": "cmpl-d4-0"},
                {"kind": "transfer_failed", "rid": "cmpl-e5-0", "reason": "transfer_error"},
            ]
        },
    ),
    Sample(
        "trtllm_cache_transceiver_failures",
        "[TensorRT-LLM] TensorRT-LLM version: 1.1.0\n"
        "[09/17/2025-16:23:13] [TRT-LLM] [RANK 0] [I] iter = 812, global_rank = 0, rank = 0, "
        "currank_total_requests = 4/16, host_step_time = 41.2ms\n"
        "[TensorRT-LLM][ERROR] Error occurred during context transfer for request 2251799813685249: "
        "AgentConnection::send failed\n"
        "[09/17/2025-16:24:02] [TRT-LLM] [RANK 0] [W] Terminating context request 2251799813685249 due to KV cache "
        "transfer timeout\n"
        "[09/17/2025-16:24:03] [TRT-LLM] [MPI_Rank 1] [W] Requesting cancellation for generation request 77 due to "
        "KV cache transfer timeout\n"
        "[TRT-LLM] [ERROR] [batch_ma] [RANK 0] Future returned unexpected status for request 88. Recording as failed.\n",
        {
            "events": [
                {"kind": "trtllm_log", "source": "trtllm", "severity": "info"},
                {"kind": "trtllm_log", "ts_raw": "09/17/2025-16:23:13", "tp_rank": 0},
                {"kind": "transfer_failed", "severity": "error", "rid": "2251799813685249", "reason": "transfer_error"},
                {"kind": "transfer_failed", "severity": "warning", "reason": "transfer_timeout"},
                {"kind": "transfer_failed", "rid": "77", "reason": "waiting_timeout", "tp_rank": 1},
                {"kind": "transfer_failed", "rid": "88", "reason": "transfer_error"},
            ]
        },
    ),
    Sample(
        "dynamo_tracing_lines",
        "2026-07-06T02:45:29.886032Z  INFO dynamo_runtime::distributed: Initialized distributed runtime "
        "namespace=dynamo\n"
        "2026-07-06T02:45:41.102544Z  WARN http-request:completions:completions_single: dynamo_llm::kv_router: "
        "Failed to mark prefill completed for request 3b9d2f4e-6c1a-4e8b-9f0d-2a7c5e1b8d34: Request ID not found "
        "method=POST uri=/v1/completions\n"
        "2026-07-06T02:45:42.000001Z ERROR dynamo_llm::kv_router::prefill_router: Prefill failed\n"
        "2026-07-06T02:45:43.907Z  INFO main.init: worker started\n",
        {
            "events": [
                {"kind": "dynamo_log", "source": "dynamo", "severity": "info"},
                {"kind": "transfer_failed", "severity": "warning", "rid": "3b9d2f4e-6c1a-4e8b-9f0d-2a7c5e1b8d34"},
                {"kind": "dynamo_error", "severity": "error", "message": "Prefill failed"},
                {"kind": "dynamo_log", "message": "worker started"},
            ]
        },
    ),
    Sample(
        "dynamo_json_lines",
        # DYN_LOGGING_JSONL=1: the same records as JSON, read as the compact line they stand for
        '{"time":"2026-07-06T02:45:41.102601Z","level":"ERROR","file":"lib/llm/src/kv_router/prefill_router.rs",'
        '"line":240,"target":"dynamo_llm::kv_router::prefill_router","message":"Failed to free request '
        '3b9d2f4e-6c1a-4e8b-9f0d-2a7c5e1b8d34: worker gone","span_name":"http-request","x_request_id":"req-42"}\n'
        '{"time":"2026-07-06T02:45:42.000001Z","level":"INFO","target":"log","log.target":"main.init",'
        '"log.file":"main.py","log.line":12,"message":"worker started"}\n',
        {
            "events": [
                {
                    "kind": "transfer_failed",
                    "severity": "error",
                    "source": "dynamo",
                    "rid": "3b9d2f4e-6c1a-4e8b-9f0d-2a7c5e1b8d34",
                    "ts": datetime.datetime(2026, 7, 6, 2, 45, 41, 102601, tzinfo=datetime.timezone.utc),
                },
                {"kind": "dynamo_log", "severity": "info", "message": "worker started"},
            ]
        },
    ),
]
