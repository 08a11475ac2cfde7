"""`forensics evidence`: the tables that go into the bug report.

Corrupted vs clean replies on every dimension (rate per bucket with its 95% Wilson interval, the
difference and risk ratio against the rest with theirs, Fisher exact p and Benjamini–Hochberg q over
every comparison made; risk-raising buckets first, by q and effect size), each corrupted reply with
the events around it, wedges, abort storms and checksum mismatches, and the clock offsets the
figures rest on.
"""

from __future__ import annotations

import math

import polars as pl

from forensics.analysis import coverage, failures, stats
from forensics.analysis.clocks import clock_warnings
from forensics.analysis.models import Evidence
from forensics.analysis.session import Session, using
from forensics.catalog import named as queries
from forensics.store import Store

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
        return pl.select(
            pl.when(values > 0).then(pl.lit("yes")).when(values.is_not_null()).then(pl.lit("no"))
        ).to_series()
    known = values.drop_nulls().cast(pl.Float64)
    if known.n_unique() < 2:
        return values.cast(pl.Utf8)
    q1, q2 = known.quantile(1 / 3, "nearest"), known.quantile(2 / 3, "nearest")
    # words rather than < and >: the labels go into Markdown, where those are HTML
    v = values.cast(pl.Float64)
    if q1 == q2:  # heavy ties: split at the value itself
        label = (
            pl.when(v <= q1).then(pl.lit(f"up to {_fmt(q1)}")).when(v.is_not_null()).then(pl.lit(f"above {_fmt(q1)}"))
        )
    else:
        label = (
            pl.when(v <= q1)
            .then(pl.lit(f"up to {_fmt(q1)}"))
            .when(v <= q2)
            .then(pl.lit(f"{_fmt(q1)} to {_fmt(q2)}"))
            .when(v.is_not_null())
            .then(pl.lit(f"above {_fmt(q2)}"))
        )
    return pl.select(label.alias(values.name)).to_series()


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 or float(v).is_integer() else f"{v:.2f}"


Q_THRESHOLD = 0.05  # false discovery rate at which a comparison counts as significant

COMPARISON_SCHEMA = {
    "dimension": pl.Utf8,
    "column": pl.Utf8,
    "bucket": pl.Utf8,
    "effect": pl.Utf8,
    "replies": pl.Int64,
    "corrupted": pl.Int64,
    "rate": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "rest_replies": pl.Int64,
    "rest_rate": pl.Float64,
    "difference": pl.Float64,
    "difference_low": pl.Float64,
    "difference_high": pl.Float64,
    "risk_ratio": pl.Float64,
    "risk_ratio_low": pl.Float64,
    "risk_ratio_high": pl.Float64,
    "p_value": pl.Float64,
    "q_value": pl.Float64,
    "significant": pl.Boolean,
}


def compare_dimensions(features: pl.DataFrame, min_replies: int = 5, q_threshold: float = Q_THRESHOLD) -> pl.DataFrame:
    """Corruption rate per bucket of every dimension, against the rest of the replies.

    Each row is one comparison: the replies split in two (Fisher exact p). A split is counted once:
    a two-valued dimension is one comparison, not a row for each side, and a low (or high) tertile
    that is protective is shown as its complement ("above X" against "up to X"), the same test read
    the way it raises risk. Both sides need `min_replies`. The q-values are Benjamini–Hochberg over
    every comparison of the run, so among thirty rows a p of 0.03 is not called significant by
    itself. Risk-raising rows come first, then protective ones (a middle tertile, a category of
    several), then those with no difference; within each, by q, then by how far the rates differ.
    """
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
        groups = [(b[0], g.height, int(g["corrupted"].sum())) for b, g in df.group_by("bucket", maintain_order=True)]
        if len(groups) == 2:
            # the two sides of one split: keep the side that raises the rate
            (b1, n1, k1), (b2, n2, k2) = groups
            groups = [groups[1]] if k2 * n1 > k1 * n2 else [groups[0]]
        for bucket, n, k in groups:
            rest_n, rest_k = known_n - n, known_k - k
            if n < min_replies or rest_n < min_replies:
                continue
            if how == "tertiles" and k * rest_n < rest_k * n and _complement(bucket):
                bucket, n, k, rest_n, rest_k = _complement(bucket), rest_n, rest_k, n, k
            rows.append(_comparison(label, col, bucket, n, k, rest_n, rest_k))
    q = stats.benjamini_hochberg([r["p_value"] for r in rows])
    for r, qv in zip(rows, q):
        r["q_value"] = qv
        r["significant"] = qv < q_threshold
    out = pl.DataFrame(rows, schema=COMPARISON_SCHEMA)
    if out.height:
        group = pl.col("effect").replace_strict({"raises": 0, "protective": 1, "none": 2}, return_dtype=pl.Int8)
        out = (
            out.with_columns(_g=group, _e=pl.col("difference").abs())
            .sort(["_g", "q_value", "_e", "dimension", "bucket"], descending=[False, False, True, False, False])
            .drop("_g", "_e")
        )
    return out.with_columns(
        pl.lit(total_n, pl.Int64).alias("all_replies"), pl.lit(total_k, pl.Int64).alias("all_corrupted")
    )


