"""The detail behind the timeline's buckets, for the HTML, chart and Perfetto exports (`export`).

Each host's load, each room's transfer, the abort, failure and error lines and each reply, read
from the store (named queries host_load, room_spans, event_marks, reply_hosts, host_roles,
corrupted_context) over the model's window, host filter and clock offsets; for a Perfetto trace,
the window that fits its budget (`fit`) and the counters, streamed from the store as the file is
written (`counter_rows`). Text from logs and transcripts is hostile: every string passes through
`escape_control` (ANSI, OSC 8, bidi overrides become visible escapes) before any export writes it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterator

import polars as pl

from forensics.analysis.models import Counters, Export, Timeline
from forensics.analysis.session import Session
from forensics.catalog import named as queries
from forensics.core.text import escape_control

_ROLE_ORDER = {"prefill": 0, "unified": 1, "decode": 2}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


# A page draws each room, line mark and reply as an element of its own: a browser keeps up with a
# few ten thousand, and a 2 M-room window would also be gigabytes of rows here. Past these, the page
# draws every bucket's counts and, one by one, the rows a reader looks at (rooms that failed or
# whose checksums differ, then the slowest; failures, then aborts, then errors; corrupted replies
# first), spread over the window, and says what it left out.
# what each export draws: `rows` the rooms, marks and replies one by one ("capped" by the limits
# above, "all", or "none": the counts per bucket only), `context` the server lines around each
# corrupted reply, `clean` the replies that are not corrupted
PLANS = {
    "html": {"rows": "capped", "context": True, "clean": True},
    "perfetto": {"rows": "all", "context": False, "clean": False},
    "png": {"rows": "none", "context": False, "clean": False},
    "svg": {"rows": "none", "context": False, "clean": False},
}


def gather(session: Session, model: Timeline, fmt: str = "html") -> dict:
    """The per-host detail behind the model's buckets for the export `fmt` (see PLANS), with safe text.

    Counts per bucket come from DuckDB (`counts`: each host's rooms sent and received, its line
    marks, its replies, by bucket index); rows are pulled into Python only as far as the plan says,
    and a cut says so in `notes`.
    """
    plan = PLANS[fmt]
    lo, hi = _window(model)
    # the window is the model's buckets, so every file shows exactly what the bucket rows count; a
    # model without buckets draws nothing (an empty window: a NULL bound would mean the whole store)
    window = {"since": lo, "before": hi} if lo is not None else {"since": _EPOCH, "before": _EPOCH}
    filtered = {**window, "host": model["host"]}
    grid = {"lo_us": us(window["since"]), "bucket_us": int(model["bucket_s"] * 1e6)}
    limit = plan["rows"] == "capped"
    limits = session.limits
    store, con = session.store, session.con
    load = _load(store, con, {**filtered, "bucket_s": model["bucket_s"]})
    if plan["rows"] == "all":
        rooms = micros(queries.run(store, "room_spans", filtered, con=con))
        marks = micros(queries.run(store, "event_marks", filtered, con=con))
        # the rows name the hosts, as the counts would
        room_counts, mark_counts = rooms, marks
    else:
        room_counts = _run(store, con, "_room_counts", filtered, grid)
        mark_counts = _run(store, con, "_mark_counts", filtered, grid)
    n_rooms = int(room_counts["n"].sum() or 0) if limit else 0
    n_marks = int(mark_counts["n"].sum() or 0) if limit else 0
    cut_rooms = limit and n_rooms > limits.rooms
    cut_marks = limit and n_marks > limits.marks
    if plan["rows"] == "none":
        rooms = marks = pl.DataFrame()
    elif limit:
        rooms = (
            _run(store, con, "_room_pick", filtered, {**grid, "cap": limits.rooms})
            if cut_rooms
            else micros(queries.run(store, "room_spans", filtered, con=con))
        )
        marks = (
            _run(store, con, "_mark_pick", filtered, {**grid, "cap": limits.marks})
            if cut_marks
            else micros(queries.run(store, "event_marks", filtered, con=con))
        )
    reply_counts = pl.DataFrame()
    cut_replies = False
    replies = []
    if plan["rows"] != "none":
        if limit:
            reply_counts = _run(store, con, "_reply_counts", window, grid)
            cut_replies = int(reply_counts["n"].sum() or 0) > limits.replies
        replies = _replies(session, con, window, grid, plan, limits.replies if cut_replies else None)
    roles = dict(queries.run(store, "host_roles", con=con).iter_rows())
    failed = queries.run_internal(store, "_failed_requests_window", {**filtered, "cap": limits.marks}, con=con)
    crashes = queries.run_internal(store, "_crash_marks", filtered, con=con)
    hosts = _hosts(model, load, room_counts, mark_counts, roles)
    # counts go where the rows are not all drawn: a chart draws counts only, a cut page both
    counts, notes = {}, []
    if plan["rows"] == "none" or cut_rooms:
        counts["rooms"] = _room_counts(room_counts)
    if plan["rows"] == "none" or cut_marks:
        counts["marks"] = _by_bucket(mark_counts, "mark")
    if cut_replies:
        counts["replies"] = _by_bucket(reply_counts.drop("corrupted"), "cls")
    if cut_rooms:
        notes.append(
            _cut_note(
                f"{rooms.height:,} of the window's {n_rooms:,} rooms",
                "failed or with differing checksums first, then the slowest",
                "the transfer lanes count every room per bucket",
                model,
            )
        )
    if cut_marks:
        notes.append(
            _cut_note(
                f"{marks.height:,} of the window's {n_marks:,} failure, abort and error lines",
                "failures first, then aborts, then errors",
                "the transfer lanes count every line per bucket",
                model,
            )
        )
    if cut_replies:
        notes.append(
            _cut_note(
                f"{len(replies):,} of the window's {int(reply_counts['n'].sum()):,} replies",
                "corrupted ones first",
                "the reply lanes count every reply per bucket",
                model,
            )
        )
    return {
        "window": (us(lo), us(hi)),
        "hosts": hosts,
        "load": safe(load),
        "rooms": safe(rooms.to_dicts()),
        "marks": safe(marks.to_dicts()),
        "replies": safe(replies),
        "counts": safe(counts),
        # one entry per failed request, at its first failure, for each host that logged it
        "failed_requests": safe([{**r, "t_us": us(r.pop("t_first"))} for r in failed.to_dicts()]),
        "wedges": safe([{**w, "t0": us(w["t_start"]), "t1": us(w["t_end"])} for w in model["wedges"].to_dicts()]),
        "crashes": safe([{**c, "t_us": us(c.pop("ts"))} for c in crashes.to_dicts()]),
        "storms": safe(storm_bands(model["abort_storms"])),
        "offsets": dict(sorted(model["clock_offsets"].items())),
        # the coverage first (its lead when counts are lower bounds): the page and chart say it at the top
        "clock_warnings": safe([*_coverage(model), *model.get("clock_warnings", [])]),
        "notes": safe(notes),
        # the window's replies, drawn or not
        "n_replies": (int(reply_counts["n"].sum()), int(reply_counts.filter("corrupted")["n"].sum()))
        if cut_replies
        else None,
    }


def _coverage(model) -> list[str]:
    cov = model.get("coverage") or {}
    return ([f"warning: {cov['lead']}"] if cov.get("lead") else []) + ([cov["line"]] if cov.get("line") else [])


def _cut_note(what: str, order: str, counted: str, model: dict) -> str:
    return (
        f"the page draws {what} one by one ({order}, spread over the window); {counted}. "
        f"To see each one, narrow the window with --since / --until" + ("" if model["host"] else " or --host")
    )


def _run(store, con, name: str, params: dict, extra: dict) -> pl.DataFrame:
    """The internal query `name` over the rows of the named query it reads (as `q`), both with their parameters."""
    return queries.run_internal(store, name, {**params, **extra}, con=con)


def _replies(session: Session, con, window: dict, grid: dict, plan: dict, cap: int | None) -> list[dict]:
    """The window's replies (corrupted ones only without `clean`; at most `cap`, corrupted first),
    each with the server lines around it when the plan has `context`."""
    rh, ctx = queries.get("reply_hosts"), queries.get("corrupted_context")
    params = dict(rh.bind(window))
    pick = "SELECT * REPLACE (epoch_us(t0) AS t0, epoch_us(t1) AS t1) FROM q" + (
        "" if plan["clean"] else " WHERE corrupted"
    )
    if cap is not None:
        # corrupted, then the other classes that are not clean, then clean; bucket by bucket
        pick = queries.internal("_reply_pick").sql
        params.update(grid, cap=cap)
    if plan["context"]:
        sql = (
            f"WITH q AS (\n{rh.sql}\n), picked AS ({pick}), ctx AS (\n{ctx.sql}\n)\n"
            "SELECT p.*, ctx.events FROM picked p LEFT JOIN ctx USING (source, session_id, turn_id) "
            "ORDER BY p.t0, p.source, p.session_id, p.turn_id"
        )
        params.update(ctx.bind())
    else:
        sql = f"WITH q AS (\n{rh.sql}\n)\nSELECT * FROM ({pick}) ORDER BY t0, source, session_id, turn_id"
    out = []
    for r in session.sql(sql, params).iter_rows(named=True):
        near = r.pop("events", None) or []
        r["events"] = [{**e, "t_us": us(e.pop("ts"))} for e in near]
        out.append(r)
    return out


def _load(store, con, params: dict) -> list[dict]:
    """Each host's load per bucket, one entry per host and role with a list per column (a rank's
    stats in 1 s buckets over hours would be a million rows as dicts)."""
    load = micros(queries.run(store, "host_load", params, con=con))
    out = []
    for (host, role), part in load.group_by(["host", "role"], maintain_order=True):
        out.append(
            {"host": host, "role": role, **{c: part[c].to_list() for c in part.columns if c not in ("host", "role")}}
        )
    return out


def _room_counts(counts: pl.DataFrame) -> list[dict]:
    """Rooms per host, side, bucket index and outcome; `k` is None (or past the last bucket) for a
    side whose time lies outside the window, so that a host's side is known even then."""
    if counts.height == 0:
        return []
    sides = [
        counts.filter(pl.col("has_sent")).select(
            host="prefill_host", side=pl.lit("sent"), k="k_sent", outcome="outcome", n="n"
        ),
        counts.filter(pl.col("has_received")).select(
            host="decode_host", side=pl.lit("received"), k="k_received", outcome="outcome", n="n"
        ),
    ]
    return (
        pl.concat(sides)
        .filter(pl.col("host").is_not_null())
        .group_by("host", "side", "k", "outcome")
        .agg(pl.col("n").sum())
        .sort("host", "side", "k", "outcome", nulls_last=True)
        .to_dicts()
    )


