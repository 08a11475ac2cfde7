"""Log lines and transfer traces rendered into the bytes of each file."""

from __future__ import annotations

import datetime as dt
import json
import random

from tools import loglines
from tools.samplegen.ids import _hex, _pfx_time, _split, iso
from tools.samplegen.scenario import CLOCK_OFFSET, DP, HOSTS, LOG_START, PREFILL, SCHED_PID0, T0, UTC, W0, W1


class _Render:
    """_Gen's rendering of server logs and KV transfer traces (a mixin)."""

    # -- rendering ----------------------------------------------------------------------------------
    def render_log(self, host: str, recs: list) -> tuple[bytes, dict]:
        off = CLOCK_OFFSET[host]
        rng = random.Random(self.seed * 31 + HOSTS.index(host))
        out, kinds = [], {}
        cri = 0.0
        for t, _, kind, style, rank, msg in recs:
            th = t + off
            pt = _pfx_time(th)
            if style == "sg":
                s = loglines.sglang(pt, loglines.dp_tags(rank), msg)
            elif style == "pl":
                s = loglines.sglang(pt, "", msg)
            elif style == "uv":
                s = loglines.sglang(pt, "", loglines.uvicorn(*msg))
            elif style == "absl":
                sev, tid, f, ln, m = msg
                d, us = _split(th)
                s = loglines.glog(sev, f"{d:%m%d}", f"{d:%H:%M:%S}", us, tid, f, ln, m)
            elif style == "ucx":
                pid, thr, f, ln, lvl, m = msg
                d, us = _split(th)
                s = loglines.ucx(int(d.timestamp()), us, host, pid, thr, f, ln, lvl, m)
            elif style == "npy":
                s = loglines.nixl_py(pt, *msg)
            else:
                s = msg
            if host == "decode-1":  # containerd stamps each line a little later, in order
                cri = max(cri + 0.000002, th + rng.uniform(0.00008, 0.0009))
                d, us = _split(cri)
                s = loglines.cri(f"{d:%Y-%m-%dT%H:%M:%S}.{us:06d}{rng.randint(0, 999):03d}", "stdout", s)
            out.append(s)
            kinds[kind] = kinds.get(kind, 0) + 1
        return ("\n".join(out) + "\n").encode(), kinds

    def trace_events(self) -> dict:
        """(host, rank) -> list of (t_true, seq, dict) in emission order."""
        trace = _Trace({(h, d): [] for h in HOSTS for d in range(DP)})
        rng = random.Random(self.seed * 131 + 7)
        for r in self.reqs:
            if (
                not r.units
                and r.t_pabort is None
                and r.d_out not in ("aborted_transfer",)
                and r.p_out != "bootstrap_timeout"
            ):
                continue
            room = _RoomTrace(self, trace, r)
            for u in r.units:
                room.unit(rng, u)
            room.aborts()
        return trace.ev

    def render_trace(self, host: str, d: int, events: list) -> tuple[str, bytes, dict]:
        pid = SCHED_PID0[host] + d
        off = CLOCK_OFFSET[host]
        start = T0 + LOG_START + 25 + off
        name = f"kvtrace-{host}-{pid}-{dt.datetime.fromtimestamp(int(start), UTC):%Y%m%dT%H%M%SZ}.jsonl"
        out, counts = [], {}
        side = "prefill" if host == PREFILL else "decode"
        for t, _, f in sorted(events, key=lambda e: (e[0], e[1])):
            th = t + off
            rec = {
                "ts": iso(th) if host == "decode-1" else round(th, 6),
                "host": host,
                "pid": pid,
                "side": side,
                "engine_rank": d,
            }
            if host == PREFILL:
                rec["dp_rank"] = d
            room = f.pop("room")
            rec["room"] = str(room) if host == "decode-1" else room
            rec.update(f)
            out.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
            counts[f["event"]] = counts.get(f["event"], 0) + 1
        return name, ("\n".join(out) + "\n").encode() if out else b"", counts


class _Trace:
    """The events of every process's trace, numbered in the order they were made."""

    def __init__(self, ev: dict):
        self.ev, self.n = ev, 0

    def add(self, h: str, d: int, t: float, **f) -> None:
        self.n += 1
        self.ev[(h, d)].append((t, self.n, f))


XFER_FAIL_ERROR = "getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND"


