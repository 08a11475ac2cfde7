"""The detail behind the timeline's buckets, shared by the HTML, chart and Perfetto exports.

Each host's load, each room's transfer, the abort, failure and error lines and each reply, read
from the store (named queries host_load, room_spans, event_marks, reply_hosts, host_roles,
corrupted_context) over the model's window, host filter and clock offsets. Text from logs and
transcripts is hostile: every string passes through `escape_control` (ANSI, OSC 8, bidi overrides
become visible escapes) before any export writes it.
"""

from __future__ import annotations

import datetime as dt
import math

import polars as pl

from forensics.catalog import connect
from forensics.catalog import named as queries
from forensics.ingest.store import Store
from forensics.reports.escape import escape_control

CLASS_COLORS = {
    "clean": "#c3c7cc", "parse_leak": "#c2255c", "incoherent": "#e8590c", "empty": "#7048e8",
    "config": "#82a01e", "transfer_error": "#8d5a3c",
}
OUTCOME_COLORS = {
    "ok": "#4263eb", "aborted": "#f59f00", "transfer_failed": "#e03131", "waiting_timeout": "#9c36b5",
    "bootstrap_timeout": "#9c36b5", "unknown": "#868e96",
}
_ROLE_ORDER = {"prefill": 0, "unified": 1, "decode": 2}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def gather(model: dict, store: Store) -> dict:
    """The per-host detail behind the model's buckets, as lists of plain rows with safe text."""
    lo, hi = _window(model)
    # the window is the model's buckets, so every file shows exactly what the bucket rows count; a
    # model without buckets draws nothing (an empty window: a NULL bound would mean the whole store)
    window = {"since": lo, "before": hi} if lo is not None else {"since": _EPOCH, "before": _EPOCH}
    filtered = {**window, "host": model["host"]}
    con = connect(store.require(), model["clock_offsets"], materialize=True)
    try:
        load = queries.run(store, "host_load", {**filtered, "bucket_s": model["bucket_s"]}, con=con)
        rooms = queries.run(store, "room_spans", filtered, con=con)
        marks = queries.run(store, "event_marks", filtered, con=con)
        replies = queries.run(store, "reply_hosts", window, con=con)
        context = queries.run(store, "corrupted_context", con=con)
        roles = dict(queries.run(store, "host_roles", con=con).iter_rows())
    finally:
        con.close()
    events = {(r["source"], r["session_id"], r["turn_id"]): r["events"] for r in context.iter_rows(named=True)}
    reply_rows = []
    for r in replies.iter_rows(named=True):
        near = events.get((r["source"], r["session_id"], r["turn_id"])) or []
        r["events"] = [{**e, "t_us": us(e.pop("ts"))} for e in near]
        reply_rows.append(r)
    hosts = _hosts(model, load, rooms, marks, roles)
    return {
        "window": (us(lo), us(hi)),
        "hosts": hosts,
        "load": safe(load.to_dicts()),
        "rooms": safe(rooms.to_dicts()),
        "marks": safe(marks.to_dicts()),
        "replies": safe(reply_rows),
        "wedges": safe([{**w, "t0": us(w["t_start"]), "t1": us(w["t_end"])} for w in model["wedges"].to_dicts()]),
        "storms": safe(storm_bands(model["abort_storms"])),
        "offsets": dict(sorted(model["clock_offsets"].items())),
        "clock_warnings": safe(model.get("clock_warnings", [])),
    }


def storm_bands(storms: pl.DataFrame) -> list[dict]:
    """One band per host of each storm, over that host's share of it; the storm's totals ride along."""
    out = []
    for s in storms.to_dicts():
        for h in s.pop("per_host") or []:
            out.append({**s, "host": h["host"], "aborts_on_host": h["n_aborts"], "t0": us(h["t_start"]),
                        "t1": us(h["t_end"]), "storm_t0": us(s["t_start"]), "storm_t1": us(s["t_end"])})
    return out


def _window(model: dict) -> tuple[dt.datetime | None, dt.datetime | None]:
    rows = model["rows"]
    if rows.height == 0:
        return None, None
    return rows["bucket_start"].min(), rows["bucket_start"].max() + dt.timedelta(seconds=model["bucket_s"])


def _hosts(model, load, rooms, marks, roles) -> list[dict]:
    """Hosts with something to draw, prefill first (the order of the flow), then by name."""
    seen = set(load["host"].to_list()) | set(marks["host"].to_list())
    seen |= set(rooms["prefill_host"].drop_nulls().to_list()) | set(rooms["decode_host"].drop_nulls().to_list())
    seen |= set(model["wedges"]["host"].to_list()) | {h for hs in model["abort_storms"]["hosts"].to_list() for h in hs}
    if model["host"]:
        seen &= {model["host"]}
    role_of = dict(roles)
    for h, r in load.select("host", "role").unique().iter_rows():
        role_of.setdefault(h, r)
    out = [{"name": h, "role": role_of.get(h) or "unknown"} for h in seen if h is not None]
    return safe(sorted(out, key=lambda h: (_ROLE_ORDER.get(h["role"], 3), h["name"])))


def us(v) -> int | None:
    """A UTC datetime as integer microseconds since the epoch (exact, unlike float seconds)."""
    if v is None:
        return None
    if isinstance(v, int):
        return v
    if v.tzinfo is None:
        v = v.replace(tzinfo=dt.timezone.utc)
    return (v - _EPOCH) // dt.timedelta(microseconds=1)


def safe(v):
    """Escape control and bidi characters in every string; non-finite floats become None."""
    if isinstance(v, str):
        return escape_control(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [safe(x) for x in v]
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return v


def other_replies(model: dict) -> str:
    """Where replies go that no drawn host served (--host keeps every reply, as the bucket rows do)."""
    return "replies on other hosts or without a server link" if model["host"] else "replies without a server link"


def iso(t_us: int | None) -> str:
    """Microseconds since the epoch as a UTC time to the second."""
    if t_us is None:
        return "?"
    return (_EPOCH + dt.timedelta(microseconds=t_us)).strftime("%Y-%m-%d %H:%M:%S UTC")
