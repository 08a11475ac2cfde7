"""Generate a PD incident the way real deployments fail, written apart from the detectors.

    python -m tools.pdincident OUT_DIR --seed N [--minutes M]

Writes OUT_DIR as an operator leaves a dump (one folder per host, the servers' own file names, agent
transcripts beside them) and OUT_DIR/../truth.json, outside the dump, with what was planted. Every
line shape comes from docs/formats/ (SGLANG.md, NIXL.md, TRANSFER_TRACE.md, and TRANSCRIPTS.md,
"What real transcript files look like"), and the incident follows the shapes real incidents took
(docs/formats/SGLANG.md, "What a wedge looks like in the log"): a wedge that the health endpoint keeps logging
through, an agent with 80 sessions killed into an abort storm seen on three hosts (one of them with
an unset clock skew), and corrupted replies that rise with prefill load, beside clean replies that
quote logs, tracebacks, tables and code. The seed varies times, counts, hosts, the wedge kind and
the skew; nothing here reads the toolkit's detectors or views.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import datetime as dt
import heapq
import json
import math
import random
import uuid
from pathlib import Path

UTC = dt.timezone.utc
PREFILL = "node-p0"
DECODES = ("node-d0", "node-d1")
HOST_IP = {
    "node-p0": "10.0.1.10",
    "node-d0": "10.0.2.20",
    "node-d1": "10.0.2.21",
    "router": "10.0.0.5",
    "probe": "10.0.0.1",
}
PREFILL_TP = 4
DECODE_DP = 4
WAIT_TIMEOUT = 300.0
WEDGE_KINDS = ("health_503", "tp_desync", "dead_bootstrap_thread")
MODEL = "deepseek-v3.2"

# ---------------------------------------------------------------------------------------------
# time and line rendering


def fmt_prefix(t: float, tags: str = "") -> str:
    d = dt.datetime.fromtimestamp(t, UTC)
    return f"[{d:%Y-%m-%d %H:%M:%S}{tags}]"


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def iso_ms(t: float) -> str:
    return dt.datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


class HostLog:
    """The lines one process tree writes to its log, in true time; rendered with the host's clock."""

    def __init__(self, host: str, skew: float):
        self.host = host
        self.skew = skew
        self.lines: list[tuple[float, int, str]] = []
        self._n = 0

    def add(self, t: float, text: str, tags: str = "") -> None:
        """An sglang / uvicorn line: the prefix is written from the host's clock."""
        self._n += 1
        self.lines.append((t, self._n, ("S", tags, text)))

    def raw(self, t: float, render) -> None:
        """A foreign line (abseil, UCX, NIXL binding, traceback frame): render(host_time) gives the text."""
        self._n += 1
        self.lines.append((t, self._n, ("R", render, None)))

    def render(self) -> list[tuple[float, str]]:
        out = []
        for t, _, (k, a, b) in sorted(self.lines, key=lambda x: (x[0], x[1])):
            ht = t + self.skew
            out.append((ht, f"{fmt_prefix(ht, a)} {b}" if k == "S" else a(ht)))
        return out


def abseil(sev: str, ht: float, tid: int, src: str, msg: str) -> str:
    d = dt.datetime.fromtimestamp(ht, UTC)
    return f"{sev}{d:%m%d %H:%M:%S}.{d.microsecond:06d} {tid:>7d} {src}] {msg}"


def access(ip: str, port: int, method: str, path: str, status: int) -> str:
    reason = {200: "OK", 500: "Internal Server Error", 503: "Service Unavailable", 404: "Not Found"}[status]
    return f'INFO:     {ip}:{port} - "{method} {path} HTTP/1.1" {status} {reason}'


# ---------------------------------------------------------------------------------------------
# requests


@dataclasses.dataclass
class Req:
    agent: str  # proxy | claude | opencode | killed
    session: str
    turn: str  # stable id of the reply in its source
    t0: float  # router sent it to both servers
    prompt: int
    completion: int
    cached: int
    dhost: str
    drank: int
    room: int
    rid_p: str
    rid_d: str
    t_boot: float = 0.0  # prefill bootstrapped (left the bootstrap queue)
    t_prefill: float = 0.0  # prefilled
    t_xfer: float = 0.0  # KV landed on decode
    t_end: float = 0.0  # last token / error / abort time
    outcome: str = "ok"  # ok | waiting_timeout | bootstrap_timeout | aborted | transfer_failed
    label: str = "clean"  # clean | hard_negative | corrupted | error | killed
    ckind: str = ""  # corruption kind or hard-negative kind
    heavy: bool = False  # prefill load heavy when it was prefilled
    prank: int = 0
    error_body: str = ""
    stream: bool = False


def hexid(rng: random.Random) -> str:
    return "%032x" % rng.getrandbits(128)


def room_id(rng: random.Random) -> int:
    return rng.randrange(10**18, 2**63)


def oc_id(prefix: str, t: float, rng: random.Random) -> str:
    # opencode ids sort by creation time: a hex time part then a random base62 tail
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return f"{prefix}_{int(t * 1000) * 4096 + rng.randrange(4096):012x}"[:16] + "".join(
        rng.choice(alphabet) for _ in range(14)
    )


# ---------------------------------------------------------------------------------------------
# reply texts (docs/formats/TRANSCRIPTS.md, "Corrupted replies reported in public"; hard negatives in the shape engineers write)

TOPICS = [
    "the config loader",
    "the retry wrapper",
    "the session cache",
    "the request router",
    "the log shipper",
    "the benchmark harness",
    "the KV pool sizing",
    "the tokenizer warmup",
    "the health probe",
    "the CLI parser",
]
FILES = ["app/config.py", "app/router.py", "serve/launch.sh", "bench/run_c60.py", "app/cache.py", "tests/test_io.py"]


def clean_text(rng: random.Random) -> str:
    topic, f = rng.choice(TOPICS), rng.choice(FILES)
    parts = [
        f"I looked at {topic} in {f}. The failure comes from the default being read before the "
        f"environment is parsed, so the second call sees a stale value.",
        "I'll move the lookup after argument parsing and add a test that sets the variable first.",
        f"The change is small: one function moves, and {topic} keeps its public signature.",
        "After that the suite passes locally; the flaky case was the one that depended on import order.",
        "Next I will run the benchmark at low and high concurrency to check that nothing regressed.",
    ]
    return " ".join(parts[: rng.randint(2, 5)])


def corrupted_text(kind: str, rng: random.Random) -> tuple[str, str]:
    """(content, reasoning) of a corrupted reply of the given kind."""
    f = rng.choice(FILES)
    if kind == "dsml_leak":
        body = (
            f'Reading the file first.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="read">\n'
            f'<｜DSML｜parameter name="filePath" string="true">/home/dev/{f}</｜DSML｜parameter>\n'
            f"</｜DSML｜invoke>"
        )
        if rng.random() < 0.5:
            body += "\n</｜DSML｜function_calls>"
        return body, "Need to read the file."
    if kind == "repetition":
        unit = rng.choice(["I'll write() ", "the the ", "1. [1]  ", "!", "<invoke> "])
        # S12 judges texts of 200 chars and more; a degenerate reply runs on until max_tokens anyway
        n = math.ceil(rng.randint(260, 700) / len(unit))
        return f"Now I will update {f}. " + unit * n, ""
    if kind == "script_switch":
        return (
            f"The loader in {f} should be separable by常规的方法处理 before the second pass, and then "
            f"we 需要检查 the cache keys again 因为 they are stale when the 配置 is reloaded, so the fix is "
            f"to 重新 read the value."
        ), ""
    if kind == "token_salad":
        words = ["but", "about", "you", "ins", "3", "Q", "/", "a", "of", "it", "to", "e", "x", ",", "-", "is"]
        salad = " ".join(rng.choice(words) for _ in range(rng.randint(60, 110)))
        return f"Let me check {f}. " + salad, ""
    if kind == "think_leak":
        return (
            f"I need to look at {f} before changing it.</think>The file defines the loader; I will "
            f"change the default.</think> Then run the tests."
        ), ""
    raise ValueError(kind)


