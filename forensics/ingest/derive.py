"""What a derived view needs of one input, computed when the input is ingested, beside its parts.

The derived views run once every input is committed, over the whole store; the part of their work
that reads every line of one input is done here instead, once per input, and stored as a small
table of its own (`wedge_streams`) that is committed, compacted and removed with the input's other
parts. `forensics/catalog/views/wedge_streams_merged.sql` joins the inputs' rows back into what
`wedge_intervals` reads (ARCHITECTURE.md, "Derived at ingest").

`wedge_streams` summarises the progress streams `wedge_intervals` looks for stops in, per input:
each (DP, TP) rank's stats lines, the host's stats lines, and every timed line of the host. A
stream is its lines grouped per second of the log's own clock; of it the input keeps the first
and last second, every stop of at least MIN_STOP_S between two seconds, and the intervals from a
busy second to the next as counts, exact to the microsecond (their 90th percentile is the
stream's normal interval). The interval after the input's first second is left out of the counts:
whether that second is busy may change when the input before it ends in the same second.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from forensics.core import schema
from forensics.store import commits, hive

# the shortest stop an input keeps; wedge_intervals() asked for shorter stops reads the tables
MIN_STOP_S = 5
TABLE = "wedge_streams"

# what a stats line says is in flight, as wedge_intervals reads it
_LOAD_COLUMNS = (
    "running_req",
    "queue_req",
    "prealloc_req",
    "transfer_req",
    "retracted_req",
    "bootstrap_req",
    "inflight_req",
)
_LOAD = (
    "coalesce(running_req, 0) + coalesce(queue_req, 0) + coalesce(prealloc_req, 0) + coalesce(transfer_req, 0)"
    " + coalesce(retracted_req, 0) + coalesce(bootstrap_req, 0) + coalesce(inflight_req, 0)"
)


def _q(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _read(files: list[str], columns: list[str]) -> str:
    # a part's host is its partition folder's (forensics.store.hive), not a column of the file
    hosts = ", ".join(f"({_q(f)}, {_q(hive.values_of(f).get('host') or '')})" for f in files)
    cols = ", ".join(f"p.{c}" for c in columns)
    return (
        f"SELECT h.host, {cols} FROM read_parquet([{', '.join(_q(f) for f in files)}], union_by_name = true, "
        f"hive_partitioning = false, filename = true) p JOIN (VALUES {hosts}) h(file, host) ON p.filename = h.file"
    )


def _sql(batches: list[str], events: list[str], unit: str) -> str:
    stats = _read(batches, ["dp_rank", "tp_rank", "ts", *_LOAD_COLUMNS]) if batches else None
    lines = [f"SELECT host, ts FROM ({_read(files, ['ts'])})" for files in (batches, events) if files]
    points = []
    if stats:
        points.append(f"""
        SELECT host, 'rank' AS stream, coalesce(dp_rank, -1) AS dk, coalesce(tp_rank, -1) AS tk,
               min(ts) AS t_first, max(ts) AS t_last, max({_LOAD}) > 0 AS busy
        FROM ({stats}) WHERE ts IS NOT NULL AND host IS NOT NULL
        GROUP BY host, dk, tk, time_bucket(INTERVAL 1 SECOND, ts)
        UNION ALL
        SELECT host, 'stats', -1, -1, min(ts), max(ts), max({_LOAD}) > 0
        FROM ({stats}) WHERE ts IS NOT NULL AND host IS NOT NULL
        GROUP BY host, time_bucket(INTERVAL 1 SECOND, ts)""")
    points.append(f"""
        SELECT host, 'lines' AS stream, -1 AS dk, -1 AS tk, min(ts) AS t_first, max(ts) AS t_last, false AS busy
        FROM ({" UNION ALL ".join(lines)}) WHERE ts IS NOT NULL AND host IS NOT NULL
        GROUP BY host, time_bucket(INTERVAL 1 SECOND, ts)""")
    u = _q(unit)
    return f"""
    WITH points AS ({" UNION ALL ".join(points)}),
    seq AS (
        SELECT *, row_number() OVER w AS i, count(*) OVER (PARTITION BY host, stream, dk, tk) AS k,
               lead(t_first) OVER w AS t_next, min(t_first) OVER (PARTITION BY host, stream, dk, tk) AS t_unit
        FROM points WINDOW w AS (PARTITION BY host, stream, dk, tk ORDER BY t_first)
    )
    SELECT host, {u} AS unit, stream, dk, tk, 'first' AS what, t_first AS t_a, t_last AS t_b, t_next AS t_c, busy,
           NULL AS us, NULL AS n
    FROM seq WHERE i = 1
    UNION ALL
    SELECT host, {u}, stream, dk, tk, 'last', t_first, t_last, NULL, busy, NULL, NULL FROM seq WHERE i = k
    UNION ALL
    SELECT host, {u}, stream, dk, tk, 'gap', t_last, t_next, NULL, busy, NULL, NULL
    FROM seq WHERE t_next IS NOT NULL AND epoch_us(t_next) - epoch_us(t_last) >= {MIN_STOP_S * 1_000_000}
    UNION ALL
    SELECT host, {u}, stream, dk, tk, 'hist', min(t_unit), NULL, NULL, true,
           epoch_us(t_next) - epoch_us(t_last) AS us, count(*)
    FROM seq WHERE stream <> 'lines' AND busy AND i > 1 AND t_next IS NOT NULL
    GROUP BY host, stream, dk, tk, us
    """


def wedge_streams(folder: Path, unit: str) -> pl.DataFrame:
    """The `wedge_streams` rows of the input whose parts wait in `folder` (empty: no timed line)."""
    import duckdb

    parts: dict[str, list[str]] = {"batches": [], "events": []}
    for rel in commits.staged_parts(folder):
        table = hive.table_of(rel)
        if table in parts:
            parts[table].append(os.fspath(folder / rel))
    if not parts["batches"] and not parts["events"]:
        return pl.DataFrame(schema={c.name: c.dtype for c in schema.TABLES[TABLE].stored})
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET threads = 1")
        df = con.sql(_sql(parts["batches"], parts["events"], unit)).pl()
    finally:
        con.close()
    # a host whose lines have no time still has its summary (of nothing): the catalog reads a
    # missing one as an input ingested before summaries were kept
    hosts = {hive.values_of(f).get("host") for f in parts["batches"] + parts["events"]} - set(df["host"])
    if hosts:
        none = pl.DataFrame({"host": sorted(h for h in hosts if h is not None), "unit": unit, "what": "none"})
        df = pl.concat([df, schema.conform(TABLE, none)], how="diagonal_relaxed")
    return schema.conform(TABLE, df)
