"""Deterministic, realistic SGLang PD server logs of any size, generated fast.

A file is one ~64 MB chunk of simulated log, built once per server kind with `random.Random(seed)`
and written as many times as the size asks. Each repeat is one simulated day later: the chunk
carries placeholders for the date (`QQ-QQ`, `QQQQ` in glog), the UCX epoch (`EEEEE`) and two
digits of every rid and bootstrap room (`ZZ`), so repeats differ where an analysis would look.

Proportions (per simulated second on an 8-DP-rank server; SGLANG.md §5.1: decode prints a stats
line every 40 steps per DP rank): decode stats ~10/s, uvicorn access ~3/s, Receive/Finish
(level-0 request log) ~1/s each, health checks, NIXL abseil lines; every ~10 min a transfer
failure burst (KVTransferError on several TP ranks, UCX errors, NIXL errors, a 500 access line),
every ~30 min a traceback. Prefill servers print one `Prefill batch` per batch instead.
"""

from __future__ import annotations

import datetime as dt
import random

CHUNK_BYTES = 64 << 20
DP = 8
BASE_DAY = dt.date(2026, 10, 1)
BASE_EPOCH = 1790812800  # 2026-10-01T00:00:00Z


def _hex(rng: random.Random, n: int) -> str:
    return "%0*x" % (n, rng.getrandbits(4 * n))


