"""planted.json: the facts the generator planted, for the tests to check by value."""

from __future__ import annotations

import json

from tools.samplegen.ids import iso
from tools.samplegen.records import Req
from tools.samplegen.scenario import (
    CLOCK_OFFSET,
    CRI_RE,
    DECODES,
    DP,
    FAULT_PATH,
    HEALTH_FAIL_S,
    HOST_IP,
    HOSTS,
    KUBELET_IP,
    LINE_KIND_RULES,
    MAIN_PID,
    MODEL,
    P_AFTER_FAIL,
    P_BASE,
    P_HIGH,
    PREFILL,
    PROBE_S,
    SCHED_PID0,
    SLAM,
    SWARM_KILL,
    SWARM_SESSIONS,
    SWARM_START,
    T0,
    WAIT_TIMEOUT,
)
from tools.samplegen.simulation import _Gen
from tools.samplegen.texts import SIGNATURES


def _dump_planted(p: dict) -> str:
    """JSON with sorted keys, indented, but one line per record in the long lists of records."""
    out = []
    for k in sorted(p):
        v = p[k]
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            body = ",\n".join("    " + json.dumps(x, sort_keys=True, separators=(",", ":")) for x in v)
            out.append(f"  {json.dumps(k)}: [\n{body}\n  ]")
        else:
            txt = json.dumps(v, indent=2, sort_keys=True).replace("\n", "\n  ")
            out.append(f"  {json.dumps(k)}: {txt}")
    return "{\n" + ",\n".join(out) + "\n}\n"


def _planted(g: _Gen, files: dict, proxy_ids: dict, oc_ids: dict, oc_file: dict, seed: int, scale: float) -> dict:
    def reply_ref(r: Req) -> dict:
        if id(r) in proxy_ids:
            return dict(source="proxy", reply_id=proxy_ids[id(r)], file="agent/proxy.jsonl")
        return dict(source="opencode", reply_id=oc_ids[id(r)], file=oc_file[id(r)])

    agent_reqs = [r for r in g.reqs if r.sess is not None and r.sess.source]
    by_time = sorted(agent_reqs, key=lambda r: r.t_arr)
    links = [dict(**reply_ref(r), **_link(r)) for r in by_time]
    corrupted = [dict(**reply_ref(r), **_corrupted(g, r)) for r in by_time if r.corrupt]
    hard = [dict(**reply_ref(r), **_hard_negative(r)) for r in by_time if r.hard_negative]
    errors = [dict(**reply_ref(r), **_error_reply(r)) for r in by_time if r.d_out != "ok"]
    ok = [r for r in agent_reqs if r.d_out == "ok"]
    el = [r for r in ok if g.in_elevated(r)]
    base = [r for r in ok if not g.in_elevated(r)]
    return {
        "generator": {"module": "tools.samplegen", "format_version": 1, "seed": seed, "scale": scale},
        "t0": iso(T0),
        "t_end": iso(max(r.t_resp or r.t_d_end or r.t_arr for r in g.reqs)),
        "model": MODEL,
        "hosts": {h: _host(g, h) for h in HOSTS},
        "clock_offset": {
            "host": "decode-1",
            "reference_host": PREFILL,
            "offset_s": CLOCK_OFFSET["decode-1"],
            "meaning": "decode-1 host clock minus prefill-0 clock (= true UTC); applies to its sglang "
            "prefixes, its CRI timestamps and its trace ts",
        },
        "windows": {
            "slam": _slam_window(g),
            "storm": _storm_window(g),
            "wedge": _wedge_window(g),
            "transfer_failures": _transfer_failures(g),
            "elevated_corruption": [dict(w, start=iso(w["start"]), end=iso(w["end"])) for w in g.elevated],
        },
        "checksum_mismatch_rooms": [_checksum_room(r) for r in g.ksum_rooms],
        "context_corruption": _context_corruption(g.ctx_req),
        "replies": dict(
            total=len(agent_reqs),
            ok=len(ok),
            errors=len(errors),
            corrupted=len(corrupted),
            hard_negatives=len(hard),
            proxy=sum(1 for r in agent_reqs if id(r) in proxy_ids),
            opencode=sum(1 for r in agent_reqs if id(r) in oc_ids),
        ),
        "corruption_rates": {
            "baseline": _rate(base),
            "elevated": _rate(el),
            "target_baseline": P_BASE,
            "target_elevated": P_HIGH,
            "target_after_failures": P_AFTER_FAIL,
        },
        "corrupted_replies": corrupted,
        "hard_negatives": hard,
        "error_replies": errors,
        "reply_links": links,
        "requests": dict(
            total=len(g.reqs),
            health_checks={PREFILL: len(g.health), **g.health_count},
            by_agent={a: sum(1 for r in g.reqs if r.kind == a) for a in ("opencode", "reviewer", "writer", "swarm")},
        ),
        "files": files,
        "stats_lines": {rel: f["stats_lines"] for rel, f in files.items() if "stats_lines" in f},
        "line_kind_rules": [list(x) for x in LINE_KIND_RULES],
        "cri_prefix_pattern": CRI_RE,
    }


