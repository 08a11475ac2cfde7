"""`forensics timeline` as files: interactive HTML, a static PNG/SVG chart, a Perfetto trace.

All three draw the result model of `forensics.timeline.build` plus the per-host detail the bucket
rows aggregate away (each host's load, each room's transfer, abort and failure lines, each reply),
read here from the store over the same window, host filter and clock offsets.

Text from logs and transcripts is hostile: every string is passed through `escape_control`
(ANSI, OSC 8, bidi overrides become visible escapes) before it is written, the HTML page carries its
data as JSON with `<`, `>` and `&` escaped, and its script renders text with textContent only.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
from pathlib import Path

import polars as pl

from forensics.analysis.clocks import describe_offsets
from forensics.catalog import connect
from forensics.catalog import named as queries
from forensics.catalog.sql import run_sql
from forensics.core.errors import UsageError
from forensics.ingest.store import Store
from forensics.reports.render import escape_control

FORMATS = ("html", "png", "svg", "perfetto")

CLASS_COLORS = {
    "clean": "#c3c7cc", "parse_leak": "#c2255c", "incoherent": "#e8590c", "empty": "#7048e8",
    "config": "#82a01e", "transfer_error": "#8d5a3c",
}
OUTCOME_COLORS = {
    "ok": "#4263eb", "aborted": "#f59f00", "transfer_failed": "#e03131", "waiting_timeout": "#9c36b5",
    "bootstrap_timeout": "#9c36b5", "unknown": "#868e96",
}
_ROLE_ORDER = {"prefill": 0, "unified": 1, "decode": 2}

# -- what the export reads besides the model -------------------------------------------------------
# The window is the model's buckets, so every file shows exactly what the bucket rows count.

_LOAD_SQL = """
-- per host, the aggregation queries/timeline.sql makes over all hosts: ranks first, then summed
WITH b AS (
    SELECT time_bucket(to_microseconds(CAST($bucket_s * 1e6 AS BIGINT)), ts) AS bucket_start, host, kind, dp_rank,
           queue_req, running_req, bootstrap_req, inflight_req, transfer_req, new_token, gen_throughput
    FROM batches
    WHERE ts >= CAST($t_lo AS TIMESTAMPTZ) AND ts < CAST($t_hi AS TIMESTAMPTZ)
      AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
),
per_rank AS (
    SELECT bucket_start, host, kind, dp_rank, avg(queue_req) AS queue_req, avg(running_req) AS running_req,
           avg(bootstrap_req) AS bootstrap_req, avg(inflight_req) AS inflight_req,
           avg(transfer_req) AS transfer_req, sum(new_token) AS new_token, avg(gen_throughput) AS gen_throughput
    FROM b GROUP BY ALL
)
SELECT host, kind AS role, epoch_us(bucket_start) AS t_us,
       round(sum(queue_req), 1) AS queue_req, round(sum(running_req), 1) AS running_req,
       round(sum(bootstrap_req), 1) AS bootstrap_req, round(sum(inflight_req), 1) AS inflight_req,
       round(sum(transfer_req), 1) AS transfer_req,
       round(CASE WHEN kind = 'prefill' THEN sum(new_token) / $bucket_s ELSE sum(gen_throughput) END, 1)
           AS throughput
FROM per_rank
GROUP BY host, kind, bucket_start
ORDER BY host, kind, bucket_start
"""

_ROOMS_SQL = """
-- each side's span of the room in the trace, over every event: a room aborted before its first
-- post still shows, as the aborts of the planted storm do
WITH te AS (
    SELECT bootstrap_room, side, min(host) AS host, min(engine_rank) AS rank, epoch_us(min(ts)) AS t0,
           epoch_us(max(ts)) AS t1
    FROM transfer_events
    WHERE bootstrap_room <> 0 AND NOT unknown_enum
    GROUP BY bootstrap_room, side
),
-- the units (trace, or `sending kvcache` debug lines when there is no trace): post to completion
units AS (
    SELECT bootstrap_room, min(host) AS host, min(engine_rank) AS rank, epoch_us(min(t_post)) AS t0,
           epoch_us(max(coalesce(t_done, t_post))) AS t1, count(*) AS units, CAST(sum(bytes) AS BIGINT) AS bytes,
           arg_min(error, t_post) FILTER (WHERE error IS NOT NULL) AS error
    FROM transfers
    WHERE side = 'prefill' AND t_post IS NOT NULL
    GROUP BY bootstrap_room
),
keys AS (SELECT bootstrap_room FROM te UNION SELECT bootstrap_room FROM units),
joined AS (
    SELECT k.bootstrap_room, coalesce(p.host, u.host) AS prefill_host, coalesce(p.rank, u.rank) AS prefill_rank,
           coalesce(least(p.t0, u.t0), p.t0, u.t0) AS t0, coalesce(greatest(p.t1, u.t1), p.t1, u.t1) AS t1,
           coalesce(u.units, 0) AS units, u.bytes, u.error,
           coalesce(d.host, r.decode_host) AS decode_host, coalesce(d.rank, r.decode_rank) AS decode_rank,
           d.t0 AS recv_t0, d.t1 AS recv_t1, coalesce(r.outcome, 'unknown') AS outcome, r.checksum_verdict
    FROM keys k
    LEFT JOIN te p ON p.bootstrap_room = k.bootstrap_room AND p.side = 'prefill'
    LEFT JOIN te d ON d.bootstrap_room = k.bootstrap_room AND d.side = 'decode'
    LEFT JOIN units u ON u.bootstrap_room = k.bootstrap_room
    LEFT JOIN rooms r ON r.bootstrap_room = k.bootstrap_room
)
SELECT CAST(bootstrap_room AS VARCHAR) AS room, * EXCLUDE (bootstrap_room)
FROM joined
WHERE coalesce(t0, recv_t0) >= epoch_us(CAST($t_lo AS TIMESTAMPTZ))
  AND coalesce(t0, recv_t0) < epoch_us(CAST($t_hi AS TIMESTAMPTZ))
  AND (CAST($host AS VARCHAR) IS NULL OR $host IN (prefill_host, decode_host))