class _Sim:
    def __init__(self, role: str, seed: int, cri: bool):
        self.rng = random.Random(seed)
        self.role, self.cri = role, cri
        self.out: list[str] = []
        self.size = 0
        self.t = 0  # seconds since 00:00 of the simulated day
        self.pending: list[tuple[str, str]] = []  # (rid, room) of requests in flight

    # -- ids and time ---------------------------------------------------------------------
    def rid(self) -> str:
        return _hex(self.rng, 30) + "ZZ"

    def room(self) -> str:
        return str(self.rng.randint(1, 8)) + "%016d" % self.rng.randrange(10 ** 16) + "ZZ"

    def hms(self) -> str:
        t = self.t
        return "%02d:%02d:%02d" % (t // 3600, t // 60 % 60, t % 60)

    def ts(self, tags: str = "") -> str:
        return f"[2026-QQ-QQ {self.hms()}{tags}]"

    def emit(self, line: str) -> None:
        if self.cri:
            ns = self.rng.randrange(10 ** 9)
            line = f"2026-QQ-QQT{self.hms()}.{ns:09d}Z {'stderr' if self.rng.random() < 0.9 else 'stdout'} F {line}"
        self.out.append(line)
        self.size += len(line) + 1

    def tags(self, dp: int) -> str:
        return f" DP{dp} TP{dp} EP{dp}"

    # -- line kinds -------------------------------------------------------------------------
    def startup(self) -> None:
        self.emit(f"{self.ts()} server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tp_size=8, dp_size=8, "
                  f"enable_dp_attention=True, disaggregation_mode='{self.role}', disaggregation_transfer_backend='nixl')")
        for dp in range(DP):
            self.emit(f"{self.ts(self.tags(dp))} Init torch distributed begin.")
        for dp in range(DP):
            self.emit(f"{self.ts(self.tags(dp))} Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
                      f"avail mem=21.53 GB, mem usage=76.12 GB.")
            self.emit(f"{self.ts(self.tags(dp))} max_total_num_tokens=412345, chunked_prefill_size=16384, "
                      f"max_prefill_tokens=16384, max_running_requests=256, context_len=163840, available_gpu_mem=9.87 GB")
        self.emit("Backend UCX was instantiated")
        self.emit(f"Initialized NIXL agent: {_hex(self.rng, 8)}-{_hex(self.rng, 4)}-{_hex(self.rng, 4)}-{_hex(self.rng, 4)}-{_hex(self.rng, 12)}")
        self.emit(f"{self.ts()} INFO:     Started server process [{self.rng.randint(1000, 99999)}]")
        self.emit(f"{self.ts()} INFO:     Waiting for application startup.")
        self.emit(f"{self.ts()} INFO:     Application startup complete.")
        self.emit(f"{self.ts()} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
        self.emit(f"{self.ts()} The server is fired up and ready to roll!")

    def decode_stats(self, dp: int) -> None:
        r = self.rng
        run = r.randint(8, 96)
        tok = run * r.randint(900, 4000)
        self.emit(f"{self.ts(self.tags(dp))} Decode batch, #running-req: {run}, #token: {tok}, "
                  f"token usage: {tok / 412345:.2f}, pre-allocated usage: {r.random() * 0.1:.2f}, "
                  f"#prealloc-req: {r.randint(0, 6)}, #transfer-req: {r.randint(0, 12)}, #retracted-req: 0, "
                  f"cuda graph: True, gen throughput (token/s): {r.uniform(200, 3200):.2f}, #queue-req: {r.randint(0, 3)}")

    def prefill_stats(self, dp: int) -> None:
        r = self.rng
        seq = r.randint(1, 4)
        self.emit(f"{self.ts(self.tags(dp))} Prefill batch, #new-seq: {seq}, #new-token: {seq * r.randint(500, 8192)}, "
                  f"#cached-token: {r.randint(0, 4096)}, token usage: {r.random() * 0.3:.2f}, #running-req: {r.randint(0, 4)}, "
                  f"#queue-req: {r.randint(0, 5)}, #pending-token: {r.randint(0, 40000)}, #bootstrap-req: {r.randint(0, 4)}, "
                  f"#inflight-req: {r.randint(0, 8)}, cuda graph: False, input throughput (token/s): {r.uniform(500, 20000):.2f}")

    def access(self, status: int = 200, path: str = "/generate", method: str = "POST") -> None:
        reason = {200: "OK", 500: "Internal Server Error", 503: "Service Unavailable"}[status]
        ip = f"10.{self.rng.randint(0, 255)}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"
        self.emit(f'{self.ts()} INFO:     {ip}:{self.rng.randint(1024, 65535)} - "{method} {path} HTTP/1.1" {status} {reason}')

    def receive(self) -> None:
        rid, room = self.rid(), self.room()
        self.pending.append((rid, room))
        self.emit(f"{self.ts()} Receive: obj=GenerateReqInput(rid='{rid}', stream=True, bootstrap_host='10.0.0.{self.rng.randint(1, 32)}', "
                  f"bootstrap_port=8998, bootstrap_room={room}, bootstrap_pair_key=None, decode_tp_size=None, "
                  f"routed_dp_rank=None, data_parallel_rank=None, disagg_prefill_dp_rank=None)")

    def finish(self, reason: str = "stop") -> None:
        if not self.pending:
            return
        rid, room = self.pending.pop(self.rng.randrange(len(self.pending)))
        r = self.rng
        fr = ("{'type': 'stop', 'matched': 1}" if reason == "stop" else
              "{'type': 'abort', 'message': 'Aborted by AbortReq.', 'status_code': 500, 'err_type': None}")
        self.emit(f"{self.ts()} Finish: obj=GenerateReqInput(rid='{rid}', bootstrap_room={room}), out={{'meta_info': "
                  f"{{'id': '{rid}', 'finish_reason': {fr}, 'prompt_tokens': {r.randint(100, 30000)}, "
                  f"'weight_version': 'default', 'num_retractions': 0, 'completion_tokens': {r.randint(1, 4000)}, "
                  f"'cached_tokens': {r.randint(0, 8192)}, 'e2e_latency': {r.uniform(0.2, 90):.4f}}}}}")

    def nixl_info(self) -> None:
        r = self.rng
        us = r.randrange(10 ** 6)
        self.emit(f"I{'QQQQ'} {self.hms()}.{us:06d} {r.randint(1000, 99999):>8} nixl_agent.cpp:{r.choice([92, 301, 877])}] "
                  f"{r.choice(['Loaded remote agent metadata', 'NIXL ETCD is disabled', 'Registered memory region, 512 descriptors'])}")

    def ucx(self, level: str = "ERROR") -> None:
        r = self.rng
        us = r.randrange(10 ** 6)
        msg = ("send completion[0] with error on rdmap132s0/0x55cf4425cfb0: Work Request Flushed Error, vendor_err 0x1 "
               f"wr_id 0x{_hex(r, 12)}" if level == "ERROR" else "UCP version is incompatible, required: 1.18, actual: 1.12 (release 1)")
        self.emit(f"[EEEEE{self.t:05d}.{us:06d}] [{self.role}-pod-{r.randint(0, 7)}:{r.randint(100, 999)}  :{r.randint(0, 3)}]"
                  f"       srd_iface.c:221  UCX  {level}  {msg}")

    def failure_burst(self) -> None:
        r = self.rng
        rid, room = (self.pending.pop() if self.pending else (self.rid(), self.room()))
        reason = r.choice(["Aborted by AbortReq.", f"Request {room} timed out after 300.0s in KVPoll.WaitingForInput",
                           "Failed to get kvcache from prefill instance, it might be dead",
                           f"NIXL transfer encountered ERR room={room}"])
        for _ in range(r.randint(2, 8)):
            self.ucx("ERROR")
        self.emit(f"E{'QQQQ'} {self.hms()}.{r.randrange(10 ** 6):06d} {r.randint(1000, 99999):>8} nixl_agent.cpp:92] "
                  f"postXferReq: remote agent disconnected")
        side = "Decode" if self.role == "decode" else "Prefill"
        prefix = "decode_req.req" if self.role == "decode" else "req"
        for tp in r.sample(range(DP), r.randint(1, 4)):
            self.emit(f"{self.ts(self.tags(tp))} {side} transfer failed for request rank={tp} {prefix}.rid='{rid}' "
                      f"{prefix}.bootstrap_room={room} with exception KVTransferError(bootstrap_room={room}): {reason}")
        self.pending.append((rid, room))
        self.finish("abort")
        self.access(500)

    def traceback(self) -> None:
        r = self.rng
        room = self.room()
        head = r.choice([f"{self.ts()} Unexpected transfer worker error for room {room}",
                         f"{self.ts(self.tags(r.randrange(DP)))} Scheduler hit an exception: Traceback (most recent call last):",
                         f"{self.ts()} Error in request: No tool calls but found tool output"])
        self.emit(head)
        if "Traceback" not in head:
            self.emit("Traceback (most recent call last):")
        self.emit('  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1153, in transfer_worker')
        self.emit("    state_xfer_handles = self.maybe_send_extra(")
        self.emit('  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 2062, in maybe_send_extra')
        self.emit("    raise RuntimeError(")
        self.emit("RuntimeError: NIXL transfer failed: remote agent disconnected")

    def misc(self) -> None:
        r = self.rng
        k = r.random()
        if k < 0.4:
            self.emit(f"{self.ts(self.tags(r.randrange(DP)))} KV cache pool is full. Retract requests. #retracted_reqs: 1, "
                      f"#new_tokens_gained: {r.randint(100, 9000)}, #new_token_ratio: 0.4512 -> 0.5512")
        elif k < 0.7:
            self.emit(f"{self.ts()} WARNING:  Invalid HTTP request received.")
        else:
            self.emit(f"{self.ts(self.tags(r.randrange(DP)))} Deferred KV release for room {self.room()} timed out after 30.0s "
                      f"without a full drain ack from prefill; releasing anyway.")

    def chatty_second(self) -> None:
        """A second of a server that mostly answers health checks (write_short_lines)."""
        r = self.rng
        for _ in range(r.randint(20, 40)):
            k = r.random()
            if k < 0.4:
                self.emit(f'{self.ts()} INFO:     10.0.{r.randrange(4)}.{r.randrange(255)}:{r.randint(30000, 60000)} '
                          f'- "GET /health HTTP/1.1" 200 OK')
            elif k < 0.7:
                self.emit(f"{self.ts(f' TP{r.randrange(8)}')} {r.choice(['Cache flushed', 'heartbeat ok', 'tick'])}")
            else:
                self.emit(f"IQQQQ {self.hms()}.{r.randrange(10 ** 6):06d} {r.randint(1000, 9999)} "
                          f"nixl_agent.cpp:{r.randint(100, 999)}] {r.choice(['xfer posted', 'notif sent', 'md loaded'])}")
        self.t = (self.t + 1) % 86400

    # -- one simulated second ----------------------------------------------------------------
    def second(self) -> None:
        r = self.rng
        if self.role == "decode":
            for dp in range(DP):
                # one stats line per 40 decode steps (~0.8 s at 20 ms/step): 1.25 a second
                self.decode_stats(dp)
                if r.random() < 0.25:
                    self.decode_stats(dp)
        else:
            for dp in range(DP):
                if r.random() < 0.4:
                    self.prefill_stats(dp)
        for _ in range(3 if r.random() < 0.5 else 2):
            self.access()
        if self.t % 5 == 0:
            self.access(path="/health", method="GET")
        self.receive()
        if len(self.pending) > 200 or r.random() < 0.98:
            self.finish()
        if r.random() < 1 / 60:
            self.nixl_info()
        if r.random() < 1 / 600:
            self.failure_burst()
        if r.random() < 1 / 1800:
            self.traceback()
        if r.random() < 1 / 300:
            self.misc()
        if r.random() < 1 / 3600:
            self.ucx("WARN")
        self.t += 1


def chunk(role: str, seed: int, cri: bool = False, nbytes: int = CHUNK_BYTES) -> tuple[bytes, bytes]:
    """(head, body): a startup head once per file, then a body repeated with day placeholders."""
    sim = _Sim(role, seed, cri)
    sim.startup()
    head = "\n".join(sim.out) + "\n"
    sim.out, sim.size = [], 0
    while sim.size < nbytes and sim.t < 86400:
        sim.second()
    return head.encode(), ("\n".join(sim.out) + "\n").encode()


def _fill(b: bytes, rep: int) -> bytes:
    day = BASE_DAY + dt.timedelta(days=rep)
    return (b.replace(b"QQ-QQ", b"%02d-%02d" % (day.month, day.day)).replace(b"QQQQ", b"%02d%02d" % (day.month, day.day))
            .replace(b"EEEEE", b"%05d" % ((BASE_EPOCH + rep * 86400) // 100000)).replace(b"ZZ", b"%02d" % (rep % 100)))


def write_log(path: str, role: str, size: int, seed: int, cri: bool = False) -> tuple[int, int]:
    """Write a log of about `size` bytes (cut at a line end); return (bytes, lines)."""
    head, body = chunk(role, seed, cri, min(CHUNK_BYTES, max(1 << 20, size)))
    with open(path, "wb") as f:
        first = _fill(head, 0)
        f.write(first)
        return _write_days(f, body, size, len(first), first.count(b"\n"))


def _write_days(f, body: bytes, size: int, written: int, lines: int) -> tuple[int, int]:
    """`body` one simulated day after another until `size` bytes (cut at a line end): (bytes, lines)."""
    rep = 0
    while written < size:
        part = _fill(body, rep)
        if written + len(part) > size:
            part = part[: part.rfind(b"\n", 0, size - written) + 1]
            if not part:
                break
        f.write(part)
        written += len(part)
        lines += part.count(b"\n")
        rep += 1
    return written, lines


def write_short_lines(path: str, size: int, seed: int) -> tuple[int, int]:
    """A chatty log of short lines (~60 bytes: health checks, terse sglang and NIXL glog lines):
    the frames of a block cost per line, so this is the memory case (parsers/lines.MAX_BLOCK_LINES)."""
    sim = _Sim("decode", seed, False)
    while len(sim.out) < 90_000:  # ~4 MB
        sim.chatty_second()
    with open(path, "wb") as f:
        return _write_days(f, ("\n".join(sim.out) + "\n").encode(), size, 0, 0)
