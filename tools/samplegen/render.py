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
        ev: dict = {(h, d): [] for h in HOSTS for d in range(DP)}
        n = [0]

        def add(h, d, t, **f):
            n[0] += 1
            ev[(h, d)].append((t, n[0], f))

        rng = random.Random(self.seed * 131 + 7)
        for r in self.reqs:
            if (
                not r.units
                and r.t_pabort is None
                and r.d_out not in ("aborted_transfer",)
                and r.p_out != "bootstrap_timeout"
            ):
                continue
            P, D = (PREFILL, r.p_rank), (r.d_host, r.d_rank)
            ppeer, dpeer = self.agents[r.d_host][r.d_rank], self.agents[PREFILL][r.p_rank]
            first_p = first_d = True
            # the decode scheduler consumes notifications until it gives up on the room, never while wedged
            consumed_until = (
                r.t_d_end if r.d_out in ("fail", "timeout", "aborted_transfer", "aborted_running") else 1e18
            )
            kv_ck = {}
            for u in r.units:
                base = dict(kind=u["kind"])
                if u["kind"] == "kv":
                    base.update(chunk=u["chunk"], is_last=u["is_last"])
                if u["kind"] == "index_k" or (u["kind"] == "kv" and r.kv_ksum):
                    ck = r.ksum if u["kind"] == "index_k" else _hex(rng, 16)
                    kv_ck[(u["kind"], u["chunk"])] = ck
                    add(
                        *P,
                        u["post"] - rng.uniform(0.0002, 0.0006),
                        room=r.room,
                        rid=r.p_rid,
                        **base,
                        event="checksum",
                        bytes=u["bytes"],
                        checksum=ck,
                        checksum_algo="xxh64",
                    )
                    first_p = False
                f = dict(room=r.room, **({"rid": r.p_rid} if first_p else {}), **base)
                first_p = False
                add(*P, u["post"], **f, event="post", bytes=u["bytes"], peer=ppeer)
                if u["fail"]:
                    add(
                        *P,
                        r.t_fail,
                        room=r.room,
                        **base,
                        event="fail",
                        status="NIXL_ERR_BACKEND",
                        peer=ppeer,
                        error="getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
                    )
                    continue
                add(*P, u["done"], room=r.room, **base, event="done", status="NIXL_SUCCESS")
                tn = u["done"] + rng.uniform(0.0002, 0.0009)
                if tn >= consumed_until or (r.d_host == "decode-1" and T0 + W0 <= tn < T0 + W1 + 0.5):
                    continue
                f = dict(room=r.room, **({"rid": r.d_rid} if first_d else {}), **base)
                first_d = False
                add(*D, tn, **f, event="notif", peer=dpeer)
                tc = tn + rng.uniform(0.004, 0.02)
                if (u["kind"], u["chunk"]) in kv_ck and not (r.d_host == "decode-1" and T0 + W0 <= tc < T0 + W1 + 0.5):
                    ck = kv_ck[(u["kind"], u["chunk"])]
                    if u["kind"] == "index_k" and r.ksum_mismatch:
                        ck = r.ksum_d
                        r.t_ksum_d = tc
                    add(
                        *D,
                        tc,
                        room=r.room,
                        **base,
                        event="checksum",
                        bytes=u["bytes"],
                        checksum=ck,
                        checksum_algo="xxh64",
                    )
            if r.p_out == "aborted":
                add(
                    *P,
                    r.t_p_end,
                    room=r.room,
                    kind="kv",
                    event="abort",
                    error=loglines.kv_transfer_error(r.room, loglines.ABORTED),
                )
            elif r.p_out == "bootstrap_timeout":
                add(*P, r.t_p_end, room=r.room, rid=r.p_rid, kind="kv", event="abort", error=r.p_error)
            elif r.p_out == "fail":
                add(
                    *P,
                    r.t_p_end,
                    room=r.room,
                    kind="kv",
                    event="abort",
                    error=loglines.kv_transfer_error(r.room, loglines.nixl_transfer_err(r.room)),
                )
            if r.d_out in ("aborted_transfer", "aborted_running"):
                add(
                    *D,
                    r.t_d_end,
                    room=r.room,
                    **({"rid": r.d_rid} if first_d else {}),
                    kind="kv",
                    event="abort",
                    error=loglines.kv_transfer_error(r.room, loglines.ABORTED),
                )
            elif r.d_out in ("fail", "timeout"):
                add(
                    *D,
                    r.t_d_end,
                    room=r.room,
                    **({"rid": r.d_rid} if first_d else {}),
                    kind="kv",
                    event="abort",
                    error=r.error_text,
                )
            elif r.d_out == "ctxcorrupt":
                add(*D, r.t_d_end, room=r.room, kind="aux", event="abort", error=r.error_text)
        return ev

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
