"""`forensics timeline --format perfetto`: Chrome JSON trace events for ui.perfetto.dev.

A process per host, a thread per rank, each room as async transfer slices with a flow from the
prefill side to the decode side, counters from every stats line, instants for the abort, failure
and error lines and the corrupted replies, async slices for wedges and abort storms.
"""

from __future__ import annotations

import json
from pathlib import Path

from forensics.analysis.clocks import describe_offsets
from forensics.reports.detail import iso, other_replies
from forensics.reports.escape import escape_control, json_in_html

_COUNTERS = ("queue_req", "running_req", "bootstrap_req", "inflight_req", "transfer_req", "gen_throughput",
             "new_token")


def perfetto_trace(model: dict, d: dict, store_name: str) -> dict:
    """Chrome JSON trace events: a process per host, a thread per rank, async transfers, flows, counters."""
    pids = {h["name"]: i + 1 for i, h in enumerate(d["hosts"])}
    agent_pid = len(pids) + 1
    threads: dict[tuple[int, int], str] = {}
    ev: list[dict] = []

    def track(host, rank) -> tuple[int, int]:
        # tids are global in Perfetto's JSON importer (one tid in two pids reads as a reused thread),
        # so each host gets its own tid range; the host-level thread is rank -1
        pid = pids[host]
        tid = pid * 100_000 + (int(rank) + 1 if rank is not None else 0)
        threads[(pid, tid)] = f"rank {rank}" if rank is not None else "host"
        return pid, tid

    for s in d["stats"]:
        if s["host"] not in pids:
            continue
        pid, tid = track(s["host"], s["rank"])
        for name in _COUNTERS:
            if s[name] is not None:
                ev.append({"ph": "C", "name": name, "pid": pid, "tid": tid, "ts": s["t_us"],
                           "args": {f"rank {s['rank']}" if s["rank"] is not None else "host": s[name]}})

    for r in d["rooms"]:
        sent = r["t0"] is not None and r["prefill_host"] in pids
        got = r["recv_t0"] is not None and r["decode_host"] in pids
        # a flow whose end precedes its start is dropped by Perfetto; it also means a clock offset is missing
        flow = {"bind_id": f"0x{int(r['room']):x}"} if sent and got and r["recv_t0"] >= r["t0"] else {}
        args = {"bootstrap_room": r["room"], "outcome": r["outcome"], "prefill_host": r["prefill_host"],
                "decode_host": r["decode_host"], "decode_rank": r["decode_rank"], "units": r["units"],
                "bytes": r["bytes"], "checksum": r["checksum_verdict"], "error": r["error"]}
        if sent:
            pid, tid = track(r["prefill_host"], r["prefill_rank"])
            name = "transfer" if r["outcome"] == "ok" else f"transfer ({r['outcome']})"
            ev.append({"ph": "b", "cat": "transfer", "name": name, "id": r["room"], "pid": pid, "tid": tid,
                       "ts": r["t0"], "args": args, **({**flow, "flow_out": True} if flow else {})})
            ev.append({"ph": "e", "cat": "transfer", "name": name, "id": r["room"], "pid": pid, "tid": tid,
                       "ts": max(r["t1"], r["t0"])})
        if got:
            pid, tid = track(r["decode_host"], r["decode_rank"])
            name = "receive" if r["outcome"] == "ok" else f"receive ({r['outcome']})"
            ev.append({"ph": "b", "cat": "transfer.recv", "name": name, "id": r["room"], "pid": pid,
                       "tid": tid, "ts": r["recv_t0"], "args": args, **({**flow, "flow_in": True} if flow else {})})
            ev.append({"ph": "e", "cat": "transfer.recv", "name": name, "id": r["room"], "pid": pid,
                       "tid": tid, "ts": max(r["recv_t1"], r["recv_t0"])})

    for m in d["marks"]:
        if m["host"] not in pids:
            continue
        pid, tid = track(m["host"], m["rank"])
        name = m["kind"] + (f" ({m['reason']})" if m["reason"] else "")
        ev.append({"ph": "i", "s": "t", "cat": m["mark"], "name": name, "pid": pid, "tid": tid, "ts": m["t_us"],
                   "args": {"bootstrap_room": m["room"], "rid": m["rid"], "reason": m["reason"],
                            "severity": m["severity"], "message": m["message"]}})

    unlinked = False
    for r in d["replies"]:
        if not r["corrupted"]:
            continue
        if r["host"] in pids:
            pid, tid = track(r["host"], r["rank"])
        else:
            pid, tid, unlinked = agent_pid, agent_pid * 100_000, True
        ev.append({"ph": "i", "s": "t", "cat": "reply", "name": f"corrupted reply ({r['corruption_class']})",
                   "pid": pid, "tid": tid, "ts": r["t0"],
                   "args": {"bootstrap_room": r["room"], "class": r["corruption_class"], "source": r["source"],
                            "session_id": r["session_id"], "turn_id": r["turn_id"],
                            "signatures": ", ".join(r["signatures"] or []), "evidence": r["evidence"],
                            "room_outcome": r["outcome"], "reply_end": iso(r["t1"])}})

    # wedges and storms overlap each other and other kinds: async slices, never thread slices
    for w in d["wedges"]:
        if w["host"] not in pids:
            continue
        pid, tid = track(w["host"], w.get("dp_rank"))
        wid = f"{w['host']}/{w['kind']}/{w.get('dp_rank')}/{w['t0']}"
        ev.append({"ph": "b", "cat": "wedge", "name": f"wedge: {w['kind']}", "id": wid, "pid": pid, "tid": tid,
                   "ts": w["t0"], "args": {k: w.get(k) for k in ("tp_rank", "silent_s", "typical_s", "in_flight",
                                                                  "pending_transfers", "n_rooms", "rooms",
                                                                  "ended_by", "signals", "incident",
                                                                  "incident_hosts")}})
        ev.append({"ph": "e", "cat": "wedge", "name": f"wedge: {w['kind']}", "id": wid, "pid": pid, "tid": tid,
                   "ts": w["t1"]})
    for s in d["storms"]:
        if s["host"] not in pids:
            continue
        pid, tid = track(s["host"], None)
        sid = f"{s['host']}/{s['t0']}"
        ev.append({"ph": "b", "cat": "abort_storm", "name": "abort storm", "id": sid, "pid": pid, "tid": tid,
                   "ts": s["t0"], "args": {k: s.get(k) for k in ("aborts_on_host", "n_aborts", "host_aborts", "host_counts",
                                                                  "aborts_per_s", "errors_after",
                                                                  "corrupted_replies_after", "agent_aborts")}})
        ev.append({"ph": "e", "cat": "abort_storm", "name": "abort storm", "id": sid, "pid": pid, "tid": tid,
                   "ts": s["t1"]})

    ev.sort(key=lambda e: e["ts"])
    t_first = ev[0]["ts"] if ev else (d["window"][0] or 0)
    meta = []
    for h in d["hosts"]:
        pid = pids[h["name"]]
        meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": pid * 100_000, "ts": t_first,
                     "args": {"name": f"{h['name']} ({h['role']})"}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": pid * 100_000, "ts": t_first,
                     "args": {"sort_index": pid}})
    if unlinked:
        meta.append({"ph": "M", "name": "process_name", "pid": agent_pid, "tid": agent_pid * 100_000,
                     "ts": t_first, "args": {"name": other_replies(model)}})
        threads[(agent_pid, agent_pid * 100_000)] = "replies"
    for (pid, tid), name in sorted(threads.items()):
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": t_first, "args": {"name": name}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "ts": t_first,
                     "args": {"sort_index": tid}})
    return {
        # Perfetto's tokenizer stops at the first key it does not know: only these three, this order
        "displayTimeUnit": "ms",
        "otherData": {"source": "forensics timeline", "store": escape_control(store_name),
                      "clock_offsets": describe_offsets(d["offsets"]), "clock_warnings": d["clock_warnings"],
                      "bucket_s": model["bucket_s"]},
        "traceEvents": meta + ev,
    }


def write(model: dict, d: dict, path: str) -> None:
    """Write the trace of `model` and its detail `d` (reports.detail.gather with stats, plus the store's name)."""
    trace = perfetto_trace(model, d, d["store"])
    # ASCII-only JSON without < > &: no raw bidi or control character, and no markup, reaches
    # whatever shows the file (a viewer, a browser, a paste into an issue)
    text = json.dumps(trace, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    Path(path).write_text(json_in_html(text), encoding="utf-8")
