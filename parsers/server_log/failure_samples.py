"""The failure, crash, foreign-line and PD warning shapes of real servers among the parser's samples
(parsers/server_log/samples.py lists them after its own, in this order)."""

import datetime

from forensics.parsers.base import Sample

failure_samples = [
    # failure, crash and foreign-line shapes of real servers: docs/formats/SGLANG.md,
    # "What real dumps carry"; docs/formats/NIXL.md, "UCX lines"
    Sample(
        "bootstrap_fetch_refused",
        "[2026-02-19 16:32:42 TP5] Error fetching prefill parallel info from bootstrap: HTTPConnectionPool("
        "host='10.0.0.41', port=8998): Max retries exceeded with url: /route?engine_rank=-1&target_dp_group=-1 "
        "(Caused by NewConnectionError(\"HTTPConnection(host='10.0.0.41', port=8998): Failed to establish a new "
        'connection: [Errno 111] Connection refused"))\n'
        "[2026-02-19 16:32:43 TP5] Error fetching prefill parallel info from bootstrap for bootstrap_room="
        "4751139391711345681: [Errno 111] Connection refused\n",
        {
            "events": [
                {
                    "kind": "bootstrap_failed",
                    "reason": "bootstrap_unreachable",
                    "severity": "error",
                    "bootstrap_room": None,
                    "tp_rank": 5,
                },
                {"kind": "bootstrap_failed", "reason": "bootstrap_unreachable", "bootstrap_room": 4751139391711345681},
            ]
        },
    ),
    Sample(
        "launcher_child_crash",
        "[2025-09-02 10:11:12] Child process unexpectedly failed with an exit code 131. pid=247\n"
        "[2025-09-02 10:11:12] Child process unexpectedly failed with an exit code 139. pid=251\n"
        "[2025-09-02 10:11:13] Child process unexpectedly failed with an exit code 134. pid=255\n",
        {
            "events": [
                {"kind": "crash", "severity": "fatal", "reason": "sigquit", "source": "sglang"},
                {"kind": "crash", "severity": "fatal", "reason": "sigsegv"},
                {"kind": "crash", "reason": "sigabrt"},
            ]
        },
    ),
    Sample(
        "crash_dump_torch_segfault",
        "!!!!!!! Segfault encountered !!!!!!!\n"
        '  File "<unknown>", line 0, in cuEventQuery\n'
        '  File "<unknown>", line 0, in c10::cuda::CUDAKernelLaunchRegistry::check\n',
        {
            "events": [
                {
                    "kind": "crash",
                    "severity": "fatal",
                    "reason": "sigsegv",
                    "source": "crash",
                    "traceback": '  File "<unknown>", line 0, in cuEventQuery\n'
                    '  File "<unknown>", line 0, in c10::cuda::CUDAKernelLaunchRegistry::check',
                }
            ]
        },
    ),
    Sample(
        "crash_dump_faulthandler",
        "Fatal Python error: Segmentation fault\n"
        "\n"
        "Thread 0x00007f2b5c7fe700 (most recent call first):\n"
        '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n'
        "\n"
        "Current thread 0x00007f2d8e0e3740 (most recent call first):\n"
        '  File "/sgl/srt/managers/scheduler.py", line 1234 in event_loop_overlap\n'
        '  File "/sgl/srt/managers/scheduler.py", line 2890 in run_scheduler_process\n'
        "\n"
        "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n",
        {"events": [{"kind": "crash", "severity": "fatal", "reason": "sigsegv", "line_no": 1, "exc_type": None}]},
    ),
    Sample(
        "crash_dump_ucx_signal",
        "[node-d0:4123 :0:4188] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))\n"
        "==== backtrace (tid:   4188) ====\n"
        " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2e4) [0x7f3a1c0b12e4]\n"
        " 1  /usr/lib/libucs.so.0(+0x2ab5f) [0x7f3a1c0b1b5f]\n"
        "=================================\n",
        {"events": [{"kind": "crash", "severity": "fatal", "reason": "sigsegv", "source": "crash"}]},
    ),
    # SGLang's PD warnings (docs/formats/SGLANG.md, "Warnings about requests in trouble" and "Aborts"): host-level signals, so no room and no rid
    Sample(
        "pd_bootstrap_timeout_per_dp_rank",
        "[2026-03-02 08:15:40 DP0 TP0] Some requests timed out when bootstrapping, which means prefill instances "
        "fail to receive the KV indices from the decode instance of this request. If a greater mean TTFT is "
        "acceptable, you can 'export SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=600' (10 minutes) to relax the "
        "timeout condition. \n"
        "[2026-03-02 08:15:40 DP1 TP1] Some requests timed out when bootstrapping, which means prefill inst\n",
        {
            "events": [
                {
                    "kind": "pd_timeout",
                    "severity": "warning",
                    "reason": "bootstrap_timeout",
                    "bootstrap_room": None,
                    "rid": None,
                    "dp_rank": 0,
                },
                {"kind": "pd_timeout", "reason": "bootstrap_timeout", "bootstrap_room": None, "dp_rank": 1},
            ]
        },
    ),
    Sample(
        "pd_waiting_timeout_after_unittest_dots",
        "......Some requests fail to receive KV Cache transfer done signal after bootstrapping. If a greater "
        "mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to "
        "relax the timeout condition. \n",
        {
            "events": [
                {
                    "kind": "pd_timeout",
                    "severity": "warning",
                    "reason": "waiting_timeout",
                    "source": "sglang",
                    "prefix": "......",
                    "bootstrap_room": None,
                    "rid": None,
                }
            ]
        },
    ),
    Sample(
        "pd_heartbeat_and_registration",
        "[2026-03-02 08:16:02 TP0] Attempting to reconnect to 10.20.0.7:8998...\n"
        "[2026-03-02 08:16:09 TP0] Prefill instance failed to register to bootstrap server after 5 retries\n",
        {
            "events": [
                {"kind": "heartbeat_failed", "severity": "warning", "reason": "heartbeat", "bootstrap_room": None},
                {"kind": "bootstrap_failed", "severity": "error", "reason": "bootstrap_register"},
            ]
        },
    ),
    Sample(
        "pd_kv_pool_and_late_output",
        "[2026-03-02 08:17:11 DP2 TP2] Eviction insufficient: needed 8192 tokens, available 2048 after evicting 1024\n"
        "[2026-03-02 08:17:12 DP2 TP2] KV cache pool is full. Retract requests. #retracted_reqs: 3, "
        "#new_token_ratio: 0.4000 -> 0.7000\n"
        "[2026-03-02 08:17:13] Received output for rid='5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4' but the state was deleted "
        "in TokenizerManager.\n"
        "[2026-03-02 08:17:14 TP0] Deferred KV release for room 5512093381277461207 timed out after 30.0s without "
        "a full drain ack from prefill; releasing anyway.\n"
        "[2026-03-02 08:17:15 TP0] Request 9d2e4f6a8b0c1d3e5f7a9b1c3d5e7f90 exceeds the maximum number of tokens: "
        "131072 > 120000\n",
        {
            "events": [
                {"kind": "kv_pool_full", "severity": "warning", "reason": "kv_pool_full", "dp_rank": 2},
                {"kind": "retract", "severity": "warning", "reason": "kv_pool_full"},
                {
                    "kind": "late_output",
                    "severity": "warning",
                    "reason": "state_deleted",
                    "rid": "5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4",
                },
                {"kind": "deferred_release", "reason": "release_timeout", "bootstrap_room": 5512093381277461207},
                {
                    "kind": "request_rejected",
                    "severity": "error",
                    "reason": "too_long",
                    "rid": "9d2e4f6a8b0c1d3e5f7a9b1c3d5e7f90",
                },
            ]
        },
    ),
    Sample(
        "pd_transport_peers",
        "[2026-03-02 08:18:00 TP3] NIXL invalidated remote agent 7d1c9e4a; reloading its metadata\n"
        "[2026-03-02 08:18:01 TP0] Mooncake Transfer Engine initialization failed.\n"
        "[2026-03-02 08:18:02 TP0] Prefill transfer kvcache error, layers_current_pp_stage is out of range: 61\n"
        "[1772439482.117733] [node-p1:5120 :1]        ucp_ep.c:1512 UCX  ERROR   ep 0x7f2a: error "
        "'Endpoint timeout' on rc_mlx5/mlx5_0:1 will not be handled\n",
        {
            "events": [
                {"kind": "peer_disconnect", "severity": "warning", "reason": "remote_disconnect", "tp_rank": 3},
                {"kind": "mooncake_error", "severity": "error", "reason": "engine_init"},
                {"kind": "transfer_failed", "severity": "error", "reason": "config"},
                {"kind": "ucx_error", "severity": "error", "reason": "transport"},
            ]
        },
    ),
    Sample(
        "hard_negative_timed_out_mentions",
        "[2026-03-02 08:19:00] Some requests were served from the cache; none timed out\n"
        "[2026-03-02 08:19:01 TP0] Watchdog tolerance: requests timed out are retried by the router\n",
        {"events": [{"kind": "log", "severity": "info", "reason": None}, {"kind": "log", "severity": "info"}]},
    ),
    Sample(
        "crash_dump_backtrace_without_its_signal",
        "[2026-03-02 08:20:00 TP0] Decode batch, #running-req: 1, #token: 208, token usage: 0.00, #queue-req: 0\n"
        "==== backtrace (tid:   9120) ====\n"
        " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2dc) [0x7f11c8a1f2dc]\n"
        "=================================\n",
        {
            "events": [
                {
                    "kind": "crash",
                    "severity": "fatal",
                    "source": "crash",
                    "line_no": 2,
                    "traceback": " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2dc) [0x7f11c8a1f2dc]\n"
                    "=================================",
                }
            ],
            "batches": [{"running_req": 1}],
        },
    ),
    Sample(
        "ucx_without_head",
        "ib_mlx5_dv.c:433  UCX  ERROR   mlx5dv_devx_obj_modify(0x7f0a, CREATE_QP) failed, syndrome 0x5d668c: "
        "Remote I/O error\n",
        {"events": [{"kind": "ucx_error", "source": "ucx", "severity": "error", "ts": None}]},
    ),
    Sample(
        "sgl_router_rust",
        "2025-08-31 07:32:08 ERROR sglang_router_rs::routers::http::pd_router: src/routers/http/pd_router.rs:1319: "
        "Stream error from decode server http://10.0.0.9:30000: error decoding response body\n"
        "2025-08-31 07:32:09  WARN sglang_router_rs::core::worker: src/core/worker.rs:402: Worker http://10.0.0.9:30000 "
        "health check failed\n",
        {
            "events": [
                {
                    "kind": "router_error",
                    "source": "router",
                    "severity": "error",
                    "ts_raw": "2025-08-31 07:32:08",
                    "message": "Stream error from decode server http://10.0.0.9:30000: error decoding response body",
                },
                {
                    "kind": "health_check_failed",
                    "severity": "warning",
                    "reason": "health_check",
                    "peer": "http://10.0.0.9:30000",
                },
            ]
        },
    ),
    Sample(
        "sgl_router_request_spans",
        '2026-02-26 13:00:12  INFO http_request{method=POST uri=/v1/chat/completions version=HTTP/1.1 module="smg" '
        'request_id="chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D"}: smg::request: src/middleware.rs:310: started processing request\n'
        '2026-02-26 13:00:14 ERROR http_request{method=POST uri=/v1/chat/completions version=HTTP/1.1 module="smg" '
        'request_id="chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D"}: smg::routers::http::pd_router: src/routers/http/pd_router.rs:590: '
        "Decode server returned error status decode_url=http://10.0.0.12:30001 status=500 Internal Server Error\n"
        '2026-02-26 13:00:14 ERROR http_request{method=POST uri=/v1/chat/completions version=HTTP/1.1 module="smg" '
        'request_id="chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D" status_code=500 latency=2104}: smg::response: '
        "src/middleware.rs:340: request failed with server error\n"
        '2025-08-11 09:14:03 ERROR http_request{method=POST uri=/v1/completions version=HTTP/1.1 request_id="cmpl-A1b2"}: '
        "sglang_router_rs::routers::http::pd_router: src/routers/http/pd_router.rs:421: Failed to select PD pair "
        "error=No prefill workers available. Please check if prefill servers are configured and healthy.\n"
        # outside a span (a filtered target): a signal of the router's host, naming no request
        "2025-08-11 09:14:05 ERROR sglang_router_rs::routers::http::pd_router: src/routers/http/pd_router.rs:612: "
        "Prefill server returned error status prefill_url=http://10.0.0.8:30000 status=503 body=overloaded\n",
        {
            "events": [
                {
                    "kind": "router_log",
                    "rid": "chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D",
                    "message": "started processing request",
                },
                {
                    "kind": "router_failure",
                    "source": "router",
                    "severity": "error",
                    "reason": "decode_error_status",
                    "rid": "chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D",
                    "http_status": 500,
                    "peer": "http://10.0.0.12:30001",
                },
                {"kind": "router_failure", "reason": "server_error", "http_status": 500},
                {"kind": "router_failure", "reason": "no_workers", "rid": "cmpl-A1b2", "ts_raw": "2025-08-11 09:14:03"},
                {
                    "kind": "router_failure",
                    "reason": "prefill_error_status",
                    "rid": None,
                    "http_status": 503,
                    "peer": "http://10.0.0.8:30000",
                },
            ]
        },
    ),
    Sample(
        "uvicorn_5xx_answer_is_an_error",
        '[2026-03-02 08:19:01] INFO:     10.0.0.3:51234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
        'INFO:     10.0.0.3:51240 - "POST /generate HTTP/1.1" 200 OK\n',
        {
            "events": [
                {"kind": "http_access", "http_status": 500, "severity": "error", "reason": "server_error"},
                {"kind": "http_access", "http_status": 200, "severity": "info", "reason": None},
            ]
        },
    ),
    Sample(
        "aiohttp_bootstrap_access_and_glog_notice",
        '[2025-06-26 02:04:08] 10.0.0.7 [26/Jun/2025:02:04:08 +0000] "PUT /route HTTP/1.1" 200 155 "-" '
        '"python-requests/2.32.3"\n'
        "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
        '10.0.0.8 [26/Jun/2025:10:04:09 +0800] "GET /metadata?key=mooncake HTTP/1.1" 404 14 "-" "python-requests/2.32.3"\n',
        {
            "events": [
                {
                    "kind": "bootstrap_access",
                    "source": "aiohttp",
                    "http_status": 200,
                    "http_method": "PUT",
                    "http_path": "/route",
                    "peer": "10.0.0.7",
                },
                {"kind": "glog", "source": "glog"},
                {
                    "kind": "bootstrap_access",
                    "source": "aiohttp",
                    "http_status": 404,
                    "http_method": "GET",
                    "ts_raw": "26/Jun/2025:10:04:09 +0800",
                    "ts": datetime.datetime(2025, 6, 26, 2, 4, 9, tzinfo=datetime.timezone.utc),
                },
            ]
        },
    ),
    Sample(
        "exception_names_its_room_in_its_last_line",
        "[2026-03-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/srt/disaggregation/decode.py", line 812, in pop_transferred\n'
        "    raise KVTransferError(self.bootstrap_room, failure_reason)\n"
        "sglang.srt.disaggregation.base.conn.KVTransferError: KVTransferError(bootstrap_room=4751139391711345681): "
        "Failed to get kvcache from prefill instance, it might be dead\n",
        {
            "events": [
                {
                    "kind": "exception",
                    "bootstrap_room": 4751139391711345681,
                    "reason": "node_failure",
                    "exc_type": "sglang.srt.disaggregation.base.conn.KVTransferError",
                }
            ]
        },
    ),
    Sample(
        "kvtransfererror_alone_at_excerpt_start",
        "sglang.srt.disaggregation.base.conn.KVTransferError: KVTransferError(bootstrap_room=687467831379323517): "
        "Failed to get kvcache from prefill instance, it might be dead\n",
        {"events": [{"kind": "exception", "bootstrap_room": 687467831379323517, "reason": "node_failure"}]},
    ),
    Sample(
        "traceback_tail_at_excerpt_start",
        "    req_conns = self.disagg_decode_prealloc_queue.pop_preallocated()\n"
        "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/sgl/srt/disaggregation/decode.py", line 512, in pop_preallocated\n'
        "    raise RuntimeError('prealloc queue corrupted')\n"
        "RuntimeError: prealloc queue corrupted\n"
        "[2026-03-01 10:00:00 TP0] Decode batch, #running-req: 1, #token: 208, token usage: 0.00, #queue-req: 0\n",
        {
            "events": [{"kind": "exception", "source": "python", "exc_type": "RuntimeError", "line_no": 1}],
            "batches": [{"running_req": 1}],
        },
    ),
    # two writers on one stderr: a crash head or a glog line run into another writer's unfinished
    # line is a record of its own, the other text its prefix (docs/formats/SGLANG.md, "Interleaved
    # writers and lone frames")
    Sample(
        "crash_head_glued_mid_line",
        '  File "/usr/lib/python3.10/site-packages/sglang/srt/utils.pyFatal Python error: Segmentation fault\n'
        "\n"
        "Current thread 0x00007f51c2e4b740 (most recent call first):\n"
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 880 in event_loop_overlap\n'
        "somebody else's unfinished lineE0311 09:14:02.118204  5120 nixl_agent.cpp:640] transfer failed\n",
        {
            "events": [
                {
                    "line_no": 1,
                    "kind": "crash",
                    "reason": "sigsegv",
                    "message": "Fatal Python error: Segmentation fault",
                    "prefix": '  File "/usr/lib/python3.10/site-packages/sglang/srt/utils.py',
                    "ts_raw": None,
                },
                {
                    "line_no": 5,
                    "source": "glog",
                    "kind": "nixl_error",
                    "ts_raw": "E0311 09:14:02.118204",
                    "prefix": "somebody else's unfinished line",
                },
            ]
        },
    ),
    Sample(
        "lone_frame_line_is_no_exception",
        "[2026-03-01 10:00:00 TP0] Decode batch, #running-req: 1, #token: 208, token usage: 0.00, #queue-req: 0\n"
        '  File "/sgl/srt/managers/scheduler.py", line 1021, in event_loop_normal\n',
        {"batches": [{"running_req": 1}], "unparsed": [{"line_no": 2, "reason": "orphan_continuation"}]},
    ),
]