ORDER BY coalesce(t0, recv_t0), room
"""

_MARKS_SQL = """
-- the lines drawn as marks; an abort is what abort_storm_intervals counts (an abort line or a
-- failure whose reason is an abort), so the marks and the storm bands agree
SELECT epoch_us(ts) AS t_us, host, coalesce(dp_rank, tp_rank, attn_cp_rank) AS rank,
       CASE WHEN kind = 'abort' OR reason = 'aborted' THEN 'abort'
            WHEN kind IN ('transfer_failed', 'bootstrap_failed') THEN 'failure'
            ELSE 'error' END AS mark,
       kind, reason, severity, CAST(bootstrap_room AS VARCHAR) AS room, rid, left(message, 300) AS message
FROM events
WHERE ts >= CAST($t_lo AS TIMESTAMPTZ) AND ts < CAST($t_hi AS TIMESTAMPTZ)
  AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
  AND (kind IN ('abort', 'transfer_failed', 'bootstrap_failed') OR reason = 'aborted'
       OR severity IN ('error', 'fatal'))
ORDER BY ts, host, source_file, line_no
"""

_REPLIES_SQL = """
-- every reply, placed on the decode host that served it (its room's, else the linked request's)
SELECT r.source, r.session_id, r.turn_id, epoch_us(r.t_start) AS t0, epoch_us(coalesce(r.t_end, r.t_start)) AS t1,
       r.corruption_class, coalesce(r.corrupted, false) AS corrupted, r.signatures, r.evidence, r.finish_reason,
       coalesce(rm.decode_host, r.server_host) AS host, rm.decode_rank AS rank,
       CAST(coalesce(r.server_bootstrap_room, r.bootstrap_room) AS VARCHAR) AS room, rm.outcome, r.link_method
FROM replies r
LEFT JOIN rooms rm ON rm.bootstrap_room = coalesce(r.server_bootstrap_room, r.bootstrap_room)
WHERE r.t_start >= CAST($t_lo AS TIMESTAMPTZ) AND r.t_start < CAST($t_hi AS TIMESTAMPTZ)
ORDER BY r.t_start, r.source, r.session_id, r.turn_id
"""

_ROLES_SQL = """
SELECT host, coalesce(min(role) FILTER (WHERE role NOT IN ('unknown')), 'unknown') AS role
FROM files WHERE host IS NOT NULL GROUP BY host ORDER BY host
"""

_STATS_SQL = """
-- raw stats lines for Perfetto counters: one sample per rank and line, no bucketing
SELECT epoch_us(ts) AS t_us, host, dp_rank AS rank, queue_req, running_req, bootstrap_req, inflight_req,
       transfer_req, gen_throughput, new_token
FROM batches
WHERE ts >= CAST($t_lo AS TIMESTAMPTZ) AND ts < CAST($t_hi AS TIMESTAMPTZ)
  AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
ORDER BY ts, host, source_file, line_no
"""


def write(model: dict, fmt: str, path: str, store: Store) -> None:
    """Write the timeline `model` as `fmt` (html, png, svg or perfetto) to `path`."""
    writers = {"html": write_html, "png": write_chart, "svg": write_chart, "perfetto": write_perfetto}
    if fmt not in writers:
        raise UsageError(f"no timeline export format {fmt!r}", help=f"use one of {', '.join(FORMATS)}")
    writers[fmt](model, path, store, fmt)


def gather(model: dict, store: Store, stats: bool = False) -> dict:
    """The per-host detail behind the model's buckets, as lists of plain rows with safe text."""
    lo, hi = _window(model)
    window = {"t_lo": lo, "t_hi": hi}
    filtered = {**window, "host": model["host"]}
    con = connect(store.require(), model["clock_offsets"], materialize=True)
    try:
        load = run_sql(store, _LOAD_SQL, {**filtered, "bucket_s": model["bucket_s"]}, con=con)
        rooms = run_sql(store, _ROOMS_SQL, filtered, con=con)
        marks = run_sql(store, _MARKS_SQL, filtered, con=con)
        replies = run_sql(store, _REPLIES_SQL, window, con=con)
        context = queries.run(store, "corrupted_context", con=con)
        roles = dict(run_sql(store, _ROLES_SQL, con=con).iter_rows())
        raw_stats = run_sql(store, _STATS_SQL, filtered, con=con) if stats else pl.DataFrame()
    finally:
        con.close()
    events = {(r["source"], r["session_id"], r["turn_id"]): r["events"] for r in context.iter_rows(named=True)}
    reply_rows = []
    for r in replies.iter_rows(named=True):
        near = events.get((r["source"], r["session_id"], r["turn_id"])) or []
        r["events"] = [{**e, "t_us": _us(e.pop("ts"))} for e in near]
        reply_rows.append(r)
    hosts = _hosts(model, load, rooms, marks, roles)
    return {
        "window": (_us(lo), _us(hi)),
        "hosts": hosts,
        "load": _safe(load.to_dicts()),
        "rooms": _safe(rooms.to_dicts()),
        "marks": _safe(marks.to_dicts()),
        "replies": _safe(reply_rows),
        "wedges": _safe([{**w, "t0": _us(w["t_start"]), "t1": _us(w["t_end"])} for w in model["wedges"].to_dicts()]),
        "storms": _safe([{**s, "t0": _us(s["t_start"]), "t1": _us(s["t_end"])}
                         for s in model["abort_storms"].to_dicts()]),
        "stats": _safe(raw_stats.to_dicts()),
        "offsets": dict(sorted(model["clock_offsets"].items())),
    }


def _window(model: dict) -> tuple[dt.datetime | None, dt.datetime | None]:
    rows = model["rows"]
    if rows.height == 0:
        return None, None
    return rows["bucket_start"].min(), rows["bucket_start"].max() + dt.timedelta(seconds=model["bucket_s"])


def _hosts(model, load, rooms, marks, roles) -> list[dict]:
    """Hosts with something to draw, prefill first (the order of the flow), then by name."""
    seen = set(load["host"].to_list()) | set(marks["host"].to_list())
    seen |= set(rooms["prefill_host"].drop_nulls().to_list()) | set(rooms["decode_host"].drop_nulls().to_list())
    seen |= set(model["wedges"]["host"].to_list()) | set(model["abort_storms"]["host"].to_list())
    if model["host"]:
        seen &= {model["host"]}
    role_of = dict(roles)
    for h, r in load.select("host", "role").unique().iter_rows():
        role_of.setdefault(h, r)
    out = [{"name": h, "role": role_of.get(h) or "unknown"} for h in seen if h is not None]
    return _safe(sorted(out, key=lambda h: (_ROLE_ORDER.get(h["role"], 3), h["name"])))


