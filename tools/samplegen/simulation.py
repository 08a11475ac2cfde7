"""The event-driven simulation: agents, routing, prefill ranks, transfers, decode, aborts and the wedge."""

from __future__ import annotations

import heapq
import random

from tools import loglines
from tools.samplegen.corruption import _Corruption
from tools.samplegen.ids import _hex, _uuid4
from tools.samplegen.records import Req, Session, health_req
from tools.samplegen.render import _Render
from tools.samplegen.scenario import (
    ARR_END,
    AUX_BYTES,
    BOOT_LAG,
    CHUNK,
    DECODES,
    DP,
    F0,
    FAULT_LEN,
    FAULT_PATH,
    HOSTS,
    INDEXK_BYTES_PER_TOKEN,
    KV_BYTES_PER_TOKEN,
    LOG_START,
    MAX_PREFILL,
    MAX_TOTAL_P,
    PAGE,
    PREFILL,
    PREFILL_RATE,
    SLAM,
    STUCK_BOOT,
    STUCK_KV,
    SWARM_KILL,
    SWARM_SESSIONS,
    SWARM_START,
    SWARM_TO_DECODE0,
    T0,
    W0,
    W1,
    WAIT_TIMEOUT,
    WEDGE_JOB_S,
    WEDGE_JOBS,
    XFER_BW,
)
from tools.samplegen.serverlines import _ServerLines

# -- the generator ------------------------------------------------------------------------------


