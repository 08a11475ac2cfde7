"""The parser's samples: contracts (tests/test_parser_samples.py), and together the proof that
every rule of the grammar matches a line (tests/test_grammar.py). Stats, prefixes, the NIXL
connector and one sample per grammar rule are here; the failure, crash, foreign-line and PD
warning shapes of real servers follow them, from failure_samples.py, and other engines' lines
last, from engine_samples.py."""

import datetime

from forensics.parsers.base import Sample
from forensics.parsers.server_log.engine_samples import engine_samples
from forensics.parsers.server_log.failure_samples import failure_samples

samples = [
    Sample(
        "prefill_0410_pd_trailing_comma",
        "[2025-10-15 14:44:32 DP14 TP14 EP14] Prefill batch. #new-seq: 2, #new-token: 68, #cached-token: 0, "
        "token usage: 0.01, #unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 1, input throughput (token/s): 1326.00, \n",
        {
            "batches": [
                {
                    "kind": "prefill",
                    "dp_rank": 14,
                    "tp_rank": 14,
                    "ep_rank": 14,
                    "new_token": 68,
                    "bootstrap_req": 0,
                    "inflight_req": 1,
                    "input_throughput": 1326.0,
                    "running_req": None,
                }
            ]
        },
    ),
    Sample(
        "prefill_2024_cache_hit_rate",
        "[2024-11-29 10:28:29 TP0] Prefill batch. #new-seq: 2, #new-token: 2048, #cached-token: 888, "
        "cache hit rate: 0.00%, token usage: 0.11, #running-req: 69, #queue-req: 130\n",
        {
            "batches": [
                {"kind": "prefill", "cached_token": 888, "cache_hit_rate": 0.0, "queue_req": 130, "running_req": 69}
            ]
        },
    ),
    Sample(
        "prefill_0515_bootstrap_req",
        "[2026-07-21 15:00:13 DP0 TP0 EP0] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 1024, "
        "token usage: 0.05, #running-req: 2, #queue-req: 1, #pending-token: 4096, #bootstrap-req: 3, #inflight-req: 5, "
        "cuda graph: False, input throughput (token/s): 15234.88\n",
        {"batches": [{"pending_token": 4096, "bootstrap_req": 3, "inflight_req": 5, "cuda_graph": False}]},
    ),
    Sample(
        "prefill_053_prealloc_is_bootstrap",
        "[2025-10-21 08:15:40 DP0 TP0 EP0] Prefill batch. #new-seq: 1, #new-token: 4096, #cached-token: 128, "
        "token usage: 0.03, #running-req: 0, #queue-req: 2, #prealloc-req: 1, #inflight-req: 4, \n",
        {"batches": [{"bootstrap_req": 1, "prealloc_req": None, "inflight_req": 4}]},
    ),
    Sample(
        "decode_pd_spec_kibana",
        "May 16, 2026 @ 20:44:55.560    [2026-05-16 12:44:55 DP2 TP2] Decode batch, #running-req: 1, #token: 31936, "
        "token usage: 0.22, accept len: 2.10, accept rate: 0.37, pre-allocated usage: 0.00, #prealloc-req: 0, "
        "#transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 0.39, #queue-req: 0    \n",
        {
            "batches": [
                {
                    "kind": "decode",
                    "dp_rank": 2,
                    "num_token": 31936,
                    "accept_len": 2.1,
                    "accept_rate": 0.37,
                    "prealloc_req": 0,
                    "transfer_req": 0,
                    "gen_throughput": 0.39,
                    "bootstrap_req": None,
                    "prefix": "May 16, 2026 @ 20:44:55.560",
                    "ts_raw": "2026-05-16 12:44:55",
                }
            ]
        },
    ),
    Sample(
        "decode_hybrid_swa_extra",
        "[2026-10-30 10:00:07.482 PP1 TP3] Decode batch, #running-req: 64, #full token: 120000, full token usage: 0.45, "
        "#swa token: 4000, swa token usage: 0.10, npu graph: True, gen throughput (token/s): 2450.12, #queue-req: 0\n",
        {
            "batches": [
                {
                    "pp_rank": 1,
                    "tp_rank": 3,
                    "num_token": 120000,
                    "token_usage": 0.45,
                    "graph_backend": "npu",
                    "cuda_graph": True,
                    "ts_raw": "2026-10-30 10:00:07.482",
                }
            ]
        },
    ),
    Sample(
        "decode_transfer_failed_aborted",
        "[2025-11-05 16:39:09 TP2] Decode transfer failed for request rank=2 decode_req.req.rid='78fde411d57a4d7791b63963eac74968' "
        "decode_req.req.bootstrap_room=4793981895866140836 with exception KVTransferError(bootstrap_room=4793981895866140836): "
        "Aborted by AbortReq.\n",
        {
            "events": [
                {
                    "kind": "transfer_failed",
                    "tp_rank": 2,
                    "rid": "78fde411d57a4d7791b63963eac74968",
                    "bootstrap_room": 4793981895866140836,
                    "reason": "aborted",
                    "severity": "error",
                }
            ]
        },
    ),
    Sample(
        "decode_waiting_timeout",
        "[2026-10-30 10:01:12 DP2 TP2] Decode transfer failed for request rank=2 decode_req.req.rid='c3a81f0e6b2d4f57a9e0d1c2b3a49586' "
        "decode_req.req.bootstrap_room=6593551520068383758 with exception KVTransferError(bootstrap_room=6593551520068383758): "
        "Request 6593551520068383758 timed out after 300.0s in KVPoll.WaitingForInput\n",
        {"events": [{"kind": "transfer_failed", "reason": "waiting_timeout", "bootstrap_room": 6593551520068383758}]},
    ),
    Sample(
        "corruption_detected",
        "[2026-10-30 10:01:40 DP5 TP5] Context corruption detected: Request 0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b "
        "(bootstrap_room=1188402291734905512) received metadata from bootstrap_room=6593551520068383758. "
        "Metadata buffer index: 17. This indicates metadata buffer index collision.\n",
        {
            "events": [
                {
                    "kind": "corruption_detected",
                    "rid": "0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b",
                    "bootstrap_room": 1188402291734905512,
                    "dp_rank": 5,
                }
            ]
        },
    ),
    Sample(
        "request_finish_text",
        "[2026-10-30 10:00:14] Finish: obj=GenerateReqInput(rid='9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1', bootstrap_room=4793981895866140836), "
        "out={'text': 'Let me open', 'meta_info': {'id': '9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1', 'finish_reason': "
        "{'type': 'stop', 'matched': 1}, 'prompt_tokens': 8192, 'completion_tokens': 509, 'cached_tokens': 1024, "
        "'e2e_latency': 14.21}}\n",
        {
            "events": [
                {
                    "kind": "request_finished",
                    "source": "request_log",
                    "finish_reason": "stop",
                    "prompt_tokens": 8192,
                    "completion_tokens": 509,
                    "e2e_latency": 14.21,
                    "bootstrap_room": 4793981895866140836,
                }
            ]
        },
    ),
    Sample(
        "request_received_json",
        '[2026-10-30 10:00:00] {"timestamp": "2026-10-30T10:00:00.123456", "event": "request.received", '
        '"rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1", "obj": {"bootstrap_room": 4793981895866140836}}\n',
        {
            "events": [
                {
                    "kind": "request_received",
                    "rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1",
                    "bootstrap_room": 4793981895866140836,
                }
            ]
        },
    ),
    Sample(
        "uvicorn_access_k8s",
        "2026-01-14T05:32:17.632471128Z [2026-01-14 05:32:17] INFO:     29.163.184.147:33006 - "
        '"POST /v1/chat/completions HTTP/1.1" 200 OK\n',
        {
            "events": [
                {
                    "kind": "http_access",
                    "http_status": 200,
                    "http_method": "POST",
                    "http_path": "/v1/chat/completions",
                    "peer": "29.163.184.147:33006",
                }
            ]
        },
    ),
    Sample(
        "traceback_folded",
        "[2026-01-14 05:32:17] Error in request: No tool calls but found tool output\n"
        "Traceback (most recent call last):\n"
        '  File "/x/serving_base.py", line 100, in handle_request\n'
        "    adapted_request = self._convert()\n"
        "ValueError: No tool calls but found tool output\n",
        {"events": [{"kind": "exception", "exc_type": "ValueError"}]},
    ),
    Sample(
        "c10_frames_fold_into_the_watchdog_line",
        "[rank3]:[E0904 10:52:50.118204633 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, NumelIn=7340032, NumelOut=7340032, Timeout(ms)=600000) ran "
        "for 600041 milliseconds before timing out.\n"
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 (most recent "
        "call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f5e1a2b61b6 in "
        "/usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)\n"
        "<omitting python frames>\n"
        "frame #1: clone + 0x44 (0x7f5e6a9a8850 in /lib/x86_64-linux-gnu/libc.so.6)\n",
        {"events": [{"line_no": 1, "kind": "collective_timeout", "exc_type": None}]},
    ),
    Sample(
        "c10_terminate_is_a_crash",
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception\n"
        "coredump: Starting GPU coredump generation\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f5e1a2b61b6 in "
        "/usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)\n",
        {"events": [{"line_no": 1, "kind": "crash", "reason": "sigabrt", "severity": "fatal"}]},
    ),
    Sample(
        "pyspy_dump_is_a_hang_dump",
        "Process 4121: python3 -m sglang.launch_server --disaggregation-mode prefill --port 30000\n"
        "Python v3.10.12 (/usr/bin/python3.10)\n"
        "\n"
        'Thread 4121 (active): "MainThread"\n'
        "    send (zmq/sugar/socket.py:701)\n"
        "    event_loop_pp_disagg_prefill (sglang/srt/disaggregation/prefill.py:388)\n"
        'Thread 4388 (idle): "Thread-3 (_transfer_worker)"\n'
        "    wait (threading.py:324)\n",
        {"events": [{"line_no": 1, "kind": "hang_dump", "source": "py-spy", "severity": "warning"}]},
    ),
    Sample(
        "pyspy_dump_under_the_watchdogs_line",
        "[2026-03-02 08:25:01 DP0 TP0] Pyspy dump for PID 4121:\n"
        "Process 4121: sglang::scheduler_DP0_TP0\n"
        "Python v3.12.3 (/usr/bin/python3.12)\n"
        "\n"
        "Thread 0x7F3A9C2B1740 (active+gil)\n"
        "    event_loop_normal_disagg_decode (decode.py:812)\n"
        "\n"
        "[2026-03-02 08:25:02 DP0 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n",
        {
            "events": [
                {"line_no": 1, "kind": "hang_dump", "source": "sglang", "severity": "warning"},
                {"line_no": 8, "kind": "watchdog_timeout"},
            ]
        },
    ),
    Sample(
        "transport_warnings",
        "W0917 16:23:13.419399 12345 rdma_context.cpp:372] Too many errors found in local RNIC mlx5_1, mark it "
        "inactive\n"
        "I0917 16:23:14.000001 12345 transfer_engine.cpp:512] Sync batch data transfer timeout after 30000000000ns\n"
        "W0917 16:23:15.100000  4242 ucx_backend.cpp:88] Unexpected UCX error: Request canceled\n"
        "W0917 16:23:16.200000  4242 transfer_metadata_plugin.cpp:611] Session::readHeader failed\n",
        {
            "events": [
                {"kind": "transport_warning", "source": "glog", "severity": "warning"},
                {"kind": "transport_warning", "source": "glog", "severity": "info"},
                {"kind": "transport_warning", "source": "glog", "severity": "warning", "reason": "transport"},
                {"kind": "transport_warning", "source": "glog", "severity": "warning"},
            ]
        },
    ),
    Sample(
        "nixl_glog",
        "E0801 15:40:05.041554    1049 nixl_agent.cpp:92] postXferReq: remote agent disconnected\n",
        {"events": [{"kind": "nixl_error", "source": "glog", "severity": "error"}]},
    ),
    Sample(
        "ucx_error",
        "[1784621081.896649] [prefill-pod:537  :1]       srd_iface.c:221  UCX  ERROR send completion[0] with error: "
        "Work Request Flushed Error\n",
        {"events": [{"kind": "ucx_error", "source": "ucx", "peer": "prefill-pod"}]},
    ),
    Sample(
        "c10d_timeout",
        "[rank1]:[W324 12:06:11.712424651 socket.cpp:497] [c10d] waitForInput: socket SocketImpl(fd=87) timed out after 600000ms\n",
        {
            "events": [
                {"kind": "collective_timeout", "source": "c10d", "tp_rank": 1, "ts_raw": "W324 12:06:11.712424651"}
            ]
        },
    ),
    Sample(
        "bare_prefill_transfer_failed",
        "Unexpected transfer worker error for room 1788380104266545413\n",
        {"events": [{"kind": "transfer_failed", "bootstrap_room": 1788380104266545413, "ts": None}]},
    ),
    # NIXL connector lines, each of which must land with its room: docs/formats/NIXL.md,
    # "Notification strings" and "Failure and abort texts"; docs/formats/SGLANG.md, "NIXL connector lines"
    Sample(
        "nixl_transfer_encountered_err",
        "[2026-07-21 08:06:26 DP3 TP3] Prefill transfer failed for request rank=3 req.rid='7d1c0c8f3a9e4f0a9b2d6c1e5f4a3b21' "
        "req.bootstrap_room=6593551520068383758 with exception NIXL transfer encountered ERR room=6593551520068383758\n"
        "NIXL transfer encountered ERR room=4127750395128840213\n",
        {
            "events": [
                {"kind": "transfer_failed", "bootstrap_room": 6593551520068383758, "reason": "transport"},
                # a bare line: the time of the timed line above it, placed
                {
                    "kind": "transfer_failed",
                    "bootstrap_room": 4127750395128840213,
                    "ts_raw": None,
                    "ts_placed": "line_above",
                },
            ]
        },
    ),
    Sample(
        "nixl_abort_notifications",
        "[2025-12-03 12:35:01 TP0] Received abort notification for room 4127750395128840213, marked as Failed\n"
        "[2025-12-03 12:35:01 TP0] Sent abort notification for room 6593551520068383758 to 10.0.0.2:17000\n",
        {
            "events": [
                {"kind": "abort", "bootstrap_room": 4127750395128840213, "reason": "aborted"},
                {"kind": "abort", "bootstrap_room": 6593551520068383758, "peer": "10.0.0.2:17000"},
            ]
        },
    ),
    Sample(
        "nixl_peer_register_disconnect_reconnect",
        "[2025-10-21 08:15:40 TP0] Register KVArgs from def7d2f1-d482-4cd2-b6de-f238da5a9c70 successfully\n"
        "[2026-08-14 09:12:44 DP0 TP0] NIXL peer def7d2f1-d482-4cd2-b6de-f238da5a9c70 disconnected; retiring its transfer batch\n"
        "[2026-08-14 09:12:47 DP0 TP0] Reconnected NIXL peer def7d2f1-d482-4cd2-b6de-f238da5a9c70\n",
        {"events": [{"kind": "peer_register"}, {"kind": "peer_disconnect"}, {"kind": "peer_reconnect"}]},
    ),
    Sample(
        "nixl_bootstrapped_debug",
        "[2025-10-21 08:15:41 TP0] got info room=4127750395128840213 agent_name='def7d2f1-d482-4cd2-b6de-f238da5a9c70' "
        "required_dst_info_num=1\n"
        "[2025-10-21 08:15:41 TP0] room=4127750395128840213 is bootstrapped\n",
        {
            "events": [
                {"kind": "bootstrapped", "bootstrap_room": 4127750395128840213},
                {"kind": "bootstrapped", "bootstrap_room": 4127750395128840213},
            ]
        },
    ),
    Sample(
        "nixl_notification_payloads_every_era",
        "[2025-04-30 14:24:01 TP0] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif 4127750395128840213_kv_0_0\n"
        "[2025-10-21 08:15:41 TP0] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif 4127750395128840213_kv_2_1_3\n"
        "[2025-10-21 08:15:41 TP0] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif 4127750395128840213_aux\n"
        "[2026-03-01 10:00:00 TP3] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif "
        "nixlv2_2_6593551520068383758_state_3_0\n"
        "[2026-03-01 10:00:00 TP3] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif "
        "6593551520068383758_kv_1_1_3_part_0_2\n",
        {
            "events": [
                {"kind": "transfer_notif", "bootstrap_room": 4127750395128840213},
                {"kind": "transfer_notif", "bootstrap_room": 4127750395128840213},
                {"kind": "transfer_notif", "bootstrap_room": 4127750395128840213},
                {"kind": "transfer_notif", "bootstrap_room": 6593551520068383758},
                {"kind": "transfer_notif", "bootstrap_room": 6593551520068383758},
            ]
        },
    ),
    Sample(
        "nixl_python_binding_eras",
        "Backend UCX was instantiated\n"
        "Initialized NIXL agent: 1a960978-55e9-442c-8dbf-587836a91547\n"
        "2026-02-27 15:01:50 NIXL INFO    _api.py:212 Initialized NIXL agent: 8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7\n"
        "[2026-02-27 15:01:52 TP0] NIXL transport error for room 4127750395128840213: "
        "nixl._bindings.nixlRemoteDisconnectError: NIXL_ERR_REMOTE_DISCONNECT\n",
        {
            "events": [
                {"kind": "nixl_log"},
                {"kind": "nixl_log"},
                {"kind": "nixl"},
                {"kind": "transfer_failed", "bootstrap_room": 4127750395128840213, "reason": "remote_disconnect"},
            ]
        },
    ),
    Sample(
        "truncated_last_line",
        "[2026-03-17 17:35:07 DP9 TP9] Decode batch, #running-req: 12, #token: 768, token usage: 0.00, cuda graph: True, "
        "gen throughput (token/s): 3.83, #queue-req: 1",
        {"batches": [{"running_req": 12, "queue_req": None, "truncated": True, "tail": "#queue-req: 1"}]},
    ),
    # stats and prefix shapes of real servers (docs/formats/SGLANG.md, "What real dumps carry")
    Sample(
        "truncated_last_line_closed_item",
        "[2025-07-15 17:11:35 TP0] Decode batch, #running-req: 1, #token: 208, ",
        {"batches": [{"running_req": 1, "num_token": 208, "tail": None, "truncated": True}]},
    ),
    Sample(
        "time_only_prefix_2024",
        '[2024-11-29 23:59:50] INFO:     127.0.0.1:40312 - "GET /health HTTP/1.1" 200 OK\n'
        "[23:59:58 TP0] Prefill batch. #new-seq: 1, #new-token: 2048, #cached-token: 0, cache hit rate: 0.00%, "
        "token usage: 0.01, #running-req: 0, #queue-req: 0\n"
        "[00:00:03 TP1] Decode batch. #running-req: 1, #token: 2100, token usage: 0.02, gen throughput (token/s): 40.10, "
        "#queue-req: 0\n"
        "100%|█████| 5/5 [00:01<00:00,  4.62it/s][00:00:05 TP0] Prefill batch. #new-seq: 1, "
        "#new-token: 7, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.02, #running-req: 1, #queue-req: 0\n",
        {
            "batches": [
                {
                    "kind": "prefill",
                    "tp_rank": 0,
                    "ts_raw": "23:59:58",
                    "new_token": 2048,
                    "ts": datetime.datetime(2024, 11, 29, 23, 59, 58, tzinfo=datetime.timezone.utc),
                },
                {
                    "kind": "decode",
                    "tp_rank": 1,
                    "ts_raw": "00:00:03",
                    "num_token": 2100,
                    "gen_throughput": 40.1,
                    "ts": datetime.datetime(2024, 11, 30, 0, 0, 3, tzinfo=datetime.timezone.utc),
                },
                {
                    "kind": "prefill",
                    "tp_rank": 0,
                    "ts_raw": "00:00:05",
                    "new_token": 7,
                    "prefix": "100%|█████| 5/5 [00:01<00:00,  4.62it/s]",
                    "ts": datetime.datetime(2024, 11, 30, 0, 0, 5, tzinfo=datetime.timezone.utc),
                },
            ],
            "events": [{"kind": "http_access", "http_status": 200}],
        },
    ),
    Sample(
        "bare_stats_line_inherits_ts",
        "Decode batch. #running-req: 3, #token: 96, token usage: 0.00, gen throughput (token/s): 9.10, #queue-req: 0\n"
        "[2024-07-20 10:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, "
        "cache hit rate: 0.00%, token usage: 0.01, #running-req: 3, #queue-req: 0\n"
        "Decode batch. #running-req: 12, #token: 4096, token usage: 0.11, gen throughput (token/s): 512.30, #queue-req: 0\n",
        {
            "batches": [
                # before any timed line: the first one below it
                {
                    "line_no": 1,
                    "kind": "decode",
                    "ts": datetime.datetime(2024, 7, 20, 10, 0, 0, tzinfo=datetime.timezone.utc),
                    "ts_raw": None,
                    "ts_placed": "line_below",
                    "running_req": 3,
                },
                {"line_no": 2, "kind": "prefill", "tp_rank": 0, "new_token": 512},
                {
                    "line_no": 3,
                    "kind": "decode",
                    "ts_raw": None,
                    "ts_placed": "line_above",
                    "prefix": None,
                    "tp_rank": None,
                    "ts": datetime.datetime(2024, 7, 20, 10, 0, 0, tzinfo=datetime.timezone.utc),
                    "running_req": 12,
                    "num_token": 4096,
                    "token_usage": 0.11,
                    "gen_throughput": 512.3,
                    "queue_req": 0,
                },
            ]
        },
    ),
    Sample(
        "new_fill_batch_may_2024",
        "[2024-05-20 10:12:01 TP0] new fill batch. #seq: 1. #cached_token: 330. #new_token: 2172. #remaining_req: 57. "
        "#running_req: 9. tree_cache_hit_rate: 69.16%\n"
        "new fill batch. #seq: 2. #cached_token: 0. #new_token: 12. #remaining_req: 5. #running_req: 1. "
        "tree_cache_hit_rate: 0.00%. #new_key: 7\n"
        "new fill batch. #seq: 7. #cached_token: 1541. #new_token: 4. #remaining_req: 0. #running_req: 0. \n",
        {
            "batches": [
                {
                    "kind": "prefill",
                    "tp_rank": 0,
                    "new_seq": 1,
                    "cached_token": 330,
                    "new_token": 2172,
                    "queue_req": 57,
                    "running_req": 9,
                    "cache_hit_rate": 0.6916,
                    "extra": [],
                    "tail": None,
                },
                {
                    "kind": "prefill",
                    "new_seq": 2,
                    "cached_token": 0,
                    "new_token": 12,
                    "queue_req": 5,
                    "running_req": 1,
                    "cache_hit_rate": 0.0,
                    "extra": [{"key": "#new_key", "value": "7"}],
                    "ts": datetime.datetime(2024, 5, 20, 10, 12, 1, tzinfo=datetime.timezone.utc),
                },
                {
                    "new_seq": 7,
                    "cached_token": 1541,
                    "new_token": 4,
                    "queue_req": 0,
                    "running_req": 0,
                    "cache_hit_rate": None,
                    "tail": None,
                },
            ]
        },
    ),
    Sample(
        "stats_behind_an_unknown_head",
        "2025-07-15 17:11:34,123 INFO scheduler.py:1234: Decode batch, #running-req: 5, #token: 900, "
        "token usage: 0.01, cuda graph: True, gen throughput (token/s): 61.20, #queue-req: 0\n"
        "[INFO] sglang: Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0\n"
        "a note that mentions Decode batch, then words\n",
        {
            "batches": [
                {
                    "kind": "decode",
                    "prefix": "2025-07-15 17:11:34,123 INFO scheduler.py:1234:",
                    "ts_raw": "2025-07-15 17:11:34.123",
                    "running_req": 5,
                    "gen_throughput": 61.2,
                    "ts": datetime.datetime(2025, 7, 15, 17, 11, 34, 123000, tzinfo=datetime.timezone.utc),
                },
                {
                    "kind": "prefill",
                    "prefix": "[INFO] sglang:",
                    "ts_raw": None,
                    "new_token": 7,
                    "ts": datetime.datetime(2025, 7, 15, 17, 11, 34, 123000, tzinfo=datetime.timezone.utc),
                },
            ],
            "unparsed": [{"line_no": 3}],
        },
    ),
    Sample(
        "stats_gpu_tag_mid_2024",
        "[gpu=0] Decode batch. #running-req: 1, #token: 41, token usage: 0.00, gen throughput (token/s): 1.19, "
        "#queue-req: 0\n",
        {
            "batches": [
                {
                    "kind": "decode",
                    "running_req": 1,
                    "num_token": 41,
                    "gen_throughput": 1.19,
                    "queue_req": 0,
                    "ts": None,
                    "ts_raw": None,
                }
            ]
        },
    ),
    Sample(
        "stats_extra_keys",
        "[2026-10-30 10:00:03 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, "
        "full token usage: 0.02, mamba usage: 0.30, #running-req: 0, #queue-req: 1, #pending-token: 38209, "
        "#cache_miss: 1, cuda graph: False, input throughput (token/s): 7741.98\n"
        "[2026-10-30 10:00:05 TP0 EP0] Decode batch, #running-req: 2, #full token: 4000, full token usage: 0.05, "
        "#swa token: 1000, swa token usage: 0.01, accept len: 3.10, cuda graph: True, gen throughput (token/s): 88.00, "
        "#queue-req: 0\n",
        {
            "batches": [
                {
                    "kind": "prefill",
                    "new_token": 8192,
                    "token_usage": 0.02,
                    "pending_token": 38209,
                    "queue_req": 1,
                    "cuda_graph": False,
                    "input_throughput": 7741.98,
                    "extra": [{"key": "mamba usage", "value": "0.30"}, {"key": "#cache_miss", "value": "1"}],
                },
                {
                    "kind": "decode",
                    "num_token": 4000,
                    "token_usage": 0.05,
                    "accept_len": 3.1,
                    "gen_throughput": 88.0,
                    "extra": [{"key": "#swa token", "value": "1000"}, {"key": "swa token usage", "value": "0.01"}],
                },
            ]
        },
    ),
    Sample(
        "wrapper_ray_actor",
        "(RolloutRayActor pid=512474) [2025-07-15 17:11:34] Decode batch. #running-req: 5, #token: 900, "
        "token usage: 0.01, gen throughput (token/s): 61.20, #queue-req: 0\n"
        "(pid=512475, ip=10.0.0.7) [2025-07-15 17:11:35 TP1] Prefill batch. #new-seq: 1, #new-token: 64, "
        "#cached-token: 0, token usage: 0.01, #running-req: 5, #queue-req: 0\n"
        "(RolloutRayActor pid=512474) [2025-07-15 17:11:44] Decode batch. #running-req: 5, #token: 1100, "
        "token usage: 0.01, gen throughput (token/s): 60.80, #queue-req: 2 [repeated 3x across cluster]\n",
        {
            "batches": [
                {
                    "kind": "decode",
                    "prefix": "(RolloutRayActor pid=512474)",
                    "running_req": 5,
                    "ts": datetime.datetime(2025, 7, 15, 17, 11, 34, tzinfo=datetime.timezone.utc),
                },
                {"kind": "prefill", "prefix": "(pid=512475, ip=10.0.0.7)", "tp_rank": 1, "new_token": 64},
                {
                    "prefix": "(RolloutRayActor pid=512474) [repeated 3x across cluster]",
                    "queue_req": 2,
                    "tail": None,
                    "extra": [],
                },
            ]
        },
    ),
    Sample(
        "wrapper_unittest_dots",
        "...........[2025-07-15 17:11:36 TP0] Decode batch, #running-req: 1, #token: 5, token usage: 0.00, "
        "cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0\n"
        ".Traceback (most recent call last):\n"
        '  File "/x/test_disagg.py", line 10, in test_abort\n'
        "AssertionError: 3 != 4\n",
        {
            "batches": [{"prefix": "...........", "running_req": 1, "ts_raw": "2025-07-15 17:11:36"}],
            "events": [{"kind": "exception", "prefix": ".", "exc_type": "AssertionError"}],
        },
    ),
    Sample(
        "wrapper_stamped_lead",
        "[2025-07-15 09:11:36] [launcher] [2025-07-15 17:11:36 TP0] Decode batch, #running-req: 1, #token: 5, "
        "token usage: 0.00, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0\n",
        {
            "batches": [
                {
                    "prefix": "[2025-07-15 09:11:36] [launcher] ",
                    "running_req": 1,
                    "ts": datetime.datetime(2025, 7, 15, 17, 11, 36, tzinfo=datetime.timezone.utc),
                }
            ]
        },
    ),
    # one sample per grammar rule the ones above leave without (tests/test_grammar.py)
    Sample(
        "wrapper_docker_json",
        '{"log":"[2026-01-14 05:32:17 TP0] Prefill batch, #new-seq: 1, #new-token: 944, #cached-token: 0, '
        'token usage: 0.01, #running-req: 3, #queue-req: 0, input throughput (token/s): 1180.02, cuda graph: False\\n",'
        '"stream":"stderr","time":"2026-01-14T05:32:17.717142499Z"}\n',
        {
            "batches": [
                {
                    "kind": "prefill",
                    "new_token": 944,
                    "cuda_graph": False,
                    "prefix": "docker-json 2026-01-14T05:32:17.717142499Z",
                }
            ]
        },
    ),
    Sample(
        "json_body_message_is_read",
        '{"text": "", "meta_info": {"id": "0b7d4c1e9a2f4e63b5d8c7a1f0e2d3b4", "finish_reason": {"type": "abort", '
        '"message": "Decode transfer failed for request rank=0 decode_req.rid=\'0b7d4c1e9a2f4e63b5d8c7a1f0e2d3b4\' '
        "decode_req.bootstrap_room=2281907733615520931 with exception KVTransferError(bootstrap_room=2281907733615520931): "
        'Failed to get kvcache from prefill", "status_code": 500}, "prompt_tokens": 96, "completion_tokens": 0}}\n',
        {
            "events": [
                {
                    "kind": "transfer_failed",
                    "bootstrap_room": 2281907733615520931,
                    "rid": "0b7d4c1e9a2f4e63b5d8c7a1f0e2d3b4",
                    "prefix": '{"text": "", "meta_info": {"id": "0b7d4c1e9a2f4e63b5d8c7a1f0e2d3b4", "finish_reason": '
                    '{"type": "abort", "message": "…", "status_code": 500}, "prompt_tokens": 96, "completion_tokens": 0}}',
                    "line_no": 1,
                }
            ]
        },
    ),
    Sample(
        "wrapper_k8s_cri",
        "2026-03-24T12:06:11.864923140+08:00 stderr F [2026-03-24 12:06:11 DP1 TP1 EP1] Decode batch, #running-req: 12, "
        "#token: 40211, token usage: 0.19, cuda graph: True, gen throughput (token/s): 611.20, #queue-req: 0\n",
        {"batches": [{"kind": "decode", "dp_rank": 1, "running_req": 12, "gen_throughput": 611.2}]},
    ),
    Sample(
        "family_sglang_custom_config",
        "[2026-04-15 17:13:10][metrics_reporter.py:201][INFO]: Decode batch, #running-req: 8, #token: 4096, "
        "token usage: 0.05, cuda graph: True, gen throughput (token/s): 320.50, #queue-req: 0\n",
        {"batches": [{"kind": "decode", "running_req": 8, "ts_raw": "2026-04-15 17:13:10"}]},
    ),
    Sample(
        "family_uvicorn_log",
        "[2025-11-05 16:38:03] WARNING:  Invalid HTTP request received.\n",
        {"events": [{"kind": "http_log", "source": "uvicorn", "severity": "warning"}]},
    ),
    Sample(
        "family_nccl",
        "node-p1:537:1024 [3] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out\n",
        {"events": [{"kind": "nccl_log", "source": "nccl", "severity": "warning", "peer": "node-p1"}]},
    ),
    Sample(
        "kind_checksum_mismatch",
        "[2026-10-30 10:01:41 DP5 TP5] KV checksum mismatch for bootstrap_room=1188402291734905512: expected 0x1f2e, "
        "got 0x9a3b\n",
        {
            "events": [
                {"kind": "checksum_mismatch", "reason": "checksum_mismatch", "bootstrap_room": 1188402291734905512}
            ]
        },
    ),
    Sample(
        "kind_bootstrap_failed_bootstrap_info",
        "[2026-03-17 17:35:10 DP9 TP9] Could not fetch prefill parallel info from bootstrap_addr: 10.0.0.7:8998\n",
        {"events": [{"kind": "bootstrap_failed", "reason": "bootstrap_info", "peer": "10.0.0.7:8998"}]},
    ),
    Sample(
        "kind_watchdog_timeout",
        "[2026-10-30 10:06:00 DP0 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n",
        {"events": [{"kind": "watchdog_timeout", "reason": "watchdog", "severity": "fatal"}]},
    ),
    Sample(
        "kind_health_check_failed",
        "[2026-10-30 10:05:20] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        "tic start time: 10:05:00. last_heartbeat time: 10:04:58\n",
        {"events": [{"kind": "health_check_failed", "reason": "health_check", "severity": "error"}]},
    ),
    Sample(
        "kind_deferred_release",
        "[2026-10-30 10:02:00 TP0] Deferred KV release for bootstrap_room=4793981895866140836 until its transfer is "
        "retired\n",
        {"events": [{"kind": "deferred_release", "severity": "warning", "bootstrap_room": 4793981895866140836}]},
    ),
    Sample(
        "kind_retract",
        "[2026-10-30 10:03:00 DP1 TP1] KV cache pool is full. Retract requests. #retracted_reqs: 2, "
        "#new_token_ratio: 0.5120 -> 0.8000\n",
        {"events": [{"kind": "retract", "severity": "warning"}]},
    ),
    Sample(
        "kind_req_time_stats",
        "[2026-10-30 10:00:15] ReqTimeStats(rid='9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1', queue_time=0.012, forward_time=1.2)\n",
        {"events": [{"kind": "req_time_stats", "rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1"}]},
    ),
    Sample(
        "kind_hicache",
        "[2026-10-30 10:00:01 TP0] Attached HiCache storage backend: mooncake\n",
        {"events": [{"kind": "hicache"}]},
    ),
    Sample(
        "kind_bootstrap",
        "[2026-10-30 10:00:02 TP0] Bootstrap server started at 0.0.0.0:8998\n",
        {"events": [{"kind": "bootstrap"}]},
    ),
    Sample(
        "kind_warmup",
        "[2026-10-30 10:00:03] Start of pd disaggregation warmup ...\n",
        {"events": [{"kind": "warmup"}]},
    ),
    Sample(
        "kind_shutdown",
        "[2026-10-30 10:10:00] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...\n",
        {"events": [{"kind": "shutdown"}]},
    ),
    Sample(
        "kind_startup",
        "[2026-10-30 10:00:04] The server is fired up and ready to roll!\n",
        {"events": [{"kind": "startup"}]},
    ),
    Sample(
        "reason_bootstrap_timeout",
        "[2026-10-30 10:07:00 DP3 TP3] Prefill transfer failed for request rank=3 req.rid='aa11bb22cc33dd44ee55ff6677889900' "
        "req.bootstrap_room=4127750395128840213 with exception KVTransferError(bootstrap_room=4127750395128840213): "
        "Request 4127750395128840213 timed out after 300.0s in KVPoll.Bootstrapping\n",
        {"events": [{"kind": "transfer_failed", "reason": "bootstrap_timeout", "bootstrap_room": 4127750395128840213}]},
    ),
    Sample(
        "reason_request_timeout",
        "[2026-10-30 10:08:00 TP0] Request running timeout reached, rid='c3a81f0e6b2d4f57a9e0d1c2b3a49586'\n",
        {"events": [{"kind": "abort", "reason": "request_timeout", "rid": "c3a81f0e6b2d4f57a9e0d1c2b3a49586"}]},
    ),
    Sample(
        "reason_node_failure",
        "[2026-10-30 10:09:00 DP2 TP2] Lost connection with prefill instance (bootstrap_room=6593551520068383758, "
        "prefill_dp_rank=2)\n",
        {"events": [{"kind": "bootstrap_failed", "reason": "node_failure", "bootstrap_room": 6593551520068383758}]},
    ),
    Sample(
        "reason_room_conflict",
        "[2026-10-30 10:09:10 TP0] Decode handshake failed: Duplicate decode bootstrap room 4127750395128840213\n",
        {"events": [{"kind": "bootstrap_failed", "reason": "room_conflict"}]},
    ),
    Sample(
        "reason_config",
        "[2026-10-30 10:09:20 TP0] Prefill bootstrap failed: KV layout mismatch between prefill and decode "
        "(page_size 64 != 32)\n",
        {"events": [{"kind": "bootstrap_failed", "reason": "config"}]},
    ),
    Sample(
        "reason_unknown_rank",
        "[2026-10-30 10:09:30 DP1 TP1] Decode transfer failed for request rank=1 "
        "decode_req.req.rid='0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b' decode_req.req.bootstrap_room=1188402291734905512 "
        "with exception KVTransferError(bootstrap_room=1188402291734905512): Failed due to an unknown reason from "
        "another rank\n",
        {"events": [{"kind": "transfer_failed", "reason": "unknown_rank", "tp_rank": 1}]},
    ),
    Sample(
        "reason_transfer_error",
        "[2026-10-30 10:09:40 TP0] Decode transfer failed for request rank=0 "
        "decode_req.req.rid='9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1' decode_req.req.bootstrap_room=4793981895866140836 "
        "with exception KVTransferError(bootstrap_room=4793981895866140836): KV transfer failed\n",
        {"events": [{"kind": "transfer_failed", "reason": "transfer_error", "bootstrap_room": 4793981895866140836}]},
    ),
] + failure_samples
samples += engine_samples
# the other shapes SGLang names a request or a room in (docs/formats/SGLANG.md, "Identifiers: rid
# and bootstrap room"): each line's own, not a neighbour's
samples.append(
    Sample(
        "identifier_shapes",
        "[2026-08-04 21:17:09 DP3 TP3 EP3] ReqTimeStats(rid=4be01f9c77a24d1e8c5b3a2f1e0d9c8b, "
        "bootstrap_room=5102938475610293847, input_len=6144, output_len=1, type=prefill): queue_duration=1.92ms\n"
        "[2026-08-04 21:17:10 TP0] KV checksum mismatch req=7a1b2c3d4e5f60718293a4b5c6d7e8f9 "
        "bootstrap_room=5102938475610293848 expected=0x1f2e got=0x3d4c\n"
        "[2026-08-04 21:17:11 TP0] Req 0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f exhausted optimistic prefill attempts "
        "falling back to bootstrap queue\n"
        "[2026-08-04 21:17:12 TP0] Metadata unexpectedly not ready after readiness gate: request "
        "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b, bootstrap_room=5102938475610293849, waited 5.0s\n"
        "[2026-08-04 21:17:13 TP0] Request 5102938475610293850 waiting_timeout\n"
        "[2026-08-04 21:17:14 TP0] Received AUX_DATA for bootstrap_room 5102938475610293851 with length:88\n",
        {
            "events": [
                {"rid": "4be01f9c77a24d1e8c5b3a2f1e0d9c8b", "bootstrap_room": 5102938475610293847},
                {
                    "kind": "checksum_mismatch",
                    "rid": "7a1b2c3d4e5f60718293a4b5c6d7e8f9",
                    "bootstrap_room": 5102938475610293848,
                },
                {"rid": "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"},
                {
                    "kind": "corruption_detected",
                    "rid": "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b",
                    "bootstrap_room": 5102938475610293849,
                },
                {"bootstrap_room": 5102938475610293850},
                {"bootstrap_room": 5102938475610293851},
            ]
        },
    )
)
