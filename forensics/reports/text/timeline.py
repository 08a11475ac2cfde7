"""The timeline report: terminal table, Markdown, CSV and JSON.

They know the result model, not SQL. The JSON shapes are a contract documented in the README.
"""

from __future__ import annotations

import sys

import polars as pl

from forensics.analysis.clocks import describe_offsets
from forensics.analysis.models import Timeline
from forensics.reports.escape import markdown_text, rich_text
from forensics.reports.render import console, print_table, table_width
from forensics.reports.serialize import csv_text, dumps_json, markdown, to_json_rows
from forensics.reports.text.common import (
    _cell,
    _clean_floats,
    _coverage_md,
    _jsonable,
    _markdown_section,
    _rich_frame,
    _wedge_section,
    coverage_head,
    markdown_lead,
    markdown_warnings,
    print_warnings,
    storm_table,
    wedge_incidents,
    wedge_table,
)

TIMELINE_TABLE_COLUMNS = [
    "bucket_start",
    "replies",
    "corrupted_rate",
    "prefill_new_tokens_per_s",
    "prefill_queue_req",
    "prefill_bootstrap_req",
    "decode_running_req",
    "decode_gen_throughput",
    "transfers",
    "transfer_p99_ms",
    "failed_requests",
    "failure_lines",
    "failure_signals",
    "aborts",
    "errors",
]


def timeline_json(model: Timeline) -> str:
    rows = model.rows
    doc = {
        "kind": "forensics.timeline",
        "version": 1,
        "bucket_s": model.bucket_s,
        "since": model.since,
        "until": model.until,
        "host": model.host,
        "clock_offsets": model.clock_offsets,
        "clock_warnings": model.clock_warnings,
        "columns": rows.columns,
        "rows": _clean_floats(to_json_rows(rows)),
        "wedges": _clean_floats(to_json_rows(model.wedges)),
        "abort_storms": _clean_floats(to_json_rows(model.abort_storms)),
        "coverage": _jsonable(model.coverage or {}),
        "notes": model.notes,
    }
    return dumps_json(doc)


def render_timeline(model: Timeline, fmt: str, out=None) -> None:
    out = out or sys.stdout
    rows = model.rows
    if fmt == "json":
        out.write(timeline_json(model) + "\n")
        return
    if fmt == "csv":
        # CSV has no header to carry them: the warnings go where the user still sees them
        for w in [*coverage_head(model), *model.clock_warnings]:
            sys.stderr.write(w + "\n")
        out.write(csv_text(rows))
        return
    if fmt == "markdown":
        markdown_lead(out, model)
        out.write(
            f"_{markdown_text(describe_offsets(model.clock_offsets), inline=True)}; "
            f"bucket {model.bucket_s:g} s{_coverage_md(model)}_\n\n"
        )
        markdown_warnings(out, model.clock_warnings)
        for note in model.notes:
            out.write(f"_note: {markdown_text(note, inline=True)}_\n\n")
        shown = rows.filter((pl.col("anomaly") != "") | (pl.col("replies") > 0) | pl.col("transfers").gt(0))
        out.write(markdown(shown.select(timeline_columns(rows)[0])))
        _wedge_section(out, model.wedges)
        _markdown_section(out, "Abort storms", storm_table(model.abort_storms))
        return
    from rich.text import Text

    con = console(out, width=table_width(out) or 10**6)
    for w in coverage_head(model):
        con.print(rich_text(w, style="bold red"), soft_wrap=True)
    print_warnings(con, model.clock_warnings)
    cols, keep_first = timeline_columns(rows)
    cells = [[_cell(r[c]) for c in cols] for r in rows.select(cols).iter_rows(named=True)]
    styles = [
        "bold red" if "wedge" in a or "storm" in a else ("yellow" if a else None)
        for (a,) in rows.select("anomaly").iter_rows()
    ]
    print_table(
        out,
        [_stacked(c) for c in cols],
        cells,
        styles=styles,
        wrap=frozenset({"anomaly"}),
        title=f"timeline ({model.bucket_s:g} s buckets) — {describe_offsets(model.clock_offsets)}",
        first=tuple(_stacked(c) for c in keep_first),
        ends=False,
    )
    if cov := model.coverage:
        con.print(rich_text(cov["line"]), soft_wrap=True)
    for note in model.notes:
        con.print(rich_text(f"note: {note}"), soft_wrap=True)
    if model.wedges.height:
        con.print(Text("wedges", style="bold"))
        for line in wedge_incidents(model.wedges):
            con.print(rich_text(line), soft_wrap=True)
        _rich_frame(out, wedge_table(model.wedges))
    if model.abort_storms.height:
        con.print(Text("abort storms", style="bold"))
        _rich_frame(out, storm_table(model.abort_storms))


# what a timeline is read for, in the order a narrow terminal keeps it: when the failures and aborts
# are, and why a bucket stands out (its anomaly text names the failures' reasons and the markers)
TIMELINE_KEPT = ("bucket_start", "failed_requests", "aborts", "anomaly")

REPLY_COLUMNS = ("replies", "corrupted_rate")


def timeline_columns(rows: pl.DataFrame) -> tuple[list[str], list[str]]:
    """The table's columns in their order, and the order a narrow table keeps them in.

    A window without replies (a store of server logs) has no reply columns at all. Of the rest, the
    failures, aborts and anomalies come first; then the columns that say most (the most buckets with
    a value other than 0), and the empty ones last, so they are the first to go."""
    cols = [*TIMELINE_TABLE_COLUMNS, "anomaly"]
    if rows.height and not (rows["replies"].fill_null(0) > 0).any():
        cols = [c for c in cols if c not in REPLY_COLUMNS]

    def said(c: str) -> int:
        v = rows[c]
        if v.dtype == pl.Utf8:
            return int((v.fill_null("") != "").sum())
        return int((v.fill_null(0) != 0).sum()) if v.dtype.is_numeric() else int(v.is_not_null().sum())

    rest = sorted((c for c in cols if c not in TIMELINE_KEPT), key=lambda c: (said(c) == 0, -said(c)))
    return cols, [*(c for c in TIMELINE_KEPT if c in cols), *rest]


def _stacked(name: str) -> str:
    """A column name on as many lines as its words need, so a narrow column keeps its whole name."""
    import textwrap

    words = name.split("_")
    return "\n".join(textwrap.wrap(" ".join(words), width=max(10, *map(len, words))))
