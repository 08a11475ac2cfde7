"""A large store written straight to Parquet parts, in the layout of forensics/store/__init__.py.

    <store>/tables/<table>/host=<host>/date=<day>/part-<key>-00000.parquet, one input a host

Rows are made per column from the registered schema (forensics.schema.TABLES), so tables that
other issues add (`transfers`, `replies`) are filled as soon as they are registered; a table that
is not registered yet is skipped and reported. Values are deterministic hashes of the row number;
bootstrap rooms and rids come from one shared pool so joins across tables hit.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil

import polars as pl

HOSTS = [f"decode-{i}" for i in range(8)] + [f"prefill-{i}" for i in range(8)]
ROOMS = 2_000_000  # distinct bootstrap rooms
T0 = dt.datetime(2026, 10, 30, 10, tzinfo=dt.timezone.utc)
SPAN_S = 6 * 3600
EVENT_KINDS = [
    "request_received",
    "request_finished",
    "http_access",
    "log",
    "transfer_failed",
    "abort",
    "bootstrap_failed",
    "nixl_log",
    "ucx_error",
    "exception",
]
EVENT_WEIGHTS = [30, 30, 30, 5, 2, 1, 1, 1, 1, 1]


def _h(i: pl.Expr, salt: int) -> pl.Expr:
    """A cheap deterministic hash of the row number (UInt64)."""
    x = (i.cast(pl.UInt64) + salt) * 0x9E3779B97F4A7C15
    return (x ^ (x // (1 << 29))) * 0xBF58476D1CE4E5B9


def _column(name: str, dtype, n: int, host: str, table: str, salt: int) -> pl.Expr:
    i = pl.int_range(0, n, dtype=pl.Int64)
    h = _h(i, salt)
    room_idx = (_h(i, 7) % ROOMS).cast(pl.Int64)
    if name == "ts" or (isinstance(dtype, pl.Datetime) and name.endswith("ts")):
        step = SPAN_S * 1_000_000 // max(n, 1)
        return (pl.lit(int(T0.timestamp() * 1e6)) + i * step + (h % 1000).cast(pl.Int64)).cast(pl.Datetime("us", "UTC"))
    if isinstance(dtype, pl.Datetime):
        return (pl.lit(int(T0.timestamp() * 1e6)) + (h % (SPAN_S * 1_000_000)).cast(pl.Int64)).cast(dtype)
    if name == "host":
        return pl.lit(host)
    if name == "role":
        return pl.lit(host.split("-")[0])
    if name in ("source_file", "path"):
        return pl.lit(f"{host}.log")
    if name == "line_no":
        return i + 1
    if name == "bootstrap_room" or name.endswith("_room"):
        return pl.lit(1_000_000_000_000_000_000) + room_idx * 3_000_000_007
    if name == "rid" or name.endswith("_rid"):
        return pl.format("{}{}", pl.lit("r"), room_idx.cast(pl.Utf8).str.zfill(31))
    if name == "kind" and table == "events":
        cum, choice = 0, pl.lit("log", dtype=pl.Utf8)
        tot = sum(EVENT_WEIGHTS)
        m = (h % tot).cast(pl.Int64)
        exprs = []
        for k, w in zip(EVENT_KINDS, EVENT_WEIGHTS):
            exprs.append((m < cum + w, k))
            cum += w
        for cond, k in reversed(exprs):
            choice = pl.when(cond).then(pl.lit(k)).otherwise(choice)
        return choice
    if table == "transfer_events":
        if name == "side":
            return pl.lit("decode" if host.startswith("decode") else "prefill")
        if name == "event":
            ev = ["notif", "done"] if host.startswith("decode") else ["post", "done"]
            m = (h % 100).cast(pl.Int64)
            return pl.when(m < 48).then(pl.lit(ev[0])).when(m < 97).then(pl.lit(ev[1])).otherwise(pl.lit("fail"))
        if name == "kind":
            return pl.when((h % 10) == 0).then(pl.lit("aux")).otherwise(pl.lit("kv"))
        if name == "chunk":
            return (h % 8).cast(pl.Int32)
        if name in ("unknown_enum", "ts_naive"):
            return pl.lit(False)
        if name == "status":
            return pl.lit("NIXL_SUCCESS")
        if name == "bytes":
            return (h % (64 << 20)).cast(pl.Int64)
    if table == "turns" and name in ("t_start", "t_end"):
        return (
            pl.lit(int(T0.timestamp() * 1e6))
            + (h % (SPAN_S * 1_000_000)).cast(pl.Int64)
            + (30_000_000 if name == "t_end" else 0)
        ).cast(pl.Datetime("us", "UTC"))
    # a turn is identified by (source, session_id, turn_id): keep it unique, as real transcripts do
    if table == "turns" and name == "turn_id":
        return pl.format("{}-turn-{}", pl.lit(host), i)
    if table == "turns" and name == "session_id":
        return pl.format("ses-{}", i // 50)
    # what only the detectors read: null (no tool calls), so every turn takes the detectors' prose path
    if table == "turns" and name in ("tool_calls", "offered_tool_params"):
        return pl.lit(None, dtype=dtype)
    # one reply in 50 leaks raw DSML tool-call markup (S1), so the evidence has corrupted replies to rank
    if table == "turns" and name == "content":
        leak = 'Reading the file.\n<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name="read">'
        return (
            pl.when((h % 50) == 0)
            .then(pl.lit(leak))
            .otherwise(pl.format("The reply number {}.", (h % 97).cast(pl.Utf8)))
        )
    if name == "kind" and table == "batches":
        return pl.lit("decode" if host.startswith("decode") else "prefill")
    if name.endswith("_rank"):
        return (h % 8).cast(pl.Int32)
    if dtype == pl.Utf8:
        return pl.format("{}-{}", pl.lit(name), (h % 97).cast(pl.Utf8))
    if dtype == pl.Boolean:
        return (h % 2) == 0
    if dtype in (pl.Float64, pl.Float32):
        return ((h % 100_000).cast(pl.Float64) / 100).cast(dtype)
    if dtype in (pl.Int64, pl.Int32, pl.Int16, pl.Int8, pl.UInt64, pl.UInt32):
        return (h % 10_000).cast(dtype)
    return pl.lit(None, dtype=dtype)


def frame(table: str, n: int, host: str, salt: int) -> pl.DataFrame:
    from forensics.core import schema

    t = schema.TABLES[table]
    return pl.select(**{c.name: _column(c.name, c.dtype, n, host, table, salt) for c in t.stored})


def build(root: str, transfers: int, batches: int, replies: int, events: int | None = None) -> tuple[str, dict]:
    """Write the store at `root` (kept if it was built with the same schema and sizes); return (root, rows)."""
    import forensics.parsers  # noqa: F401  (parsers of other issues register their tables on import)
    from forensics.core import schema
    from forensics.store import Store
    from forensics.store.parts import write_part

    events = events if events is not None else max(batches, 1_000_000)
    want = {"transfers": transfers, "batches": batches, "replies": replies, "events": events}
    # transfers and replies are views over these base tables once their issues land
    base = {"transfers": "transfer_events", "replies": "turns"}
    present = {}
    for k, n in want.items():
        t = k if k in schema.TABLES and not schema.TABLES[k].view else base.get(k)
        if t in schema.TABLES and not schema.TABLES[t].view:
            present[t] = n
        else:
            print(f"  table `{k}` is not registered in forensics.schema yet: not written")
    sig = hashlib.sha256(
        json.dumps(
            {k: [(c.name, str(c.dtype)) for c in schema.TABLES[k].stored] for k in present} | {"n": present, "gen": 5},
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]
    marker = os.path.join(root, "bench-signature")
    if os.path.exists(marker) and open(marker).read() == sig:
        _verdicts(root)
        return root, present
    shutil.rmtree(root, ignore_errors=True)
    store = Store(root).init()
    for hi, host in enumerate(HOSTS):
        key = hashlib.sha256(host.encode()).hexdigest()[:32]
        w = store.writer(key)
        for table, total in present.items():
            n = total // len(HOSTS) + (1 if hi < total % len(HOSTS) else 0)
            write_part(w.dir, table, 0, frame(table, n, host, salt=hi * 1000 + len(table)))
        files = pl.DataFrame(
            [
                {
                    "path": f"{host}.log",
                    "sha256": key * 2,
                    "bytes": 0,
                    "format": "server_log",
                    "host": host,
                    "role": host.split("-")[0],
                    "lines": 0,
                    "parsed_lines": 0,
                    "continuation_lines": 0,
                    "unparsed_lines": 0,
                    "first_ts": T0,
                    "last_ts": T0 + dt.timedelta(seconds=SPAN_S),
                    "tz": "UTC",
                    "run": None,
                    "ingested_at": T0,
                }
            ]
        )
        w.write("files", files)
        w.commit()
    open(marker, "w").write(sig)
    _verdicts(root)
    return root, present


def _verdicts(root: str) -> None:
    """The corruption verdicts, as `forensics ingest` leaves them: reports then start from them."""
    import time

    from forensics.analysis import verdicts
    from forensics.store import Store

    t0 = time.perf_counter()
    verdicts.ensure(Store(root))
    print(f"  verdicts of the store's turns: {time.perf_counter() - t0:.1f} s", flush=True)


def add_input(root: str, host: str = "decode-late", events: int = 20_000, transfers: int = 20_000) -> str:
    """One more committed input, as a late-copied server log and trace of one more decode host would be.

    Its rows name rooms of the shared pool (so they join with the store's), `events + transfers` at
    most; returns its key.
    """
    from forensics.store import Store
    from forensics.store.parts import write_part

    key = hashlib.sha256(host.encode()).hexdigest()[:32]
    w = Store(root).init().writer(key)
    salt = 99_000
    for table, n in (("events", events), ("transfer_events", transfers)):
        write_part(w.dir, table, 0, frame(table, n, host, salt=salt + len(table)))
    files = pl.DataFrame(
        [
            {
                "path": f"{host}.log",
                "sha256": key * 2,
                "bytes": 0,
                "format": "server_log",
                "host": host,
                "role": "decode",
                "lines": 0,
                "parsed_lines": 0,
                "continuation_lines": 0,
                "unparsed_lines": 0,
                "first_ts": T0,
                "last_ts": T0 + dt.timedelta(seconds=SPAN_S),
                "tz": "UTC",
                "run": None,
                "ingested_at": T0,
            }
        ]
    )
    w.write("files", files)
    w.commit()
    return key