HARD_NEGATIVE_KINDS = (
    "quoted_log",
    "traceback",
    "hex_ids",
    "table",
    "inline_code",
    "long_report",
    "fenced_dsml",
    "cjk_reply",
)


def hard_negative_text(kind: str, rng: random.Random, room: int, rid: str, t: float) -> tuple[str, str]:
    d = dt.datetime.fromtimestamp(t, UTC)
    r = rng.randint(0, 3)
    if kind == "quoted_log":
        return (
            f"The decode host logged this right before the client saw the 500:\n\n"
            f"> [{d:%Y-%m-%d %H:%M:%S} DP{r} TP{r} EP{r}] Decode transfer failed for request rank={r} "
            f"decode_req.req.rid='{rid}' decode_req.req.bootstrap_room={room} with exception "
            f"KVTransferError(bootstrap_room={room}): Request {room} timed out after 300.0s in "
            f'KVPoll.WaitingForInput\n> [{d:%Y-%m-%d %H:%M:%S}] INFO:     10.0.0.5:51622 - "POST /generate '
            f'HTTP/1.1" 500 Internal Server Error\n\n'
            f"So the decode side gave up waiting for the KV of room {room}; the prefill side never sent it. "
            f"I'd check whether the prefill bootstrap queue was draining at that time."
        ), ""
    if kind == "traceback":
        return (
            "The worker died with this traceback:\n\n"
            "Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1153, in transfer_worker\n'
            "    state_xfer_handles = self.maybe_send_extra(\n"
            "                         ^^^^^^^^^^^^^^^^^^^^^^\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 2062, in maybe_send_extra\n'
            "    raise RuntimeError(\n"
            "RuntimeError: NIXL transfer encountered ERR room=%d\n\n"
            "It is raised from the state path, not from the KV pages, so only the extra buffers failed." % room
        ), ""
    if kind == "hex_ids":
        ids = [hexid(rng) for _ in range(4)]
        return (
            f"The four requests that failed were {ids[0]}, {ids[1]}, {ids[2]} and {ids[3]}. Their agents "
            f"were 8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7 and def7d2f1-d482-4cd2-b6de-f238da5a9c70, and the "
            f"checksums differ: 0x9a41c07e55d2b3f1 on prefill vs 0xc51e07a2990b13d8 on decode for room {room}."
        ), ""
    if kind == "table":
        rows = "\n".join(
            f"| {i} | {room + i} | {rng.choice(['ok', 'timeout', 'abort'])} | {rng.randint(1, 9)}.{rng.randint(0, 9)} s |"
            for i in range(6)
        )
        return (
            "Per rank, what the rooms did:\n\n| rank | room | state | wait |\n|---|---|---|---|\n"
            + rows
            + "\n\nRank 2 is the one that stopped; the others went on."
        ), ""
    if kind == "inline_code":
        return (
            "Set `SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600` and `--decode-log-interval 40`, then watch "
            "`#transfer-req`, `#prealloc-req` and `#retracted-req` in the `Decode batch` lines; if "
            "`KVPoll.WaitingForInput` shows up with `bootstrap_room=0`, it is the `HEALTH_CHECK_` rid, "
            "not a user request. `x = a[i:j]`, `f(**kw)`, `0x7f3a`, `</think>` are just tokens here."
        ), ""
    if kind == "long_report":
        paras = []
        for i in range(6):
            paras.append(
                f"## {i + 1}. {rng.choice(['Symptoms', 'Timeline', 'Root cause', 'Evidence', 'Fix', 'Next steps'])}\n\n"
                f"- At 14:{10 + i:02d} the decode host stopped printing `Decode batch` lines while "
                f"`/health` kept answering; `#running-req` was {rng.randint(10, 40)} before that.\n"
                f"- The prefill side had `#bootstrap-req: {rng.randint(0, 30)}` and "
                f"`#inflight-req: {rng.randint(0, 30)}`; throughput fell from {rng.randint(20, 40)}k to 0 tok/s.\n"
                f"- Rooms like {room + i} timed out after 300.0 s (`KVPoll.WaitingForInput`), the "
                f"prefill side two seconds later (`KVPoll.Bootstrapping`).\n\n"
                f"The benchmark at C=1 gave {rng.randint(40, 60)}.{rng.randint(0, 9)} tok/s and at C=32 "
                f"{rng.randint(400, 600)}.{rng.randint(0, 9)} tok/s, within noise of the baseline."
            )
        return "# Incident report\n\n" + "\n\n".join(paras), "Summarise the incident for the user."
    if kind == "fenced_dsml":
        return (
            "The parser leaked markup like this into `content`:\n\n```\n<｜DSML｜function_calls>\n"
            '<｜DSML｜invoke name="read">\n<｜DSML｜parameter name="filePath" string="true">app/config.py'
            "</｜DSML｜parameter>\n</｜DSML｜invoke>\n```\n\nThe fix is to require the end token before "
            "emitting a call."
        ), ""
    if kind == "cjk_reply":
        return (
            "这个问题是因为解码端在等待 KV 传输时超时了。`KVPoll.WaitingForInput` 表示解码端已经分配了内存，"
            "但是预填充端没有发送数据。建议先检查预填充端的 `#bootstrap-req` 队列。"
        ), ""
    raise ValueError(kind)


# ---------------------------------------------------------------------------------------------
# the incident


