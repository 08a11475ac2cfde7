"""The servers' lines: request lines, transfer traces, stats, wedge and miscellaneous lines."""

from __future__ import annotations

import bisect
import datetime as dt
import math

from tools.pdincident.lines import abseil, access
from tools.pdincident.records import Req
from tools.pdincident.scenario import DECODE_DP, DECODES, HOST_IP, PREFILL, UTC


class _ServerLines:
    """Incident's server-side lines (a mixin: every method reads the incident's state)."""

    def request_lines(self, r: Req):
        P, D = self.logs[PREFILL], self.logs[r.dhost]
        t0 = self.T(r.t0)
        gen = _RECEIVE_OBJ % (r.stream, HOST_IP[PREFILL], r.room, r.drank)
        P.add(t0 + 0.005, "Receive: obj=" + gen.format(rid=r.rid_p))
        D.add(t0 + 0.01, "Receive: obj=" + gen.format(rid=r.rid_d))
        write = _OUTCOME_LINES.get(r.outcome)
        if write:
            write(self, r, P, D, f" DP{r.drank} TP{r.drank} EP{r.drank}")

    # -- the lines of each request outcome (P, D: the prefill and decode logs; dtag: the decode rank's tag) --

    def _router_access(self, log, t: float, status: int):
        log.add(t, access(HOST_IP["router"], self.rng.randint(30000, 60000), "POST", "/generate", status))

    def _ok_lines(self, r: Req, P, D, dtag: str):
        tp = self.T(r.t_prefill)
        P.add(
            tp + 0.05,
            f"Finish: obj={_SHORT_OBJ.format(rid=r.rid_p)}, out={{'text': '', 'output_ids': [...], "
            f"'meta_info': {{'id': '{r.rid_p}', 'finish_reason': {{'type': 'length', 'length': 1}}, "
            f"'prompt_tokens': {r.prompt}, 'weight_version': 'default', 'num_retractions': 0, "
            f"'reasoning_tokens': 0, 'completion_tokens': 1, 'cached_tokens': {r.cached}, "
            f"'e2e_latency': {r.t_prefill + 0.05 - r.t0:.3f}}}}}",
        )
        self._router_access(P, tp + 0.05, 200)
        self._router_access(D, self.T(r.t_xfer) + 0.02, 200)
        reasoning = int(r.completion * 0.3)
        D.add(
            self.T(r.t_end),
            f"Finish: obj={_SHORT_OBJ.format(rid=r.rid_d)}, out={{'text': '…', 'output_ids': "
            f"[...], 'meta_info': {{'id': '{r.rid_d}', 'finish_reason': {{'type': 'stop', "
            f"'matched': 1}}, 'prompt_tokens': {r.prompt}, 'weight_version': 'default', "
            f"'num_retractions': 0, 'reasoning_tokens': {reasoning}, 'completion_tokens': "
            f"{r.completion}, 'cached_tokens': {r.cached}, 'e2e_latency': {r.t_end - r.t0:.2f}}}}}",
        )
        if self.with_trace:
            self.trace_room(r)

    def _transfer_failed_lines(self, r: Req, P, D, dtag: str):
        tp = self.T(r.t_prefill)
        for raw in _LINK_FAULT_RAW:
            P.raw(tp, raw)
        ptag = f" TP{r.prank}"
        P.add(tp + 0.01, f"Unexpected transfer worker error for room {r.room}", ptag)
        for fr in (*_WORKER_TRACEBACK, f"RuntimeError: NIXL transfer encountered ERR room={r.room}"):
            P.raw(tp + 0.01, lambda ht, fr=fr: fr)
        P.add(
            tp + 0.02,
            f"Prefill transfer failed for request rank={r.prank} req.rid='{r.rid_p}' req.bootstrap_room="
            f"{r.room} with exception NIXL transfer encountered ERR room={r.room}",
            ptag,
        )
        self._router_access(P, tp + 0.03, 500)
        D.add(self.T(r.t_end), r.error_body, dtag)
        self._router_access(D, self.T(r.t_end), 500)
        if self.with_trace:
            trace = self.trace.setdefault(PREFILL, [])
            peer = _FAULT_PEER_AGENT
            trace.append(
                self.tr(tp - 0.2, PREFILL, "prefill", r.prank, r, "kv", 0, True, "post", bytes=603979776, peer=peer)
            )
            fail = dict(status="NIXL_ERR_BACKEND", peer=peer, error=_XFER_FAIL_ERROR)
            trace.append(self.tr(tp, PREFILL, "prefill", r.prank, r, "kv", 0, True, "fail", **fail))

    def _waiting_timeout_lines(self, r: Req, P, D, dtag: str):
        te = self.T(r.t_end)
        D.add(te, r.error_body, dtag)
        self._router_access(D, te + 0.01, 500)
        # prefill's bootstrap timeout for the same room follows about 2 s later
        tpf = te + self.rng.uniform(1.6, 2.4)
        P.add(
            tpf,
            f"Prefill bootstrap failed for request rank={r.prank} req.rid='{r.rid_p}' req.bootstrap_room="
            f"{r.room} with exception KVTransferError(bootstrap_room={r.room}): Request {r.room} timed out "
            f"after 300.0s in KVPoll.Bootstrapping",
            f" TP{r.prank}",
        )
        self._router_access(P, tpf + 0.01, 500)

    def _bootstrap_timeout_lines(self, r: Req, P, D, dtag: str):
        te = self.T(r.t_end)
        P.add(te, r.error_body, f" TP{self.wedge_rank}")
        self._router_access(P, te + 0.01, 500)
        td = te + self.rng.uniform(0.4, 1.5)
        D.add(
            td,
            f"Decode transfer failed for request rank={r.drank} decode_req.req.rid='{r.rid_d}' "
            f"decode_req.req.bootstrap_room={r.room} with exception KVTransferError(bootstrap_room={r.room}): "
            f"Failed to get kvcache from prefill instance, it might be dead",
            dtag,
        )
        self._router_access(D, td + 0.01, 500)

    def _aborted_lines(self, r: Req, P, D, dtag: str):
        rng = self.rng
        te = self.T(r.t_end)
        D.add(
            te,
            f"Decode transfer failed for request rank={r.drank} decode_req.req.rid='{r.rid_d}' "
            f"decode_req.req.bootstrap_room={r.room} with exception KVTransferError(bootstrap_room={r.room}): "
            f"Aborted by AbortReq.",
            dtag,
        )
        D.add(
            te + 0.01,
            f"Finish: obj={_SHORT_OBJ.format(rid=r.rid_d)}, out={{'text': '', 'output_ids': [], "
            f"'meta_info': {{'id': '{r.rid_d}', 'finish_reason': {{'type': 'abort', 'message': "
            f"'Aborted by AbortReq.', 'status_code': 499, 'err_type': None}}, 'prompt_tokens': "
            f"{r.prompt}, 'weight_version': 'default', 'num_retractions': 0, 'reasoning_tokens': 0, "
            f"'completion_tokens': 0, 'cached_tokens': 0, 'e2e_latency': {r.t_end - r.t0:.2f}}}}}",
        )
        # most killed requests are also seen aborted on prefill, shortly after the kill
        r.prefill_abort = rng.random() < 0.7
        if r.prefill_abort:
            tpa = self.T(self.storm_kill + rng.uniform(0.02, 2.0))
            P.add(
                tpa,
                f"Prefill bootstrap failed for request rank={r.prank} req.rid='{r.rid_p}' req.bootstrap_room="
                f"{r.room} with exception KVTransferError(bootstrap_room={r.room}): Aborted by AbortReq.",
                f" TP{r.prank}",
            )
            r.t_prefill_abort = tpa - self.T0

    def tr(self, t, host, side, rank, r, kind, chunk, is_last, event, **kw):
        o = {
            "ts": round(t + self.logs[host].skew, 6),
            "host": host,
            "pid": 1842217 if side == "prefill" else 90412,
            "side": side,
            "engine_rank": rank,
            "room": r.room if self.rng.random() < 0.8 else str(r.room),
            "rid": r.rid_p if side == "prefill" else r.rid_d,
            "kind": kind,
        }
        if chunk is not None:
            o["chunk"] = chunk
            o["is_last"] = is_last
        o["event"] = event
        o.update(kw)
        return o

    def trace_room(self, r: Req):
        agent_d = "def7d2f1-d482-4cd2-b6de-f238da5a9c70"
        agent_p = "8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7"
        n = max(1, math.ceil((r.prompt - r.cached) / 16384))
        tp, tx = self.T(r.t_prefill), self.T(r.t_xfer)
        for c in range(n):
            last = c == n - 1
            t = tp + (tx - tp) * c / (n + 1)
            self.trace[PREFILL].append(
                self.tr(t, PREFILL, "prefill", r.prank, r, "kv", c, last, "post", bytes=37748736, peer=agent_d)
            )
            self.trace[PREFILL].append(
                self.tr(
                    t + 0.004,
                    PREFILL,
                    "prefill",
                    r.prank,
                    r,
                    "kv",
                    c,
                    last,
                    "done",
                    status="NIXL_SUCCESS",
                    peer=agent_d,
                )
            )
            self.trace[r.dhost].append(
                self.tr(t + 0.005, r.dhost, "decode", r.drank, r, "kv", c, last, "notif", peer=agent_p)
            )
        self.trace[r.dhost].append(self.tr(tx, r.dhost, "decode", r.drank, r, "aux", None, None, "notif", peer=agent_p))

    def prefill_stats(self):
        """One `Prefill batch` line per batch formed (TP0 prints them); none when nothing is prefilled."""
        rng = self.rng
        L = self.logs[PREFILL]
        done = sorted(r.t_prefill for r in self.reqs if r.outcome in ("ok", "transfer_failed"))
        # slam windows also chunk-prefill long prompts between completions
        ticks = list(done)
        for a, b in self.heavy:
            x = a
            while x < b:
                ticks.append(x)
                x += rng.uniform(0.3, 0.7)
        if self.wedge_kind == "dead_bootstrap_thread":
            ws, we = self.wedge_start, self.restart + 4.5
            ticks = [x for x in ticks if not (ws <= x < we)]
        ticks.sort()
        self.prefill_ticks = ticks
        starts = sorted(r.t0 for r in self.reqs)
        i = 0
        last = None
        while i < len(ticks):
            x = ticks[i]
            j = i
            while j + 1 < len(ticks) and ticks[j + 1] - x < 0.15:
                j += 1
            n = j - i + 1
            heavy = self.is_heavy(x)
            queued = sum(
                1
                for r in self.reqs[bisect.bisect_left(starts, x - 20) : bisect.bisect_right(starts, x)]
                if r.t0 <= x < min(r.t_prefill, r.t_end)
            )
            if heavy:
                q, boot, infl = queued + rng.randint(10, 30), rng.randint(8, 30), rng.randint(10, 40)
                pending, thr = rng.randint(120000, 420000), rng.uniform(28000, 62000)
                newtok = rng.choice((8192, 16384))
            else:
                q, boot, infl = queued, rng.randint(0, 3), rng.randint(0, 4)
                pending, thr = rng.randint(0, 9000), rng.uniform(2000, 14000)
                newtok = rng.randint(800, 16000)
            if last is not None and x - last > 30:
                thr = rng.uniform(200, 900)
            last = x
            L.add(
                self.T(x),
                f"Prefill batch, #new-seq: {n}, #new-token: {newtok}, #cached-token: {rng.randint(0, 4096)}, "
                f"token usage: {min(0.95, 0.05 + 0.4 * heavy + rng.uniform(0, 0.1)):.2f}, #running-req: "
                f"{rng.randint(0, 2)}, #queue-req: {q}, #pending-token: {pending}, #bootstrap-req: {boot}, "
                f"#inflight-req: {infl}, #optimistic-req: 0, cuda graph: False, input throughput "
                f"(token/s): {thr:.2f}",
                " TP0",
            )
            i = j + 1

    def decode_stats(self):
        """Each DP rank prints `Decode batch` every 40 iterations while it has running requests."""
        rng = self.rng
        self.decode_progress = []
        for h in DECODES:
            L = self.logs[h]
            for k in range(DECODE_DP):
                mine = [r for r in self.reqs if r.dhost == h and r.drank == k]
                run = sorted((r.t_xfer, r.t_end) for r in mine if r.outcome == "ok")
                pend = [(r.t0, min(r.t_xfer, r.t_end)) for r in mine]
                stuck = None
                if (
                    self.wedge_kind in ("health_503", "tp_desync")
                    and h == self.wedge_host
                    and (self.wedge_kind == "health_503" or k == self.wedge_rank)
                ):
                    stuck = (self.wedge_start, self.wedge_end)
                x = 20.0
                while x < self.span:
                    if stuck and stuck[0] <= x < stuck[1]:
                        x = stuck[1] + rng.uniform(0.8, 1.5)
                        continue
                    n_run = sum(1 for a, b in run if a <= x < b)
                    if n_run == 0:
                        x += 1.0
                        continue
                    n_pend = sum(1 for a, b in pend if a <= x < b)
                    if stuck:
                        self.decode_progress.append(x)
                    tok = n_run * rng.randint(6000, 16000)
                    L.add(
                        self.T(x),
                        f"Decode batch, #running-req: {n_run}, #token: {tok}, token usage: "
                        f"{min(0.97, tok / 823680):.2f}, pre-allocated usage: {rng.uniform(0, 0.05):.2f}, "
                        f"#prealloc-req: {n_pend // 2}, #transfer-req: {n_pend - n_pend // 2}, "
                        f"#retracted-req: 0, cuda graph: True, gen throughput (token/s): "
                        f"{n_run * rng.uniform(28, 55):.2f}, #queue-req: 0",
                        f" DP{k} TP{k} EP{k}",
                    )
                    x += 40 * rng.uniform(0.024, 0.034) * (1 + n_run / 64)

    def wedge_lines(self):
        rng = self.rng
        ws = self.wedge_start
        if self.wedge_kind == "health_503":
            L = self.logs[self.wedge_host]
            x = ws + 20 + rng.uniform(0, 3)
            while x < self.wedge_end - 1:
                tic = dt.datetime.fromtimestamp(self.T(x - 20) + L.skew, UTC)
                hb = dt.datetime.fromtimestamp(self.T(ws) + L.skew, UTC)
                L.add(
                    self.T(x),
                    f"Health check failed. Server couldn't get a response from detokenizer for last 20 "
                    f"seconds. tic start time: {tic:%H:%M:%S}. last_heartbeat time: {hb:%H:%M:%S}",
                )
                x += 30 + rng.uniform(-0.5, 0.5)
        elif self.wedge_kind == "dead_bootstrap_thread":
            P = self.logs[PREFILL]
            t = self.T(ws)
            P.add(
                t,
                f"prefill bootstrap_thread died on engine_rank={self.wedge_rank}; requests to this rank will "
                f"time out in KVPoll.Bootstrapping",
                f" TP{self.wedge_rank}",
            )
            for fr in [
                "Traceback (most recent call last):",
                '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1688, in bootstrap_thread',
                "    room, ip, port = self._parse_abort(msg)",
                '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1642, in _parse_abort',
                "    room = int(parts[1].decode())",
                "ValueError: invalid literal for int() with base 10: b'ABORT_ACK'",
            ]:
                P.raw(t, lambda ht, fr=fr: fr)
            # the operator restarts the prefill server as the timeouts run (docs/formats/SGLANG.md, "Crashes and signals")
            tr = self.T(self.restart) - 1.2
            waiting = [r for r in self.reqs if r.t_boot < self.restart <= r.t_prefill + 0.001]
            P.add(tr, "SIGTERM received. signum=15 frame=None. Draining requests and shutting down...")
            P.add(
                tr + 0.6,
                f"Gracefully exiting... Remaining number of requests {len(waiting)}. Remaining requests "
                f"remaining_rids={[r.rid_p for r in waiting[:8]]}.",
            )
            self.startup(PREFILL, self.T(self.restart), pace=0.45)
        # warn-once texts printed with the first timeouts (docs/formats/SGLANG.md, "Warnings about requests in trouble")
        first = [r for r in self.reqs if r.outcome in ("waiting_timeout", "bootstrap_timeout")]
        if first:
            t = self.T(min(r.t_end for r in first))
            D = self.logs[self.wedge_host if self.wedge_host != PREFILL else first[0].dhost]
            if self.wedge_kind != "dead_bootstrap_thread":
                D.add(
                    t,
                    "Some requests fail to receive KV Cache transfer done signal after bootstrapping. If a greater "
                    "mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 "
                    "minutes) to relax the timeout condition. ",
                )
            self.logs[PREFILL].add(
                t + 2,
                "Some requests timed out when bootstrapping, which means prefill instances "
                "fail to receive the KV indices from the decode instance of this request. "
                "If a greater mean TTFT is acceptable, you can 'export "
                "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=600' (10 minutes) to relax the "
                "timeout condition. ",
            )

    def misc_lines(self):
        rng = self.rng
        # after the kill the tokenizer sees outputs and aborts for requests it already dropped (docs/formats/SGLANG.md, "Aborts")
        for r in rng.sample(self.killed, 6):
            D = self.logs[r.dhost]
            D.add(
                self.T(r.t_end) + rng.uniform(0.01, 0.3),
                f"Received output for rid='{r.rid_d}' but the state was deleted in TokenizerManager.",
            )
        for r in rng.sample(self.killed, 3):
            self.logs[r.dhost].add(
                self.T(r.t_end) + rng.uniform(0.3, 0.8),
                f"Abort request for rid={r.rid_d} not found in rid_to_state; likely already finished/removed.",
            )
        # a slammed decode pool retracts a few requests (docs/formats/SGLANG.md, "Other scheduler lines")
        for a, b in self.heavy[:2]:
            for _ in range(rng.randint(1, 3)):
                h, k = rng.choice(DECODES), rng.randrange(DECODE_DP)
                r0 = rng.uniform(0.55, 0.75)
                self.logs[h].add(
                    self.T(rng.uniform(a, b)),
                    f"KV cache pool is full. Retract requests. #retracted_reqs: {rng.randint(1, 3)}, "
                    f"#new_tokens_gained: {rng.randint(2, 30) * 512}, #new_token_ratio: {r0:.4f} -> "
                    f"{min(1.0, r0 + 0.15):.4f}",
                    f" DP{k} TP{k} EP{k}",
                )
        # an OpenAI-server request error with its traceback, on a decode host's main process
        d = rng.choice(DECODES)
        t = self.T(self.busy1[0] + rng.uniform(30, 90))
        L = self.logs[d]
        L.add(t, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/v1/chat/completions", 200))
        L.add(t, "Error in request: No tool calls but found tool output")
        for fr in [
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/openai/serving_base.py", line 100, in handle_request',
            "    adapted_request, processed_request = self._convert_to_internal_request(",
            "                                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/openai/serving_chat.py", line 165, in _convert_to_internal_request',
            "    processed_messages = self._process_messages(request, is_multimodal)",
            "ValueError: No tool calls but found tool output",
        ]:
            L.raw(t, lambda ht, fr=fr: fr)
        L.add(t + 1, "WARNING:  Invalid HTTP request received.")


# which lines each request outcome leaves (Req.outcome)
_OUTCOME_LINES = {
    "ok": _ServerLines._ok_lines,
    "transfer_failed": _ServerLines._transfer_failed_lines,
    "waiting_timeout": _ServerLines._waiting_timeout_lines,
    "bootstrap_timeout": _ServerLines._bootstrap_timeout_lines,
    "aborted": _ServerLines._aborted_lines,
}

# a %-template (stream, bootstrap host, room, decode rank) that leaves a {rid} for str.format
_RECEIVE_OBJ = (
    "GenerateReqInput(rid='{rid}', text=None, input_ids=[0, 128803, …], sampling_params="
    "{{'max_new_tokens': 8192, 'temperature': 0.6}}, stream=%s, bootstrap_host='%s', "
    "bootstrap_port=8998, bootstrap_room=%d, bootstrap_pair_key=None, decode_tp_size=None, "
    "routed_dp_rank=None, data_parallel_rank=%d, disagg_prefill_dp_rank=None, …)"
)
_SHORT_OBJ = "GenerateReqInput(rid='{rid}', text=None, …)"

_XFER_FAIL_ERROR = "getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND"
_FAULT_PEER_AGENT = "def7d2f1-d482-4cd2-b6de-f238da5a9c70"

# the link fault's UCX and NIXL lines, in their own formats (each from the host time of the line)
_LINK_FAULT_RAW = (
    lambda ht: (
        f"[{ht:.6f}] [node-p0:1842011:2]           ib_mlx5.c:350  UCX  ERROR mlx5_3: "
        f"completion with error (transport retry counter exceeded)"
    ),
    lambda ht: abseil("W", ht, 1842217, "ucx_utils.cpp:65", "Unexpected UCX error: Input/output error"),
    lambda ht: abseil("E", ht, 1842217, "nixl_agent.cpp:1149", _XFER_FAIL_ERROR),
)

_WORKER_TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1153, in transfer_worker',
    "    self._settle(handles, room)",
    '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1201, in _settle',
    '    raise RuntimeError(f"NIXL transfer encountered ERR room={room}")',
)
