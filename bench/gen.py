"""Deterministic, realistic SGLang PD server logs of any size, generated fast.

A file is one ~64 MB chunk of simulated log, built once per server kind with `random.Random(seed)`
and written as many times as the size asks. Each repeat is one simulated day later: the chunk
carries placeholders for the date (`QQ-QQ`, `QQQQ` in glog), the UCX epoch (`EEEEE`) and two
digits of every rid and bootstrap room (`ZZ`), so repeats differ where an analysis would look.

Proportions (per simulated second on an 8-DP-rank server; decode prints a stats line every 40 steps
per DP rank: docs/formats/SGLANG.md, "Stats lines"): decode stats ~10/s, uvicorn access ~3/s, Receive/Finish
(level-0 request log) ~1/s each, health checks, NIXL abseil lines; every ~10 min a transfer
failure burst (KVTransferError on several TP ranks, UCX errors, NIXL errors, a 500 access line),
every ~30 min a traceback. Prefill servers print one `Prefill batch` per batch instead.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# bench/ is not installed: its scripts find tools/ from the checkout, after the installed package,
# so that a non-editable install is what the benchmarks time, not the checkout's forensics/ folder
if ROOT not in sys.path:
    sys.path.append(ROOT)

from tools import loglines  # noqa: E402

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
        return str(self.rng.randint(1, 8)) + "%016d" % self.rng.randrange(10**16) + "ZZ"

    def hms(self) -> str:
        t = self.t
        return "%02d:%02d:%02d" % (t // 3600, t // 60 % 60, t % 60)

    def sg(self, tags: str, msg: str) -> None:
        self.emit(loglines.sglang(f"2026-QQ-QQ {self.hms()}", tags, msg))

    def emit(self, line: str) -> None:
        if self.cri:
            ns = self.rng.randrange(10**9)
            line = loglines.cri(
                f"2026-QQ-QQT{self.hms()}.{ns:09d}", "stderr" if self.rng.random() < 0.9 else "stdout", line
            )
        self.out.append(line)
        self.size += len(line) + 1

    # -- line kinds -------------------------------------------------------------------------
    def startup(self) -> None:
        self.sg(
            "",
            loglines.server_args(
                model_path="deepseek-ai/DeepSeek-V3",
                tp_size=8,
                dp_size=8,
                enable_dp_attention=True,
                disaggregation_mode=self.role,
                disaggregation_transfer_backend="nixl",
            ),
        )
        for dp in range(DP):
            self.sg(loglines.dp_tags(dp), "Init torch distributed begin.")
        for dp in range(DP):
            self.sg(
                loglines.dp_tags(dp),
                "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
                "avail mem=21.53 GB, mem usage=76.12 GB.",
            )
            self.sg(loglines.dp_tags(dp), loglines.memory_pool(412345, 16384, 16384, 256, 163840, 9.87))
        self.emit(loglines.nixl_backend("UCX"))
        self.emit(
            loglines.nixl_agent(
                f"{_hex(self.rng, 8)}-{_hex(self.rng, 4)}-{_hex(self.rng, 4)}-{_hex(self.rng, 4)}-{_hex(self.rng, 12)}"
            )
        )
        for msg in loglines.uvicorn_startup(self.rng.randint(1000, 99999)):
            self.sg("", loglines.uvicorn("INFO", msg))
        self.sg("", loglines.READY)

    def decode_stats(self, dp: int) -> None:
        r = self.rng
        run = r.randint(8, 96)
        tok = run * r.randint(900, 4000)
        self.sg(
            loglines.dp_tags(dp),
            loglines.decode_batch(
                run,
                tok,
                tok / 412345,
                prealloc_usage=r.random() * 0.1,
                prealloc_req=r.randint(0, 6),
                transfer_req=r.randint(0, 12),
                gen_throughput=r.uniform(200, 3200),
                queue_req=r.randint(0, 3),
            ),
        )

    def prefill_stats(self, dp: int) -> None:
        r = self.rng
        seq = r.randint(1, 4)
        self.sg(
            loglines.dp_tags(dp),
            loglines.prefill_batch(
                seq,
                seq * r.randint(500, 8192),
                cached_token=r.randint(0, 4096),
                token_usage=r.random() * 0.3,
                running_req=r.randint(0, 4),
                queue_req=r.randint(0, 5),
                pending_token=r.randint(0, 40000),
                bootstrap_req=r.randint(0, 4),
                inflight_req=r.randint(0, 8),
                input_throughput=r.uniform(500, 20000),
            ),
        )

    def access(self, status: int = 200, path: str = "/generate", method: str = "POST") -> None:
        ip = f"10.{self.rng.randint(0, 255)}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"
        self.sg("", loglines.access(ip, self.rng.randint(1024, 65535), method, path, status))

    def receive(self) -> None:
        rid, room = self.rid(), self.room()
        self.pending.append((rid, room))
        self.sg(
            "", loglines.receive(loglines.req_input(rid, None, True, f"10.0.0.{self.rng.randint(1, 32)}", 8998, room))
        )

    def finish(self, reason: str = "stop") -> None:
        if not self.pending:
            return
        rid, room = self.pending.pop(self.rng.randrange(len(self.pending)))
        r = self.rng
        fr = loglines.FINISH_STOP if reason == "stop" else loglines.finish_abort(loglines.ABORTED, 500)
        self.sg(
            "",
            loglines.finish(
                loglines.req_input_brief(rid, room),
                loglines.meta_info(
                    rid,
                    fr,
                    prompt_tokens=r.randint(100, 30000),
                    reasoning_tokens=None,
                    completion_tokens=r.randint(1, 4000),
                    cached_tokens=r.randint(0, 8192),
                    e2e_latency=f"{r.uniform(0.2, 90):.4f}",
                ),
            ),
        )

    def nixl_info(self) -> None:
        r = self.rng
        us = r.randrange(10**6)
        self.emit(
            loglines.glog(
                "I",
                "QQQQ",
                self.hms(),
                us,
                r.randint(1000, 99999),
                "nixl_agent.cpp",
                r.choice([92, 301, 877]),
                r.choice(
                    [
                        "Loaded remote agent metadata",
                        "NIXL ETCD is disabled",
                        "Registered memory region, 512 descriptors",
                    ]
                ),
                tid_width=8,
            )
        )

    def ucx(self, level: str = "ERROR") -> None:
        r = self.rng
        us = r.randrange(10**6)
        msg = (
            "send completion[0] with error on rdmap132s0/0x55cf4425cfb0: Work Request Flushed Error, vendor_err 0x1 "
            f"wr_id 0x{_hex(r, 12)}"
            if level == "ERROR"
            else "UCP version is incompatible, required: 1.18, actual: 1.12 (release 1)"
        )
        # two spaces after the level whatever its width, where UCX pads it to 5
        self.emit(
            loglines.ucx(
                f"EEEEE{self.t:05d}",
                us,
                f"{self.role}-pod-{r.randint(0, 7)}",
                r.randint(100, 999),
                r.randint(0, 3),
                "srd_iface.c",
                221,
                level,
                msg,
                level_width=len(level) + 1,
            )
        )

    def failure_burst(self) -> None:
        r = self.rng
        rid, room = self.pending.pop() if self.pending else (self.rid(), self.room())
        reason = r.choice(
            [
                loglines.ABORTED,
                loglines.waiting_timeout(room),
                "Failed to get kvcache from prefill instance, it might be dead",
                loglines.nixl_transfer_err(room),
            ]
        )
        for _ in range(r.randint(2, 8)):
            self.ucx("ERROR")
        self.emit(
            loglines.glog(
                "E",
                "QQQQ",
                self.hms(),
                r.randrange(10**6),
                r.randint(1000, 99999),
                "nixl_agent.cpp",
                92,
                "postXferReq: remote agent disconnected",
                tid_width=8,
            )
        )
        for tp in r.sample(range(DP), r.randint(1, 4)):
            self.sg(
                loglines.dp_tags(tp),
                loglines.transfer_failed(self.role, tp, rid, room, loglines.kv_transfer_error(room, reason)),
            )
        self.pending.append((rid, room))
        self.finish("abort")
        self.access(500)

    def traceback(self) -> None:
        r = self.rng
        room = self.room()
        when = f"2026-QQ-QQ {self.hms()}"
        head = r.choice(
            [
                loglines.sglang(when, "", loglines.worker_error(room)),
                loglines.sglang(
                    when, loglines.dp_tags(r.randrange(DP)), f"Scheduler hit an exception: {loglines.TRACEBACK}"
                ),
                loglines.sglang(when, "", "Error in request: No tool calls but found tool output"),
            ]
        )
        self.emit(head)
        if "Traceback" not in head:
            self.emit(loglines.TRACEBACK)
        self.emit(loglines.frame(loglines.CONN_PY, 1153, "transfer_worker"))
        self.emit("    state_xfer_handles = self.maybe_send_extra(")
        self.emit(loglines.frame(loglines.CONN_PY, 2062, "maybe_send_extra"))
        self.emit("    raise RuntimeError(")
        self.emit("RuntimeError: NIXL transfer failed: remote agent disconnected")

    def misc(self) -> None:
        r = self.rng
        k = r.random()
        if k < 0.4:
            self.sg(
                loglines.dp_tags(r.randrange(DP)),
                "KV cache pool is full. Retract requests. #retracted_reqs: 1, "
                f"#new_tokens_gained: {r.randint(100, 9000)}, #new_token_ratio: 0.4512 -> 0.5512",
            )
        elif k < 0.7:
            self.sg("", loglines.uvicorn("WARNING", "Invalid HTTP request received."))
        else:
            self.sg(
                loglines.dp_tags(r.randrange(DP)),
                f"Deferred KV release for room {self.room()} timed out after 30.0s "
                "without a full drain ack from prefill; releasing anyway.",
            )

    def chatty_second(self) -> None:
        """A second of a server that mostly answers health checks (write_short_lines)."""
        r = self.rng
        for _ in range(r.randint(20, 40)):
            k = r.random()
            if k < 0.4:
                self.sg(
                    "",
                    loglines.access(
                        f"10.0.{r.randrange(4)}.{r.randrange(255)}", r.randint(30000, 60000), "GET", "/health", 200
                    ),
                )
            elif k < 0.7:
                self.sg(f" TP{r.randrange(8)}", r.choice(["Cache flushed", "heartbeat ok", "tick"]))
            else:
                self.emit(
                    loglines.glog(
                        "I",
                        "QQQQ",
                        self.hms(),
                        r.randrange(10**6),
                        r.randint(1000, 9999),
                        "nixl_agent.cpp",
                        r.randint(100, 999),
                        r.choice(["xfer posted", "notif sent", "md loaded"]),
                        tid_width=0,
                    )
                )
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
    return (
        b.replace(b"QQ-QQ", b"%02d-%02d" % (day.month, day.day))
        .replace(b"QQQQ", b"%02d%02d" % (day.month, day.day))
        .replace(b"EEEEE", b"%05d" % ((BASE_EPOCH + rep * 86400) // 100000))
        .replace(b"ZZ", b"%02d" % (rep % 100))
    )


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


def write_trace(path: str, size: int, seed: int) -> tuple[int, int]:
    """A KV transfer trace (docs/formats/TRANSFER_TRACE.md) of about `size` bytes: prefill and decode processes
    interleaved, each room its units' post/done/notif/checksum events, the forms its "Fields" allow (ISO and
    numeric `ts`, string and integer `room`, integer `status`), extra fields, a failure now and then;
    one line in 20,000 is cut or not JSON, so the unparsed path runs too."""
    import json

    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    t = float(BASE_EPOCH)
    dump = lambda o: json.dumps(o, separators=(",", ":"))  # noqa: E731
    while n < min(size, 16 << 20):
        t += rng.random() * 0.01
        room = rng.randrange(1, 1 << 63)
        rank = rng.randrange(8)
        chunks = rng.randint(1, 4)
        p = {
            "host": "node-p%d" % (rank // 4),
            "pid": 184000 + rank,
            "side": "prefill",
            "engine_rank": rank,
            "dp_rank": rank,
        }
        dd = {"host": "node-d%d" % (rank // 4), "pid": 90400 + rank, "side": "decode", "engine_rank": rank}
        prid, drid, peer_p, peer_d = (
            _hex(rng, 32),
            _hex(rng, 32),
            "8f3e2a1c-5b7d-4e9f-a0b1-%012x" % rank,
            "def7d2f1-d482-4cd2-b6de-%012x" % rank,
        )
        iso_d = rng.random() < 0.3
        for c in range(chunks):
            last = c == chunks - 1
            nb = rng.randrange(1 << 20, 1 << 30)
            ck = _hex(rng, 16)
            unit = {"kind": "kv", "chunk": c, "is_last": last}
            t += 0.0003
            out.append(
                dump(
                    {
                        "ts": round(t, 6),
                        **p,
                        "room": room,
                        "rid": prid,
                        **unit,
                        "event": "checksum",
                        "bytes": nb,
                        "checksum": ck,
                        "checksum_algo": "xxh64",
                    }
                )
            )
            out.append(
                dump(
                    {
                        "ts": round(t + 0.0001, 6),
                        **p,
                        "room": room,
                        "rid": prid,
                        **unit,
                        "event": "post",
                        "bytes": nb,
                        "peer": peer_d,
                    }
                )
            )
            fail = rng.random() < 0.002
            if fail:
                out.append(
                    dump(
                        {
                            "ts": round(t + 0.002, 6),
                            **p,
                            "room": room,
                            **unit,
                            "event": "fail",
                            "status": -3 if rng.random() < 0.5 else "NIXL_ERR_BACKEND",
                            "peer": peer_d,
                            "error": "getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
                        }
                    )
                )
                out.append(
                    dump(
                        {
                            "ts": round(t + 5, 6),
                            **dd,
                            "room": str(room),
                            "kind": "kv",
                            "event": "abort",
                            "error": f"KVTransferError(bootstrap_room={room}): NIXL transfer encountered ERR",
                        }
                    )
                )
                break
            out.append(
                dump(
                    {
                        "ts": round(t + 0.002, 6),
                        **p,
                        "room": room,
                        **unit,
                        "event": "done",
                        "status": "NIXL_SUCCESS",
                        "peer": peer_d,
                    }
                )
            )
            ts_d = (
                dt.datetime.fromtimestamp(t + 0.0021, dt.timezone.utc).isoformat().replace("+00:00", "Z")
                if iso_d
                else round(t + 0.0021, 6)
            )
            out.append(
                dump(
                    {
                        "ts": ts_d,
                        **dd,
                        "room": str(room) if iso_d else room,
                        "rid": drid,
                        **unit,
                        "event": "notif",
                        "peer": peer_p,
                        "notif": f"{room}:kv:{c}",
                    }
                )
            )
            out.append(
                dump(
                    {
                        "ts": ts_d,
                        **dd,
                        "room": room,
                        **unit,
                        "event": "checksum",
                        "bytes": nb,
                        "checksum": "0x" + ck.upper() if rng.random() < 0.5 else ck,
                        "checksum_algo": "xxh64",
                    }
                )
            )
        if rng.random() < 0.001:
            out.append(out[-1][: len(out[-1]) // 2])
        n = sum(map(len, out[-64:])) * len(out) // min(len(out), 64)
    body = ("\n".join(out) + "\n").encode()
    with open(path, "wb") as f:
        written, lines, rep = 0, 0, 0
        while written < size:
            part = body if written + len(body) <= size else body[: body.rfind(b"\n", 0, size - written) + 1]
            if not part:
                break
            f.write(part)
            written += len(part)
            lines += part.count(b"\n")
            rep += 1
    return written, lines
