"""`forensics timeline`: what happened when, one row per time bucket, with wedge and storm markers."""

from __future__ import annotations

import re

import polars as pl

from forensics.analysis.clocks import clock_warnings
from forensics.analysis.db import connect
from forensics.catalog import named as queries
from forensics.catalog.sql import run_sql
from forensics.core.errors import UsageError
from forensics.ingest.store import Store

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """'10s', '500ms', '2m', '1h' or plain seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h)?\s*", str(text))
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"cannot read the duration {text!r}", help="write e.g. 10s, 500ms, 2m or 1h")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


# `--bucket auto`: 10 s, or the first of these that keeps the span within MAX_AUTO_BUCKETS rows
AUTO_BUCKETS_S = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_AUTO_BUCKETS = 500


def auto_bucket(span_s: float | None) -> float:
    """The bucket for a span: 10 s for an incident of minutes, wider for hours of logs (a 6 h dump in
    10 s buckets is 2,160 rows nobody reads in a terminal)."""
    for b in AUTO_BUCKETS_S:
        if not span_s or span_s / b <= MAX_AUTO_BUCKETS:
            return float(b)
    return float(AUTO_BUCKETS_S[-1])


def _span_s(con, since: str | None, until: str | None) -> float | None:
    """Seconds between `since` and `until`, by default the span of the inputs that hold at least 1%
    of the lines: one old or stray small log must not widen the buckets of the whole incident."""
    [(lo, hi)] = con.execute(
        "SELECT coalesce(CAST(? AS TIMESTAMPTZ), min(first_ts)), coalesce(CAST(? AS TIMESTAMPTZ), max(last_ts)) "
        "FROM files WHERE lines >= 0.01 * (SELECT sum(lines) FROM files)", [since, until]).fetchall()
    return (hi - lo).total_seconds() if lo is not None and hi is not None else None


def build(store: Store, bucket: str = "auto", since: str | None = None, until: str | None = None,
          host: str | None = None) -> dict:
    """The timeline as a result model: params, clock offsets, bucket rows and the marker intervals."""
    offsets = store.clocks()
    con = connect(store.require(), offsets, materialize=True)
    try:
        bucket_s = auto_bucket(_span_s(con, since, until)) if bucket == "auto" else parse_duration(bucket)
        rows = queries.run(store, "timeline", {"bucket_s": bucket_s, "since": since, "until": until, "host": host},
                           con=con)
        # the default thresholds, as the bucket markers use them (one shared, snapshotted computation)
        wedges = run_sql(store, "SELECT * FROM incident_wedges ORDER BY t_start, host, kind", con=con)
        storms = run_sql(store, "SELECT * FROM incident_abort_storms ORDER BY t_start", con=con)
        warnings = clock_warnings(store, con)
    finally:
        con.close()
    if host:
        wedges = wedges.filter(pl.col("host") == host)
        storms = storms.filter(pl.col("hosts").list.contains(host))
    return {"bucket_s": bucket_s, "since": since, "until": until, "host": host, "clock_offsets": offsets,
            "clock_warnings": warnings, "rows": rows, "wedges": wedges, "abort_storms": storms}


def anomalies(rows: pl.DataFrame) -> pl.Series:
    """Why a bucket stands out (empty when it does not): markers, failures, corruption above baseline."""
    if rows.height == 0:
        return pl.Series("anomaly", [], dtype=pl.Utf8)
    base = rows["corrupted_rate"].drop_nulls().median() or 0.0
    return rows.select(
        pl.concat_str([
            pl.when(pl.col("wedged_hosts").list.len() > 0).then(pl.lit("wedge ") + pl.col("wedged_hosts").list.join(",")),
            pl.when(pl.col("abort_storm_hosts").list.len() > 0)
            .then(pl.lit("abort storm ") + pl.col("abort_storm_hosts").list.join(",")),
            pl.when(pl.col("transfer_failures") > 0).then(pl.format("{} failures", pl.col("transfer_failures"))),
            pl.when((pl.col("corrupted_rate") > max(2 * base, 0.1)) & (pl.col("replies") >= 3))
            .then(pl.format("corrupted {}", pl.col("corrupted_rate"))),
        ], separator="; ", ignore_nulls=True).alias("anomaly")
    ).to_series()