def _us(v) -> int | None:
    """A UTC datetime as integer microseconds since the epoch (exact, unlike float seconds)."""
    if v is None:
        return None
    if isinstance(v, int):
        return v
    if v.tzinfo is None:
        v = v.replace(tzinfo=dt.timezone.utc)
    return (v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


def _safe(v):
    """Escape control and bidi characters in every string; non-finite floats become None."""
    if isinstance(v, str):
        return escape_control(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_safe(x) for x in v]
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return v


def _other_replies(model: dict) -> str:
    """Where replies go that no drawn host served (--host keeps every reply, as the bucket rows do)."""
    return "replies on other hosts or without a server link" if model["host"] else "replies without a server link"


def _iso(us: int | None) -> str:
    if us is None:
        return "?"
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)).strftime(
        "%Y-%m-%d %H:%M:%S UTC")


# -- Perfetto ----------------------------------------------------------------------------------------

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
                            "room_outcome": r["outcome"], "reply_end": _iso(r["t1"])}})

    # wedges and storms overlap each other and other kinds: async slices, never thread slices
    for w in d["wedges"]:
        if w["host"] not in pids:
            continue
        pid, tid = track(w["host"], w.get("dp_rank"))
        wid = f"{w['host']}/{w['kind']}/{w.get('dp_rank')}/{w['t0']}"
        ev.append({"ph": "b", "cat": "wedge", "name": f"wedge: {w['kind']}", "id": wid, "pid": pid, "tid": tid,
                   "ts": w["t0"], "args": {k: w.get(k) for k in ("silent_s", "typical_s", "in_flight",
                                                                  "pending_transfers", "n_rooms", "rooms",
                                                                  "ended_by")}})
        ev.append({"ph": "e", "cat": "wedge", "name": f"wedge: {w['kind']}", "id": wid, "pid": pid, "tid": tid,
                   "ts": w["t1"]})
    for s in d["storms"]:
        if s["host"] not in pids:
            continue
        pid, tid = track(s["host"], None)
        sid = f"{s['host']}/{s['t0']}"
        ev.append({"ph": "b", "cat": "abort_storm", "name": "abort storm", "id": sid, "pid": pid, "tid": tid,
                   "ts": s["t0"], "args": {k: s.get(k) for k in ("n_aborts", "aborts_per_s", "errors_after",
                                                                  "corrupted_replies_after")}})
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
                     "ts": t_first, "args": {"name": _other_replies(model)}})
        threads[(agent_pid, agent_pid * 100_000)] = "replies"
    for (pid, tid), name in sorted(threads.items()):
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": t_first, "args": {"name": name}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "ts": t_first,
                     "args": {"sort_index": tid}})
    return {
        # Perfetto's tokenizer stops at the first key it does not know: only these three, this order
        "displayTimeUnit": "ms",
        "otherData": {"source": "forensics timeline", "store": escape_control(store_name),
                      "clock_offsets": describe_offsets(d["offsets"]), "bucket_s": model["bucket_s"]},
        "traceEvents": meta + ev,
    }


