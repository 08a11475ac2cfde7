"""`forensics compare`: runs side by side, as in the before/after tables of a fix.

A run is a store, or a `--run` label within one. One run is the baseline: the first run of the first
store given, or of the store (or the run label) named by `--baseline`. Every other run's corruption
rate is tested against it: Fisher exact p, the difference of the rates and the risk ratio with their
95% intervals, and Benjamini–Hochberg q over the runs compared, so three runs against one baseline
are not three chances to find a difference.
"""

from __future__ import annotations

import os

import polars as pl

from forensics.analysis import stats
from forensics.analysis.clocks import clock_warnings
from forensics.analysis.models import Comparison
from forensics.analysis.session import Session
from forensics.catalog import named as queries
from forensics.core.errors import UsageError
from forensics.store import Store

ALPHA = 0.05

CORRUPTION_SCHEMA = {
    "run": pl.Utf8,
    "store": pl.Utf8,
    "replies": pl.Int64,
    "corrupted": pl.Int64,
    "rate": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "vs": pl.Utf8,
    "difference": pl.Float64,
    "difference_low": pl.Float64,
    "difference_high": pl.Float64,
    "risk_ratio": pl.Float64,
    "risk_ratio_low": pl.Float64,
    "risk_ratio_high": pl.Float64,
    "p_value": pl.Float64,
    "q_value": pl.Float64,
    "verdict": pl.Utf8,
}


def _same_path(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def runs(stores: list[str], baseline: str | None = None) -> list[str]:
    """The stores compared: those given, and a baseline store given apart from them, first."""
    stores = list(stores)
    if baseline is not None and os.path.isdir(baseline) and not any(_same_path(baseline, s) for s in stores):
        stores.insert(0, baseline)  # a baseline store not listed among the others is compared too
    return stores


def build(sessions: list[Session | Store | str], baseline: str | None = None) -> Comparison:
    """Corruption per run against the baseline run, and decode throughput by concurrency band.

    `sessions` are those of `runs(stores, baseline)`, in that order (a store or its path opens one)."""
    if not all(isinstance(x, Session) for x in sessions):
        paths = runs(
            [str(x.store.root if isinstance(x, Session) else getattr(x, "root", x)) for x in sessions], baseline
        )
        opened = [Session.open(p) for p in paths]
        try:
            return build(opened, baseline)
        finally:
            for x in opened:
                x.close()
    stores = [str(x.store.root) for x in sessions]
    rates, bands, offsets, warnings = [], [], {}, []
    for session in sessions:
        path = str(session.store.root)
        name = os.path.basename(os.path.normpath(path))
        offsets[name] = session.offsets
        r = pl.from_arrow(
            session.con.sql(queries.internal("_run_rates").sql, params={"default_run": name}).to_arrow_table()
        )
        rates.append(r.with_columns(pl.lit(path).alias("store")))
        b = session.query("decode_throughput_bands")
        warnings += [f"{name}: {w}" for w in clock_warnings(session)]
        bands.append(
            b.with_columns(pl.when(pl.col("run") == "default").then(pl.lit(name)).otherwise(pl.col("run")).alias("run"))
        )
    rate = pl.concat(rates) if rates else pl.DataFrame()
    base, why = _baseline(rate, stores, baseline)
    rows = []
    for r in rate.iter_rows(named=True):
        lo, hi = stats.wilson(r["corrupted"], r["replies"])
        row = {
            "run": r["run"],
            "store": r["store"],
            "replies": r["replies"],
            "corrupted": r["corrupted"],
            "rate": r["corrupted"] / r["replies"] if r["replies"] else None,
            "ci_low": lo,
            "ci_high": hi,
            "verdict": "baseline",
        }
        if base is not None and (r["run"], r["store"]) != (base["run"], base["store"]):
            t = stats.two_proportions(r["corrupted"], r["replies"], base["corrupted"], base["replies"])
            row.update(
                vs=base["run"],
                difference=t["difference"],
                difference_low=t["difference_ci"][0],
                difference_high=t["difference_ci"][1],
                risk_ratio=t["risk_ratio"],
                risk_ratio_low=t["risk_ratio_ci"][0],
                risk_ratio_high=t["risk_ratio_ci"][1],
                p_value=t["p_value"],
                verdict=None,
            )
        rows.append(row)
    compared = [r for r in rows if r["verdict"] != "baseline"]
    for r, q in zip(compared, stats.benjamini_hochberg([r["p_value"] for r in compared])):
        r["q_value"] = q
        r["verdict"] = "significant" if q < ALPHA else "within noise"
    # the baseline first, then the others in the order given
    rows.sort(key=lambda r: r["verdict"] != "baseline")
    with_replies = set(rate["store"]) if rate.height else set()
    return Comparison(
        clock_offsets=offsets,
        clock_warnings=warnings,
        without_replies=[s for s in stores if s not in with_replies],
        baseline=None if base is None else {"run": base["run"], "store": base["store"], "chosen_by": why},
        corruption=pl.DataFrame(rows, schema=CORRUPTION_SCHEMA),
        throughput=pl.concat(bands) if bands else pl.DataFrame(),
    )


def _baseline(rate: pl.DataFrame, stores: list[str], baseline: str | None) -> tuple[dict | None, str]:
    """The baseline run and why it is the baseline."""
    if rate.height == 0:
        return None, ""
    if baseline is None:
        first = rate.row(0, named=True)
        return first, (
            "the first store given"
            if _same_path(first["store"], stores[0])
            else "the first store given that holds replies"
        )
    if os.path.isdir(baseline):
        for r in rate.iter_rows(named=True):
            if _same_path(r["store"], baseline):
                return r, "--baseline"
        raise UsageError(
            f"--baseline {baseline}: that store holds no replies to compare",
            help="name a store with agent transcripts, or leave --baseline out",
        )
    labelled = rate.filter(pl.col("run") == baseline)
    if labelled.height == 1:
        return labelled.row(0, named=True), "--baseline"
    known = ", ".join(sorted(set(rate["run"])))
    raise UsageError(
        f"--baseline {baseline}: neither a store nor a single run label",
        help=f"give one of the stores, or one of the runs: {known}",
    )
