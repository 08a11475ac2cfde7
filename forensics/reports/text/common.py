"""What the text reports share: JSON values, the coverage lead and warnings, rich cells, the wedge and storm tables.

They know the result model, not SQL. The JSON shapes are a contract documented in the README.
"""

from __future__ import annotations

import datetime as dt
import math

import polars as pl

from forensics.analysis.clocks import SET_IT
from forensics.analysis.models import Evidence, Timeline
from forensics.reports.escape import escape_control, markdown_code, markdown_text, rich_text
from forensics.reports.render import print_table
from forensics.reports.serialize import dumps_json, flat, markdown, to_json_rows


def _jsonable(v):
    if isinstance(v, pl.DataFrame):
        return to_json_rows(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def _clean_floats(rows):
    return [{k: _jsonable(v) for k, v in r.items()} for r in rows]


def coverage_head(model: Timeline | Evidence) -> list[str]:
    """What a report says first when much of its input went unread (forensics.analysis.coverage): that
    its counts are lower bounds, and which inputs are not understood; nothing otherwise."""
    cov = model.coverage or {}
    return [f"warning: {cov['lead']}"] if cov.get("lead") else []


def markdown_lead(out, model: Timeline | Evidence) -> None:
    for w in coverage_head(model):
        out.write(f"> **{markdown_text(w, inline=True)}**\n\n")


def _coverage_md(model: Timeline | Evidence) -> str:
    cov = model.coverage
    return f"; {markdown_text(cov['line'], inline=True)}" if cov else ""


def markdown_warnings(out, warnings: list[str]) -> None:
    """The header's clock warnings (forensics.analysis.clocks.clock_warnings) as Markdown quotes."""
    for w in warnings:
        text, _, command = w.rpartition(SET_IT)
        out.write(
            f"> **{markdown_text((text or command).strip(), inline=True)}**"
            + (f" {markdown_text(SET_IT, inline=True)}{markdown_code(command)}" if text else "")
            + "\n\n"
        )


def print_warnings(con, warnings: list[str]) -> None:
    """The header's clock warnings on a rich console, as plain text (host names are not markup)."""
    for w in warnings:
        # never wrapped: the command in it is copied and pasted
        con.print(rich_text(w, style="bold yellow"), soft_wrap=True)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return escape_control(str(v))


def _rich_frame(out, df: pl.DataFrame) -> None:
    f = flat(df)
    print_table(out, f.columns, [[_cell(v) for v in r] for r in f.iter_rows()], ends=False)


def storm_table(df: pl.DataFrame) -> pl.DataFrame:
    """The abort storms as a report shows them: the per-host counts as their one line of text, hosts joined."""
    if df.height == 0 or "host_counts" not in df.columns:
        return df
    out = df.drop("per_host", strict=False)
    # the counts per host say most: they come right after the storm's size, before what is cut first
    first = [c for c in ("t_start", "t_end", "n_aborts", "host_counts") if c in out.columns]
    out = out.select(*first, *[c for c in out.columns if c not in first])
    if out.schema.get("hosts") == pl.List(pl.Utf8):
        out = out.with_columns(pl.col("hosts").list.join(", "))
    return out


# a wedge can hold thousands of stuck rooms: tables show the first few and how many more
ROOMS_SHOWN = 3


def _abbrev(rooms) -> str:
    rooms = list(rooms or [])
    more = len(rooms) - ROOMS_SHOWN
    return ", ".join(rooms[:ROOMS_SHOWN]) + (f" +{more} more" if more > 0 else "")


def wedge_table(df: pl.DataFrame) -> pl.DataFrame:
    """The wedges as a report shows them: rank as one label, rooms abbreviated, signals as text."""
    if df.height == 0:
        return df
    rank = pl.concat_str([pl.format("DP{}", "dp_rank"), pl.format("TP{}", "tp_rank")], separator=" ", ignore_nulls=True)
    return df.select(
        "incident",
        "host",
        pl.when(rank != "").then(rank).alias("rank"),
        "kind",
        "t_start",
        "t_end",
        "silent_s",
        "in_flight",
        "n_rooms",
        pl.Series("rooms", [_abbrev(r) for r in df["rooms"].to_list()], dtype=pl.Utf8),
        "ended_by",
        pl.col("signals").list.join("; ").alias("signals"),
    )


def wedge_incidents(df: pl.DataFrame) -> list[str]:
    """One line per incident of several hosts, said once above the rows it groups."""
    lines = []
    if df.height == 0 or "incident" not in df.columns:
        return lines
    for (inc,), g in df.sort("t_start").group_by("incident", maintain_order=True):
        hosts = sorted(set(g["host"]))
        if len(hosts) < 2:
            continue
        t0, t1 = g["t_start"].min(), g["t_start"].max()
        lines.append(
            f"incident {inc}: {', '.join(hosts)} wedged within {(t1 - t0).total_seconds():.0f} s "
            f"from {t0:%Y-%m-%d %H:%M:%S} UTC ({g.height} wedges, {int(g['in_flight'].sum())} requests "
            "in flight)"
        )
    return lines


def _wedge_section(out, df: pl.DataFrame) -> None:
    out.write("\n### Wedges\n\n")
    if df.height == 0:
        out.write("_none found_\n")
        return
    for line in wedge_incidents(df):
        out.write(f"- {markdown_text(line, inline=True)}\n")
    out.write("\n" if wedge_incidents(df) else "")
    out.write(markdown(wedge_table(df)))


def _markdown_section(out, title: str, df: pl.DataFrame) -> None:
    out.write(f"\n### {title}\n\n")
    out.write(markdown(df) if df.height else "_none found_\n")


def evidence_json(report: Evidence | dict) -> str:
    """A report as its JSON document: its fields in their order (the contract the README documents)."""
    doc = {"kind": "forensics.evidence", "version": 1}
    doc.update({k: _jsonable(v) for k, v in report.items()})
    for k, v in doc.items():
        if isinstance(v, list):
            doc[k] = _clean_floats(v) if v and isinstance(v[0], dict) else v
    return dumps_json(doc)


def _pct(v) -> str:
    return "" if v is None or not math.isfinite(v) else f"{100 * v:.1f}"


def _ratio(v) -> str:
    if v is None or math.isnan(v):
        return ""
    # an exact 0 is the ratio of a group with no corrupted reply, not a small one rounded
    return "inf" if math.isinf(v) else "0" if v == 0 else f"{v:.2f}"


def _sig(v) -> str:
    return "" if v is None or math.isnan(v) else f"{v:.2g}"
