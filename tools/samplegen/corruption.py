"""Which replies come back corrupted: the elevated windows, the classes drawn, the hard negatives."""

from __future__ import annotations

from tools.samplegen.ids import _hex
from tools.samplegen.records import Req
from tools.samplegen.scenario import (
    DP,
    ELEVATED_AFTER,
    F0,
    FAULT_LEN,
    FAULT_PATH,
    P_AFTER_FAIL,
    P_BASE,
    P_HIGH,
    SLAM,
    SWARM_KILL,
    T0,
    W0,
    W1,
)
from tools.samplegen.texts import INCOHERENT, PARSE_LEAK


class _Corruption:
    """_Gen's corruption draws (a mixin, run after the simulation on its own random stream)."""

    def windows(self) -> None:
        """Derived windows: slam backlog, elevated corruption windows."""
        lo, hi = T0 + SLAM[0], T0 + SLAM[1]
        latest: dict = {}
        self.backlog_cleared = hi
        for st in self.pstats:  # first stats line after the slam at which every rank's queue is empty
            latest[st["rank"]] = st["queue_req"]
            if st["t"] >= hi and len(latest) == DP and not any(latest.values()):
                self.backlog_cleared = st["t"]
                break
        fails = [r.t_fail for r in self.fault_reqs]
        self.elevated = [
            dict(reason="prefill_slam", host="*", start=lo, end=max(hi, self.backlog_cleared)),
            dict(
                reason="after_abort_storm",
                host="decode-0",
                start=T0 + SWARM_KILL,
                end=T0 + SWARM_KILL + 2.2 + ELEVATED_AFTER,
            ),
            dict(reason="after_abort_storm", host="decode-1", start=T0 + SWARM_KILL, end=T0 + W0),
            # the wedge's mass timeout frees the pages of rooms whose KV had landed: the same late-write
            # exposure as any failed transfer on that host
            dict(reason="after_wedge_timeouts", host="decode-1", start=T0 + W1, end=T0 + W1 + ELEVATED_AFTER),
            dict(
                reason="after_transfer_failures", host=FAULT_PATH[1], start=min(fails), end=max(fails) + ELEVATED_AFTER
            ),
        ]

    def in_elevated(self, r: Req) -> bool:
        t = r.t_kv
        return any(w["host"] in ("*", r.d_host) and w["start"] <= t <= w["end"] for w in self.elevated)

    def corruption(self) -> None:
        ok = [r for r in self.reqs if r.d_out == "ok" and r.sess is not None and r.sess.source]
        # checksum-mismatch rooms: one in the slam on decode-0, the forced victim, one late on decode-1
        slam = [
            r for r in ok if r.d_host == "decode-0" and T0 + SLAM[0] <= r.t_arr < T0 + SLAM[1] and r.kind == "writer"
        ]
        late = [r for r in ok if r.d_host == "decode-1" and r.t_arr > T0 + W1 + 120 and not r.forced]
        victim = [r for r in ok if r.forced == "victim"]
        picks = []
        for group in (slam, victim, late):
            cands = [r for r in group if r not in picks] or [r for r in ok if r not in picks]
            picks.append(cands[len(cands) // 2])
        for r in picks:
            r.ksum_mismatch = True
            r.ksum_d = _hex(self.crng, 16)
            r.corrupt = ("incoherent", INCOHERENT[len(self.ksum_rooms) % 3])
            self.ksum_rooms.append(r)
        # after failures on a host only a handful of replies follow, so a coin per reply could leave
        # the window no worse than the rest: the rate there is planted as a count
        counted = set()
        for w in self.elevated:
            if not w["reason"].startswith("after_") or w["reason"] == "after_abort_storm":
                continue
            members = [r for r in ok if r.d_host == w["host"] and w["start"] <= r.t_kv <= w["end"]]
            counted |= {id(r) for r in members}
            free = [r for r in members if not r.corrupt]
            need = max(0, round(P_AFTER_FAIL * len(members)) - (len(members) - len(free)))
            for r in self.crng.sample(free, min(need, len(free))):
                inc = self.crng.random() < 0.6
                r.corrupt = (
                    ("incoherent", self.crng.choice(INCOHERENT))
                    if inc
                    else ("parse_leak", self.crng.choice(PARSE_LEAK))
                )
        for r in ok:
            if r.corrupt or id(r) in counted:
                continue
            high = self.in_elevated(r)
            x = self.crng.random()
            if x < (P_HIGH if high else P_BASE):
                inc = self.crng.random() < (0.6 if high else 0.3)
                r.corrupt = (
                    ("incoherent", self.crng.choice(INCOHERENT))
                    if inc
                    else ("parse_leak", self.crng.choice(PARSE_LEAK))
                )
        # hard negatives: clean final turns, spread over the run
        finals = [r for r in ok if r.final and not r.corrupt and r.kind in ("reviewer", "opencode", "writer")]
        zh = [r for r in finals if r.sess.lang == "zh"]
        others = [r for r in finals if r.sess.lang != "zh"]
        for r in zh[:3]:
            r.hard_negative = "chinese"
        kinds = ["fenced_markup", "repeated_table_rows"]
        step = max(1, len(others) // 7)
        for i, r in enumerate(others[step // 2 :: step][:6]):
            r.hard_negative = kinds[i % 2]
        # the engineer's interactive session quotes the incident's own log lines back to the user:
        # after the link fault its traceback, else after the wedge an excerpt of it, else the storm
        oc = [r for r in finals if r.kind == "opencode" and r.sess.lang == "en" and not r.hard_negative]
        quoted = (
            [r for r in oc if r.t_arr > T0 + F0 + FAULT_LEN]
            or [r for r in oc if r.t_arr > T0 + W1 + 5]
            or [r for r in oc if r.t_arr > T0 + SWARM_KILL + 5]
        )
        if quoted:
            quoted[0].hard_negative = "quoted_log"
