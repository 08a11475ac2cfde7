"""`forensics compare`: runs side by side, as in the before/after tables of a fix.

A run is a store, or a `--run` label within one. The first run is the baseline: every other run's
corruption rate is tested against it (Fisher exact) and called significant or within noise.
"""

from __future__ import annotations

import os

import polars as pl

from forensics.analysis import stats
from forensics.analysis.clocks import clock_warnings
from forensics.analysis.db import connect
from forensics.catalog import named as queries
from forensics.ingest.store import Store

RATE_SQL = """
SELECT coalesce(f.run, $default_run) AS run, count(*) AS replies, count(*) FILTER (WHERE r.corrupted) AS corrupted
FROM replies r LEFT JOIN files f ON f.path = r.source_file
WHERE r.corruption_class <> 'config'
GROUP BY ALL ORDER BY run
"""


def build(stores: list[str]) -> dict:
    rates, bands, offsets, warnings = [], [], {}, []
    for path in stores:
        store = Store(path).require()
        name = os.path.basename(os.path.normpath(path))
        offsets[name] = store.clocks()
        con = connect(store, offsets[name], materialize=True)
        try:
            rates.append(pl.from_arrow(con.sql(RATE_SQL, params={"default_run": name}).to_arrow_table()))
            b = queries.run(store, "decode_throughput_bands", con=con)
            warnings += [f"{name}: {w}" for w in clock_warnings(store, con)]
            bands.append(b.with_columns(pl.when(pl.col("run") == "default").then(pl.lit(name))
                                        .otherwise(pl.col("run")).alias("run")))
        finally:
            con.close()
    rate = pl.concat(rates) if rates else pl.DataFrame()
    rows = []
    base = rate.row(0, named=True) if rate.height else None
    for r in rate.iter_rows(named=True):
        lo, hi = stats.wilson(r["corrupted"], r["replies"])
        row = {"run": r["run"], "replies": r["replies"], "corrupted": r["corrupted"],
               "rate": r["corrupted"] / r["replies"] if r["replies"] else None, "ci_low": lo, "ci_high": hi,
               "vs": None, "risk_ratio": None, "p_value": None, "verdict": "baseline"}
        if base is not None and r["run"] != base["run"]:
            t = stats.two_proportions(r["corrupted"], r["replies"], base["corrupted"], base["replies"])
            row.update(vs=base["run"], risk_ratio=t["risk_ratio"], p_value=t["p_value"], verdict=t["verdict"])
        rows.append(row)
    return {"clock_offsets": offsets, "clock_warnings": warnings, "corruption": pl.DataFrame(rows) if rows else pl.DataFrame(),
            "throughput": pl.concat(bands) if bands else pl.DataFrame()}
