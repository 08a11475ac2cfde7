"""`forensics timeline --format perfetto`: Chrome JSON trace events for ui.perfetto.dev.

A process per host, a thread per rank, each room as async transfer slices with a flow from the
prefill side to the decode side, counters per rank and bucket, instants for the abort, failure
and error lines and the corrupted replies, async slices for wedges and abort storms.

The file is written as it goes: counters stream from the store one batch at a time, merged in
time order with the other events (a window's worth, gathered by forensics.analysis.detail), so
memory does not grow with the trace. A trace that would pass its budget of bytes is cut, before
it is gathered, to a window around the busiest trouble (forensics.analysis.detail.fit), and says so.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator

from forensics.analysis.clocks import describe_offsets
from forensics.analysis.detail import COUNTERS
from forensics.reports.detail import iso, other_replies
from forensics.reports.escape import escape_control, json_in_html

_COUNTERS = COUNTERS


def _events(model: dict, d: dict, track, agent) -> list[dict]:
    """Every event but the counters, in time order: rooms, marks, replies, wedges, storms."""
    pids = track.pids
    ev: list[dict] = []
    for r in d["rooms"]:
        sent = r["t0"] is not None and r["prefill_host"] in pids
        got = r["recv_t0"] is not None and r["decode_host"] in pids
        # a flow whose end precedes its start is dropped by Perfetto; it also means a clock offset is missing
        flow = {"bind_id": f"0x{int(r['room']):x}"} if sent and got and r["recv_t0"] >= r["t0"] else {}
        args = {
            "bootstrap_room": r["room"],
            "outcome": r["outcome"],
            "prefill_host": r["prefill_host"],
            "decode_host": r["decode_host"],
            "decode_rank": r["decode_rank"],
            "units": r["units"],
            "bytes": r["bytes"],
            "checksum": r["checksum_verdict"],
            "error": r["error"],
        }
        if sent:
            pid, tid = track(r["prefill_host"], r["prefill_rank"])
            name = "transfer" if r["outcome"] == "ok" else f"transfer ({r['outcome']})"
            ev.append(
                {
                    "ph": "b",
                    "cat": "transfer",
                    "name": name,
                    "id": r["room"],
                    "pid": pid,
                    "tid": tid,
                    "ts": r["t0"],
                    "args": args,
                    **({**flow, "flow_out": True} if flow else {}),
                }
            )
            ev.append(
                {
                    "ph": "e",
                    "cat": "transfer",
                    "name": name,
                    "id": r["room"],
                    "pid": pid,
                    "tid": tid,
                    "ts": max(r["t1"], r["t0"]),
                }
            )
        if got:
            pid, tid = track(r["decode_host"], r["decode_rank"])
            name = "receive" if r["outcome"] == "ok" else f"receive ({r['outcome']})"
            ev.append(
                {
                    "ph": "b",
                    "cat": "transfer.recv",
                    "name": name,
                    "id": r["room"],
                    "pid": pid,
                    "tid": tid,
                    "ts": r["recv_t0"],
                    "args": args,
                    **({**flow, "flow_in": True} if flow else {}),
                }
            )
            ev.append(
                {
                    "ph": "e",
                    "cat": "transfer.recv",
                    "name": name,
                    "id": r["room"],
                    "pid": pid,
                    "tid": tid,
                    "ts": max(r["recv_t1"], r["recv_t0"]),
                }
            )

    for m in d["marks"]:
        if m["host"] not in pids:
            continue
        pid, tid = track(m["host"], m["rank"])
        name = m["kind"] + (f" ({m['reason']})" if m["reason"] else "")
        ev.append(
            {
                "ph": "i",
                "s": "t",
                "cat": m["mark"],
                "name": name,
                "pid": pid,
                "tid": tid,
                "ts": m["t_us"],
                "args": {
                    "bootstrap_room": m["room"],
                    "rid": m["rid"],
                    "reason": m["reason"],
                    "severity": m["severity"],
                    "message": m["message"],
                    "ts_placed": m.get("ts_placed"),
                },
            }
        )

    for r in d["replies"]:
        if not r["corrupted"]:
            continue
        if r["host"] in pids:
            pid, tid = track(r["host"], r["rank"])
        else:
            pid, tid = agent()
        ev.append(
            {
                "ph": "i",
                "s": "t",
                "cat": "reply",
                "name": f"corrupted reply ({r['corruption_class']})",
                "pid": pid,
                "tid": tid,
                "ts": r["t0"],
                "args": {
                    "bootstrap_room": r["room"],
                    "class": r["corruption_class"],
                    "source": r["source"],
                    "session_id": r["session_id"],
                    "turn_id": r["turn_id"],
                    "signatures": ", ".join(r["signatures"] or []),
                    "evidence": r["evidence"],
                    "room_outcome": r["outcome"],
                    "reply_end": iso(r["t1"]),
                },
            }
        )

    # wedges and storms overlap each other and other kinds: async slices, never thread slices
    for w in d["wedges"]:
        if w["host"] not in pids:
            continue
        pid, tid = track(w["host"], w.get("dp_rank"))
        wid = f"{w['host']}/{w['kind']}/{w.get('dp_rank')}/{w['t0']}"
        ev.append(
            {
                "ph": "b",
                "cat": "wedge",
                "name": f"wedge: {w['kind']}",
                "id": wid,
                "pid": pid,
                "tid": tid,
                "ts": w["t0"],
                "args": {
                    k: w.get(k)
                    for k in (
                        "tp_rank",
                        "silent_s",
                        "typical_s",
                        "in_flight",
                        "pending_transfers",
                        "n_rooms",
                        "rooms",
                        "ended_by",
                        "signals",
                        "incident",
                        "incident_hosts",
                    )
                },
            }
        )
        ev.append(
            {"ph": "e", "cat": "wedge", "name": f"wedge: {w['kind']}", "id": wid, "pid": pid, "tid": tid, "ts": w["t1"]}
        )
    for s in d["storms"]:
        if s["host"] not in pids:
            continue
        pid, tid = track(s["host"], None)
        sid = f"{s['host']}/{s['t0']}"
        ev.append(
            {
                "ph": "b",
                "cat": "abort_storm",
                "name": "abort storm",
                "id": sid,
                "pid": pid,
                "tid": tid,
                "ts": s["t0"],
                "args": {
                    k: s.get(k)
                    for k in (
                        "aborts_on_host",
                        "n_aborts",
                        "host_aborts",
                        "host_counts",
                        "aborts_per_s",
                        "errors_after",
                        "corrupted_replies_after",
                        "agent_aborts",
                    )
                },
            }
        )
        ev.append(
            {"ph": "e", "cat": "abort_storm", "name": "abort storm", "id": sid, "pid": pid, "tid": tid, "ts": s["t1"]}
        )
    ev.sort(key=lambda e: e["ts"])
    return ev


class _Tracks:
    """Process and thread ids: tids are global in Perfetto's JSON importer (one tid in two pids
    reads as a reused thread), so each host gets its own tid range; the host-level thread is rank -1."""

    def __init__(self, hosts: list[dict]):
        self.pids = {h["name"]: i + 1 for i, h in enumerate(hosts)}
        self.threads: dict[tuple[int, int], str] = {}

    def __call__(self, host, rank) -> tuple[int, int]:
        pid = self.pids[host]
        tid = pid * 100_000 + (int(rank) + 1 if rank is not None else 0)
        self.threads[(pid, tid)] = f"rank {rank}" if rank is not None else "host"
        return pid, tid


def _counter_events(rows: Iterable[dict], track: _Tracks) -> Iterator[dict]:
    for s in rows:
        if s["host"] not in track.pids:
            continue
        pid, tid = track(s["host"], s["rank"])
        key = f"rank {s['rank']}" if s["rank"] is not None else "host"
        for name in _COUNTERS:
            if s[name] is not None:
                yield {"ph": "C", "name": name, "pid": pid, "tid": tid, "ts": s["t_us"], "args": {key: s[name]}}


def write(model: dict, d: dict, path: str, counters: Iterable[dict] = (), note: str | None = None) -> None:
    """Write the trace of `model`, its detail `d` (reports.detail.gather, plus the store's name) and
    the `counters` rows (`counter_rows`) to `path`, one event at a time."""
    track = _Tracks(d["hosts"])
    agent_pid = len(track.pids) + 1
    unlinked = []

    def agent() -> tuple[int, int]:
        unlinked.append(True)
        return agent_pid, agent_pid * 100_000

    other = _events(model, d, track, agent)
    stream = heapq.merge(_counter_events(counters, track), other, key=lambda e: e["ts"])
    other_data = {
        "source": "forensics timeline",
        "store": escape_control(d["store"]),
        "clock_offsets": describe_offsets(d["offsets"]),
        "clock_warnings": d["clock_warnings"],
        "bucket_s": model["bucket_s"],
        **({"note": note} if note else {}),
    }
    # ASCII-only JSON without < > &: no raw bidi or control character, and no markup, reaches
    # whatever shows the file (a viewer, a browser, a paste into an issue)
    dump = lambda o: json_in_html(json.dumps(o, ensure_ascii=True, allow_nan=False, separators=(",", ":")))  # noqa: E731
    t_first = None
    with open(path, "w", encoding="utf-8") as f:
        # Perfetto's tokenizer stops at the first key it does not know: only these three, this order
        f.write('{"displayTimeUnit":"ms","otherData":' + dump(other_data) + ',"traceEvents":[')
        sep = ""
        buf: list[str] = []
        for e in stream:
            if t_first is None:
                t_first = e["ts"]
            buf.append(sep + dump(e))
            sep = ","
            if len(buf) >= 4096:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
        # names last: the threads are known once every event is out (the importer reads them anywhere)
        t_meta = t_first if t_first is not None else (d["window"][0] or 0)
        meta = []
        for h in d["hosts"]:
            pid = track.pids[h["name"]]
            meta.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": pid,
                    "tid": pid * 100_000,
                    "ts": t_meta,
                    "args": {"name": f"{h['name']} ({h['role']})"},
                }
            )
            meta.append(
                {
                    "ph": "M",
                    "name": "process_sort_index",
                    "pid": pid,
                    "tid": pid * 100_000,
                    "ts": t_meta,
                    "args": {"sort_index": pid},
                }
            )
        if unlinked:
            meta.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": agent_pid,
                    "tid": agent_pid * 100_000,
                    "ts": t_meta,
                    "args": {"name": other_replies(model)},
                }
            )
            track.threads[(agent_pid, agent_pid * 100_000)] = "replies"
        for (pid, tid), name in sorted(track.threads.items()):
            meta.append(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": t_meta, "args": {"name": name}}
            )
            meta.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": pid,
                    "tid": tid,
                    "ts": t_meta,
                    "args": {"sort_index": tid},
                }
            )
        if meta:
            f.write(sep + ",".join(dump(m) for m in meta))
        f.write("]}")