def _complement(bucket: str) -> str | None:
    """The label of the rest of the replies when `bucket` is an end tertile ("up to X" / "above X")."""
    if bucket.startswith("up to "):
        return "above " + bucket[len("up to ") :]
    if bucket.startswith("above "):
        return "up to " + bucket[len("above ") :]
    return None


def _comparison(label: str, col: str, bucket: str, n: int, k: int, rest_n: int, rest_k: int) -> dict:
    t = stats.two_proportions(k, n, rest_k, rest_n)
    diff = t["difference"]
    return {
        "dimension": label,
        "column": col,
        "bucket": bucket,
        "effect": "raises" if diff > 0 else ("protective" if diff < 0 else "none"),
        "replies": n,
        "corrupted": k,
        "rate": k / n,
        "ci_low": t["ci_a"][0],
        "ci_high": t["ci_a"][1],
        "rest_replies": rest_n,
        "rest_rate": rest_k / rest_n,
        "difference": diff,
        "difference_low": t["difference_ci"][0],
        "difference_high": t["difference_ci"][1],
        "risk_ratio": t["risk_ratio"],
        "risk_ratio_low": t["risk_ratio_ci"][0],
        "risk_ratio_high": t["risk_ratio_ci"][1],
        "p_value": t["p_value"],
    }


def build(session: Session | Store) -> Evidence:
    """The evidence report (its JSON shape is documented in the README)."""
    with using(session) as s:
        feats = s.query("reply_features")
        summary = s.con.sql(queries.internal("_reply_totals").sql).fetchall()[0]
        comparisons = compare_dimensions(feats)
        corrupted = s.query("corrupted_context")
        return Evidence(
            clock_offsets=s.offsets,
            clock_warnings=clock_warnings(s),
            summary=_summary(summary, comparisons),
            comparisons=comparisons,
            corrupted_replies=corrupted,
            # default thresholds, from the snapshotted views the timeline uses too
            wedges=s.internal("_incident_wedges"),
            abort_storms=s.internal("_incident_abort_storms"),
            checksum_mismatches=s.query("checksum_mismatches"),
            servers=failures.servers_side(s.con),
            coverage=coverage.build(s.con),
            excerpts=s.excerpts(corrupted),
        )


def _summary(row, comparisons: pl.DataFrame) -> dict:
    n, k, config, linked = row
    lo, hi = stats.wilson(k, n) if n else (math.nan, math.nan)
    sig = comparisons.filter(pl.col("significant"))
    return {
        "replies": n,
        "corrupted": k,
        "corrupted_rate": (k / n) if n else None,
        "ci_low": lo if n else None,
        "ci_high": hi if n else None,
        "config_leaks": config,
        "linked": linked,
        # how many tests the table holds, and how many survive the false-discovery correction
        "comparisons": comparisons.height,
        "q_threshold": Q_THRESHOLD,
        "significant": sig.height,
        "significant_raising": sig.filter(pl.col("effect") == "raises").height,
    }
