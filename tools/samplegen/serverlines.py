"""The server-log lines written after the simulation: startup, requests, access and probe lines, decode stats."""

from __future__ import annotations

from tools import loglines
from tools.samplegen.ids import _pfx_time
from tools.samplegen.records import Req, health_req
from tools.samplegen.scenario import (
    ARR_END,
    BOOTSTRAP_PORT,
    CHUNK,
    CLOCK_OFFSET,
    DECODE_LOG_INTERVAL,
    DECODES,
    DP,
    FAKE_BOOTSTRAP_HOST,
    HEALTH_CHECK_TIMEOUT,
    HEALTH_FAIL_S,
    HOST_IP,
    HOSTS,
    KUBELET_IP,
    LAST_LINE,
    LOG_START,
    MAIN_PID,
    MAX_PREFILL,
    MAX_TOTAL_D,
    MAX_TOTAL_P,
    MODEL,
    MODEL_PATH,
    PREFILL,
    PROBE_S,
    ROUTER_IP,
    SCHED_PID0,
    T0,
    W0,
    W1,
)


class _ServerLines:
    """_Gen's server-log lines (a mixin: every method reads the simulation's state)."""

    # -- fixed lines --------------------------------------------------------------------------------
    def startup_lines(self) -> None:
        rng = self.rng
        for h in HOSTS:
            role = "prefill" if h == PREFILL else "decode"
            t = T0 + LOG_START + (0 if h == PREFILL else rng.uniform(2, 6))
            self.line(
                h,
                t,
                "log",
                "pl",
                loglines.server_args(
                    model_path=MODEL_PATH,
                    served_model_name=MODEL,
                    tp_size=DP,
                    dp_size=DP,
                    ep_size=DP,
                    enable_dp_attention=True,
                    disaggregation_mode=role,
                    disaggregation_transfer_backend="nixl",
                    disaggregation_bootstrap_port=BOOTSTRAP_PORT,
                    chunked_prefill_size=CHUNK,
                    max_prefill_tokens=MAX_PREFILL,
                    kv_cache_dtype="fp8_e4m3",
                    log_requests=True,
                    log_requests_level=1,
                    decode_log_interval=DECODE_LOG_INTERVAL,
                    disable_overlap_schedule=False,
                    enable_metrics=True,
                ),
            )
            t += 14 + rng.uniform(0, 3)
            for d in range(DP):
                td = t + d * 0.011 + rng.uniform(0, 0.004)
                pid = SCHED_PID0[h] + d
                mt = MAX_TOTAL_P if h == PREFILL else MAX_TOTAL_D
                self.line(
                    h,
                    td,
                    "log",
                    "sg",
                    loglines.memory_pool(
                        mt, CHUNK, MAX_PREFILL, 64 if h == PREFILL else 256, 163840, rng.uniform(16.5, 19.5)
                    ),
                    d,
                )
                tn = td + 1.7 + rng.uniform(0, 0.2)
                if h == PREFILL:
                    self.line(
                        h, tn, "nixl", "absl", ("I", pid, "nixl_agent.cpp", 131, "NIXL version: 1.3.0 (git: 5d2e1f0)")
                    )
                    for k, (key, val) in enumerate(
                        (("ADDRESS_VERSION", "v2"), ("RNDV_THRESH", "inf"), ("MAX_RMA_RAILS", "2"))
                    ):
                        self.line(
                            h,
                            tn + 0.0004 * (k + 1),
                            "nixl",
                            "absl",
                            ("I", pid, "config.cpp", 43, f"Modified UCX config: {key}={val}"),
                        )
                    self.line(
                        h,
                        tn + 0.0021,
                        "ucx",
                        "ucx",
                        (
                            pid,
                            0,
                            "ucp_context.c",
                            2339,
                            "INFO",
                            "Version 1.19.0 (loaded from /opt/ucx/lib/libucp.so.0)",
                        ),
                    )
                self.line(h, tn + 0.004, "nixl_py", "npy", ("INFO", "_api.py", 212, loglines.nixl_backend("UCX")))
                self.line(
                    h, tn + 0.009, "nixl_py", "npy", ("INFO", "_api.py", 234, loglines.nixl_agent(self.agents[h][d]))
                )
                self.line(h, tn + 0.012, "log", "sg", "NIXL KVManager initialized with backend: UCX", d)
            t += 6
            if h == PREFILL:
                self.line(
                    h, t, "log", "pl", f"CommonKVBootstrapServer started successfully on 0.0.0.0:{BOOTSTRAP_PORT}"
                )
            for msg in loglines.uvicorn_startup(MAIN_PID[h]):
                t += 0.002
                self.line(h, t, "uvicorn", "uv", ("INFO", msg))
            t += 0.6
            self.line(
                h,
                t,
                "http_access",
                "pl",
                loglines.access("127.0.0.1", rng.randint(40000, 60000), "GET", "/get_model_info", 200),
            )
            self.line(h, t + 0.01, "log", "pl", "Start of pd disaggregation warmup ...")
            self.line(h, t + 2.3, "log", "pl", f"Disaggregation warmup requests completed for all {DP} DP ranks")
            self.line(h, t + 2.31, "log", "pl", "End of disaggregation warmup")
            self.line(h, t + 2.32, "log", "pl", loglines.READY)

    # -- after the simulation: request lines, decode stats, corruption ----------------------------------
    def gri(self, rid: str, room: int, r: Req, health: bool = False) -> str:
        if health:
            sp = "{'max_new_tokens': 1, 'temperature': 0.0}"
            bh, bp = FAKE_BOOTSTRAP_HOST, "None"
        else:
            sp = f"{{'max_new_tokens': {r.max_new}, 'temperature': 0.6, 'top_p': 0.95}}"
            bh, bp = HOST_IP[PREFILL], BOOTSTRAP_PORT
        return loglines.req_input(rid, sp, r.stream, bh, bp, room)

    def access(self, host: str, t: float, method: str, path: str, status: int, ip: str = ROUTER_IP) -> None:
        self.line(
            host, t, "http_access", "pl", loglines.access(ip, self.rng.randint(32768, 60999), method, path, status)
        )

    def kubelet_probes(self) -> None:
        """decode-1's k8s probes of /health, and what its HTTP side logs for them while the scheduler is stuck.

        Before the wedge every probe is answered 200. Once no detokenizer output has arrived for
        SGLANG_HEALTH_CHECK_TIMEOUT, the generate-based check fails: it logs `Health check failed …`
        (every HEALTH_FAIL_S while the wedge lasts) and marks the server UnHealthy, and the probes
        in between are answered 503 at once. The first output after the wedge (the timeouts' aborts)
        makes the server healthy again."""
        rng = self.rng
        h, off = "decode-1", CLOCK_OFFSET["decode-1"]
        lo, hi = T0 + W0, T0 + W1
        fails = []
        t = lo + HEALTH_CHECK_TIMEOUT + rng.uniform(0.3, 1.0)
        while t < hi:
            fails.append(t)
            t += HEALTH_FAIL_S
        self.health_fails = fails
        for t in fails:
            hms = lambda x: _pfx_time(x + off)[11:]  # noqa: E731
            self.line(
                h,
                t,
                "health_check_failed",
                "pl",
                loglines.health_check_failed(HEALTH_CHECK_TIMEOUT, hms(t - HEALTH_CHECK_TIMEOUT), hms(lo)),
            )
            self.access(h, t + 0.0006, "GET", "/health", 503, KUBELET_IP)
        n503 = len(fails)
        t = T0 + LOG_START + 45 + rng.uniform(0, 1)
        while t < T0 + ARR_END + 120:
            if lo <= t < fails[0]:
                pass  # waiting on the check that will fail; answered with it
            elif fails[0] <= t < hi:
                self.access(h, t + rng.uniform(0.001, 0.004), "GET", "/health", 503, KUBELET_IP)
                n503 += 1
            else:
                self.access(h, t + rng.uniform(0.004, 0.03), "GET", "/health", 200, KUBELET_IP)
            t += PROBE_S + rng.uniform(-0.05, 0.05)
        self.health_503 = n503

    def request_lines(self) -> None:
        for r in self.health:
            self._health_request(PREFILL, r.p_rid, r, r.t_arr, r.t_pf_fin)
        self._decode_health_probes()
        self._warned: set[str] = set()
        for r in self.reqs:
            tp, td = r.t_arr + self.rng.uniform(0.0008, 0.0016), r.t_arr + self.rng.uniform(0.0012, 0.0022)
            self.line(PREFILL, tp, "request_received", "pl", loglines.receive(self.gri(r.p_rid, r.room, r)))
            self.line(r.d_host, td, "request_received", "pl", loglines.receive(self.gri(r.d_rid, r.room, r)))
            prefill_side = _PREFILL_OUTCOMES.get(r.p_out)
            if prefill_side:
                prefill_side(self, r, tp)
            decode_side = _DECODE_OUTCOMES.get(r.d_out)
            if decode_side:
                decode_side(self, r, td)
            if r.ksum_mismatch:
                self.line(
                    r.d_host,
                    r.t_ksum_d + 0.0006,
                    "checksum_mismatch",
                    "sg",
                    f"KV checksum mismatch req={r.d_rid} bootstrap_room={r.room} expected=0x{r.ksum} got=0x{r.ksum_d}",
                    r.d_rank,
                )

    # -- the request lines' pieces: each outcome of a request on each side, and the lines they share --

    def _health_request(self, h: str, rid: str, r: Req, t_arr: float, t_fin: float) -> None:
        obj = self.gri(rid, 0, r, True)
        self.line(h, t_arr + 0.0008, "request_received", "pl", loglines.receive(obj))
        meta = loglines.meta_info(rid, loglines.finish_length(1), 1, 0, 1, 0, t_fin - t_arr)
        self.line(h, t_fin, "request_finished", "pl", loglines.finish(obj, meta))
        self.access(h, t_fin + 0.0004, "GET", "/health", 200)

    def _decode_health_probes(self) -> None:
        """The router's /health probes of each decode server, once a minute (none reach the wedged one)."""
        rng = self.rng
        for h in DECODES:
            t = T0 + LOG_START + 70 + (21 if h == "decode-0" else 37)
            while t < T0 + ARR_END + 120:
                th = t + rng.uniform(0, 0.5)
                t += 60.0
                if h == "decode-1" and T0 + W0 - 1 <= th < T0 + W1 + 1:
                    continue  # the router's probes time out; nothing reaches the wedged server
                rid = "HEALTH_CHECK_" + self.rid()
                fin = th + rng.uniform(0.04, 0.09)
                self._health_request(h, rid, health_req(th), th, fin)
                self.health_count[h] = self.health_count.get(h, 0) + 1

    def _finished(self, h: str, t: float, rid: str, r: Req, finish: str, *counts) -> None:
        """A `Finish: obj=…` line; counts are meta_info's prompt, reasoning, completion, cached, e2e latency."""
        obj = self.gri(rid, r.room, r)
        self.line(h, t, "request_finished", "pl", loglines.finish(obj, loglines.meta_info(rid, finish, *counts)))

    def _once(self, key: str, h: str, t: float, text: str, rank: int) -> None:
        # sglang prints these hints on the first timeout only
        if key not in self._warned:
            self._warned.add(key)
            self.line(h, t, "log", "sg", text, rank)

    def _late_abort(self, h: str, t: float | None, rid: str) -> None:
        if t:
            msg = f"Abort request for rid={rid} not found in rid_to_state; likely already finished/removed."
            self.line(h, t, "abort", "pl", msg)

    def _prefill_ok(self, r: Req, tp: float) -> None:
        fin = loglines.finish_length(0)
        self._finished(PREFILL, r.t_pf_fin, r.p_rid, r, fin, r.prompt, 0, 1, r.cached, r.t_pf_fin - tp)
        self.access(PREFILL, r.t_pf_fin + 0.0004, "POST", "/generate", 200)
        self._late_abort(PREFILL, getattr(r, "late_p", None), r.p_rid)

    def _prefill_aborted(self, r: Req, tp: float) -> None:
        fin = loglines.finish_abort(loglines.ABORTED, "None")
        cached = r.cached if r.t_pf_start else 0
        self._finished(PREFILL, r.t_p_end + 0.0005, r.p_rid, r, fin, r.prompt, 0, 0, cached, r.t_p_end - tp)

    def _prefill_bootstrap_timeout(self, r: Req, tp: float) -> None:
        self._once("bootstrap", PREFILL, r.t_p_end - 0.0005, BOOTSTRAP_TIMEOUT_HINT, r.p_rank)
        msg = loglines.bootstrap_failed(r.p_rank, r.p_rid, r.room, r.p_error)
        self.line(PREFILL, r.t_p_end, "bootstrap_failed", "sg", msg, r.p_rank)
        fin = loglines.finish_abort(r.p_error, 500)
        self._finished(PREFILL, r.t_p_end + 0.0006, r.p_rid, r, fin, r.prompt, 0, 0, 0, r.t_p_end - tp)
        self.access(PREFILL, r.t_p_end + 0.0009, "POST", "/generate", 500)

    def _prefill_fail(self, r: Req, tp: float) -> None:
        P, room = PREFILL, r.room
        reason = loglines.kv_transfer_error(room, loglines.nixl_transfer_err(room))
        tf = r.t_fail
        for dt, kind, style, pid_add, fields in _LINK_FAULT_LINES:
            pid = SCHED_PID0[P] + r.p_rank + pid_add
            msg = (pid, *fields) if style == "ucx" else (fields[0], pid, *fields[1:])
            self.line(P, tf + dt, kind, style, msg)
        if r is min(self.fault_reqs, key=lambda q: q.t_fail):
            self.line(P, tf + 0.002, "exception", "sg", loglines.worker_error(room), r.p_rank)
            for tb in _TRANSFER_WORKER_TRACEBACK:
                self.line(P, tf + 0.002, "traceback", "raw", tb)
        msg = loglines.transfer_failed("prefill", r.p_rank, r.p_rid, room, reason)
        self.line(P, r.t_p_end, "transfer_failed", "sg", msg, r.p_rank)
        fin = loglines.finish_abort(reason, 500)
        self._finished(P, r.t_p_end + 0.0006, r.p_rid, r, fin, r.prompt, 0, 0, r.cached, r.t_p_end - tp)
        self.access(P, r.t_p_end + 0.0009, "POST", "/generate", 500)

    def _decode_ok(self, r: Req, td: float) -> None:
        D = r.d_host
        # uvicorn logs a streamed response when its headers go out, right after the request is read
        self.access(
            D, (td + self.rng.uniform(0.002, 0.008)) if r.stream else (r.t_fin + 0.0006), "POST", "/generate", 200
        )
        counts = (r.prompt, r.reasoning, r.completion, r.cached, r.t_fin - td)
        self._finished(D, r.t_fin + 0.0003, r.d_rid, r, loglines.FINISH_STOP, *counts)
        self._late_abort(D, getattr(r, "late_d", None), r.d_rid)

    def _decode_aborted(self, r: Req, td: float) -> None:
        D, room = r.d_host, r.room
        before_run = r.d_out == "aborted_transfer"
        if before_run:
            msg = loglines.transfer_failed(
                "decode", r.d_rank, r.d_rid, room, loglines.kv_transfer_error(room, loglines.ABORTED)
            )
            self.line(D, r.t_d_end, "transfer_failed", "sg", msg, r.d_rank)
        gen = 0 if before_run else max(1, int(sum(b - a for a, b in r.segs) * r.speed))
        fin = loglines.finish_abort(loglines.ABORTED, "None")
        counts = (r.prompt, min(gen, r.reasoning), gen, r.cached, r.t_d_end - td)
        self._finished(D, r.t_d_end + 0.0004, r.d_rid, r, fin, *counts)

    def _decode_failed(self, r: Req, td: float) -> None:
        D, reason = r.d_host, r.error_text
        if r.d_out == "timeout":
            self._once("waiting", D, r.t_d_end - 0.0005, WAITING_TIMEOUT_HINT, r.d_rank)
        msg = loglines.transfer_failed("decode", r.d_rank, r.d_rid, r.room, reason)
        self.line(D, r.t_d_end, "transfer_failed", "sg", msg, r.d_rank)
        fin = loglines.finish_abort(reason, 500)
        self._finished(D, r.t_d_end + 0.0004, r.d_rid, r, fin, r.prompt, 0, 0, r.cached, r.t_d_end - td)
        self.access(D, r.t_d_end + 0.0007, "POST", "/generate", 500)

    def _decode_ctxcorrupt(self, r: Req, td: float) -> None:
        D, room = r.d_host, r.room
        src = self.fault_reqs[-1].room
        r.metadata_room = src
        msg = (
            f"Context corruption detected: Request {r.d_rid} (bootstrap_room={room}) received metadata from "
            f"bootstrap_room={src}. Metadata buffer index: 17. This indicates metadata buffer index collision."
        )
        self.line(D, r.t_kv, "corruption_detected", "sg", msg, r.d_rank)
        fin = loglines.finish_abort(r.error_text, 500)
        self._finished(D, r.t_d_end + 0.0004, r.d_rid, r, fin, r.prompt, 0, 0, r.cached, r.t_d_end - td)
        self.access(D, r.t_d_end + 0.0007, "POST", "/generate", 500)

    def decode_stats(self) -> None:
        rng = self.rng
        for h in DECODES:
            for d in range(DP):
                mine = [r for r in self.reqs if r.d_host == h and r.d_rank == d]
                starts = sorted(a for r in mine for a, _ in r.segs)
                if not starts:
                    continue
                t = starts[0] + rng.uniform(0.5, 2.0)
                last = t - 3.0
                end = max(b for r in mine for _, b in r.segs)
                # decode-1's ranks print their last line just before the wedge, the first after it
                # once the timeouts have been swept
                wedge_line = T0 + W0 - LAST_LINE[d] if h == "decode-1" else None
                while t < end:
                    resume = False
                    if wedge_line is not None and t >= wedge_line - 1.0:
                        t, wedge_line, resume = (
                            (T0 + W0 - LAST_LINE[d], None, True) if t < T0 + W1 else (t, None, False)
                        )
                    act = [r for r in mine if any(a <= t < b for a, b in r.segs)]
                    if not act:
                        nxt = [a for a in starts if a > t]
                        if not nxt:
                            break
                        t = nxt[0] + rng.uniform(0.5, 2.0)
                        continue
                    n = len(act)
                    gen, tok = 0.0, 0
                    for r in mine:
                        done_now = 0.0
                        for a, b in r.segs:
                            gen += max(0.0, min(b, t) - max(a, last)) * r.speed
                            done_now += max(0.0, min(b, t) - a)
                        if r in act:
                            tok += r.prompt + int(done_now * r.speed)
                    pre = [r for r in mine if r.t_prealloc is not None and r.t_prealloc <= t < (r.t_dq_end or 1e18)]
                    st = dict(
                        running_req=n,
                        token=tok,
                        token_usage=round(tok / MAX_TOTAL_D, 2),
                        prealloc_usage=round(sum(r.prompt for r in pre) / MAX_TOTAL_D, 2),
                        prealloc_req=sum(1 for r in mine if r.t_arr <= t < r.t_prealloc and (r.t_dq_end or 1e18) > t),
                        transfer_req=len(pre),
                        queue_req=sum(
                            1 for r in mine if r.t_kv is not None and r.t_start is not None and r.t_kv <= t < r.t_start
                        ),
                        gen_throughput=round(gen / max(t - last, 1e-3), 2),
                    )
                    msg = loglines.decode_batch(
                        n,
                        tok,
                        st["token_usage"],
                        st["prealloc_usage"],
                        st["prealloc_req"],
                        st["transfer_req"],
                        st["gen_throughput"],
                        st["queue_req"],
                    )
                    self.line(h, t, "decode_stats", "sg", msg, d)
                    if resume:
                        self.wedge_last[d] = dict(t=t, **st)
                    last = t
                    t += DECODE_LOG_INTERVAL * (0.0185 + 0.0014 * n) * rng.uniform(0.97, 1.03)
                    if resume:
                        t = T0 + W1 + rng.uniform(0.5, 1.5)