# -- one record per reply (each also carries the reply's reference: source, id, file) ---------------


def _link(r: Req) -> dict:
    return dict(
        room=r.room,
        decode_host=r.d_host,
        decode_rid=r.d_rid,
        prefill_rid=r.p_rid,
        prompt_tokens=r.prompt,
        completion_tokens=r.completion,
        reasoning_tokens=r.reasoning,
        cached_tokens=r.cached,
        t_request=iso(r.t_arr),
        t_response=iso(r.t_resp),
        status=200 if r.d_out == "ok" else 500,
    )


def _corrupted(g: _Gen, r: Req) -> dict:
    return dict(
        **{"class": r.corrupt[0]},
        subtype=r.corrupt[1],
        signatures=SIGNATURES[r.corrupt[1]],
        room=r.room,
        decode_host=r.d_host,
        decode_rank=r.d_rank,
        t_request=iso(r.t_arr),
        t_response=iso(r.t_resp),
        elevated=g.in_elevated(r),
        checksum_mismatch=r.ksum_mismatch,
    )


def _hard_negative(r: Req) -> dict:
    return dict(kind=r.hard_negative, room=r.room, **({"quoted": r.quoted} if r.hard_negative == "quoted_log" else {}))


def _error_reply(r: Req) -> dict:
    return dict(
        room=r.room,
        decode_host=r.d_host,
        status=500,
        reason=r.d_out,
        error=r.error_text,
        t_response=iso(r.t_resp),
    )


def _rate(rs: list[Req]) -> dict:
    k = sum(1 for r in rs if r.corrupt)
    return dict(replies=len(rs), corrupted=k, rate=round(k / len(rs), 4) if rs else None)


# -- the deployment and the planted windows ----------------------------------------------------------


def _host(g: _Gen, h: str) -> dict:
    return dict(
        role="prefill" if h == PREFILL else "decode",
        ip=HOST_IP[h],
        dp_size=DP,
        clock_offset_s=CLOCK_OFFSET[h],
        main_pid=MAIN_PID[h],
        scheduler_pids={str(d): SCHED_PID0[h] + d for d in range(DP)},
        nixl_agents={str(d): g.agents[h][d] for d in range(DP)},
        cri_prefix=h == "decode-1",
    )


def _slam_window(g: _Gen) -> dict:
    slam_lines = [s for s in g.pstats if T0 + SLAM[0] <= s["t"] < T0 + SLAM[1]]
    pre_lines = [s for s in g.pstats if T0 <= s["t"] < T0 + SLAM[0]]
    return {
        "host": PREFILL,
        "start": iso(T0 + SLAM[0]),
        "end": iso(T0 + SLAM[1]),
        "backlog_cleared": iso(g.backlog_cleared),
        "requests": sum(1 for r in g.reqs if r.kind == "writer" and T0 + SLAM[0] <= r.t_arr < T0 + SLAM[1]),
        "peak_queue_req": max((s["queue_req"] for s in slam_lines), default=0),
        "baseline_peak_queue_req": max((s["queue_req"] for s in pre_lines), default=0),
        "new_token_rate": round(sum(s["new_token"] for s in slam_lines) / (SLAM[1] - SLAM[0]), 1),
        "baseline_new_token_rate": round(sum(s["new_token"] for s in pre_lines) / SLAM[0], 1),
    }


def _storm_window(g: _Gen) -> dict:
    storm_d = {
        h: sorted(
            r.t_dabort
            for r in g.reqs
            if r.kind == "swarm"
            and r.d_host == h
            and r.t_dabort is not None
            and r.d_out in ("aborted_transfer", "aborted_running")
        )
        for h in DECODES
    }
    storm0 = storm_d["decode-0"]
    swarm0 = [r for r in g.reqs if r.kind == "swarm" and r.d_host == "decode-0"]
    return {
        "host": "decode-0",
        "start": iso(storm0[0]),
        "end": iso(storm0[-1]),
        "agent_sessions": SWARM_SESSIONS,
        "agent_start": iso(T0 + SWARM_START),
        "agent_killed": iso(T0 + SWARM_KILL),
        "aborted_requests": len(storm0),
        "aborted_requests_by_host": {h: len(v) for h, v in storm_d.items()},
        "aborted_rooms": sorted(r.room for r in swarm0),
        "aborted_in_transfer": sum(1 for r in swarm0 if r.d_out == "aborted_transfer"),
    }


