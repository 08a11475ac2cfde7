"""A result frame as text: the cell and JSON values every format shares, and CSV, TSV, JSON Lines
and Markdown (forensics.reports.render picks one; the tables for a person are its own)."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import polars as pl

from forensics.reports.escape import CONTROL, csv_frame, escape_control, markdown_text

# a list longer than LIST_ALL items is shown as its first LIST_SHOWN and how many more
LIST_ALL, LIST_SHOWN = 5, 3


JSON_SAFE = 2**53


def _cell(v, whole: bool = False) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list) and not whole and len(v) > LIST_ALL:
        shown = json.dumps(v[:LIST_SHOWN], default=str, ensure_ascii=False)
        return escape_control(f"{shown[:-1]}, … +{len(v) - LIST_SHOWN} more]")
    if isinstance(v, (list, dict)):
        return escape_control(json.dumps(v, default=str, ensure_ascii=False))
    return escape_control(str(v))


def dumps_json(obj) -> str:
    """JSON with non-ASCII text kept readable but control and bidi characters as \\u escapes."""
    text = json.dumps(obj, default=_json_default, ensure_ascii=False, indent=1)
    return CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _json_default(v):
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return str(v)


def json_number(v):
    """`v` as JSON holds it exactly: ints and decimals within 2^53 as numbers, beyond as strings of their digits."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return str(v) if abs(v) > JSON_SAFE else v
    if isinstance(v, decimal.Decimal):
        if not v.is_finite() or abs(v) > JSON_SAFE:
            return str(v)
        if v.as_tuple().exponent >= 0:
            return int(v)
        f = float(v)
        # a decimal with more digits than a double holds keeps them, as text
        return f if decimal.Decimal(repr(f)) == v else str(v)
    if isinstance(v, list):
        return [json_number(x) for x in v]
    if isinstance(v, dict):
        return {k: json_number(x) for k, x in v.items()}
    return v


def to_json_rows(df: pl.DataFrame) -> list[dict]:
    """Rows as JSON-safe dicts, numbers as `json_number` writes them."""
    return [{k: json_number(v) for k, v in row.items()} for row in df.iter_rows(named=True)]


def flat(df: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs, maps) as JSON text, for CSV and tables."""
    nested = [c for c, t in df.schema.items() if t.is_nested() or str(t).lower().startswith(("map", "object"))]
    if not nested:
        return df
    return df.with_columns(
        pl.Series(
            c,
            [None if v is None else json.dumps(v, default=_json_default, ensure_ascii=False) for v in df[c].to_list()],
            dtype=pl.Utf8,
        )
        for c in nested
    )


def csv_text(df: pl.DataFrame) -> str:
    """`df` as CSV, nested columns as JSON text and text cells safe in a spreadsheet (escape.csv_cell)."""
    return csv_frame(flat(df)).write_csv() if df.width else ""


_TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def tsv_text(df: pl.DataFrame) -> str:
    """`df` as TSV, one line per row, as PostgreSQL's COPY text format and ClickHouse's TabSeparated write it.

    Backslash, tab and newline in a cell are `\\\\`, `\\t`, `\\n`; NULL is `\\N`. Text cells are
    spreadsheet-safe as in CSV (escape.csv_cell), nested columns JSON text.
    """
    if not df.width:
        return ""
    f = csv_frame(flat(df))
    lines = ["\t".join(escape_control(c).translate(_TSV_ESCAPES) for c in f.columns)]
    for row in f.iter_rows():
        lines.append("\t".join("\\N" if v is None else _tsv_scalar(v).translate(_TSV_ESCAPES) for v in row))
    return "\n".join(lines) + "\n"


def _tsv_scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return str(v)


def jsonl_text(df: pl.DataFrame) -> str:
    """`df` as JSON Lines: one compact object per row, the same values as --format json."""
    lines = (
        CONTROL.sub(
            lambda m: f"\\u{ord(m.group()):04x}",
            json.dumps(r, default=_json_default, ensure_ascii=False, separators=(",", ":")),
        )
        for r in to_json_rows(df)
    )
    return "".join(line + "\n" for line in lines)


def markdown(df: pl.DataFrame) -> str:
    """`df` as a GitHub table; every cell, header too, is escaped (escape.markdown_text)."""
    lines = ["| " + " | ".join(markdown_text(c, inline=True) for c in df.columns) + " |", "|" + "---|" * df.width]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(markdown_text(_cell(v), inline=True) for v in row) + " |")
    return "\n".join(lines) + "\n"
