"""Render a result (a polars frame) as a rich table, CSV, JSON or Markdown.

Text from logs and transcripts is untrusted: each format escapes it with forensics.reports.escape
(terminal escapes visible, CSV formulas quoted, Markdown syntax escaped, JSON with control characters
as \\u escapes).
"""

from __future__ import annotations

import datetime as dt
import json
import sys

import polars as pl

from forensics.reports.escape import CONTROL, csv_frame, escape_control, markdown_text, rich_text

FORMATS = ("table", "csv", "json", "markdown")


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, dict)):
        return json.dumps(v, default=str, ensure_ascii=False)
    return escape_control(str(v))


def dumps_json(obj) -> str:
    """JSON with non-ASCII text kept readable but control and bidi characters as \\u escapes."""
    text = json.dumps(obj, default=_json_default, ensure_ascii=False, indent=1)
    return CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _json_default(v):
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return str(v)


def to_json_rows(df: pl.DataFrame) -> list[dict]:
    """Rows as JSON-safe dicts; 64-bit ints beyond 2^53 (rooms) become strings."""
    out = []
    for row in df.iter_rows(named=True):
        out.append({k: (str(v) if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 else v)
                    for k, v in row.items()})
    return out


def flat(df: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs, maps) as JSON text, for CSV and tables."""
    nested = [c for c, t in df.schema.items() if t.is_nested() or str(t).lower().startswith(("map", "object"))]
    if not nested:
        return df
    return df.with_columns(
        pl.Series(c, [None if v is None else json.dumps(v, default=_json_default, ensure_ascii=False)
                      for v in df[c].to_list()], dtype=pl.Utf8)
        for c in nested)


def render(df: pl.DataFrame, fmt: str, out=None, title: str | None = None) -> None:
    out = out or sys.stdout
    if fmt == "csv":
        out.write(csv_text(df))
    elif fmt == "json":
        out.write(dumps_json(to_json_rows(df)) + "\n")
    elif fmt == "markdown":
        out.write(markdown(df))
    else:
        from rich.table import Table

        t = Table(title=None if title is None else rich_text(title), show_lines=False, header_style="bold")
        for c in df.columns:
            t.add_column(rich_text(c), overflow="fold")
        for row in df.iter_rows():
            t.add_row(*[rich_text(_cell(v)) for v in row])
        console(out, width=max(120, min(250, 16 * df.width))).print(t)


def head_line(line: str, fmt: str) -> str:
    """A line printed above a result in `fmt`: escaped as Markdown text beside Markdown, else terminal text."""
    return markdown_text(line) if fmt == "markdown" else escape_control(line)


def console(out, **kw):
    """A rich console that reads no markup, emoji codes or highlights in what it prints."""
    from rich.console import Console

    return Console(file=out, markup=False, emoji=False, highlight=False, **kw)


def csv_text(df: pl.DataFrame) -> str:
    """`df` as CSV, nested columns as JSON text and text cells safe in a spreadsheet (escape.csv_cell)."""
    return csv_frame(flat(df)).write_csv() if df.width else ""


def markdown(df: pl.DataFrame) -> str:
    """`df` as a GitHub table; every cell, header too, is escaped (escape.markdown_text)."""
    lines = ["| " + " | ".join(markdown_text(c, inline=True) for c in df.columns) + " |", "|" + "---|" * df.width]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(markdown_text(_cell(v), inline=True) for v in row) + " |")
    return "\n".join(lines) + "\n"