class _Gen(_ServerLines, _Corruption, _Render):
    def __init__(self, seed: int, scale: float):
        self.seed, self.scale = seed, scale
        self.rng = random.Random(seed)
        self.crng = random.Random(seed * 1_000_003 + 17)  # corruption choices (post-sim)
        self.trng = random.Random(seed * 1_000_033 + 29)  # text and transcript rendering
        self.rate = PREFILL_RATE * scale
        self.heap: list = []
        self.seq = 0
        self.rooms: set[int] = set()
        self.reqs: list[Req] = []
        self.sessions: list[Session] = []
        self.lines: dict[str, list] = {h: [] for h in HOSTS}
        self.pstats: list[dict] = []
        self.rr = {h: 0 for h in HOSTS}
        self.ranks = [
            dict(idx=r, queue=[], busy=False, last_line=None, kv=0, booting=[], inflight=[]) for r in range(DP)
        ]
        self.agents = {h: [_uuid4(self.rng) for _ in range(DP)] for h in HOSTS}
        self.ksum_rooms: list[Req] = []
        self.fault_reqs: list[Req] = []
        self.ctx_req: Req | None = None

    # -- small helpers --------------------------------------------------------------------------
    def push(self, t: float, kind: str, obj) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, obj))

    def room(self) -> int:
        while True:
            r = self.rng.randrange(10**18, 2**63)
            if r not in self.rooms:
                self.rooms.add(r)
                return r

    def rid(self) -> str:
        return _hex(self.rng, 32)

    def line(self, host: str, t: float, kind: str, style: str, msg, rank: int | None = None) -> None:
        self.seq += 1
        self.lines[host].append((t, self.seq, kind, style, rank, msg))

    def U(self, a: float, b: float) -> float:
        return self.rng.uniform(a, b)

    # -- agents ---------------------------------------------------------------------------------
    def new_session(self, agent: str, t: float, worker: int | None = None, forced: str | None = None) -> Session:
        source = {"opencode": "opencode", "reviewer": "proxy", "writer": "proxy", "swarm": None}[agent]
        s = Session(_hex(self.rng, 8), agent, source, worker, t)
        s.forced = forced
        rng = self.rng
        s.stream = agent in ("opencode", "swarm") or (agent == "writer" and rng.random() < 0.5)
        if agent == "opencode":
            s.sys_tokens = 11264
            s.ctx = s.sys_tokens + rng.randint(40, 400)
            s.loop_left = rng.randint(2, 7)
            s.lang = "zh" if worker == 1 else "en"
        elif agent == "reviewer":
            s.sys_tokens = 6144
            s.ctx = s.sys_tokens + rng.randint(2500, 9000)
            s.turns_left = rng.randint(4, 11)
        elif agent == "writer":
            s.sys_tokens = 3264
            s.ctx = s.sys_tokens + rng.randint(13000, 35000)
            s.turns_left = rng.randint(1, 2) if worker is None else rng.randint(2, 4)
        else:  # swarm
            s.sys_tokens = 2560
            s.ctx = s.sys_tokens + rng.randint(11000, 27000)
            s.turns_left = 1
        if forced in ("stuck",):
            s.ctx = s.sys_tokens + rng.randint(30000, 38000)
        elif forced:
            s.ctx = s.sys_tokens + rng.randint(1500, 4000)
        if forced:
            s.turns_left = 1
        s.cache_hit = s.sys_tokens if self.sessions and agent != "opencode" else 0
        self.sessions.append(s)
        return s

    def plan_turn(self, s: Session, t: float) -> Req:
        rng = self.rng
        if s.retry:
            prev = s.reqs[-1]
            prompt, cached, final = prev.prompt, prev.cached, prev.final
            completion, reasoning = prev.completion, prev.reasoning
            s.retry = False
        else:
            prompt = s.ctx
            hit = s.cache_hit if rng.random() < 0.88 else min(s.sys_tokens, s.cache_hit)
            cached = min(hit // PAGE * PAGE, prompt - 1)
            if s.agent == "opencode":
                final = s.loop_left <= 1
            else:
                final = s.turns_left <= 1
            if s.agent == "writer":
                completion = rng.randint(1400, 3800) if final else rng.randint(90, 520)
            elif s.agent == "reviewer":
                completion = rng.randint(300, 1400) if final else rng.randint(70, 600)
            elif s.agent == "opencode":
                completion = rng.randint(200, 1200) if final else rng.randint(60, 480)
            else:
                completion = rng.randint(200, 900)
            if s.forced == "hold":  # a long answer, still generating when decode-1 wedges
                completion = rng.randint(1600, 2600)
            reasoning = int(completion * rng.uniform(0.15, 0.55 if final else 0.7))
        stream = s.stream
        r = Req(
            idx=len(self.reqs),
            kind=s.agent,
            sess=s,
            turn=len(s.reqs),
            t_arr=t,
            prompt=prompt,
            cached=cached,
            completion=completion,
            reasoning=reasoning,
            final=final,
            stream=stream,
            max_new=32768 if s.agent == "writer" else 16384,
            room=self.room(),
            p_rid=self.rid(),
            d_rid=self.rid(),
            forced=s.forced,
            ksum=_hex(rng, 16),
            kv_ksum=rng.random() < 0.1,
        )
        s.reqs.append(r)
        self.reqs.append(r)
        return r

    def after_reply(self, r: Req, t: float, ok: bool) -> None:
        s = r.sess
        r.t_resp = t
        if s is None or s.forced or s.agent == "swarm":
            return
        rng = self.rng
        if not ok:
            s.retry = True
            self.push(t + rng.uniform(2.0, 5.0), "launch", s)
            return
        # context grows by the visible reply and the tool result
        s.cache_hit = r.prompt
        s.ctx = r.prompt + (r.completion - r.reasoning) + (0 if r.final else rng.randint(250, 3200))
        if s.agent == "opencode":
            s.loop_left -= 1
            if r.final:
                s.loops += 1
                s.loop_left = rng.randint(2, 7)
                s.ctx += rng.randint(30, 300)
                self.push(t + rng.uniform(25, 110), "launch", s)
            else:
                self.push(t + rng.uniform(0.4, 6.0), "launch", s)
            return
        s.turns_left -= 1
        if r.final or s.turns_left <= 0:
            if s.worker is not None:
                ns = self.new_session(s.agent, t, worker=s.worker)
                self.push(t + rng.uniform(10, 40), "launch", ns)
            return
        self.push(t + (rng.uniform(1.0, 8.0) if s.agent == "reviewer" else rng.uniform(0.3, 4.5)), "launch", s)

    # -- routing --------------------------------------------------------------------------------
    def route(self, r: Req) -> None:
        t = r.t_arr
        rel = t - T0
        route = getattr(r, "route", None)
        if route:
            p_rank, d_host, d_rank = route
        else:
            p_rank, d_host, d_rank = None, None, None
        if p_rank is None:
            p_rank = self.rr[PREFILL] % DP
            self.rr[PREFILL] += 1
        if d_host is None:
            if W0 - 12.0 <= rel < W1:
                # decode-1's last seconds before the wedge carry only the planted in-flight requests;
                # inside it the router's load-aware choice avoids a worker whose outstanding requests
                # only grow (the one-shot jobs pinned to decode-1 are routed in run())
                d_host = "decode-0"
            elif r.kind != "swarm" and SWARM_START <= rel < W0:
                d_host = "decode-1"  # decode-0 is loaded with the swarm's requests
            else:
                d_host = DECODES[self.rng.random() < 0.5]
        if d_rank is None:
            d_rank = self.rr[d_host] % DP
            self.rr[d_host] += 1
        r.p_rank, r.d_host, r.d_rank = p_rank, d_host, d_rank

    # -- event loop -------------------------------------------------------------------------------
    def run(self) -> None:
        rng, sc = self.rng, self.scale
        # background agents
        for w in range(2):  # two interactive sessions, one of them in Chinese
            s = self.new_session("opencode", T0 - 40, worker=w)
            self.push(T0 + rng.uniform(5, 60), "launch", s)
        for w in range(max(1, round(2 * sc))):
            s = self.new_session("reviewer", T0 - 40, worker=w)
            self.push(T0 + rng.uniform(0, 40), "launch", s)
        for w in range(max(1, round(1 * sc))):
            s = self.new_session("writer", T0 - 40, worker=w)
            self.push(T0 + rng.uniform(0, 30), "launch", s)
        # the writer agent's startup slam: fresh contexts at a high rate
        n_slam = max(8, round(0.8 * (SLAM[1] - SLAM[0]) * sc))
        for i in range(n_slam):
            t = T0 + SLAM[0] + (i + rng.random()) * (SLAM[1] - SLAM[0]) / n_slam
            self.push(t, "launch", self.new_session("writer", t))
        # the 80-session agent, killed seconds later
        to_d0 = [True] * SWARM_TO_DECODE0 + [False] * (SWARM_SESSIONS - SWARM_TO_DECODE0)
        rng.shuffle(to_d0)
        for i in range(SWARM_SESSIONS):
            t = T0 + SWARM_START + i * (3.0 / SWARM_SESSIONS) + rng.uniform(0, 0.03)
            s = self.new_session("swarm", t)
            s.route = (None, "decode-0" if to_d0[i] else "decode-1", None)
            self.push(t, "launch", s)
        self.push(T0 + SWARM_KILL, "kill", None)
        # requests in flight on decode-1 when it wedges: one long generation per rank that pauses
        # through the wedge, rooms whose metadata never reaches prefill, and rooms whose KV lands
        # while the scheduler is stuck
        for d in range(DP):
            t = T0 + W0 - 16.0 + 0.7 * d
            s = self.new_session("reviewer", t, forced="hold")
            s.route = (None, "decode-1", d)
            self.push(t, "launch", s)
        for i in range(STUCK_BOOT):
            t = T0 + W0 - 6.0 + 4.0 * i / STUCK_BOOT
            s = self.new_session("reviewer", t, forced="stuck_boot")
            s.route = (None, "decode-1", i % DP)
            self.push(t, "launch", s)
        for i in range(STUCK_KV):
            t = T0 + W0 - 4.4 + 0.6 * i
            s = self.new_session("reviewer", t, forced="stuck")
            s.route = (None, "decode-1", None)
            self.push(t, "launch", s)
        # new requests keep arriving at the wedged host: a batch client's one-shot writer jobs carry a
        # routing key that pins them to decode-1; they wait there and are served once it runs again
        for i in range(WEDGE_JOBS):
            t = T0 + W0 + 9.0 + WEDGE_JOB_S * i + rng.uniform(0, 3)
            s = self.new_session("writer", t, forced="pinned")
            s.route = (None, "decode-1", None)
            self.push(t, "launch", s)
        # the link fault window: forced requests on the faulty path, a victim and a metadata collision
        for dtt in (0.0, 0.8, 1.7, 2.5, 3.4):
            s = self.new_session("reviewer", T0 + F0 + dtt, forced="fail")
            s.route = FAULT_PATH
            self.push(T0 + F0 + dtt, "launch", s)
        s = self.new_session("reviewer", T0 + F0 + 6.0, forced="victim")
        s.route = (1, "decode-0", 1)
        self.push(T0 + F0 + 6.0, "launch", s)
        s = self.new_session("reviewer", T0 + F0 + 8.5, forced="ctxcorrupt")
        s.route = (3, "decode-0", 1)
        self.push(T0 + F0 + 8.5, "launch", s)
        # health checks (router GET /health -> 1-token generate)
        t = T0 + LOG_START + 70
        while t < T0 + ARR_END + 120:
            self.push(t + rng.uniform(0, 0.5), "health", None)
            t += 60.0
        self.startup_lines()
        while self.heap:
            t, _, kind, obj = heapq.heappop(self.heap)
            getattr(self, "ev_" + kind)(t, obj)

    def ev_launch(self, t: float, s: Session) -> None:
        if t >= T0 + ARR_END and not s.forced:
            return
        r = self.plan_turn(s, t)
        r.route = getattr(s, "route", None)
        self.ev_arrive(t, r)

    def ev_arrive(self, t: float, r: Req) -> None:
        self.route(r)
        rng = self.rng
        storm = SWARM_START <= t - T0 < SWARM_KILL + 3
        r.t_prealloc = t + (rng.uniform(0.05, 0.7) if storm else rng.uniform(0.004, 0.025))
        if r.d_host == "decode-1" and T0 + W0 <= t < T0 + W1:
            # the wedged scheduler reads its new requests only once it runs again
            r.t_prealloc = T0 + W1 + rng.uniform(0.4, 1.2)
        r.t_boot = r.t_prealloc + rng.uniform(0.002, 0.012)
        rank = self.ranks[r.p_rank]
        rank["booting"].append(r)
        if r.forced == "stuck_boot":
            self.stuck_boot(r)
            return
        self.push(r.t_boot, "boot", r)

    def stuck_boot(self, r: Req) -> None:
        """A room decode-1 pre-allocated just before its wedge whose metadata never reached prefill.

        Decode times it out in KVPoll.WaitingForInput when its loop runs again; the prefill sender,
        still in KVPoll.Bootstrapping, fails with the bootstrap timeout about BOOT_LAG later. No
        transfer unit is ever posted."""
        rng = self.rng
        r.d_out = "timeout"
        r.error_text = loglines.kv_transfer_error(r.room, loglines.waiting_timeout(r.room, WAIT_TIMEOUT))
        r.t_d_end = T0 + W1 + 0.02 + 0.013 * sum(1 for q in self.reqs if q.d_out == "timeout")
        r.t_dq_end = r.t_d_end
        r.p_out = "bootstrap_timeout"
        r.p_error = loglines.kv_transfer_error(r.room, loglines.bootstrap_timeout(r.room, WAIT_TIMEOUT))
        r.t_p_end = r.t_d_end + BOOT_LAG + rng.uniform(-0.25, 0.25)
        r.t_boot = r.t_p_end  # it leaves prefill's bootstrap queue only then
        self.after_reply(r, r.t_d_end + 0.004, ok=False)

    def ev_boot(self, t: float, r: Req) -> None:
        if r.t_pabort is not None:
            return
        rank = self.ranks[r.p_rank]
        rank["queue"].append(r)
        if not rank["busy"]:
            self.push(t, "rank", rank)

    def ev_health(self, t: float, _) -> None:
        r = health_req(t, "HEALTH_CHECK_" + self.rid())
        r.p_rank = self.rr[PREFILL] % DP
        self.rr[PREFILL] += 1
        r.t_boot = t + 0.0015
        self.health.append(r)
        self.push(r.t_boot, "boot", r)

    def ev_rank(self, t: float, rank: dict) -> None:
        if rank["busy"] or not rank["queue"]:
            return
        budget, items = MAX_PREFILL, []
        for r in rank["queue"]:
            take = min(r.new_tokens - r.done, CHUNK, budget)
            if take <= 0:
                break
            items.append((r, take))
            budget -= take
            if budget < PAGE:
                break
        cached = 0
        fwd = 0.012
        for r, take in items:
            if r.done == 0:
                cached += r.cached
                r.t_pf_start = t
                r.kv_held += r.cached
                rank["kv"] += r.cached
            r.kv_held += take
            rank["kv"] += take
            fwd += take / self.rate * (1 + (r.cached + r.done) / 150000)
        fwd *= self.rng.uniform(0.95, 1.05)
        in_batch = {id(r) for r, _ in items}
        waiting = [r for r in rank["queue"] if id(r) not in in_batch]
        rank["booting"] = [r for r in rank["booting"] if r.t_boot > t and r.t_pabort is None]
        rank["inflight"] = [r for r in rank["inflight"] if r.t_pf_fin is None or r.t_pf_fin > t]
        new_tok = sum(k for _, k in items)
        last = rank["last_line"]
        thr = new_tok / max(t - last, 0.05) if last is not None else new_tok / 1.0
        st = dict(
            t=t,
            rank=rank["idx"],
            new_seq=len(items),
            new_token=new_tok,
            cached_token=cached,
            token_usage=round(rank["kv"] / MAX_TOTAL_P, 2),
            running_req=sum(1 for r, k in items if r.done + k < r.new_tokens),
            queue_req=len(waiting),
            pending_token=sum(r.new_tokens - r.done for r in waiting),
            bootstrap_req=len(rank["booting"]),
            inflight_req=len(rank["inflight"]),
            input_throughput=round(thr, 2),
        )
        rank["last_line"] = t
        self.pstats.append(st)
        msg = loglines.prefill_batch(
            st["new_seq"],
            new_tok,
            cached,
            st["token_usage"],
            st["running_req"],
            st["queue_req"],
            st["pending_token"],
            st["bootstrap_req"],
            st["inflight_req"],
            thr,
        )
        self.line(PREFILL, t, "prefill_stats", "sg", msg, rank["idx"])
        rank["busy"] = True
        self.push(t + fwd, "bend", (rank, items))

    def ev_bend(self, t: float, payload) -> None:
        rank, items = payload
        rank["busy"] = False
        rng = self.rng
        for r, take in items:
            if r.t_pabort is not None:
                continue
            if r.kind == "health":
                rank["queue"].remove(r)
                rank["kv"] -= r.kv_held
                r.kv_held = 0
                r.t_pf_fin = t + rng.uniform(0.002, 0.006)
                continue
            c = sum(1 for u in r.units if u["kind"] == "kv")
            tokens = take + (r.cached if c == 0 else 0)
            r.done += take
            last = r.done >= r.new_tokens
            post = t + rng.uniform(0.0003, 0.0008)
            nbytes = tokens * KV_BYTES_PER_TOKEN
            r.units.append(
                dict(
                    kind="kv",
                    chunk=c,
                    is_last=last,
                    bytes=nbytes,
                    post=post,
                    done=post + nbytes / XFER_BW + rng.uniform(0.0004, 0.0012),
                    fail=False,
                )
            )
            if last:
                rank["queue"].remove(r)
                self.finish_prefill(r, rank, t)
        self.push(t, "rank", rank)

    def finish_prefill(self, r: Req, rank: dict, t: float) -> None:
        rng = self.rng
        r.t_pf_end = t
        lastkv = r.units[-1]
        for kind, nbytes in (("index_k", r.prompt * INDEXK_BYTES_PER_TOKEN), ("aux", AUX_BYTES)):
            post = lastkv["post"] + rng.uniform(0.00003, 0.00012)
            r.units.append(
                dict(
                    kind=kind,
                    chunk=None,
                    is_last=None,
                    bytes=nbytes,
                    post=post,
                    done=post + nbytes / XFER_BW + rng.uniform(0.0003, 0.0009),
                    fail=False,
                )
            )
        rel = lastkv["post"] - T0
        on_path = (r.p_rank, r.d_host, r.d_rank) == FAULT_PATH
        if r.forced == "fail" or (on_path and F0 <= rel < F0 + FAULT_LEN and r.forced is None):
            lastkv["fail"] = True
            r.fail_unit = lastkv
            r.t_fail = lastkv["post"] + rng.uniform(0.15, 0.35)
            self.fault_reqs.append(r)
            self.push(r.t_fail, "pfail", r)
            return
        r.t_xfer_done = max(u["done"] for u in r.units)
        r.t_pf_fin = r.t_xfer_done + rng.uniform(0.002, 0.03)
        rank["inflight"].append(r)
        self.push(r.t_xfer_done, "xfer", r)

    def release(self, r: Req) -> None:
        rank = self.ranks[r.p_rank]
        rank["kv"] -= r.kv_held
        r.kv_held = 0

    def ev_pfail(self, t: float, r: Req) -> None:
        self.release(r)
        r.p_out = "fail"
        r.t_p_end = t + 0.004
        r.d_out = "fail"
        r.error_text = loglines.kv_transfer_error(r.room, loglines.nixl_transfer_err(r.room))
        r.t_d_end = t + self.rng.uniform(0.006, 0.02)  # KV_STATUS tells decode the reason
        r.t_dq_end = r.t_d_end
        self.after_reply(r, r.t_d_end + 0.003, ok=False)

    def running(self, host: str, rank: int, t: float) -> int:
        n = 0
        for q in self.dreqs[(host, rank)]:
            for a, b in q.segs:
                if a <= t < b:
                    n += 1
                    break
        return n

    def ev_xfer(self, t: float, r: Req) -> None:
        rng = self.rng
        self.release(r)
        r.p_out = r.p_out or "ok"
        r.t_p_end = r.t_pf_fin
        if r.t_dabort is not None and r.t_dabort <= t:
            return  # decode already gave up on this room
        notif = max(u["done"] for u in r.units) + rng.uniform(0.0002, 0.0009)
        r.t_kv = notif + rng.uniform(0.003, 0.03)
        h = r.d_host
        if h == "decode-1" and T0 + W0 <= r.t_kv < T0 + W1:
            r.d_out = "timeout"
            r.error_text = loglines.kv_transfer_error(r.room, loglines.waiting_timeout(r.room, WAIT_TIMEOUT))
            r.t_d_end = T0 + W1 + 0.02 + 0.013 * sum(1 for q in self.reqs if q.d_out == "timeout")
            r.t_dq_end = r.t_d_end
            self.after_reply(r, r.t_d_end + 0.004, ok=False)
            return
        r.t_dq_end = r.t_kv
        if r.forced == "ctxcorrupt":
            r.d_out = "ctxcorrupt"
            r.error_text = "Metadata corruption detected - bootstrap_room mismatch"
            r.t_d_end = r.t_kv + 0.001
            self.ctx_req = r
            self.after_reply(r, r.t_d_end + 0.003, ok=False)
            return
        r.t_start = r.t_kv + rng.uniform(0.008, 0.04)
        # nothing decode-1 logs may fall inside the wedge (its lines trail the event by up to ~25 ms)
        if h == "decode-1" and T0 + W0 - 0.05 <= r.t_start < T0 + W1:
            r.t_start = T0 + W1 + rng.uniform(0.05, 0.3)
        n = self.running(h, r.d_rank, r.t_start) + 1
        r.speed = 1.0 / (0.0185 + 0.0014 * n) * rng.uniform(0.92, 1.08)
        r.t_fin = r.t_start + r.completion / r.speed
        if h == "decode-1" and r.t_start < T0 + W0 < r.t_fin + 0.05:
            r.t_fin = T0 + W1 + max(r.t_fin - (T0 + W0), 0.05)
            r.segs = [(r.t_start, T0 + W0 + 0.05), (T0 + W1, r.t_fin)]  # its last forward follows W0's line
        else:
            r.segs = [(r.t_start, r.t_fin)]
        self.dreqs[(h, r.d_rank)].append(r)
        r.d_out = "ok"
        r.t_d_end = r.t_fin
        self.push(r.t_fin, "dfin", r)

    def ev_dfin(self, t: float, r: Req) -> None:
        if r.d_out != "ok" or t != r.t_fin:
            return
        self.after_reply(r, t + self.rng.uniform(0.002, 0.006), ok=True)

    def ev_kill(self, t: float, _) -> None:
        rng = self.rng
        for r in self.reqs:
            if r.kind != "swarm":
                continue
            self.push(t + rng.uniform(0.05, 1.2), "pabort", r)
            self.push(t + rng.uniform(0.1, 2.2), "dabort", r)

    def ev_pabort(self, t: float, r: Req) -> None:
        if r.p_out is not None:
            r.late_p = t
            return
        r.t_pabort = t
        r.p_out = "aborted"
        r.t_p_end = t
        rank = self.ranks[r.p_rank]
        if r in rank["queue"]:
            rank["queue"].remove(r)
        self.release(r)

    def ev_dabort(self, t: float, r: Req) -> None:
        if r.d_out == "ok" and r.t_fin is not None and r.t_fin <= t:
            r.late_d = t
            return
        r.t_dabort = t
        if r.d_out == "ok":  # running
            r.d_out = "aborted_running"
            r.t_fin = t
            r.segs = [(a, min(b, t)) for a, b in r.segs if a < t]
        else:
            r.d_out = "aborted_transfer"
            r.t_dq_end = t
        r.t_d_end = t


def _simulate(seed: int, scale: float) -> _Gen:
    g = _Gen(seed, scale)
    g.health = []
    g.health_count = {}
    g.dreqs = {(h, d): [] for h in DECODES for d in range(DP)}
    g.wedge_last = {}
    g.run()
    g.windows()
    g.corruption()
    return g