# which lines each outcome of a request leaves, on the prefill side (r.p_out) and the decode side (r.d_out)
_PREFILL_OUTCOMES = {
    "ok": _ServerLines._prefill_ok,
    "aborted": _ServerLines._prefill_aborted,
    "bootstrap_timeout": _ServerLines._prefill_bootstrap_timeout,
    "fail": _ServerLines._prefill_fail,
}
_DECODE_OUTCOMES = {
    "ok": _ServerLines._decode_ok,
    "aborted_transfer": _ServerLines._decode_aborted,
    "aborted_running": _ServerLines._decode_aborted,
    "fail": _ServerLines._decode_failed,
    "timeout": _ServerLines._decode_failed,
    "ctxcorrupt": _ServerLines._decode_ctxcorrupt,
}

BOOTSTRAP_TIMEOUT_HINT = (
    "Some requests timed out when bootstrapping, which means prefill instances fail to receive "
    "the KV indices from the decode instance of this request. If a greater mean TTFT is "
    "acceptable, you can 'export SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=600' (10 minutes) to "
    "relax the timeout condition. "
)
WAITING_TIMEOUT_HINT = (
    "Some requests fail to receive KV Cache transfer done signal after bootstrapping. If a "
    "greater mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' "
    "(10 minutes) to relax the timeout condition. "
)