def _wedge_window(g: _Gen) -> dict:
    stuck = sorted((r for r in g.reqs if r.d_out == "timeout"), key=lambda r: r.t_d_end)
    # the wedge from the scheduler's point of view: its last stats line, the first timeout it then
    # logged, and its first stats line after that
    w_start = max(v["t"] for v in g.wedge_last.values())
    w_end = stuck[0].t_d_end
    w_resumed = min(x[0] for x in g.lines["decode-1"] if x[2] == "decode_stats" and x[0] > w_start)
    d1 = CLOCK_OFFSET["decode-1"]
    return {
        "host": "decode-1",
        "start": iso(w_start),
        "end": iso(w_end),
        "start_host_clock": iso(w_start + d1),
        "end_host_clock": iso(w_end + d1),
        "resumed": iso(w_resumed),
        "ended_by": "waiting_timeout",
        "last_stats_lines": {
            str(d): dict(
                ts=iso(v["t"]),
                running_req=v["running_req"],
                transfer_req=v["transfer_req"],
                prealloc_req=v["prealloc_req"],
                queue_req=v["queue_req"],
            )
            for d, v in sorted(g.wedge_last.items())
        },
        "in_flight": sum(v["running_req"] + v["transfer_req"] for v in g.wedge_last.values()),
        "running_at_start": sum(v["running_req"] for v in g.wedge_last.values()),
        "stuck_rooms": [r.room for r in stuck],
        "stuck": [_stuck(r) for r in stuck],
        "bootstrap_timeout_rooms": [r.room for r in stuck if r.p_out == "bootstrap_timeout"],
        "timeout_s": WAIT_TIMEOUT,
        "arrivals_during": sum(1 for r in g.reqs if r.d_host == "decode-1" and w_start < r.t_arr < w_end),
        "health": dict(
            probe_ip=KUBELET_IP,
            probe_interval_s=PROBE_S,
            probes_503=g.health_503,
            failed_interval_s=HEALTH_FAIL_S,
            health_check_failed=len(g.health_fails),
            first_failed=iso(g.health_fails[0]),
            last_failed=iso(g.health_fails[-1]),
        ),
    }


def _stuck(r: Req) -> dict:
    timed_out = r.p_out == "bootstrap_timeout"
    return dict(
        room=r.room,
        decode_rank=r.d_rank,
        prefill_rank=r.p_rank,
        decode_rid=r.d_rid,
        prefill_rid=r.p_rid,
        outcome="waiting_timeout",
        t_outcome=iso(r.t_d_end),
        later_failures=["bootstrap_timeout"] if timed_out else [],
        t_later=iso(r.t_p_end) if timed_out else None,
    )


def _transfer_failures(g: _Gen) -> dict:
    fails = sorted(g.fault_reqs, key=lambda r: r.t_fail)
    return {
        "prefill_host": PREFILL,
        "prefill_dp_rank": FAULT_PATH[0],
        "host": FAULT_PATH[1],
        "decode_dp_rank": FAULT_PATH[2],
        "start": iso(fails[0].t_fail),
        "end": iso(fails[-1].t_p_end),
        "rooms": [r.room for r in fails],
        "worker_error_room": fails[0].room,
        "status": "NIXL_ERR_BACKEND",
    }


def _checksum_room(r: Req) -> dict:
    return dict(
        room=r.room,
        kind="index_k",
        chunk=None,
        decode_host=r.d_host,
        decode_rank=r.d_rank,
        prefill_rank=r.p_rank,
        decode_rid=r.d_rid,
        prefill_rid=r.p_rid,
        prefill_checksum=r.ksum,
        decode_checksum=r.ksum_d,
        logged=True,
    )


def _context_corruption(ctx: Req) -> dict:
    return dict(
        host=ctx.d_host,
        rank=ctx.d_rank,
        rid=ctx.d_rid,
        room=ctx.room,
        metadata_room=ctx.metadata_room,
        metadata_buffer_index=17,
        ts=iso(ctx.t_kv),
    )
