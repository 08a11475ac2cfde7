"""`forensics evidence`: the tables that go into the bug report.

Corrupted vs clean replies on every dimension (rate per bucket, risk ratio against the rest, 95%
Wilson interval, Fisher exact p, ranked by strength), each corrupted reply with the events around
it, wedges, abort storms and checksum mismatches, and the clock offsets the figures rest on.
"""

from __future__ import annotations

import math

import polars as pl

from forensics.analysis import stats
from forensics.analysis.clocks import clock_warnings
from forensics.analysis.db import connect
from forensics.catalog import named as queries
from forensics.catalog.sql import run_sql
from forensics.ingest.store import Store

# dimension -> (feature column, how to bucket it, label)
DIMENSIONS = [
    ("prefill_queue_req", "tertiles", "prefill queue depth when prefilled"),
    ("prefill_new_tokens_per_s", "tertiles", "prefill new-token rate when prefilled (tok/s)"),
    ("transfer_ms", "tertiles", "KV transfer duration (ms)"),
    ("failures_before", "any", "transfer failures on the same decode host in the 60 s before its KV arrived"),
    ("aborts_before", "any", "aborts on the same decode host in the 60 s before its KV arrived"),
    ("concurrency", "tertiles", "replies in flight at the start"),
    ("decode_running_req", "tertiles", "decode running requests at the start"),
    ("decode_host", "category", "decode host"),
    ("decode_rank", "category", "decode rank"),
    ("minutes_since_start", "tertiles", "minutes since the first reply"),
]


def _buckets(values: pl.Series, how: str) -> pl.Series:
    """A label per reply for one dimension; NULL where the dimension is unknown."""
    if how == "category":
        return values.cast(pl.Utf8)
    if how == "any":
        return pl.select(pl.when(values > 0).then(pl.lit("yes")).when(values.is_not_null()).then(pl.lit("no"))
                         ).to_series()
    known = values.drop_nulls().cast(pl.Float64)
    if known.n_unique() < 2:
        return values.cast(pl.Utf8)
    q1, q2 = known.quantile(1 / 3, "nearest"), known.quantile(2 / 3, "nearest")
    # words rather than < and >: the labels go into Markdown, where those are HTML
    v = values.cast(pl.Float64)
    if q1 == q2:  # heavy ties: split at the value itself
        label = pl.when(v <= q1).then(pl.lit(f"up to {_fmt(q1)}")).when(v.is_not_null()).then(
            pl.lit(f"above {_fmt(q1)}"))
    else:
        label = (pl.when(v <= q1).then(pl.lit(f"up to {_fmt(q1)}"))
                 .when(v <= q2).then(pl.lit(f"{_fmt(q1)} to {_fmt(q2)}"))
                 .when(v.is_not_null()).then(pl.lit(f"above {_fmt(q2)}")))
    return pl.select(label.alias(values.name)).to_series()


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 or float(v).is_integer() else f"{v:.2f}"


def compare_dimensions(features: pl.DataFrame, min_replies: int = 5) -> pl.DataFrame:
    """Corruption rate per bucket of every dimension, against the rest of the replies."""
    rows = []
    # config leaks are a template problem from the first request on, not a load effect
    f = features.filter(pl.col("corruption_class") != "config")
    total_n, total_k = f.height, int(f["corrupted"].sum() or 0)
    for col, how, label in DIMENSIONS:
        if col not in f.columns:
            continue
        lab = _buckets(f[col], how)
        df = pl.DataFrame({"bucket": lab, "corrupted": f["corrupted"].fill_null(False)}).drop_nulls("bucket")
        known_n = df.height
        known_k = int(df["corrupted"].sum() or 0)
        for bucket, g in df.group_by("bucket", maintain_order=True):
            n, k = g.height, int(g["corrupted"].sum())
            rest_n, rest_k = known_n - n, known_k - k
            if n < min_replies or rest_n == 0:
                continue
            lo, hi = stats.wilson(k, n)
            rows.append({
                "dimension": label, "column": col, "bucket": bucket[0], "replies": n, "corrupted": k,
                "rate": k / n, "ci_low": lo, "ci_high": hi, "rest_replies": rest_n, "rest_rate": rest_k / rest_n,
                "risk_ratio": stats.risk_ratio(k, n, rest_k, rest_n),
                "p_value": stats.fisher_exact(k, n - k, rest_k, rest_n - rest_k),
            })
    out = pl.DataFrame(rows, schema={
        "dimension": pl.Utf8, "column": pl.Utf8, "bucket": pl.Utf8, "replies": pl.Int64, "corrupted": pl.Int64,
        "rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "rest_replies": pl.Int64,
        "rest_rate": pl.Float64, "risk_ratio": pl.Float64, "p_value": pl.Float64})
    if out.height == 0:
        return out
    # strongest first: smallest p, then the largest effect either way
    strength = pl.col("risk_ratio").map_elements(
        lambda r: abs(math.log(r)) if r and r > 0 and math.isfinite(r) else (99.0 if r == math.inf else 0.0),
        return_dtype=pl.Float64)
    return out.with_columns(_s=strength).sort(["p_value", "_s"], descending=[False, True]).drop("_s") \
        .with_columns(pl.lit(total_n).alias("all_replies"), pl.lit(total_k).alias("all_corrupted"))


def build(store: Store) -> dict:
    """The evidence report as a plain dict (the JSON shape documented in the README)."""
    offsets = store.clocks()
    con = connect(store.require(), offsets, materialize=True)
    try:
        feats = queries.run(store, "reply_features", con=con)
        summary = con.sql(
            "SELECT count(*) AS replies, count(*) FILTER (WHERE corrupted) AS corrupted, "
            "count(*) FILTER (WHERE corruption_class = 'config') AS config_leaks, "
            "count(*) FILTER (WHERE link_method IS NOT NULL) AS linked FROM replies").fetchall()[0]
        report = {
            "clock_offsets": offsets,
            "clock_warnings": clock_warnings(store, con),
            "summary": _summary(summary),
            "comparisons": compare_dimensions(feats),
            "corrupted_replies": queries.run(store, "corrupted_context", con=con),
            # default thresholds, from the snapshotted views the timeline uses too
            "wedges": run_sql(store, "SELECT * FROM incident_wedges ORDER BY t_start, host, kind", con=con),
            "abort_storms": run_sql(store, "SELECT * FROM incident_abort_storms ORDER BY t_start", con=con),
            "checksum_mismatches": queries.run(store, "checksum_mismatches", con=con),
        }
    finally:
        con.close()
    return report


def _summary(row) -> dict:
    n, k, config, linked = row
    lo, hi = stats.wilson(k, n) if n else (math.nan, math.nan)
    return {"replies": n, "corrupted": k, "corrupted_rate": (k / n) if n else None,
            "ci_low": lo if n else None, "ci_high": hi if n else None, "config_leaks": config, "linked": linked}