# a failed transfer's UCX and NIXL lines on prefill: (seconds after the failure, kind, style, pid
# offset from the rank's scheduler pid, the line's other fields); NIXL's abseil lines come from a
# thread of its own, 56 pids on
_LINK_FAULT_LINES = (
    (
        -0.00004,
        "ucx",
        "ucx",
        0,
        (2, "ib_mlx5.c", 350, "ERROR", "mlx5_3: completion with error (transport retry counter exceeded)"),
    ),
    (0.00002, "nixl", "absl", 56, ("W", "ucx_utils.cpp", 65, "Unexpected UCX error: Input/output error")),
    (
        0.00006,
        "nixl",
        "absl",
        56,
        ("E", "nixl_agent.cpp", 1149, "getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND"),
    ),
)

_TRANSFER_WORKER_TRACEBACK = (
    loglines.TRACEBACK,
    loglines.frame(loglines.CONN_PY, 1153, "transfer_worker"),
    "    states = self._settle_batch(batch, handles)",
    loglines.frame(loglines.CONN_PY, 1288, "_settle_batch"),
    "    state = self.agent.check_xfer_state(handle)",
    loglines.frame("/usr/local/lib/python3.12/dist-packages/nixl_cu12/_api.py", 612, "check_xfer_state"),
    "    status = self.agent.getXferStatus(handle)",
    "nixl_cu12._bindings.nixlBackendError: NIXL_ERR_BACKEND",
)