class Incident:
    def __init__(self, seed: int, minutes: float):
        self.rng = rng = random.Random(seed)
        self.seed = seed
        day = dt.datetime(
            2026, rng.randint(1, 11), rng.randint(1, 27), rng.randint(1, 20), rng.randint(0, 59), 0, tzinfo=UTC
        )
        self.T0 = day.timestamp()
        self.span = minutes * 60
        self.wedge_kind = WEDGE_KINDS[seed % 3]
        self.wedge_host = PREFILL if self.wedge_kind == "dead_bootstrap_thread" else rng.choice(DECODES)
        self.wedge_rank = (
            rng.randrange(DECODE_DP)
            if self.wedge_kind == "tp_desync"
            else (rng.randrange(PREFILL_TP) if self.wedge_kind == "dead_bootstrap_thread" else None)
        )
        self.skew_host = rng.choice(DECODES)
        self.skew = rng.choice((1, -1)) * rng.uniform(2.3, 2.7)
        self.cri_host = DECODES[1 - DECODES.index(self.skew_host)]
        self.trunc_host = self.skew_host
        self.with_trace = seed % 2 == 0
        # phases (seconds from T0): startup, busy with a prefill slam, an idle lull, the killed agent,
        # busy, the wedge, then traffic until the end
        s = self.span
        self.busy1 = (60.0, 0.28 * s)
        self.heavy = [
            (
                self.busy1[0] + 0.30 * (self.busy1[1] - self.busy1[0]),
                self.busy1[0] + 0.55 * (self.busy1[1] - self.busy1[0]),
            )
        ]
        self.idle = (self.busy1[1], self.busy1[1] + rng.uniform(150, 200))
        self.storm_start = self.idle[1] + rng.uniform(20, 40)  # the 80-session agent starts
        self.storm_kill = self.storm_start + rng.uniform(4, 8)  # and is killed
        self.wedge_start = self.storm_kill + rng.uniform(90, 130)
        h2 = (self.wedge_start - rng.uniform(50, 70), self.wedge_start - rng.uniform(0, 2))
        self.heavy.append(h2)
        self.heavy.append((self.storm_start, self.storm_kill + 1.0))
        if self.wedge_kind == "dead_bootstrap_thread":
            # the operator restarts prefill as soon as the rooms start timing out
            self.restart = self.wedge_start + WAIT_TIMEOUT + rng.uniform(3, 6)
            self.wedge_end = None
        else:
            self.wedge_end = self.wedge_start + WAIT_TIMEOUT + rng.uniform(6.0, 12.0)
        self.logs = {h: HostLog(h, self.skew if h == self.skew_host else 0.0) for h in (PREFILL,) + DECODES}
        self.reqs: list[Req] = []
        self.trace: dict[str, list] = {h: [] for h in (PREFILL,) + DECODES}
        self.truth: dict = {}
        self.errors_nixl: list[Req] = []

    def T(self, x: float) -> float:
        return self.T0 + x

    def is_heavy(self, x: float) -> bool:
        return any(a <= x < b for a, b in self.heavy)

    # --- sessions -------------------------------------------------------------------------------
    def run(self):
        rng = self.rng
        sessions = []
        n_proxy = rng.randint(14, 18)
        for i in range(n_proxy):
            sessions.append(("proxy", f"c-{seed_tag(self.seed)}-{i:02d}"))
        for i in range(3):
            sessions.append(("claude", str(uuid.UUID(int=rng.getrandbits(128), version=4))))
        for i in range(rng.randint(4, 6)):
            sessions.append(("opencode", oc_id("ses", self.T(10 + i), rng)))
        heap = []
        for a, s in sessions:
            heapq.heappush(heap, (self.busy1[0] + rng.uniform(0, 20), a, s))
        # writer agent sessions that slam the prefill in the heavy windows
        for wi, (a, b) in enumerate(self.heavy[:2]):
            for i in range(rng.randint(10, 14) if wi == 0 else rng.randint(34, 42)):
                sid = oc_id("ses", self.T(a + i), rng)
                heapq.heappush(heap, (a + rng.uniform(0, 6), "opencode-w", sid))
        self.turn_no: dict[str, int] = {}
        while heap:
            x, a, s = heapq.heappop(heap)
            if x >= self.span - 40:
                continue
            if self.idle[0] <= x < self.idle[1]:
                heapq.heappush(heap, (self.idle[1] + rng.uniform(0, 15), a, s))
                continue
            if a == "opencode-w" and not self.is_heavy(x):
                continue  # the writer's burst is over
            r = self.request(a, s, x)
            nxt = r.t_end + (rng.uniform(25, 45) if r.outcome != "ok" else rng.uniform(1.5, 10))
            heapq.heappush(heap, (nxt, a, s))
        self.killed_agent()
        self.reqs.sort(key=lambda r: r.t0)

    def request(self, agent: str, session: str, x: float) -> Req:
        rng = self.rng
        n = self.turn_no[session] = self.turn_no.get(session, 0) + 1
        src = "opencode" if agent.startswith("opencode") else agent
        turn = {
            "proxy": lambda: f"{session}-{n:03d}",
            "claude": lambda: (
                "msg_01"
                + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789") for _ in range(22))
            ),
            "opencode": lambda: oc_id("msg", self.T(x), rng),
        }[src]()
        heavy_prompt = agent == "opencode-w"
        prompt = rng.randint(24000, 60000) if heavy_prompt else rng.randint(3000, 22000)
        cached = 0 if heavy_prompt else rng.choice((0, prompt // 2, prompt - rng.randint(200, 900)))
        completion = rng.randint(150, 1400)
        r = Req(
            src,
            session,
            turn,
            x,
            prompt,
            completion,
            cached,
            rng.choice(DECODES),
            rng.randrange(DECODE_DP),
            room_id(rng),
            hexid(rng),
            hexid(rng),
            prank=rng.randrange(PREFILL_TP),
            stream=rng.random() < 0.5,
        )
        heavy = self.is_heavy(x)
        # a slammed prefill holds rooms in its bootstrap queue (#bootstrap-req) and then its waiting queue
        r.t_boot = x + (rng.uniform(1.0, 6.0) if heavy else rng.uniform(0.02, 0.2))
        r.t_prefill = r.t_boot + (rng.uniform(3, 8) if heavy else rng.uniform(0.1, 1.0))
        r.heavy = self.is_heavy(r.t_prefill) or heavy
        # a slammed decode pool keeps rooms in its prealloc queue (#prealloc-req) before the KV can land
        r.t_xfer = r.t_prefill + rng.uniform(0.05, 0.35) + (rng.uniform(4, 20) if r.heavy else 0.0)
        speed = rng.uniform(30, 60)
        r.t_end = r.t_xfer + completion / speed
        self.apply_wedge(r)
        if r.outcome == "ok" and rng.random() < 0.006 and not r.heavy:
            # a NIXL transfer-worker failure: a traceback on prefill, a 500 to the client (docs/formats/NIXL.md, "Failure and abort texts")
            r.outcome = "transfer_failed"
            r.t_end = r.t_prefill + rng.uniform(0.3, 1.0)
            r.error_body = (
                f"Decode transfer failed for request rank={r.drank} decode_req.req.rid='{r.rid_d}' "
                f"decode_req.req.bootstrap_room={r.room} with exception KVTransferError(bootstrap_room="
                f"{r.room}): Failed to get kvcache from prefill instance, it might be dead"
            )
            self.errors_nixl.append(r)
        self.label(r)
        self.reqs.append(r)
        return r

    def apply_wedge(self, r: Req):
        kind, ws = self.wedge_kind, self.wedge_start
        if kind in ("health_503", "tp_desync"):
            we = self.wedge_end
            on = r.dhost == self.wedge_host and (kind == "health_503" or r.drank == self.wedge_rank)
            if not on or r.t0 >= we or r.t_end <= ws:
                return
            if r.t_xfer > ws:
                if r.t0 <= we - WAIT_TIMEOUT:
                    # decode never took it in: its waiting timer runs out while the scheduler is stuck, and
                    # the sweep after it resumes times the room out; prefill's bootstrap fails just after
                    r.outcome = "waiting_timeout"
                    r.t_end = we + self.rng.uniform(0.0, 0.6)
                    r.error_body = (
                        f"Decode transfer failed for request rank={r.drank} decode_req.req.rid='{r.rid_d}' "
                        f"decode_req.req.bootstrap_room={r.room} with exception KVTransferError("
                        f"bootstrap_room={r.room}): Request {r.room} timed out after 300.0s in "
                        f"KVPoll.WaitingForInput"
                    )
                else:
                    # arrived during the wedge: served late once the scheduler moves again
                    shift = we + self.rng.uniform(0.5, 3.0) - r.t_xfer
                    r.t_xfer += shift
                    r.t_end += shift
            else:
                r.t_end += we - ws  # decoding when it stopped: resumes where it was
        else:
            if r.t_boot < ws:
                # bootstrapped before the thread died: prefilled before the batches stop
                if r.t_prefill >= ws:
                    shift = ws - 0.05 - r.t_prefill
                    r.t_prefill += shift
                    r.t_xfer += shift
                    r.t_end += shift
                return
            if r.t_boot >= self.restart:
                return
            if r.t_boot >= self.restart - WAIT_TIMEOUT:
                # still waiting at the restart: the router sends it again to the new server
                shift = self.restart + self.rng.uniform(5, 9) - r.t_prefill
                r.t_prefill += shift
                r.t_xfer += shift
                r.t_end += shift
                return
            # the prefill bootstrap thread is dead: nothing bootstraps, every new room times out
            r.outcome = "bootstrap_timeout"
            r.t_end = r.t_boot + WAIT_TIMEOUT
            r.error_body = (
                f"Prefill bootstrap failed for request rank={self.wedge_rank} req.rid='{r.rid_p}' "
                f"req.bootstrap_room={r.room} with exception KVTransferError(bootstrap_room={r.room}): "
                f"Request {r.room} timed out after 300.0s in KVPoll.Bootstrapping"
            )

    def label(self, r: Req):
        rng = self.rng
        if r.outcome != "ok":
            r.label = "error"
            return
        p = 0.30 if r.heavy else 0.025
        if rng.random() < p:
            r.label, r.ckind = (
                "corrupted",
                rng.choice(("dsml_leak", "repetition", "script_switch", "token_salad", "think_leak")),
            )
        elif rng.random() < 0.22:
            r.label, r.ckind = "hard_negative", rng.choice(HARD_NEGATIVE_KINDS)

    def killed_agent(self):
        """80 sessions start within two seconds; the agent is killed seconds later, every request aborted."""
        rng = self.rng
        self.killed = []
        for i in range(80):
            sid = oc_id("ses", self.T(self.storm_start + i * 0.01), rng)
            x = self.storm_start + rng.uniform(0, 2.0)
            r = Req(
                "killed",
                sid,
                oc_id("msg", self.T(x), rng),
                x,
                rng.randint(20000, 50000),
                0,
                0,
                rng.choice(DECODES),
                rng.randrange(DECODE_DP),
                room_id(rng),
                hexid(rng),
                hexid(rng),
                prank=rng.randrange(PREFILL_TP),
            )
            r.t_boot = x + rng.uniform(0.05, 0.3)
            r.t_prefill = r.t_xfer = float("inf")
            r.outcome, r.label = "aborted", "killed"
            r.t_end = self.storm_kill + rng.uniform(0.05, 2.6)
            self.killed.append(r)
            self.reqs.append(r)

    # --- server logs ----------------------------------------------------------------------------
    def startup(self, host: str, t: float, pace: float = 1.0):
        L = self.logs[host]
        rng = self.rng
        t0 = t

        def at(dx: float) -> float:
            return t0 + dx * pace

        pid = rng.randint(1000, 90000)
        L.add(at(0), f"INFO:     Started server process [{pid}]")
        L.add(at(0), "INFO:     Waiting for application startup.")
        ranks = range(PREFILL_TP) if host == PREFILL else range(DECODE_DP)
        for k in ranks:
            tags = f" TP{k}" if host == PREFILL else f" DP{k} TP{k} EP{k}"
            L.add(
                at(2),
                f"max_total_num_tokens={rng.choice((412160, 823680))}, chunked_prefill_size=8192, "
                f"max_prefill_tokens=16384, max_running_requests={256 if host == PREFILL else 128}, "
                f"context_len=163840, available_gpu_mem={rng.uniform(5, 12):.2f} GB",
                tags,
            )
            L.add(at(3), "NIXL KVManager initialized with backend: UCX", tags)
            agent = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            L.raw(
                at(3),
                lambda ht, a=agent: (
                    f"{dt.datetime.fromtimestamp(ht, UTC):%Y-%m-%d %H:%M:%S} NIXL INFO    "
                    f"_api.py:212 Initialized NIXL agent: {a}"
                ),
            )
            L.add(at(4), "Watchdog scheduler initialized.", tags)
        if host == PREFILL:
            L.add(at(4), "CommonKVBootstrapServer started successfully on 0.0.0.0:8998")
            L.raw(at(4), lambda ht: "WARNING: Logging before InitGoogleLogging() is written to STDERR")
            L.raw(at(4), lambda ht: abseil("I", ht, 1842217, "nixl_agent.cpp:1014", "Selected backend: UCX"))
        L.add(at(5), "INFO:     Application startup complete.")
        L.add(at(5), "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
        L.add(at(6), access("127.0.0.1", rng.randint(30000, 60000), "GET", "/get_model_info", 200))
        L.add(at(7), "Start of pd disaggregation warmup ...")
        L.add(at(9), f"Disaggregation warmup requests completed for all {1 if host == PREFILL else DECODE_DP} DP ranks")
        L.add(at(9), "End of disaggregation warmup")
        L.add(at(9), "The server is fired up and ready to roll!")

    def write_logs(self):
        rng = self.rng
        for h in (PREFILL,) + DECODES:
            self.startup(h, self.T(rng.uniform(0, 8)))
        self.probes()
        for r in self.reqs:
            self.request_lines(r)
        self.prefill_stats()
        self.decode_stats()
        self.wedge_lines()
        self.misc_lines()

    def probes(self):
        """k8s probes on every host, the decode heartbeat to prefill; both go on through a wedge."""
        rng = self.rng
        we = self.wedge_end or 0
        for h in (PREFILL,) + DECODES:
            L = self.logs[h]
            x = 40 + rng.uniform(0, 10)
            while x < self.span:
                status = 200
                if self.wedge_kind == "health_503" and h == self.wedge_host and self.wedge_start + 20 <= x < we:
                    status = 503
                L.add(self.T(x), access(HOST_IP["probe"], rng.randint(30000, 60000), "GET", "/health", status))
                x += 10 + rng.uniform(-0.3, 0.3)
        for d in DECODES:
            x = 30 + rng.uniform(0, 5)
            while x < self.span:
                self.logs[PREFILL].add(self.T(x), access(HOST_IP[d], rng.randint(30000, 60000), "GET", "/health", 200))
                x += 5.0 + rng.uniform(0, 0.05)

    def request_lines(self, r: Req):
        rng = self.rng
        P, D = self.logs[PREFILL], self.logs[r.dhost]
        t0 = self.T(r.t0)
        gen = (
            "GenerateReqInput(rid='{rid}', text=None, input_ids=[0, 128803, …], sampling_params="
            "{{'max_new_tokens': 8192, 'temperature': 0.6}}, stream=%s, bootstrap_host='%s', "
            "bootstrap_port=8998, bootstrap_room=%d, bootstrap_pair_key=None, decode_tp_size=None, "
            "routed_dp_rank=None, data_parallel_rank=%d, disagg_prefill_dp_rank=None, …)"
            % (r.stream, HOST_IP[PREFILL], r.room, r.drank)
        )
        short = "GenerateReqInput(rid='{rid}', text=None, …)"
        P.add(t0 + 0.005, "Receive: obj=" + gen.format(rid=r.rid_p))
        D.add(t0 + 0.01, "Receive: obj=" + gen.format(rid=r.rid_d))
        dtag = f" DP{r.drank} TP{r.drank} EP{r.drank}"
        if r.outcome == "ok":
            tp = self.T(r.t_prefill)
            P.add(
                tp + 0.05,
                f"Finish: obj={short.format(rid=r.rid_p)}, out={{'text': '', 'output_ids': [...], "
                f"'meta_info': {{'id': '{r.rid_p}', 'finish_reason': {{'type': 'length', 'length': 1}}, "
                f"'prompt_tokens': {r.prompt}, 'weight_version': 'default', 'num_retractions': 0, "
                f"'reasoning_tokens': 0, 'completion_tokens': 1, 'cached_tokens': {r.cached}, "
                f"'e2e_latency': {r.t_prefill + 0.05 - r.t0:.3f}}}}}",
            )
            P.add(tp + 0.05, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 200))
            D.add(
                self.T(r.t_xfer) + 0.02, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 200)
            )
            reasoning = int(r.completion * 0.3)
            D.add(
                self.T(r.t_end),
                f"Finish: obj={short.format(rid=r.rid_d)}, out={{'text': '…', 'output_ids': "
                f"[...], 'meta_info': {{'id': '{r.rid_d}', 'finish_reason': {{'type': 'stop', "
                f"'matched': 1}}, 'prompt_tokens': {r.prompt}, 'weight_version': 'default', "
                f"'num_retractions': 0, 'reasoning_tokens': {reasoning}, 'completion_tokens': "
                f"{r.completion}, 'cached_tokens': {r.cached}, 'e2e_latency': {r.t_end - r.t0:.2f}}}}}",
            )
            if self.with_trace:
                self.trace_room(r)
        elif r.outcome == "transfer_failed":
            tp = self.T(r.t_prefill)
            agent = "def7d2f1-d482-4cd2-b6de-f238da5a9c70"
            P.raw(
                tp,
                lambda ht: (
                    f"[{ht:.6f}] [node-p0:1842011:2]           ib_mlx5.c:350  UCX  ERROR mlx5_3: "
                    f"completion with error (transport retry counter exceeded)"
                ),
            )
            P.raw(
                tp, lambda ht: abseil("W", ht, 1842217, "ucx_utils.cpp:65", "Unexpected UCX error: Input/output error")
            )
            P.raw(
                tp,
                lambda ht: abseil(
                    "E",
                    ht,
                    1842217,
                    "nixl_agent.cpp:1149",
                    "getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
                ),
            )
            ptag = f" TP{r.prank}"
            P.add(tp + 0.01, f"Unexpected transfer worker error for room {r.room}", ptag)
            frames = [
                "Traceback (most recent call last):",
                '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1153, in transfer_worker',
                "    self._settle(handles, room)",
                '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1201, in _settle',
                '    raise RuntimeError(f"NIXL transfer encountered ERR room={room}")',
                f"RuntimeError: NIXL transfer encountered ERR room={r.room}",
            ]
            for fr in frames:
                P.raw(tp + 0.01, lambda ht, fr=fr: fr)
            P.add(
                tp + 0.02,
                f"Prefill transfer failed for request rank={r.prank} req.rid='{r.rid_p}' req.bootstrap_room="
                f"{r.room} with exception NIXL transfer encountered ERR room={r.room}",
                ptag,
            )
            P.add(tp + 0.03, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 500))
            D.add(self.T(r.t_end), r.error_body, dtag)
            D.add(self.T(r.t_end), access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 500))
            if self.with_trace:
                self.trace.setdefault(PREFILL, []).append(
                    self.tr(
                        tp - 0.2, PREFILL, "prefill", r.prank, r, "kv", 0, True, "post", bytes=603979776, peer=agent
                    )
                )
                self.trace[PREFILL].append(
                    self.tr(
                        tp,
                        PREFILL,
                        "prefill",
                        r.prank,
                        r,
                        "kv",
                        0,
                        True,
                        "fail",
                        status="NIXL_ERR_BACKEND",
                        peer=agent,
                        error="getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
                    )
                )
        elif r.outcome == "waiting_timeout":
            te = self.T(r.t_end)
            D.add(te, r.error_body, dtag)
            D.add(te + 0.01, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 500))
            tpf = te + rng.uniform(1.6, 2.4)
            P.add(
                tpf,
                f"Prefill bootstrap failed for request rank={r.prank} req.rid='{r.rid_p}' req.bootstrap_room="
                f"{r.room} with exception KVTransferError(bootstrap_room={r.room}): Request {r.room} timed out "
                f"after 300.0s in KVPoll.Bootstrapping",
                f" TP{r.prank}",
            )
            P.add(tpf + 0.01, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 500))
        elif r.outcome == "bootstrap_timeout":
            te = self.T(r.t_end)
            P.add(te, r.error_body, f" TP{self.wedge_rank}")
            P.add(te + 0.01, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 500))
            td = te + rng.uniform(0.4, 1.5)
            D.add(
                td,
                f"Decode transfer failed for request rank={r.drank} decode_req.req.rid='{r.rid_d}' "
                f"decode_req.req.bootstrap_room={r.room} with exception KVTransferError(bootstrap_room={r.room}): "
                f"Failed to get kvcache from prefill instance, it might be dead",
                dtag,
            )
            D.add(td + 0.01, access(HOST_IP["router"], rng.randint(30000, 60000), "POST", "/generate", 500))
        elif r.outcome == "aborted":
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
                f"Finish: obj={short.format(rid=r.rid_d)}, out={{'text': '', 'output_ids': [], "
                f"'meta_info': {{'id': '{r.rid_d}', 'finish_reason': {{'type': 'abort', 'message': "
                f"'Aborted by AbortReq.', 'status_code': 499, 'err_type': None}}, 'prompt_tokens': "
                f"{r.prompt}, 'weight_version': 'default', 'num_retractions': 0, 'reasoning_tokens': 0, "
                f"'completion_tokens': 0, 'cached_tokens': 0, 'e2e_latency': {r.t_end - r.t0:.2f}}}}}",
            )
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

    # --- writing ---------------------------------------------------------------------------------
    def write(self, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        names = {PREFILL: "sglang-prefill.log", "node-d0": "sglang-decode.log", "node-d1": "sglang-decode.log"}
        self.line_counts = {}
        for h, L in self.logs.items():
            (out / h).mkdir(exist_ok=True)
            lines = L.render()
            texts = []
            for i, (ht, text) in enumerate(lines):
                if h == self.cri_host:
                    d = dt.datetime.fromtimestamp(ht + 0.0004, UTC)
                    ns = f"{d.microsecond:06d}{self.rng.randint(0, 999):03d}"
                    text = f"{d:%Y-%m-%dT%H:%M:%S}.{ns}+00:00 stderr F {text}"
                texts.append(text)
            if h == PREFILL:
                # a tqdm bar from the warmup glued in front of a line, as a terminal capture keeps it
                k = next(i for i, s in enumerate(texts) if "Start of pd disaggregation warmup" in s)
                texts[k] = "  2% 1/64 [00:04<04:51,  4.62s/it]" + texts[k]
            body = "\n".join(texts)
            if h == self.trunc_host:
                # the copy was taken while the server was writing: the last line is cut mid-field
                last = texts[-1]
                cut = last[: max(20, int(len(last) * 0.6))]
                body = "\n".join(texts[:-1] + [cut])
            else:
                body += "\n"
            (out / h / names[h]).write_text(body, encoding="utf-8")
            self.line_counts[h] = len(texts)
        if self.with_trace:
            for h, evs in self.trace.items():
                if not evs:
                    continue
                stamp = dt.datetime.fromtimestamp(self.T0, UTC).strftime("%Y%m%dT%H%M%SZ")
                pid = 1842217 if h == PREFILL else 90412
                with open(out / h / f"kvtrace-{h}-{pid}-{stamp}.jsonl", "w", encoding="utf-8") as f:
                    for o in evs:
                        f.write(json.dumps(o, ensure_ascii=False) + "\n")
        (out / "NOTES.md").write_text(
            "# incident notes\n\nDecode host stopped answering; agent restarted at the "
            "time of the abort burst. Logs copied with `kubectl logs` / scp.\n"
        )
        self.write_agents(out / "agent-box")

    def reply_texts(self, r: Req) -> tuple[str, str]:
        if r.label == "corrupted":
            return corrupted_text(r.ckind, self.rng)
        if r.label == "hard_negative":
            return hard_negative_text(r.ckind, self.rng, room_id(self.rng), hexid(self.rng), self.T(r.t_end))
        return clean_text(self.rng), "Check the call sites first." if self.rng.random() < 0.5 else ""

    def user_text(self, r: Req) -> str:
        if r.ckind == "cjk_reply":
            return "为什么解码端会超时？请解释一下。"
        return self.rng.choice(
            [
                "Why does config loading fail?",
                "Fix the flaky test and run the suite.",
                "Look at the decode log and tell me what happened.",
                "Summarise the incident.",
                "Read the benchmark script and speed it up.",
            ]
        )

    def write_agents(self, out: Path):
        rng = self.rng
        by_agent: dict[str, dict[str, list[Req]]] = {}
        for r in self.reqs:
            by_agent.setdefault(r.agent, {}).setdefault(r.session, []).append(r)
        self.texts = {}
        # --- OpenAI-compatible proxy (one line per direction, SSE captured raw for streams)
        (out / "llm-proxy").mkdir(parents=True, exist_ok=True)
        recs = []
        for sid, rs in by_agent.get("proxy", {}).items():
            for r in rs:
                content, reasoning = self.reply_texts(r)
                tools = [
                    {
                        "type": "function",
                        "function": {
                            "name": "read",
                            "parameters": {
                                "type": "object",
                                "properties": {"filePath": {"type": "string"}},
                                "required": ["filePath"],
                            },
                        },
                    }
                ]
                req = {
                    "ts": iso_ms(self.T(r.t0) - 0.003),
                    "dir": "req",
                    "conn": r.turn,
                    "upstream": "http://pd-router:8000/v1/chat/completions",
                    "body": {
                        "model": MODEL,
                        "stream": r.stream,
                        "messages": [{"role": "user", "content": self.user_text(r)}],
                        "tools": tools,
                        "chat_template_kwargs": {"thinking": True},
                    },
                }
                recs.append((self.T(r.t0) - 0.003, req))
                lat = int((r.t_end - r.t0) * 1000)
                if r.outcome != "ok":
                    resp = {
                        "ts": iso_ms(self.T(r.t_end) + 0.004),
                        "dir": "resp",
                        "conn": r.turn,
                        "status": 500,
                        "latency_ms": lat,
                        "body": {
                            "object": "error",
                            "message": r.error_body,
                            "type": "InternalServerError",
                            "param": None,
                            "code": 500,
                        },
                    }
                else:
                    tool_calls = []
                    if r.label == "clean" and rng.random() < 0.4:
                        tool_calls = [
                            {
                                "id": f"call_{rng.getrandbits(32):08x}",
                                "type": "function",
                                "function": {"name": "read", "arguments": json.dumps({"filePath": rng.choice(FILES)})},
                            }
                        ]
                    usage = {
                        "prompt_tokens": r.prompt,
                        "completion_tokens": r.completion,
                        "total_tokens": r.prompt + r.completion,
                        "prompt_tokens_details": {"cached_tokens": r.cached},
                    }
                    fin = "tool_calls" if tool_calls else "stop"
                    created = int(self.T(r.t0))
                    if r.stream:
                        raw = []
                        pieces = [content[i : i + 40] for i in range(0, len(content), 40)] or [""]
                        head = {"id": r.rid_d, "object": "chat.completion.chunk", "created": created, "model": MODEL}
                        if reasoning:
                            raw.append(
                                "data: "
                                + json.dumps(
                                    dict(
                                        head,
                                        choices=[
                                            {
                                                "index": 0,
                                                "delta": {"role": "assistant", "reasoning_content": reasoning},
                                                "finish_reason": None,
                                            }
                                        ],
                                    ),
                                    ensure_ascii=False,
                                )
                            )
                        for p in pieces:
                            raw.append(
                                "data: "
                                + json.dumps(
                                    dict(head, choices=[{"index": 0, "delta": {"content": p}, "finish_reason": None}]),
                                    ensure_ascii=False,
                                )
                            )
                        if tool_calls:
                            raw.append(
                                "data: "
                                + json.dumps(
                                    dict(
                                        head,
                                        choices=[
                                            {
                                                "index": 0,
                                                "delta": {"tool_calls": [dict(tool_calls[0], index=0)]},
                                                "finish_reason": None,
                                            }
                                        ],
                                    )
                                )
                            )
                        raw.append(
                            "data: " + json.dumps(dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": fin}]))
                        )
                        raw.append("data: " + json.dumps(dict(head, choices=[], usage=usage)))
                        raw.append("data: [DONE]")
                        resp = {
                            "ts": iso_ms(self.T(r.t_end) + 0.004),
                            "dir": "resp",
                            "conn": r.turn,
                            "status": 200,
                            "latency_ms": lat,
                            "raw": raw,
                        }
                    else:
                        msg = {"role": "assistant", "content": content, "reasoning_content": reasoning or None}
                        if tool_calls:
                            msg["tool_calls"] = tool_calls
                        resp = {
                            "ts": iso_ms(self.T(r.t_end) + 0.004),
                            "dir": "resp",
                            "conn": r.turn,
                            "status": 200,
                            "latency_ms": lat,
                            "body": {
                                "id": r.rid_d,
                                "object": "chat.completion",
                                "created": created,
                                "model": MODEL,
                                "choices": [
                                    {
                                        "index": 0,
                                        "message": msg,
                                        "logprobs": None,
                                        "finish_reason": fin,
                                        "matched_stop": 1,
                                    }
                                ],
                                "usage": usage,
                            },
                        }
                recs.append((self.T(r.t_end) + 0.004, resp))
        recs.sort(key=lambda x: x[0])
        stamp = dt.datetime.fromtimestamp(self.T0, UTC).strftime("%Y-%m-%d")
        with open(out / "llm-proxy" / f"proxy-{stamp}.jsonl", "w", encoding="utf-8") as f:
            for _, o in recs:
                f.write(json.dumps(o, ensure_ascii=False) + "\n")
        # --- Claude Code via a translator: one line per content block, progress lines between
        proj = out / "claude" / "projects" / "-home-dev-app"
        proj.mkdir(parents=True, exist_ok=True)
        for sid, rs in by_agent.get("claude", {}).items():
            lines = []
            parent = None

            def line(t, typ, **kw):
                nonlocal parent
                u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                o = {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "userType": "external",
                    "cwd": "/home/dev/app",
                    "sessionId": sid,
                    "version": "2.1.39",
                    "gitBranch": "main",
                    "type": typ,
                }
                o.update(kw)
                o["uuid"] = u
                o["timestamp"] = iso_ms(t)
                parent = u
                lines.append(o)
                return u

            for r in rs:
                line(self.T(r.t0) - 0.01, "user", message={"role": "user", "content": self.user_text(r)})
                usage = {
                    "input_tokens": r.prompt - r.cached,
                    "cache_read_input_tokens": r.cached,
                    "output_tokens": r.completion,
                }
                if r.outcome != "ok":
                    line(
                        self.T(r.t_end),
                        "assistant",
                        message={
                            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                            "type": "message",
                            "role": "assistant",
                            "model": "<synthetic>",
                            "content": [
                                {
                                    "type": "text",
                                    "text": f"API Error: 500 {json.dumps({'object': 'error', 'message': r.error_body, 'type': 'InternalServerError', 'param': None, 'code': 500})}",
                                }
                            ],
                            "stop_reason": "stop_sequence",
                            "usage": {"input_tokens": 0, "output_tokens": 0},
                        },
                        isApiErrorMessage=True,
                    )
                    r.turn = lines[-1]["message"]["id"]
                    continue
                content, reasoning = self.reply_texts(r)
                req_id = "req_" + "".join(rng.choice("abcdefghijkmnopqrstuvwxyz0123456789") for _ in range(24))
                base = {
                    "model": MODEL,
                    "id": r.turn,
                    "type": "message",
                    "role": "assistant",
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                }
                t1 = self.T(r.t_xfer)
                if reasoning:
                    line(
                        t1,
                        "assistant",
                        message=dict(
                            base,
                            content=[{"type": "thinking", "thinking": reasoning, "signature": "[REDACTED_SIGNATURE]"}],
                        ),
                        requestId=req_id,
                    )
                tool = r.label == "clean" and rng.random() < 0.5
                line(
                    self.T(r.t_end) - (0.3 if tool else 0),
                    "assistant",
                    message=dict(
                        base, content=[{"type": "text", "text": content}], stop_reason=None if tool else "end_turn"
                    ),
                    requestId=req_id,
                )
                if tool:
                    tu = "toolu_01" + "".join(
                        rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijk0123456789") for _ in range(22)
                    )
                    line(
                        self.T(r.t_end),
                        "assistant",
                        message=dict(
                            base,
                            content=[
                                {
                                    "type": "tool_use",
                                    "id": tu,
                                    "name": "Read",
                                    "input": {"file_path": "/home/dev/" + rng.choice(FILES)},
                                }
                            ],
                            stop_reason="tool_use",
                        ),
                        requestId=req_id,
                    )
                    line(
                        self.T(r.t_end) + 0.01,
                        "progress",
                        data={
                            "type": "hook_progress",
                            "hookEvent": "PostToolUse",
                            "hookName": "PostToolUse:Read",
                            "command": "callback",
                        },
                        parentToolUseID=tu,
                        toolUseID=tu,
                    )
                    line(
                        self.T(r.t_end) + 0.05,
                        "user",
                        message={
                            "role": "user",
                            "content": [
                                {"tool_use_id": tu, "type": "tool_result", "content": "     1→import os\n     2→"}
                            ],
                        },
                    )
            with open(proj / f"{sid}.jsonl", "w", encoding="utf-8") as f:
                for o in lines:
                    f.write(json.dumps(o, ensure_ascii=False) + "\n")
        # --- opencode server API shape: session.json + messages.json per session
        for agent, folder in (("opencode", "opencode-sessions"), ("killed", "opencode-writer-run2")):
            for sid, rs in by_agent.get(agent, {}).items():
                d = out / folder / sid
                d.mkdir(parents=True, exist_ok=True)
                t_c = self.T(rs[0].t0) - 0.5
                info = {
                    "id": sid,
                    "slug": f"s{sid[-6:].lower()}",
                    "projectID": "prj_app",
                    "directory": "/home/dev/app",
                    "title": "Write the analysis articles" if agent == "killed" else "Debug the PD deployment",
                    "version": "1.0.134",
                    "time": {"created": int(t_c * 1000), "updated": int(self.T(rs[-1].t_end) * 1000)},
                }
                msgs = []
                for r in rs:
                    uid = oc_id("msg", self.T(r.t0) - 0.02, rng)
                    msgs.append(
                        {
                            "info": {
                                "id": uid,
                                "sessionID": sid,
                                "role": "user",
                                "time": {"created": int((self.T(r.t0) - 0.02) * 1000)},
                                "agent": "build",
                                "model": {"providerID": "sglang-pd", "modelID": MODEL},
                            },
                            "parts": [
                                {
                                    "id": oc_id("prt", self.T(r.t0), rng),
                                    "sessionID": sid,
                                    "messageID": uid,
                                    "type": "text",
                                    "text": self.user_text(r),
                                }
                            ],
                        }
                    )
                    a = {
                        "id": r.turn,
                        "sessionID": sid,
                        "role": "assistant",
                        "parentID": uid,
                        "time": {"created": int(self.T(r.t0) * 1000)},
                        "modelID": MODEL,
                        "providerID": "sglang-pd",
                        "mode": "build",
                        "agent": "build",
                        "path": {"cwd": "/home/dev/app", "root": "/home/dev/app"},
                        "cost": 0,
                        "tokens": {
                            "input": r.prompt - r.cached,
                            "output": int(r.completion * 0.7),
                            "reasoning": r.completion - int(r.completion * 0.7),
                            "cache": {"read": r.cached, "write": 0},
                        },
                    }
                    parts = [
                        {
                            "id": oc_id("prt", self.T(r.t0) + 0.01, rng),
                            "sessionID": sid,
                            "messageID": r.turn,
                            "type": "step-start",
                        }
                    ]
                    if r.outcome == "aborted":
                        a["time"]["completed"] = int(self.T(self.storm_kill) * 1000)
                        a["error"] = {"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}
                        a["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
                    elif r.outcome != "ok":
                        a["time"]["completed"] = int(self.T(r.t_end) * 1000)
                        a["error"] = {
                            "name": "APIError",
                            "data": {
                                "message": "Internal Server Error",
                                "statusCode": 500,
                                "isRetryable": True,
                                "responseBody": json.dumps(
                                    {
                                        "object": "error",
                                        "message": r.error_body,
                                        "type": "InternalServerError",
                                        "param": None,
                                        "code": 500,
                                    }
                                ),
                            },
                        }
                        a["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
                    else:
                        content, reasoning = self.reply_texts(r)
                        a["time"]["completed"] = int(self.T(r.t_end) * 1000)
                        a["finish"] = "stop"
                        if reasoning:
                            parts.append(
                                {
                                    "id": oc_id("prt", self.T(r.t_xfer), rng),
                                    "sessionID": sid,
                                    "messageID": r.turn,
                                    "type": "reasoning",
                                    "text": reasoning,
                                    "time": {
                                        "start": int(self.T(r.t_xfer) * 1000),
                                        "end": int(self.T(r.t_xfer) * 1000) + 800,
                                    },
                                }
                            )
                        parts.append(
                            {
                                "id": oc_id("prt", self.T(r.t_end) - 1, rng),
                                "sessionID": sid,
                                "messageID": r.turn,
                                "type": "text",
                                "text": content,
                                "time": {
                                    "start": int((self.T(r.t_end) - 1) * 1000),
                                    "end": int(self.T(r.t_end) * 1000),
                                },
                            }
                        )
                        parts.append(
                            {
                                "id": oc_id("prt", self.T(r.t_end), rng),
                                "sessionID": sid,
                                "messageID": r.turn,
                                "type": "step-finish",
                                "reason": "stop",
                                "cost": 0,
                                "tokens": a["tokens"],
                            }
                        )
                    msgs.append({"info": a, "parts": parts})
                (d / "session.json").write_text(json.dumps(info, indent=2, ensure_ascii=False), encoding="utf-8")
                (d / "messages.json").write_text(json.dumps(msgs, indent=2, ensure_ascii=False), encoding="utf-8")

    # --- truth ----------------------------------------------------------------------------------
    def make_truth(self) -> dict:
        T = self.T
        stuck = [r for r in self.reqs if r.outcome in ("waiting_timeout", "bootstrap_timeout")]
        if self.wedge_kind == "dead_bootstrap_thread":
            w_end = min(r.t_end for r in stuck)
            last_progress = max(x for x in self.prefill_ticks if x < self.wedge_start)
        else:
            w_end = self.wedge_end
            last_progress = max(x for x in self.decode_progress if x < self.wedge_start)
        in_flight = [
            r
            for r in self.reqs
            if r.t0 <= self.wedge_start < r.t_end
            and (r.dhost == self.wedge_host if self.wedge_host != PREFILL else True)
        ]
        killed = self.killed
        ab_true = [r.t_end for r in killed] + [r.t_prefill_abort for r in killed if getattr(r, "prefill_abort", False)]
        per_host = {}
        for r in killed:
            per_host[r.dhost] = per_host.get(r.dhost, 0) + 1
        per_host[PREFILL] = sum(1 for r in killed if getattr(r, "prefill_abort", False))
        replies = [r for r in self.reqs if r.agent in ("proxy", "claude", "opencode")]

        def ident(r):
            return {
                "source": {"proxy": "openai_proxy", "claude": "claude_code", "opencode": "opencode"}.get(
                    r.agent, "opencode"
                ),
                "session_id": r.session,
                "turn_id": r.turn,
                "rid": r.rid_d if r.agent == "proxy" else None,
            }

        heavy = [r for r in replies if r.label != "error" and r.heavy]
        light = [r for r in replies if r.label != "error" and not r.heavy]
        return {
            "seed": self.seed,
            "dump": "the folder this file sits beside",
            "time_basis": "true UTC; lines on the skewed host are written skew_s ahead of true time",
            "clock_skew": {"host": self.skew_host, "skew_s": round(self.skew, 3), "offset_set": False},
            "cri_prefixed_host": self.cri_host,
            "transfer_trace": self.with_trace,
            "wedge": {
                "kind": self.wedge_kind,
                "host": self.wedge_host,
                "rank": self.wedge_rank,
                "rank_kind": {
                    "tp_desync": "decode DP/TP rank whose stats stop",
                    "dead_bootstrap_thread": "prefill engine_rank whose bootstrap thread died",
                    "health_503": None,
                }[self.wedge_kind],
                "start": iso(T(last_progress)),
                "end": iso(T(w_end)),
                "start_is": "last scheduler progress (stats line) of the wedged host/rank",
                "scheduler_stopped": iso(T(self.wedge_start)),
                "end_is": "the mass timeout that ended it (decode WaitingForInput sweep; for the dead thread the first "
                "KVPoll.Bootstrapping timeout), progress resumes within seconds",
                "health": {
                    "health_503": "503 on /health, 'Health check failed' every 30 s",
                    "tp_desync": "/health 200 throughout",
                    "dead_bootstrap_thread": "/health 200 throughout",
                }[self.wedge_kind],
                "in_flight_at_start": len(in_flight),
                "stuck_rooms": [str(r.room) for r in stuck],
                "stuck_room_outcome": "bootstrap_timeout"
                if self.wedge_kind == "dead_bootstrap_thread"
                else "waiting_timeout",
                "stuck_room_later_failure": "Failed to get kvcache from prefill instance (decode)"
                if self.wedge_kind == "dead_bootstrap_thread"
                else "bootstrap_timeout on prefill ~2 s later",
            },
            "idle_periods": [{"start": iso(T(self.idle[0])), "end": iso(T(self.idle[1])), "is_wedge": False}],
            "abort_storm": {
                "start": iso(min(ab_true) + self.T0),
                "end": iso(max(ab_true) + self.T0),
                "agent_started": iso(T(self.storm_start)),
                "agent_killed": iso(T(self.storm_kill)),
                "count": len(killed),
                "count_is": "requests aborted (distinct bootstrap rooms); each has one decode abort line "
                "(`Decode transfer failed … Aborted by AbortReq.`) and ~70% a prefill one "
                "(`Prefill bootstrap failed … Aborted by AbortReq.`)",
                "abort_lines": len(killed) + per_host[PREFILL],
                "requests_by_host": per_host,
                "skewed_host": self.skew_host,
                "agent_sessions": [r.session for r in killed],
                "killed_turns": [ident(r) for r in killed],
            },
            "replies": {
                "corrupted": [dict(ident(r), kind=r.ckind, heavy=r.heavy) for r in replies if r.label == "corrupted"],
                "hard_negatives": [dict(ident(r), kind=r.ckind) for r in replies if r.label == "hard_negative"],
                "clean": [ident(r) for r in replies if r.label == "clean"],
                "errors": [
                    dict(
                        ident(r),
                        room=str(r.room),
                        rid_decode=r.rid_d,
                        rid_prefill=r.rid_p,
                        outcome=r.outcome,
                        error=r.error_body,
                    )
                    for r in replies
                    if r.label == "error"
                ],
            },
            "prefill_load_effect": {
                "heavy_windows": [{"start": iso(T(a)), "end": iso(T(b))} for a, b in self.heavy],
                "heavy_replies": len(heavy),
                "heavy_corrupted": sum(r.label == "corrupted" for r in heavy),
                "light_replies": len(light),
                "light_corrupted": sum(r.label == "corrupted" for r in light),
                "planted_rates": {"heavy": 0.30, "light": 0.025},
                "is": "corruption probability set by the prefill load when the request was prefilled "
                "(#queue-req, #bootstrap-req, #inflight-req, #pending-token high in heavy windows)",
            },
            "line_counts": self.line_counts,
            "truncated_last_line": self.trunc_host,
        }


def seed_tag(seed: int) -> str:
    return f"{seed:03d}"


def generate(out: Path, seed: int, minutes: float = 24.0) -> dict:
    inc = Incident(seed, minutes)
    inc.run()
    inc.write_logs()
    inc.write(out)
    truth = inc.make_truth()
    (out.parent / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False), encoding="utf-8")
    return truth


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--minutes", type=float, default=24.0, help="length of the incident")
    a = ap.parse_args(argv)
    t = generate(a.out, a.seed, a.minutes)
    w, s = t["wedge"], t["abort_storm"]
    print(
        f"wrote {a.out} and {a.out.parent / 'truth.json'}: wedge {w['kind']} on {w['host']} rank {w['rank']} "
        f"{w['start']} .. {w['end']} ({len(w['stuck_rooms'])} stuck rooms); abort storm {s['start']} "
        f"({s['count']} requests); {len(t['replies']['corrupted'])} corrupted, "
        f"{len(t['replies']['hard_negatives'])} hard negatives, {len(t['replies']['errors'])} error replies"
    )


if __name__ == "__main__":
    main()
