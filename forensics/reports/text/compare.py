"""The comparison of runs' corruption rates: terminal, Markdown and JSON.

They know the result model, not SQL. The JSON shapes are a contract documented in the README.
"""

from __future__ import annotations

import sys

import polars as pl

from forensics.analysis.models import Comparison
from forensics.reports.escape import markdown_code, markdown_text
from forensics.reports.serialize import markdown
from forensics.reports.text.common import _jsonable, _pct, _ratio, _sig, evidence_json, markdown_warnings


def comparison_table(comp: pl.DataFrame) -> pl.DataFrame:
    """The comparisons as shown: rates and effects with their intervals, p and q side by side."""
    rows = []
    for r in comp.iter_rows(named=True):
        rows.append(
            {
                "dimension": r["dimension"],
                "bucket": r["bucket"],
                "effect": r["effect"] + (" *" if r["significant"] else ""),
                "replies": r["replies"],
                "corrupted": r["corrupted"],
                "rate": f"{_pct(r['rate'])}% ({_pct(r['ci_low'])}-{_pct(r['ci_high'])})",
                "rest": f"{_pct(r['rest_rate'])}%",
                "difference": f"{r['difference'] * 100:+.1f} pts ({r['difference_low'] * 100:+.1f} to "
                f"{r['difference_high'] * 100:+.1f})",
                "risk ratio": f"{_ratio(r['risk_ratio'])} ({_ratio(r['risk_ratio_low'])}-{_ratio(r['risk_ratio_high'])})",
                "Fisher p": _sig(r["p_value"]),
                "BH q": _sig(r["q_value"]),
            }
        )
    return pl.DataFrame(rows, schema={c: (pl.Int64 if c in ("replies", "corrupted") else pl.Utf8) for c in rows[0]})


def _context_table(df: pl.DataFrame) -> pl.DataFrame:
    if df.height == 0:
        return df

    def events(evs):
        return "; ".join(
            f"{e['ts'].strftime('%H:%M:%S') if e['ts'] else '?'} {e['host']} {e['kind']}"
            + (f" ({e['reason']})" if e["reason"] else "")
            for e in (evs or [])
        )

    return df.select(
        "t_start",
        "source",
        "session_id",
        "turn_id",
        "corruption_class",
        "decode_host",
        "bootstrap_room",
        pl.col("evidence").str.slice(0, 120),
    ).with_columns(pl.Series("events nearby", [events(v) for v in df["events"].to_list()], dtype=pl.Utf8))


def render_compare(result: Comparison, fmt: str, out=None) -> None:
    out = out or sys.stdout
    if fmt == "json":
        out.write(evidence_json({"kind_detail": "compare", **{k: _jsonable(v) for k, v in result.items()}}) + "\n")
        return
    out.write("## Corruption rate per run\n\n")
    markdown_warnings(out, result.clock_warnings)
    b = result.baseline
    if b:
        out.write(
            f"Baseline: run {markdown_code(b['run'])} of store {markdown_code(b['store'])} "
            f"({markdown_text(b['chosen_by'], inline=True)}; `--baseline` chooses another). "
            "Every other run is tested against it.\n\n"
        )
    for path in result.without_replies or []:
        out.write(f"Store {markdown_code(path)} holds no agent replies: it is not in the table.\n\n")
    c = result.corruption
    if c.height:
        rows = []
        for r in c.iter_rows(named=True):
            vs = r["verdict"] != "baseline"
            rows.append(
                {
                    "run": r["run"],
                    "replies": r["replies"],
                    "corrupted": r["corrupted"],
                    "rate": f"{_pct(r['rate'])}% ({_pct(r['ci_low'])}-{_pct(r['ci_high'])})",
                    "vs": r["vs"] or "",
                    "difference": (
                        f"{r['difference'] * 100:+.1f} pts ({r['difference_low'] * 100:+.1f} to "
                        f"{r['difference_high'] * 100:+.1f})"
                    )
                    if vs
                    else "",
                    "risk ratio": (
                        f"{_ratio(r['risk_ratio'])} ({_ratio(r['risk_ratio_low'])}-{_ratio(r['risk_ratio_high'])})"
                    )
                    if vs
                    else "",
                    "Fisher p": _sig(r["p_value"]) if vs else "",
                    "BH q": _sig(r["q_value"]) if vs else "",
                    "verdict": r["verdict"],
                }
            )
        out.write(markdown(pl.DataFrame(rows)))
        out.write(
            "\n_Intervals are 95% (Wilson, Newcombe, Katz); the verdict is q < 0.05, q being "
            "Benjamini–Hochberg over the runs compared (p itself when there is one)._\n"
        )
    else:
        out.write("_no replies in these stores_\n")
    out.write("\n## Decode throughput by concurrency band\n\n")
    out.write(markdown(result.throughput) if result.throughput.height else "_no decode stats_\n")