class _RoomTrace:
    """One room's events on its prefill and decode ranks: per transfer unit, then how each side ended.

    A side's first event of the room carries the rid (the trace format names it once)."""

    def __init__(self, g, trace: _Trace, r):
        self.trace, self.r = trace, r
        self.P, self.D = (PREFILL, r.p_rank), (r.d_host, r.d_rank)
        self.ppeer, self.dpeer = g.agents[r.d_host][r.d_rank], g.agents[PREFILL][r.p_rank]
        self.first_p = self.first_d = True
        # the decode scheduler consumes notifications until it gives up on the room, never while wedged
        self.consumed_until = (
            r.t_d_end if r.d_out in ("fail", "timeout", "aborted_transfer", "aborted_running") else 1e18
        )
        self.kv_ck: dict = {}

    def _wedged(self, t: float) -> bool:
        return self.r.d_host == "decode-1" and T0 + W0 <= t < T0 + W1 + 0.5

    def unit(self, rng: random.Random, u: dict) -> None:
        """prefill: [checksum,] post, then done or fail; decode: notif, [checksum]."""
        r, add = self.r, self.trace.add
        base = dict(kind=u["kind"])
        if u["kind"] == "kv":
            base.update(chunk=u["chunk"], is_last=u["is_last"])
        if u["kind"] == "index_k" or (u["kind"] == "kv" and r.kv_ksum):
            ck = r.ksum if u["kind"] == "index_k" else _hex(rng, 16)
            self.kv_ck[(u["kind"], u["chunk"])] = ck
            t = u["post"] - rng.uniform(0.0002, 0.0006)
            add(*self.P, t, room=r.room, rid=r.p_rid, **base, **_checksum(u, ck))
            self.first_p = False
        f = dict(room=r.room, **({"rid": r.p_rid} if self.first_p else {}), **base)
        self.first_p = False
        add(*self.P, u["post"], **f, event="post", bytes=u["bytes"], peer=self.ppeer)
        if u["fail"]:
            fail = dict(event="fail", status="NIXL_ERR_BACKEND", peer=self.ppeer, error=XFER_FAIL_ERROR)
            add(*self.P, r.t_fail, room=r.room, **base, **fail)
            return
        add(*self.P, u["done"], room=r.room, **base, event="done", status="NIXL_SUCCESS")
        tn = u["done"] + rng.uniform(0.0002, 0.0009)
        if tn >= self.consumed_until or self._wedged(tn):
            return
        f = dict(room=r.room, **({"rid": r.d_rid} if self.first_d else {}), **base)
        self.first_d = False
        add(*self.D, tn, **f, event="notif", peer=self.dpeer)
        tc = tn + rng.uniform(0.004, 0.02)
        if (u["kind"], u["chunk"]) in self.kv_ck and not self._wedged(tc):
            ck = self.kv_ck[(u["kind"], u["chunk"])]
            if u["kind"] == "index_k" and r.ksum_mismatch:
                ck = r.ksum_d
                r.t_ksum_d = tc
            add(*self.D, tc, room=r.room, **base, **_checksum(u, ck))

    def aborts(self) -> None:
        r, add = self.r, self.trace.add
        if r.p_out in _PREFILL_ABORTS:
            with_rid, error = _PREFILL_ABORTS[r.p_out]
            rid = {"rid": r.p_rid} if with_rid else {}
            add(*self.P, r.t_p_end, room=r.room, **rid, kind="kv", event="abort", error=error(r))
        if r.d_out in _DECODE_ABORTS:
            kind, error = _DECODE_ABORTS[r.d_out]
            # the ctxcorrupt abort is of the aux buffer and names no rid
            rid = {"rid": r.d_rid} if self.first_d and kind == "kv" else {}
            add(*self.D, r.t_d_end, room=r.room, **rid, kind=kind, event="abort", error=error(r))


def _checksum(u: dict, ck: str) -> dict:
    return dict(event="checksum", bytes=u["bytes"], checksum=ck, checksum_algo="xxh64")


def _aborted_error(r) -> str:
    return loglines.kv_transfer_error(r.room, loglines.ABORTED)


# the abort event each side's outcome ends the room with: prefill (p_out) -> (names the rid, error),
# decode (d_out) -> (buffer kind, error)
_PREFILL_ABORTS = {
    "aborted": (False, _aborted_error),
    "bootstrap_timeout": (True, lambda r: r.p_error),
    "fail": (False, lambda r: loglines.kv_transfer_error(r.room, loglines.nixl_transfer_err(r.room))),
}
_DECODE_ABORTS = {
    "aborted_transfer": ("kv", _aborted_error),
    "aborted_running": ("kv", _aborted_error),
    "fail": ("kv", lambda r: r.error_text),
    "timeout": ("kv", lambda r: r.error_text),
    "ctxcorrupt": ("aux", lambda r: r.error_text),
}
