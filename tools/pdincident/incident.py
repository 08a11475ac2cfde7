"""The incident: its timeline, requests, the wedge, the killed agent, and the dump it writes."""

from __future__ import annotations

import datetime as dt
import heapq
import json
import random
import uuid
from pathlib import Path

from tools.pdincident.agents import _Agents
from tools.pdincident.lines import HostLog, abseil, access
from tools.pdincident.records import Req, hexid, oc_id, room_id, seed_tag
from tools.pdincident.scenario import DECODE_DP, DECODES, HOST_IP, PREFILL, PREFILL_TP, UTC, WAIT_TIMEOUT, WEDGE_KINDS
from tools.pdincident.serverlines import _ServerLines
from tools.pdincident.texts import HARD_NEGATIVE_KINDS
from tools.pdincident.truth import _Truth


# ---------------------------------------------------------------------------------------------
# the incident
class Incident(_ServerLines, _Agents, _Truth):
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