def _by_bucket(counts: pl.DataFrame, key: str) -> list[dict]:
    if counts.height == 0:
        return []
    return counts.sort("host", key, "k", nulls_last=True).to_dicts()


def storm_bands(storms: pl.DataFrame) -> list[dict]:
    """One band per host of each storm, over that host's share of it; the storm's totals ride along."""
    out = []
    for s in storms.to_dicts():
        for h in s.pop("per_host") or []:
            out.append(
                {
                    **s,
                    "host": h["host"],
                    "aborts_on_host": h["n_aborts"],
                    "t0": us(h["t_start"]),
                    "t1": us(h["t_end"]),
                    "storm_t0": us(s["t_start"]),
                    "storm_t1": us(s["t_end"]),
                }
            )
    return out


def _window(model: dict) -> tuple[dt.datetime | None, dt.datetime | None]:
    rows = model["rows"]
    if rows.height == 0:
        return None, None
    return rows["bucket_start"].min(), rows["bucket_start"].max() + dt.timedelta(seconds=model["bucket_s"])


def _hosts(model, load, room_counts, mark_counts, roles) -> list[dict]:
    """Hosts with something to draw, prefill first (the order of the flow), then by name."""
    seen = {x["host"] for x in load} | set(mark_counts["host"].to_list())
    seen |= set(room_counts["prefill_host"].drop_nulls().to_list()) | set(
        room_counts["decode_host"].drop_nulls().to_list()
    )
    seen |= set(model["wedges"]["host"].to_list()) | {h for hs in model["abort_storms"]["hosts"].to_list() for h in hs}
    if model["host"]:
        seen &= {model["host"]}
    role_of = dict(roles)
    for x in load:
        role_of.setdefault(x["host"], x["role"])
    out = [{"name": h, "role": role_of.get(h) or "unknown"} for h in seen if h is not None]
    return safe(sorted(out, key=lambda h: (_ROLE_ORDER.get(h["role"], 3), h["name"])))