def write_perfetto(model: dict, path: str, store: Store, fmt: str = "perfetto") -> None:
    """Chrome JSON trace events for ui.perfetto.dev."""
    trace = perfetto_trace(model, gather(model, store, stats=True), str(store.root))
    # ASCII-only JSON without < > &: no raw bidi or control character, and no markup, reaches
    # whatever shows the file (a viewer, a browser, a paste into an issue)
    text = json.dumps(trace, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    Path(path).write_text(_no_markup(text), encoding="utf-8")


# -- static chart (PNG / SVG) -----------------------------------------------------------------------

def write_chart(model: dict, path: str, store: Store, fmt: str) -> None:
    """A 1600x900 chart for a GitHub issue: a panel per host, a panel of replies, wedge and storm bands."""
    import numpy as np
    from matplotlib import dates as mdates
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    d = gather(model, store)
    hosts = d["hosts"]
    bucket_us = int(model["bucket_s"] * 1e6)
    lo, hi = d["window"]
    if lo is None:
        lo, hi = 0, bucket_us
    n = -(-(hi - lo) // bucket_us)
    if n > 20_000:
        raise UsageError(f"{n} buckets of {model['bucket_s']:g} s are too many for a chart",
                         help="pass a larger --bucket, or narrow the window with --since / --until")
    fig = Figure(figsize=(16, 9), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(hosts) + 1, 1, sharex=True, squeeze=False)[:, 0]

    def x(us):
        return mdates.date2num(np.asarray(us, dtype="int64").astype("datetime64[us]"))

    edges = x(lo + bucket_us * np.arange(n + 1))
    centers = x(lo + bucket_us * np.arange(n) + bucket_us // 2)

    def per_bucket(times, values=None):
        """Counts (or the values, where given) on the bucket grid; NaN where nothing was seen."""
        k = (np.asarray(times, dtype="int64") - lo) // bucket_us
        keep = (k >= 0) & (k < n)
        if values is None:
            out = np.zeros(n)
            np.add.at(out, k[keep], 1)
            return out
        out = np.full(n, np.nan)
        out[k[keep]] = np.asarray([np.nan if v is None else v for v in values], dtype=float)[keep]
        return out

    # a 2 s storm on a 20 min chart would be a hairline: bands get a minimum visible width
    min_band = max((hi - lo) // 250, 1)

    def band(ax, item, color, label=None, height=1.0, label_at="t0"):
        t0, t1 = item["t0"], max(item["t1"], item["t0"] + min_band)
        ax.axvspan(x(t0), x(t1), color=color, alpha=0.18, lw=0, zorder=0)
        if label:
            ax.text(x(t0 if label_at == "t0" else t1), height, " " + label, transform=ax.get_xaxis_transform(),
                    va="top", ha="left", fontsize=8, color=color, zorder=5)

    for ax, h in zip(axes, hosts):
        load = [r for r in d["load"] if r["host"] == h["name"]]
        times = [r["t_us"] for r in load]
        series = [("queue_req", "#e8590c"), ("running_req", "#1c7ed6")]
        if h["role"] == "prefill":
            series += [("bootstrap_req", "#7048e8"), ("inflight_req", "#0ca678")]
        for name, color in series:
            # NaN in buckets without a stats line, so a silent host shows a gap, not a flat line
            y = per_bucket(times, [r[name] for r in load])
            if np.isfinite(y).any():
                ax.plot(centers, y, color=color, lw=1.3, label=name)
        ax.set_ylabel("requests")
        tw = ax.twinx()
        sent = [r["t0"] for r in d["rooms"] if r["prefill_host"] == h["name"] and r["t0"] is not None]
        got = [r["recv_t0"] for r in d["rooms"] if r["decode_host"] == h["name"] and r["recv_t0"] is not None]
        fails = [m["t_us"] for m in d["marks"] if m["host"] == h["name"] and m["mark"] == "failure"]
        aborts = [m["t_us"] for m in d["marks"] if m["host"] == h["name"] and m["mark"] == "abort"]
        for times, color, label, alpha in ((sent + got, "#adb5bd", "transfers", 0.6),
                                           (fails, "#e03131", "failures", 0.9), (aborts, "#f59f00", "aborts", 0.9)):
            if times:
                tw.stairs(per_bucket(times), edges, fill=True, color=color, alpha=alpha, label=f"{label} / bucket")
        tw.set_ylabel("per bucket")
        ax.set_zorder(tw.get_zorder() + 1)
        ax.patch.set_visible(False)
        for w in d["wedges"]:
            if w["host"] == h["name"]:
                band(ax, w, "#c92a2a", f"wedge ({w['kind']}, {w['silent_s']:.0f} s)")
        for s in d["storms"]:
            if s["host"] == h["name"]:
                band(ax, s, "#e67700", f"abort storm ({s['n_aborts']})", height=0.86, label_at="t1")
        ax.set_title(f"{h['name']} ({h['role']})", loc="left", fontsize=10, fontweight="bold")
        handles = ax.get_legend_handles_labels()[0] + tw.get_legend_handles_labels()[0]
        if handles:
            ax.legend(handles=handles, loc="upper right", fontsize=7, ncol=len(handles), framealpha=0.8)

    ax = axes[-1]
    rows = model["rows"]
    starts = [_us(v) for v in rows["bucket_start"].to_list()]
    bottom = np.zeros(n)
    for cls in ("clean", "parse_leak", "incoherent", "empty", "config", "transfer_error"):
        y = np.nan_to_num(per_bucket(starts, rows[f"replies_{cls}"].to_list()))
        if y.any():
            ax.stairs(bottom + y, edges, baseline=bottom.copy(), fill=True, color=CLASS_COLORS[cls],
                      label=cls.replace("_", " "))
            bottom += y
    for w in d["wedges"]:
        band(ax, w, "#c92a2a")
    for s in d["storms"]:
        band(ax, s, "#e67700")
    ax.set_title("replies by class (corrupted: parse leak, incoherent, empty)", loc="left", fontsize=10,
                 fontweight="bold")
    ax.set_ylabel("replies / bucket")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize=7, ncol=6, framealpha=0.8)
    ax.xaxis.set_major_locator(mdates.AutoDateLocator())
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.set_xlabel("UTC")
    ax.set_xlim(edges[0], edges[-1])
    fig.suptitle(f"forensics timeline — {escape_control(str(store.root))} — {describe_offsets(d['offsets'])} — "
                 f"{model['bucket_s']:g} s buckets", fontsize=11)
    # text stays text in the SVG (searchable, and the panel titles can be checked); no date, so
    # the same store gives the same file
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "forensics"}):
        fig.savefig(path, format=fmt, metadata={"Date": None} if fmt == "svg" else None)


# -- interactive HTML --------------------------------------------------------------------------------

def page_data(model: dict, d: dict, store_name: str) -> dict:
    """The JSON the page draws from; times in milliseconds since the epoch."""
    names = [h["name"] for h in d["hosts"]]
    index = {h: i for i, h in enumerate(names)}

    def ms(us):
        return None if us is None else us / 1000

    load = []
    for h in names:
        rows = [r for r in d["load"] if r["host"] == h]
        load.append({k: [r[c] for r in rows] for k, c in (("t", "t_us"), ("queue", "queue_req"),
                                                         ("running", "running_req"), ("throughput", "throughput"),
                                                         ("bootstrap", "bootstrap_req"))})
        load[-1]["t"] = [ms(v) for v in load[-1]["t"]]
    segments = []
    for r in d["rooms"]:
        if r["t0"] is not None and r["prefill_host"] in index:
            segments.append({"host": index[r["prefill_host"]], "t0": ms(r["t0"]), "t1": ms(r["t1"]),
                             "room": r["room"], "outcome": r["outcome"], "peer": r["decode_host"], "side": "sent"})
        if r["recv_t0"] is not None and r["decode_host"] in index:
            start = r["t0"] if r["t0"] is not None and r["t0"] <= r["recv_t0"] else r["recv_t0"]
            segments.append({"host": index[r["decode_host"]], "t0": ms(start), "t1": ms(r["recv_t1"]),
                             "room": r["room"], "outcome": r["outcome"], "peer": r["prefill_host"],
                             "side": "received"})
    return {
        "store": escape_control(store_name),
        "bucket_s": model["bucket_s"],
        "window": [ms(d["window"][0]), ms(d["window"][1])],
        "offsets": {escape_control(h): v for h, v in d["offsets"].items()},
        "hosts": [{**h, "load": load[i], "bucket_ms": model["bucket_s"] * 1000} for i, h in enumerate(d["hosts"])],
        "transfers": segments,
        "marks": [{"host": index[m["host"]], "t": ms(m["t_us"]), "mark": m["mark"], "kind": m["kind"],
                   "reason": m["reason"], "room": m["room"], "message": m["message"]}
                  for m in d["marks"] if m["host"] in index],
        "replies": [{"t0": ms(r["t0"]), "t1": ms(r["t1"]), "cls": r["corruption_class"], "corrupted": r["corrupted"],
                     "host": index.get(r["host"], -1), "host_name": r["host"], "rank": r["rank"], "room": r["room"],
                     "source": r["source"], "session": r["session_id"], "turn": r["turn_id"],
                     "signatures": r["signatures"] or [], "evidence": r["evidence"], "outcome": r["outcome"],
                     "finish_reason": r["finish_reason"], "link": r["link_method"],
                     "events": [{"t": ms(e["t_us"]), "host": e["host"], "kind": e["kind"], "reason": e["reason"],
                                 "message": e["message"]} for e in r["events"]]}
                    for r in d["replies"]],
        "wedges": [{"host": index[w["host"]], "t0": ms(w["t0"]), "t1": ms(w["t1"]), "kind": w["kind"],
                    "label": f"wedge: {w['kind']} {w['silent_s']:.0f} s, {w['n_rooms']} rooms, ended by "
                             f"{w['ended_by']}"}
                   for w in d["wedges"] if w["host"] in index],
        "storms": [{"host": index[s["host"]], "t0": ms(s["t0"]), "t1": ms(s["t1"]),
                    "label": f"abort storm: {s['n_aborts']} aborts ({s['aborts_per_s']}/s)"}
                   for s in d["storms"] if s["host"] in index],
        "other_replies": _other_replies(model),
        "class_colors": CLASS_COLORS,
        "outcome_colors": OUTCOME_COLORS,
    }


def _no_markup(json_text: str) -> str:
    """JSON text without `<`, `>`, `&` (they only occur inside strings, where \\u escapes mean the same)."""
    return (json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _script_json(obj) -> str:
    """JSON safe inside <script type="application/json">: no `<` can close the element."""
    return _no_markup(json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")))


def write_html(model: dict, path: str, store: Store, fmt: str = "html") -> None:
    """One self-contained, offline HTML file: zoomable lanes per host, click a reply for its evidence."""
    d = gather(model, store)
    data = page_data(model, d, str(store.root))
    n_corrupted = sum(1 for r in data["replies"] if r["corrupted"])
    lo, hi = d["window"]
    header = (f"{_iso(lo)} to {_iso(hi)} · {model['bucket_s']:g} s buckets · {len(data['replies'])} replies, "
              f"{n_corrupted} corrupted · {len(data['wedges'])} wedges · {len(data['storms'])} abort storms"
              + (f" · host {model['host']}" if model["host"] else ""))
    legend = "".join(f'<span class="sw" style="background:{c}"></span>{html.escape(k.replace("_", " "))} '
                     for k, c in CLASS_COLORS.items())
    outcomes = "".join(f'<span class="sw" style="background:{c}"></span>{html.escape(k.replace("_", " "))} '
                       for k, c in OUTCOME_COLORS.items() if k != "bootstrap_timeout")
    page = (_HTML
            .replace("%TITLE%", html.escape(f"forensics timeline — {escape_control(str(store.root))}"))
            .replace("%STORE%", html.escape(escape_control(str(store.root))))
            .replace("%OFFSETS%", html.escape(describe_offsets(d["offsets"])))
            .replace("%SUMMARY%", html.escape(escape_control(header)))
            .replace("%LEGEND%", legend)
            .replace("%OUTCOMES%", outcomes)
            .replace("%JS%", _JS)
            .replace("%DATA%", _script_json(data)))
    Path(path).write_text(page, encoding="utf-8")


_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>%TITLE%</title>
<style>
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #212529; background: #fff; }
header { padding: 10px 16px 6px; border-bottom: 1px solid #dee2e6; }
h1 { font-size: 17px; margin: 0 0 2px; }
.meta { color: #495057; }
.offsets { font-weight: 600; color: #862e9c; }
.toolbar { display: flex; gap: 6px; align-items: center; padding: 6px 16px; flex-wrap: wrap; }
.toolbar button { font: inherit; padding: 2px 10px; border: 1px solid #adb5bd; background: #f8f9fa; border-radius: 4px; cursor: pointer; }
.toolbar .range { margin-left: 8px; font-variant-numeric: tabular-nums; color: #343a40; }
.toolbar .hint { margin-left: auto; color: #868e96; }
.legend { padding: 0 16px 4px; color: #495057; }
.sw { display: inline-block; width: 10px; height: 10px; margin: 0 3px 0 8px; border-radius: 2px; vertical-align: -1px; }
#chart-wrap { padding: 0 8px; }
#chart { display: block; width: 100%; user-select: none; cursor: grab; }
#chart.dragging { cursor: grabbing; }
#chart text { font: 11px system-ui, sans-serif; fill: #343a40; }
#chart .host-label { font-weight: 700; font-size: 12px; }
#chart .lane-label { fill: #868e96; }
#chart .band-label { font-size: 10px; }
#chart .tick { stroke: #e9ecef; }
#chart [data-reply] { cursor: pointer; }
#chart .selected { stroke: #000; stroke-width: 2; }
#detail { margin: 8px 16px 24px; padding: 10px 12px; border: 1px solid #dee2e6; border-radius: 6px; background: #f8f9fa; }
#detail h2 { font-size: 15px; margin: 0 0 6px; }
#detail dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0 0 8px; }
#detail dt { color: #868e96; }
#detail dd { margin: 0; overflow-wrap: anywhere; }
#detail pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #fff; border: 1px solid #dee2e6; padding: 6px 8px; margin: 0 0 8px; }
#detail table { border-collapse: collapse; width: 100%; background: #fff; }
#detail td, #detail th { border: 1px solid #dee2e6; padding: 2px 6px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
</style>
</head>
<body>
<header>
<h1>forensics timeline</h1>
<div class="meta">store %STORE% · %SUMMARY%</div>
<div class="offsets" id="offsets">%OFFSETS%</div>
</header>
<div class="toolbar">
<button type="button" id="zoom-in" title="zoom in">+</button>
<button type="button" id="zoom-out" title="zoom out">&minus;</button>
<button type="button" id="pan-left" title="pan left">&larr;</button>
<button type="button" id="pan-right" title="pan right">&rarr;</button>
<button type="button" id="reset" title="show everything">reset</button>
<span class="range" id="range"></span>
<span class="hint">wheel: zoom · drag: pan · click a reply for its evidence</span>
</div>
<div class="legend">replies: %LEGEND% · transfers: %OUTCOMES%
· <span class="sw" style="background:#e03131"></span>failure line <span class="sw" style="background:#f59f00"></span>abort
· bands: <span class="sw" style="background:rgba(201,42,42,.25)"></span>wedge
<span class="sw" style="background:rgba(230,119,0,.35)"></span>abort storm</div>
<div id="chart-wrap"><svg id="chart" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="timeline"></svg></div>
<section id="detail" data-selected=""><h2>Click a reply</h2>
<div>Corrupted replies are the coloured bars in the replies lanes; their evidence and the server events around them
show here.</div></section>
<noscript>This timeline draws with JavaScript; `forensics timeline --format markdown` gives the same buckets as text.</noscript>
<script type="application/json" id="timeline-data">%DATA%</script>
<script>
%JS%
</script>
</body>
</html>
"""

_JS = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("timeline-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var LABEL_W = 150, PAD_R = 12, AXIS_H = 24, HEAD_H = 18, GAP = 10;
  var LANES = [["load", 70], ["transfers", 46], ["replies", 54]];
  var TRANSFER_ROWS = 6, REPLY_ROWS = 9, MIN_SPAN = 500;
  var svg = document.getElementById("chart");
  var full = {t0: D.window[0], t1: D.window[1]};
  if (full.t0 === null) { full = {t0: 0, t1: 1}; }
  var view = {t0: full.t0, t1: full.t1};
  var selected = null, drag = null, dragMoved = false, pending = false;

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { if (attrs[k] !== undefined && attrs[k] !== null) { e.setAttribute(k, attrs[k]); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function label(parent, x, y, s, cls, color) {
    var t = el("text", {x: x, y: y, "class": cls, fill: color}, parent);
    t.textContent = s;
    return t;
  }
  function tip(parent, s) { el("title", {}, parent).textContent = s; }
  function fmtTime(ms, withMs) {
    var s = new Date(ms).toISOString();
    return withMs ? s.slice(11, 23) : s.slice(11, 19);
  }
  function fmtSpan(ms) {
    var s = ms / 1000;
    if (s < 60) { return s.toFixed(s < 10 ? 2 : 1) + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + "m" + Math.round(s % 60) + "s"; }
    return (s / 3600).toFixed(2) + " h";
  }
  function fmtNum(v) { return v >= 1000 ? (v / 1000).toFixed(1) + "k" : String(Math.round(v * 10) / 10); }

  // rows fixed once from the data, so zooming never reshuffles what is where
  function pack(items, rows) {
    var ends = [];
    items.forEach(function (it) {
      var r = -1;
      for (var i = 0; i < ends.length; i++) { if (ends[i] <= it.t0) { r = i; break; } }
      if (r < 0 && ends.length < rows) { r = ends.length; ends.push(0); }
      if (r < 0) { r = ends.indexOf(Math.min.apply(null, ends)); }
      ends[r] = Math.max(ends[r], it.t1);
      it.row = r;
    });
  }
  var groups = D.hosts.map(function (h, i) {
    return {name: h.name, role: h.role, host: h, index: i, transfers: [], marks: [], replies: [], wedges: [],
            storms: []};
  });
  var unlinked = {name: D.other_replies, role: "", host: null, index: -1, transfers: [], marks: [],
                  replies: [], wedges: [], storms: []};
  D.transfers.forEach(function (t) { groups[t.host].transfers.push(t); });
  D.marks.forEach(function (m) { groups[m.host].marks.push(m); });
  D.wedges.forEach(function (w) { groups[w.host].wedges.push(w); });
  D.storms.forEach(function (s) { groups[s.host].storms.push(s); });
  D.replies.forEach(function (r, i) {
    r.index = i;
    (r.host >= 0 ? groups[r.host] : unlinked).replies.push(r);
  });
  if (unlinked.replies.length) { groups.push(unlinked); }
  groups.forEach(function (g) {
    pack(g.transfers, TRANSFER_ROWS);
    pack(g.replies, REPLY_ROWS);
    var L = g.host ? g.host.load : null;
    g.maxReq = 1; g.maxThr = 1;
    if (L) {
      L.t.forEach(function (_, i) {
        g.maxReq = Math.max(g.maxReq, L.queue[i] || 0, L.running[i] || 0, L.bootstrap[i] || 0);
        g.maxThr = Math.max(g.maxThr, L.throughput[i] || 0);
      });
    }
    // a host that served no reply (a prefill host) has no replies lane
    g.lanes = g.host ? LANES.filter(function (l) { return l[0] !== "replies" || g.replies.length; }) : [LANES[2]];
  });

  function render() {
    pending = false;
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var width = Math.max(600, svg.clientWidth || 1200), plotW = width - LABEL_W - PAD_R;
    var span = view.t1 - view.t0;
    function x(t) { return LABEL_W + (t - view.t0) / span * plotW; }
    function visible(t0, t1) { return t1 >= view.t0 && t0 <= view.t1; }
    var height = AXIS_H;
    groups.forEach(function (g) {
      g.y = height;
      height += HEAD_H + g.lanes.reduce(function (a, l) { return a + l[1]; }, 0) + GAP;
    });
    svg.setAttribute("height", height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    var defs = el("defs", {}, svg);
    var clip = el("clipPath", {id: "plot-clip"}, defs);
    el("rect", {x: LABEL_W, y: 0, width: plotW, height: height}, clip);

    // axis: a round step giving about ten ticks
    var steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5,
                 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];
    var step = steps.find(function (s) { return span / s <= 12; }) || 864e5;
    var axis = el("g", {"data-axis": "time"}, svg);
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      el("line", {x1: x(t), x2: x(t), y1: AXIS_H - 6, y2: height, "class": "tick"}, axis);
      label(axis, x(t) + 2, AXIS_H - 9, fmtTime(t, step < 1000));
    }
    label(axis, 4, AXIS_H - 9, "UTC", "lane-label");

    groups.forEach(function (g) {
      var gh = HEAD_H + g.lanes.reduce(function (a, l) { return a + l[1]; }, 0);
      var G = el("g", {"data-lane": g.host ? "host" : "unlinked", "data-host": g.host ? g.name : null,
                       "data-role": g.role}, svg);
      el("rect", {x: 0, y: g.y, width: width, height: gh, fill: g.index % 2 ? "#fcfcfd" : "#f6f7f9"}, G);
      label(G, 6, g.y + 13, g.name + (g.role ? " (" + g.role + ")" : ""), "host-label");
      var P = el("g", {"clip-path": "url(#plot-clip)"}, G);
      g.wedges.forEach(function (w) {
        if (!visible(w.t0, w.t1)) { return; }
        var r = el("rect", {x: x(w.t0), y: g.y, width: Math.max(3, x(w.t1) - x(w.t0)), height: gh,
                            fill: "rgba(201,42,42,.16)", stroke: "#c92a2a", "stroke-dasharray": "4 3",
                            "data-band": "wedge", "data-host": g.name}, P);
        tip(r, w.label);
        label(P, Math.max(x(w.t0), LABEL_W) + 3, g.y + 13, w.label, "band-label", "#c92a2a");
      });
      g.storms.forEach(function (s) {
        if (!visible(s.t0, s.t1)) { return; }
        var r = el("rect", {x: x(s.t0) - 1, y: g.y, width: Math.max(4, x(s.t1) - x(s.t0) + 2), height: gh,
                            fill: "rgba(230,119,0,.32)", "data-band": "abort-storm", "data-host": g.name}, P);
        tip(r, s.label);
        label(P, x(s.t1) + 4, g.y + 26, s.label, "band-label", "#d9480f");
      });
      var y = g.y + HEAD_H;
      g.lanes.forEach(function (lane) {
        var name = lane[0], h = lane[1];
        var L = el("g", {"data-lane": name, "data-host": g.name}, G);
        el("line", {x1: LABEL_W, x2: width - PAD_R, y1: y + h, y2: y + h, stroke: "#e9ecef"}, L);
        label(L, 14, y + h / 2 + 4, name, "lane-label");
        var C = el("g", {"clip-path": "url(#plot-clip)"}, L);
        if (name === "load") { drawLoad(C, g, y, h, x); }
        if (name === "transfers") { drawTransfers(C, g, y, h, x, visible); }
        if (name === "replies") { drawReplies(C, g, y, h, x, visible); }
        y += h;
      });
    });
    document.getElementById("range").textContent =
      fmtTime(view.t0, span < 60000) + " – " + fmtTime(view.t1, span < 60000) + " UTC (" + fmtSpan(span) + ")";
  }

  function drawLoad(C, g, y, h, x) {
    var L = g.host.load, bucket = g.host.bucket_ms;
    function line(values, max, color, dash, title) {
      var d = "", prev = null;
      for (var i = 0; i < L.t.length; i++) {
        var v = values[i];
        if (v === null || v === undefined) { prev = null; continue; }
        var t = L.t[i] + bucket / 2;
        // a missing bucket is silence (a wedge shows as a gap), never a straight line across it
        var jump = prev === null || t - prev > bucket * 1.5;
        d += (jump ? "M" : "L") + x(t).toFixed(1) + " " + (y + h - 3 - v / max * (h - 8)).toFixed(1);
        prev = t;
      }
      if (d) { tip(el("path", {d: d, fill: "none", stroke: color, "stroke-width": 1.4, "stroke-dasharray": dash,
                               "data-series": title}, C), title); }
    }
    line(L.throughput, g.maxThr, "#2f9e44", "3 2", "throughput (tok/s), max " + fmtNum(g.maxThr));
    if (g.role === "prefill") { line(L.bootstrap, g.maxReq, "#7048e8", null, "bootstrap_req"); }
    line(L.queue, g.maxReq, "#e8590c", null, "queue_req");
    line(L.running, g.maxReq, "#1c7ed6", null, "running_req");
    label(C, LABEL_W + 4, y + 10, "queue / running max " + fmtNum(g.maxReq) + " · throughput max " +
          fmtNum(g.maxThr) + " tok/s", "lane-label");
  }

  function drawTransfers(C, g, y, h, x, visible) {
    var rowH = (h - 6) / TRANSFER_ROWS;
    g.transfers.forEach(function (t) {
      if (!visible(t.t0, t.t1)) { return; }
      var r = el("rect", {x: x(t.t0), y: y + 3 + t.row * rowH, width: Math.max(1.5, x(t.t1) - x(t.t0)),
                          height: Math.max(1, rowH - 1), fill: D.outcome_colors[t.outcome] || "#868e96",
                          "data-room": t.room, "data-outcome": t.outcome}, C);
      var peer = t.peer ? (t.side === "sent" ? " to " : " from ") + t.peer : "";
      tip(r, "room " + t.room + " · " + t.outcome + " · " + t.side + peer + " · " + fmtTime(t.t0, true) +
          " (" + fmtSpan(t.t1 - t.t0) + ")");
    });
    g.marks.forEach(function (m) {
      if (!visible(m.t, m.t)) { return; }
      var color = m.mark === "abort" ? "#f59f00" : (m.mark === "failure" ? "#e03131" : "#495057");
      var r = el("rect", {x: x(m.t) - 0.75, y: y + 1, width: 1.5, height: h - 2, fill: color, "data-mark": m.mark}, C);
      tip(r, fmtTime(m.t, true) + " " + m.kind + (m.reason ? " (" + m.reason + ")" : "") +
          (m.room ? " room " + m.room : "") + "\n" + (m.message || ""));
    });
  }

  function drawReplies(C, g, y, h, x, visible) {
    var rowH = (h - 4) / REPLY_ROWS;
    // clean first, so corrupted replies are drawn on top and stay clickable
    var order = g.replies.filter(function (r) { return !r.corrupted; })
      .concat(g.replies.filter(function (r) { return r.corrupted; }));
    order.forEach(function (r) {
      if (!visible(r.t0, r.t1)) { return; }
      var e = el("rect", {x: x(r.t0), y: y + 2 + r.row * rowH,
                          width: Math.max(r.corrupted ? 4 : 1.5, x(r.t1) - x(r.t0)),
                          height: Math.max(1, rowH - 1), fill: D.class_colors[r.cls] || "#868e96",
                          "data-reply": r.index, "data-class": r.cls, "data-corrupted": r.corrupted ? "true" : "false",
                          "class": r.index === selected ? "selected" : null}, C);
      tip(e, r.cls + " · " + fmtTime(r.t0, true) + " · " + r.source + " " + r.turn);
    });
  }

  function schedule() { if (!pending) { pending = true; requestAnimationFrame(render); } }
  function clampView() {
    var span = Math.min(Math.max(view.t1 - view.t0, MIN_SPAN), (full.t1 - full.t0) * 1.02 + MIN_SPAN);
    var t0 = Math.min(Math.max(view.t0, full.t0 - span * 0.01), full.t1 - span * 0.02);
    view.t0 = t0; view.t1 = t0 + span;
  }
  function zoom(factor, at) {
    var span = view.t1 - view.t0;
    at = at === undefined ? view.t0 + span / 2 : at;
    var ns = span * factor;
    view.t0 = at - (at - view.t0) * ns / span; view.t1 = view.t0 + ns;
    clampView(); schedule();
  }
  function pan(frac) { var s = view.t1 - view.t0; view.t0 += s * frac; view.t1 += s * frac; clampView(); schedule(); }
  function timeAt(clientX) {
    var rect = svg.getBoundingClientRect(), plotW = rect.width - LABEL_W - PAD_R;
    return view.t0 + (clientX - rect.left - LABEL_W) / plotW * (view.t1 - view.t0);
  }

  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    zoom(Math.exp(e.deltaY * 0.0015), timeAt(e.clientX));
  }, {passive: false});
  svg.addEventListener("pointerdown", function (e) {
    drag = {x: e.clientX, t0: view.t0, t1: view.t1}; dragMoved = false;
  });
  window.addEventListener("pointermove", function (e) {
    if (!drag) { return; }
    var dx = e.clientX - drag.x;
    if (Math.abs(dx) > 3) { dragMoved = true; svg.classList.add("dragging"); }
    if (!dragMoved) { return; }
    var rect = svg.getBoundingClientRect(), per = (drag.t1 - drag.t0) / (rect.width - LABEL_W - PAD_R);
    view.t0 = drag.t0 - dx * per; view.t1 = drag.t1 - dx * per;
    clampView(); schedule();
  });
  window.addEventListener("pointerup", function () { drag = null; svg.classList.remove("dragging"); });
  svg.addEventListener("click", function (e) {
    if (dragMoved) { return; }
    var target = e.target.closest ? e.target.closest("[data-reply]") : null;
    if (target) { select(parseInt(target.getAttribute("data-reply"), 10), true); }
  });
  document.getElementById("zoom-in").addEventListener("click", function () { zoom(0.5); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom(2); });
  document.getElementById("pan-left").addEventListener("click", function () { pan(-0.25); });
  document.getElementById("pan-right").addEventListener("click", function () { pan(0.25); });
  document.getElementById("reset").addEventListener("click", function () {
    view = {t0: full.t0, t1: full.t1}; schedule();
  });
  window.addEventListener("resize", schedule);

  function row(dl, k, v) {
    if (v === null || v === undefined || v === "") { return; }
    el2("dt", dl).textContent = k;
    el2("dd", dl).textContent = String(v);
  }
  function el2(tag, parent, attrs) {
    var e = document.createElement(tag);
    for (var k in (attrs || {})) { e.setAttribute(k, attrs[k]); }
    parent.appendChild(e);
    return e;
  }
  function select(i, fromClick) {
    var r = D.replies[i];
    if (!r) { return; }
    selected = i;
    var box = document.getElementById("detail");
    while (box.firstChild) { box.removeChild(box.firstChild); }
    box.setAttribute("data-selected", String(i));
    box.setAttribute("data-class", r.cls);
    el2("h2", box).textContent = (r.corrupted ? "Corrupted reply: " : "Reply: ") + r.cls.replace(/_/g, " ");
    var dl = el2("dl", box);
    row(dl, "started", new Date(r.t0).toISOString());
    row(dl, "ended", new Date(r.t1).toISOString() + " (" + fmtSpan(r.t1 - r.t0) + ")");
    row(dl, "decode host", r.host_name ? r.host_name + (r.rank !== null ? " rank " + r.rank : "")
                                       : "not linked to a server request");
    row(dl, "bootstrap room", r.room);
    row(dl, "room outcome", r.outcome);
    row(dl, "transcript", r.source + " · session " + r.session + " · turn " + r.turn);
    row(dl, "finish reason", r.finish_reason);
    row(dl, "signatures", r.signatures.join(", "));
    row(dl, "linked by", r.link);
    el2("h3", box).textContent = "Evidence";
    el2("pre", box, {"data-evidence": ""}).textContent = r.evidence || "(no signature fired)";
    el2("h3", box).textContent = "Server warnings and errors around it (its decode host and room)";
    if (!r.events.length) {
      el2("div", box).textContent = r.corrupted ? "none within 30 s before and 5 s after"
                                                : "shown for corrupted replies only";
    } else {
      var table = el2("table", box, {"data-events": String(r.events.length)});
      var head = el2("tr", table);
      ["time (UTC)", "host", "kind", "reason", "message"].forEach(function (s) { el2("th", head).textContent = s; });
      r.events.forEach(function (ev) {
        var tr = el2("tr", table);
        [fmtTime(ev.t, true), ev.host, ev.kind, ev.reason || "", ev.message || ""].forEach(function (s) {
          el2("td", tr).textContent = s;
        });
      });
    }
    if (fromClick && history.replaceState) { history.replaceState(null, "", "#select=" + i); }
    if (r.t1 < view.t0 || r.t0 > view.t1) {
      var span = view.t1 - view.t0;
      view.t0 = (r.t0 + r.t1) / 2 - span / 2; view.t1 = view.t0 + span; clampView();
    }
    render();
  }
  // #view=<t0>,<t1> (ms since the epoch) and #select=<reply index> make a view shareable as a link
  function fromHash() {
    var v = /view=(\d+(?:\.\d+)?),(\d+(?:\.\d+)?)/.exec(location.hash);
    if (v) { view = {t0: parseFloat(v[1]), t1: parseFloat(v[2])}; clampView(); render(); }
    var m = /select=(\d+)/.exec(location.hash);
    if (m) { select(parseInt(m[1], 10), false); }
  }
  window.addEventListener("hashchange", fromHash);
  render();
  fromHash();
  document.body.setAttribute("data-rendered", String(groups.length));
})();
"""
