"""NIXL telemetry ring-buffer files (format versions 1-4), read without consuming them.

The format: docs/formats/NIXL.md, "Telemetry ring-buffer file" and "Reading a telemetry file
without consuming it".

The shipped readers pop events (advancing `read_pos` in the file) and the C++ one unlinks a file
of another version, so evidence is only ever opened read-only here and nothing is written back.
Slots are decoded with one numpy structured view per file, never a Python loop per event.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator

import numpy as np
import polars as pl

from forensics.core.errors import InputError
from forensics.parsers.base import Batch, Context, Sample, Source

name = "nixl_telemetry"
description = "NIXL telemetry ring buffer (binary, NIXL_TELEMETRY_DIR/<agent>), format versions 1-4"

HEADER = np.dtype(
    [
        ("write_pos", "<u8"),
        ("read_pos", "<u8"),
        ("version", "<i4"),
        ("expected_version", "<i4"),
        ("capacity", "<u8"),
        ("mask", "<u8"),
    ]
)
EVENT_V1 = np.dtype([("ts_us", "<u8"), ("category", "<i4"), ("name", "S32"), ("pad", "<u4"), ("value", "<u8")])
EVENT_V2 = np.dtype([("category", "<u4"), ("event_type", "<u4"), ("value", "<u8")])
EVENT_V3 = np.dtype([("event_type", "<u4"), ("pad", "<u4"), ("value", "<u8")])
LAYOUTS = {1: EVENT_V1, 2: EVENT_V2, 3: EVENT_V3, 4: EVENT_V3}
CATEGORIES = ["MEMORY", "TRANSFER", "CONNECTION", "BACKEND", "ERROR", "PERFORMANCE", "SYSTEM", "CUSTOM"]
EVENT_TYPES = (
    [
        "agent_tx_bytes",
        "agent_rx_bytes",
        "agent_tx_requests_num",
        "agent_rx_requests_num",
        "agent_memory_registered",
        "agent_memory_deregistered",
        "agent_xfer_time",
        "agent_xfer_post_time",
    ]
    + [
        f"agent_err_{s}"
        for s in (
            "not_posted",
            "invalid_param",
            "backend",
            "not_found",
            "mismatch",
            "not_allowed",
            "repost_active",
            "unknown",
            "not_supported",
            "remote_disconnect",
            "canceled",
            "no_telemetry",
        )
    ]
    + ["agent_telemetry_events_dropped"]
)
# v3+ stores no category: derive it from the type, as the v1/v2 writers assigned them
# (docs/formats/NIXL.md, "Telemetry ring-buffer file").
CATEGORY_OF_TYPE = ["TRANSFER"] * 4 + ["MEMORY"] * 2 + ["PERFORMANCE"] * 2 + ["ERROR"] * 12 + ["SYSTEM"]
DROPPED_TYPE = 20
MAX_CAPACITY = 1 << 32  # a header claiming more slots is not a telemetry file


def _header(head: bytes) -> dict | None:
    if len(head) < HEADER.itemsize:
        return None
    h = np.frombuffer(head[: HEADER.itemsize], dtype=HEADER)[0]
    out = {k: int(h[k]) for k in HEADER.names}
    cap = out["capacity"]
    if out["version"] not in LAYOUTS or not (0 < cap <= MAX_CAPACITY) or cap & (cap - 1) or out["mask"] != cap - 1:
        return None
    return out


def sniff(head: bytes, path: str) -> float:
    h = _header(head)
    if h is None:
        return 0.0
    size = None
    if os.path.isfile(path):
        size = os.path.getsize(path)
    expected = HEADER.itemsize + h["capacity"] * LAYOUTS[h["version"]].itemsize
    # a valid header is already 96 bits of structure; the exact size makes it certain
    return 0.99 if size in (None, expected) else 0.8


def _live_order(h: dict, n_slots: int) -> tuple[np.ndarray, bool]:
    """Slot indices from read_pos up to (excluding) write_pos, wrapping; and whether the ring is full."""
    mask = h["capacity"] - 1
    r, w = h["read_pos"] & mask, h["write_pos"] & mask
    count = (w - r) & mask
    full = ((w + 1) & mask) == r
    idx = (r + np.arange(count, dtype=np.uint64)) & np.uint64(mask)
    return idx[idx < n_slots].astype(np.int64), full


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
    with source.open() as f:
        data = f.read()
    h = _header(data)
    if h is None:
        raise InputError(
            "not a NIXL telemetry ring buffer (bad header)",
            file=source.path,
            help="the header needs version 1-4, a power-of-2 capacity and mask = capacity - 1",
        )
    layout = LAYOUTS[h["version"]]
    cap = h["capacity"]
    expected = HEADER.itemsize + cap * layout.itemsize
    body = data[HEADER.itemsize :]
    n_slots = min(cap, len(body) // layout.itemsize)
    if len(data) != expected:
        ctx.notes.append(f"file is {len(data)} bytes, the header implies {expected}: {n_slots} of {cap} slots read")
    slots = np.frombuffer(body[: n_slots * layout.itemsize], dtype=layout)
    live, full = _live_order(h, n_slots)
    ver = h["version"]
    agent = os.path.basename(source.path.split("!", 1)[-1])
    if ver == 1:
        live_mask = np.zeros(n_slots, dtype=bool)
        live_mask[live] = True
        # consumed v1 slots keep their timestamps: salvage them, ordered by time, flagged stale
        stale = np.flatnonzero(~live_mask & (slots["ts_us"] > 0))
        stale = stale[np.argsort(slots["ts_us"][stale], kind="stable")]
        order = np.concatenate([live, stale])
        ev = slots[order]
        names = np.char.decode(np.char.rstrip(ev["name"], b"\0"), "utf-8", "replace")
        cat = ev["category"]
        df = pl.DataFrame(
            {
                "ts": _plausible_time(ev["ts_us"]),
                "slot": order,
                "seq": np.concatenate([np.arange(live.size), np.arange(stale.size)]),
                "category": [CATEGORIES[c] if 0 <= c < len(CATEGORIES) else str(c) for c in cat.tolist()],
                "event": names.tolist(),
                "value": ev["value"].astype(np.int64),
                "stale": np.arange(order.size) >= live.size,
            }
        ).with_columns(event_type=pl.lit(None, dtype=pl.Int32))
    else:
        ev = slots[live]
        types = ev["event_type"].astype(np.int64)
        known = (types >= 0) & (types < len(EVENT_TYPES))
        if ver == 2:
            cats = [CATEGORIES[c] if c < len(CATEGORIES) else str(c) for c in ev["category"].tolist()]
        else:
            cats = [CATEGORY_OF_TYPE[t] if k else None for t, k in zip(types.tolist(), known.tolist())]
        df = pl.DataFrame(
            {
                "ts": pl.Series([None] * live.size, dtype=pl.Datetime("us", "UTC")),
                "slot": live,
                "seq": np.arange(live.size),
                "category": pl.Series(cats, dtype=pl.Utf8),
                "event": [EVENT_TYPES[t] if k else f"type_{t}" for t, k in zip(types.tolist(), known.tolist())],
                "event_type": types.astype(np.int32),
                "value": ev["value"].astype(np.int64),
                "stale": np.zeros(live.size, dtype=bool),
            }
        )
    dropped = None
    if ver >= 4:
        dropped = int(df.filter(pl.col("event_type") == DROPPED_TYPE)["value"].sum())
    df = df.with_columns(
        host=pl.lit(ctx.host),
        agent=pl.lit(agent),
        version=pl.lit(ver, dtype=pl.Int32),
        buffer_full=pl.lit(full),
        dropped_events=pl.lit(dropped, dtype=pl.Int64),
        source_file=pl.lit(source.path),
    )
    n_live = int(live.size)
    ctx.notes.append(
        f"telemetry v{ver}, {cap} slots, {n_live} live events"
        + (f", {df.height - n_live} stale v1 events salvaged" if df.height > n_live else "")
        + (", ring FULL: events after the last slot were dropped by the writer" if full else "")
        + (f", agent reported {dropped} dropped events" if dropped else "")
        + ("" if ver >= 4 else "; dropped-event count not recorded before v4")
    )
    ctx.account(parsed=df.height)
    ts = df["ts"].drop_nulls()
    if ts.len():
        ctx.first_ts, ctx.last_ts = ts.min(), ts.max()
    yield {"telemetry": df}


def _plausible_time(us: np.ndarray) -> pl.Series:
    """µs since the epoch as UTC times; a torn or foreign slot can hold any 8 bytes, so values
    outside 1970..2200 become NULL instead of overflowing."""
    s = pl.Series(us.astype(np.int64))
    return pl.select(pl.when(s.is_between(0, 7_258_118_400_000_000)).then(s)).to_series().cast(pl.Datetime("us", "UTC"))


def build(
    version: int,
    events: list[tuple],
    capacity: int = 8,
    read_pos: int = 0,
    write_pos: int | None = None,
    stale: list[tuple] = (),
) -> bytes:
    """A telemetry file of `version` holding `events` from `read_pos` on (for samples and tests).

    v1 events are (ts_us, category, name, value); v2 (category, type, value); v3/v4 (type, value).
    `stale` events (v1) are written after the live ones, in slots the reader must treat as consumed.
    """
    layout = LAYOUTS[version]
    slots = np.zeros(capacity, dtype=layout)
    for i, e in enumerate(list(events) + list(stale)):
        s = slots[(read_pos + i) % capacity]
        if version == 1:
            s["ts_us"], s["category"], s["name"], s["value"] = e[0], e[1], e[2].encode(), e[3]
        elif version == 2:
            s["category"], s["event_type"], s["value"] = e
        else:
            s["event_type"], s["value"] = e
        slots[(read_pos + i) % capacity] = s
    w = (read_pos + len(events)) if write_pos is None else write_pos
    hdr = np.zeros(1, dtype=HEADER)
    hdr[0] = (w, read_pos, version, version, capacity, capacity - 1)
    return hdr.tobytes() + slots.tobytes()


def _sample_text(b: bytes) -> str:
    # Sample.text is str and is written as UTF-8, so sample bytes must stay below 0x80: the sample
    # timestamps are chosen for that (0x6450b71000000 + a few µs, 2025-12-03)
    assert max(b) < 0x80, "sample telemetry bytes must be ASCII"
    return b.decode("ascii")


samples = [
    Sample(
        "v1_prefill_kv_then_backend_error",
        _sample_text(
            build(
                1,
                [
                    (1764765303046144 + 5, 5, "agent_xfer_post_time", 41),
                    (1764765303046144 + 10, 1, "agent_tx_bytes", 603979776),
                    (1764765303046144 + 90, 4, "NIXL_ERR_BACKEND", 1),
                ],
                capacity=4,
                read_pos=3,
            )
        ),
        {
            "telemetry": [
                {
                    "event": "agent_xfer_post_time",
                    "category": "PERFORMANCE",
                    "value": 41,
                    "slot": 3,
                    "stale": False,
                    "ts": dt.datetime(2025, 12, 3, 12, 35, 3, 46149, tzinfo=dt.timezone.utc),
                },
                {"event": "agent_tx_bytes", "value": 603979776, "slot": 0},
                {
                    "event": "NIXL_ERR_BACKEND",
                    "category": "ERROR",
                    "slot": 1,
                    "buffer_full": True,
                    "dropped_events": None,
                },
            ]
        },
    ),
    Sample(
        "v4_dropped_events",
        _sample_text(build(4, [(0, 4096), (6, 1873), (20, 17)], capacity=8)),
        {
            "telemetry": [
                {"event": "agent_tx_bytes", "category": "TRANSFER", "value": 4096, "ts": None},
                {"event": "agent_xfer_time", "category": "PERFORMANCE"},
                {"event": "agent_telemetry_events_dropped", "value": 17, "dropped_events": 17, "version": 4},
            ]
        },
    ),
]