# the named queries give times as timestamps; the exports draw on a grid of microseconds
_MICROS = {"ts": "t_us", "bucket_start": "t_us"}


def micros(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with its timestamps as integer microseconds since the epoch (`ts` and `bucket_start` as `t_us`)."""
    times = [c for c, t in df.schema.items() if isinstance(t, pl.Datetime)]
    return df.with_columns(pl.col(c).dt.epoch("us") for c in times).rename(
        {c: _MICROS[c] for c in times if c in _MICROS}
    )


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


# -- exports ---------------------------------------------------------------------------------------


def export(session: Session, model: Timeline, fmt: str) -> Export:
    """What the export `fmt` draws: the model (a Perfetto trace's cut to its budget), its detail and,
    for a trace, its counters."""
    note = None
    if fmt == "perfetto":
        model, note = fit(session, model)
    detail = {**gather(session, model, fmt), "store": str(session.store.root)}
    counters = Counters(counter_rows(session, model)) if fmt == "perfetto" else None
    return Export(model, detail, counters, note, session.excerpts(detail["replies"]))


# the counters a trace draws per rank; bytes one event takes in the file, measured on the generated
# incident: a counter sample, a room (two slices on each side, with the room's args on each begin),
# a mark or a reply instant
COUNTERS = ("queue_req", "running_req", "bootstrap_req", "inflight_req", "transfer_req", "gen_throughput", "new_token")
_COUNTER_BYTES, _ROOM_BYTES, _MARK_BYTES = 115, 1_300, 400
_BATCH_ROWS = 50_000


def _window_params(model: Timeline) -> dict:
    rows = model["rows"]
    if rows.height == 0:
        return {"since": _EPOCH, "before": _EPOCH}
    return {
        "since": rows["bucket_start"].min(),
        "before": rows["bucket_start"].max() + dt.timedelta(seconds=model["bucket_s"]),
    }


def fit(session: Session, model: Timeline, budget: int | None = None) -> tuple[Timeline, str | None]:
    """`model` cut to the buckets whose trace fits `budget` bytes (the session's limit by default),
    and the note saying so (or None).

    The estimate is per bucket: counter series with samples in it (from the stats lines), transfer
    units (an upper bound on rooms), failure, abort and error lines, corrupted replies. The window
    kept grows from the bucket with the most failures, aborts, errors and corrupted replies.
    """
    budget = session.limits.trace_bytes if budget is None else budget
    rows = model["rows"]
    if rows.height == 0:
        return model, None
    series = pl.from_arrow(
        session.con.sql(
            queries.internal("_active_ranks").sql,
            params={**_window_params(model), "bucket_s": model["bucket_s"], "host": model["host"]},
        ).to_arrow_table()
    )
    col = lambda c: pl.col(c).fill_null(0) if c in rows.columns else pl.lit(0)  # noqa: E731
    est = (
        rows.select(
            pl.col("bucket_start"),
            t_us=pl.col("bucket_start").dt.epoch("us"),
            trouble=col("failure_lines") + col("aborts") + col("errors") + col("replies") - col("replies_clean"),
            other=col("transfers") * _ROOM_BYTES
            + (col("failure_lines") + col("aborts") + col("errors") + col("replies")) * _MARK_BYTES,
        )
        .join(series.with_columns(pl.col("t_us").cast(pl.Int64)), on="t_us", how="left")
        .with_columns(bytes=pl.col("other") + pl.col("n").fill_null(0) * len(COUNTERS) * _COUNTER_BYTES)
        .sort("bucket_start")
    )
    total = int(est["bytes"].sum())
    if total <= budget:
        return model, None
    sizes = est["bytes"].to_list()
    lo = hi = int(est["trouble"].arg_max() or 0)
    used = sizes[lo]
    # grow one bucket at a time on the cheaper side, so the window stays around the trouble
    while True:
        left = sizes[lo - 1] if lo > 0 else None
        right = sizes[hi + 1] if hi + 1 < len(sizes) else None
        pick = (
            min((s, side) for s, side in ((left, -1), (right, 1)) if s is not None)
            if left is not None or right is not None
            else None
        )
        if pick is None or used + pick[0] > budget:
            break
        used += pick[0]
        if pick[1] < 0:
            lo -= 1
        else:
            hi += 1
    starts = est["bucket_start"]
    t0, t1 = starts[lo], starts[hi] + dt.timedelta(seconds=model["bucket_s"])
    cut = dataclasses.replace(model, rows=rows.filter((pl.col("bucket_start") >= t0) & (pl.col("bucket_start") < t1)))
    fmt = "%Y-%m-%dT%H:%M:%S"
    note = (
        f"perfetto: the whole window would be about {total / 1e6:,.0f} MB (Perfetto's UI cannot load traces "
        f"near 2 GB); the trace is cut to {t0:{fmt}} .. {t1:{fmt}} UTC around the most failures, aborts and "
        f"corrupted replies ({used / 1e6:,.0f} MB). For another part pass --since/--until; a wider --bucket "
        f"(now {model['bucket_s']:g} s) makes fewer counter samples"
    )
    return cut, note


def counter_rows(session: Session, model: Timeline) -> Iterator[dict]:
    """Each rank's stats per bucket of the model's window, in time order, one batch in memory at a time
    (its host's control characters escaped)."""
    reader = session.con.sql(
        queries.internal("_perfetto_counters").sql,
        params={**_window_params(model), "bucket_s": model["bucket_s"], "host": model["host"]},
    ).to_arrow_reader(_BATCH_ROWS)
    names: dict[str, str] = {}
    for batch in reader:
        for r in batch.to_pylist():
            h = r["host"]
            if h is not None and h not in names:
                names[h] = escape_control(h)
            r["host"] = names.get(h) if h is not None else None
            yield r
