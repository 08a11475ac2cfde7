"""What a derived view needs of one input, computed when the input is ingested, beside its parts.

The derived views run once every input is committed, over the whole store; the part of their work
that reads every line of one input is done here instead, once per input, and stored as small
tables of its own that are committed, compacted and removed with the input's other parts.
`wedge_intervals` (forensics/catalog/views/wedge_intervals.sql) joins the inputs' rows
(ARCHITECTURE.md, "Derived at ingest").

`wedge_streams` summarises the progress streams `wedge_intervals` looks for stops in, per input:
each (DP, TP) rank's stats lines, the host's stats lines, and every timed line of the host. A
stream is its lines grouped per second of the log's own clock; of it the input keeps the first
and last second, every stop of at least MIN_STOP_S between two seconds (with the load of the last
stats line before it: what was in flight), and the intervals from a busy second to the next as
counts, exact to the microsecond (their 90th percentile is the stream's normal interval). The
interval after the input's first second is left out of the counts: whether that second is busy may
change when the input before it ends in the same second. Of a rank's seconds it also keeps those
inside another rank's stop (`peer`): the peers that went on while one rank stopped.

`wedge_signals` holds the lines that say a server was stuck or how it came out of it (health
checks, the watchdog, timeouts, arrivals, crashes, restarts) that fall where a wedge can be: inside
a stop of the stats lines, before the first or after the last, and the threads that died.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import polars as pl

from forensics.core import schema
from forensics.store import commits, hive

# the shortest stop an input keeps; wedge_intervals() asked for shorter stops reads the tables
MIN_STOP_S = 5
STREAMS = "wedge_streams"
SIGNALS = "wedge_signals"
TABLES = (STREAMS, SIGNALS)
# a signal counts up to this long after the stop it lies in ends (wedge_intervals: cand_sig)
_SIGNAL_AFTER_S = 30

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
_EVENT_COLUMNS = (
    "dp_rank",
    "tp_rank",
    "ts",
    "kind",
    "rid",
    "reason",
    "http_status",
    "http_path",
    "message",
    "bootstrap_room",
)

# the signal lines and their names, as wedge_intervals' sig_events and deaths name them (the
# tables' path there computes the same; tests/test_wedge_partials.py holds them equal)
_SIG = """CASE
            WHEN kind = 'health_check_failed' THEN 'health_check_failed'
            WHEN kind = 'http_access' AND http_status = 503 THEN '/health 503'
            WHEN kind = 'http_access' THEN '/health 200'
            WHEN kind = 'watchdog_timeout' THEN 'watchdog'
            WHEN kind = 'collective_timeout' THEN 'collective_timeout'
            WHEN kind = 'request_received' THEN 'arrival'
            WHEN kind = 'crash' THEN 'crash'
            WHEN kind = 'hang_dump' THEN 'py-spy dump'
            WHEN kind = 'shutdown' THEN 'shutdown'
            WHEN kind = 'startup' THEN 'restart'
            WHEN regexp_matches(message, 'thread\\S* died') THEN 'dead thread'
            ELSE reason
        END"""
_IS_SIG = """(kind IN ('health_check_failed', 'watchdog_timeout', 'collective_timeout', 'crash', 'hang_dump')
           OR (kind = 'http_access' AND http_path LIKE '/health%' AND http_status IN (200, 503))
           OR (kind = 'request_received' AND coalesce(rid, '') NOT LIKE 'HEALTH_CHECK%')
           OR (kind = 'shutdown' AND regexp_matches(message, 'SIGTERM received|Gracefully exiting|Force exiting'))
           OR (kind = 'startup' AND regexp_matches(message, 'max_total_num_tokens=|Started server process'))
           OR (kind IN ('transfer_failed', 'bootstrap_failed', 'abort')
               AND reason IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout')))"""
_IS_DEATH = """kind IN ('bootstrap_failed', 'transfer_failed', 'exception', 'log', 'nixl')
      AND regexp_matches(message, 'thread died|bootstrap_thread\\S* died|[Tt]hread \\S+ (?:died|crashed|exited)')"""
_DEATH_TK = "coalesce(tp_rank, TRY_CAST(nullif(regexp_extract(message, 'engine_rank=([0-9]+)', 1), '') AS INTEGER), -1)"


# a time placed from the file date (an input without a timed line) says nothing of when its host
# made progress or was stuck
_OWN_TIME = "ts_placed IS DISTINCT FROM 'file_time'"
# except for a py-spy dump: a file of its own, written as it was taken
_SIG_TIME = f"({_OWN_TIME} OR kind = 'hang_dump')"


def _q(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _read(files: list[str], columns: list[str] | tuple[str, ...]) -> str:
    # a part's host is its partition folder's (forensics.store.hive), not a column of the file
    hosts = ", ".join(f"({_q(f)}, {_q(hive.values_of(f).get('host') or '')})" for f in files)
    cols = ", ".join(f"p.{c}" for c in columns)
    return (
        f"SELECT h.host, {cols} FROM read_parquet([{', '.join(_q(f) for f in files)}], union_by_name = true, "
        f"hive_partitioning = false, filename = true) p JOIN (VALUES {hosts}) h(file, host) ON p.filename = h.file"
    )


def _seq_sql(batches: list[str], events: list[str]) -> str:
    """Table `seq`: each stream's seconds in order, their first and last line, busy, and the load
    of the last stats line."""
    lines = [f"SELECT host, ts FROM ({_read(batches, ['ts'])})"] if batches else []
    if events:
        lines.append(f"SELECT host, ts FROM ({_read(events, ['ts', 'ts_placed'])}) WHERE {_OWN_TIME}")
    points = []
    if batches:
        cols = ["dp_rank", "tp_rank", "ts", "line_no", "source_file", *_LOAD_COLUMNS]
        # the last line of a second is the last written at its last time (wedge_intervals: last_stats)
        last = "(ts, coalesce(line_no, -1), coalesce(source_file, ''))"
        points.append(f"""
        stats AS (SELECT *, {_LOAD} AS load FROM ({_read(batches, cols)}) WHERE ts IS NOT NULL AND host IS NOT NULL),
        points AS (
            SELECT host, 'rank' AS stream, coalesce(dp_rank, -1) AS dk, coalesce(tp_rank, -1) AS tk,
                   min(ts) AS t_first, max(ts) AS t_last, max(load) > 0 AS busy, arg_max(load, {last}) AS load
            FROM stats GROUP BY host, dk, tk, time_bucket(INTERVAL 1 SECOND, ts)
            UNION ALL
            SELECT host, 'stats', -1, -1, min(ts), max(ts), max(load) > 0, NULL
            FROM stats GROUP BY host, time_bucket(INTERVAL 1 SECOND, ts)
            UNION ALL """)
    else:
        points.append("points AS (")
    points.append(f"""
            SELECT host, 'lines' AS stream, -1 AS dk, -1 AS tk, min(ts) AS t_first, max(ts) AS t_last, false AS busy,
                   NULL AS load
            FROM ({" UNION ALL ".join(lines)}) WHERE ts IS NOT NULL AND host IS NOT NULL
            GROUP BY host, time_bucket(INTERVAL 1 SECOND, ts)
        )""")
    return (
        "CREATE OR REPLACE TEMP TABLE seq AS WITH "
        + "".join(points)
        + """
        SELECT *, row_number() OVER w AS i, count(*) OVER (PARTITION BY host, stream, dk, tk) AS k,
               lead(t_first) OVER w AS t_next, min(t_first) OVER (PARTITION BY host, stream, dk, tk) AS t_unit
        FROM points WINDOW w AS (PARTITION BY host, stream, dk, tk ORDER BY t_first)"""
    )


def _streams_sql(unit: str) -> str:
    """The stream rows, from table `seq`."""
    u = _q(unit)
    return f"""
    WITH
    -- the stops of each rank, its last second's to the end of the input
    rank_stops AS (
        SELECT host, dk, tk, t_last AS t_prev, t_next FROM seq
        WHERE stream = 'rank' AND (t_next IS NULL OR epoch_us(t_next) - epoch_us(t_last) >= {MIN_STOP_S * 1_000_000})
    )
    SELECT host, {u} AS unit, stream, dk, tk, 'first' AS what, t_first AS t_a, t_last AS t_b, t_next AS t_c, busy,
           NULL AS us, NULL AS n, NULL AS load
    FROM seq WHERE i = 1
    UNION ALL
    SELECT host, {u}, stream, dk, tk, 'last', t_first, t_last, NULL, busy, NULL, NULL, load FROM seq WHERE i = k
    UNION ALL
    SELECT host, {u}, stream, dk, tk, 'gap', t_last, t_next, NULL, busy, NULL, NULL, load
    FROM seq WHERE t_next IS NOT NULL AND epoch_us(t_next) - epoch_us(t_last) >= {MIN_STOP_S * 1_000_000}
    UNION ALL
    SELECT host, {u}, stream, dk, tk, 'hist', min(t_unit), NULL, NULL, true,
           epoch_us(t_next) - epoch_us(t_last) AS us, count(*), NULL
    FROM seq WHERE stream <> 'lines' AND busy AND i > 1 AND t_next IS NOT NULL
    GROUP BY host, stream, dk, tk, us
    UNION ALL
    SELECT DISTINCT p.host, {u}, 'rank', p.dk, p.tk, 'peer', p.t_first, p.t_last, NULL, p.busy, NULL, NULL, NULL
    FROM seq p JOIN rank_stops s ON p.host = s.host AND (p.dk <> s.dk OR p.tk <> s.tk) AND p.t_first > s.t_prev
     AND (s.t_next IS NULL OR p.t_last <= s.t_next)
    WHERE p.stream = 'rank'
    """


def _signals_sql(batches: list[str], events: list[str], unit: str) -> str:
    """The signal rows, from the events parts and table `seq`."""
    u = _q(unit)
    after = f"INTERVAL {_SIGNAL_AFTER_S} SECOND"
    windows = "SELECT host, NULL::TIMESTAMPTZ AS t_from, NULL::TIMESTAMPTZ AS t_to FROM ev GROUP BY host"
    if batches:
        # where a wedge's window (after its start, to its end and a while after) can reach: the stops
        # of the stats lines and of each rank, before the first second and after the last; a host
        # without stats lines in this input keeps every signal
        windows = f"""
        SELECT host, t_last AS t_from, t_next + {after} AS t_to FROM seq
        WHERE stream <> 'lines' AND (t_next IS NULL OR epoch_us(t_next) - epoch_us(t_last) >= {MIN_STOP_S * 1_000_000})
        UNION ALL
        SELECT host, NULL, t_first + {after} FROM seq WHERE stream <> 'lines' AND i = 1
        UNION ALL
        SELECT host, NULL, NULL FROM ev WHERE host NOT IN (SELECT host FROM seq WHERE stream = 'stats') GROUP BY host"""
    return f"""
    WITH ev AS (
        SELECT * FROM ({_read(events, (*_EVENT_COLUMNS, "ts_placed"))}) WHERE ts IS NOT NULL AND host IS NOT NULL
        AND {_SIG_TIME}
    ),
    windows AS ({windows}),
    sig AS (
        SELECT host, coalesce(dp_rank, -1) AS dk, coalesce(tp_rank, -1) AS tk, ts, {_SIG} AS sig, bootstrap_room
        FROM ev WHERE {_IS_SIG}
    )
    SELECT s.host, {u} AS unit, s.dk, s.tk, s.ts, s.sig, s.bootstrap_room FROM sig s
    WHERE EXISTS (SELECT 1 FROM windows w WHERE w.host = s.host AND (w.t_from IS NULL OR s.ts > w.t_from)
                  AND (w.t_to IS NULL OR s.ts <= w.t_to))
    UNION ALL
    SELECT host, {u}, coalesce(dp_rank, -1), {_DEATH_TK}, ts, 'death', NULL FROM ev WHERE {_IS_DEATH}
    """


# one connection per thread, kept: opening one costs more than summarising a small input
_local = threading.local()


def _connection():
    import duckdb

    con = getattr(_local, "con", None)
    if con is None:
        con = _local.con = duckdb.connect(":memory:")
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET threads = 1")
    return con


def _empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema={c.name: c.dtype for c in schema.TABLES[table].stored})


def summarise(folder: Path, unit: str) -> dict[str, pl.DataFrame]:
    """The `wedge_streams` and `wedge_signals` rows of the input whose parts wait in `folder`.

    Every host of the input has rows in both, a `none` row where it has nothing to say: the catalog
    reads a missing summary as an input ingested before summaries were kept."""
    parts: dict[str, list[str]] = {"batches": [], "events": []}
    for rel in commits.staged_parts(folder):
        table = hive.table_of(rel)
        if table in parts:
            parts[table].append(os.fspath(folder / rel))
    if not parts["batches"] and not parts["events"]:
        return {t: _empty(t) for t in TABLES}
    out = {}
    con = _connection()
    try:
        con.execute(_seq_sql(parts["batches"], parts["events"]))
        out[STREAMS] = con.sql(_streams_sql(unit)).pl()
        out[SIGNALS] = (
            con.sql(_signals_sql(parts["batches"], parts["events"], unit)).pl() if parts["events"] else _empty(SIGNALS)
        )
        con.execute("DROP TABLE seq")
    except BaseException:
        _local.__dict__.pop("con", None)
        con.close()
        raise
    hosts = {hive.values_of(f).get("host") for f in parts["batches"] + parts["events"]} - {None}
    for table, column in ((STREAMS, "what"), (SIGNALS, "sig")):
        missing = hosts - set(out[table]["host"])
        if missing:
            none = pl.DataFrame({"host": sorted(missing), "unit": unit, column: "none"})
            out[table] = pl.concat([out[table], schema.conform(table, none)], how="diagonal_relaxed")
        out[table] = schema.conform(table, out[table])
    return out
