"""Scheduler stats lines into `batches` rows: generic `key: value` lists, known keys normalised into
columns by side, the rest kept in `extra` and `tail` (docs/formats/SGLANG.md, "Reading a stats line")."""

from __future__ import annotations

import re

import polars as pl

from forensics.parsers.server_log.classify import _groups
from forensics.parsers.server_log.grammar import (
    KNOWN_STATS_KEYS,
    RE_GRAPH,
    RE_STATS,
    STATS_DOT_LEADERS,
    STATS_DOT_SEP,
    STATS_KEYS,
    STATS_LEADERS,
)


def _stats_value(raw: pl.Expr, typ: str) -> pl.Expr:
    if typ == "int":
        return raw.cast(pl.Int64, strict=False)
    if typ == "float":
        return raw.cast(pl.Float64, strict=False)
    if typ == "pct":
        return raw.str.strip_suffix("%").cast(pl.Float64, strict=False) / 100.0
    return raw.replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)


def _not_storable(raw: pl.Expr, v: pl.Expr, typ: str) -> pl.Expr:
    """A number no column can hold: `inf`, `nan`, `1e999`, or a count past Int64 (the column gets NULL,
    `extra` the text). Reports average and sum these columns: one infinity would poison every bucket."""
    if typ in ("float", "pct"):
        return v.is_infinite() | v.is_nan()
    if typ == "int":
        return v.is_null() & raw.str.contains(r"^-?[0-9]+$")
    return pl.lit(False)


def unstorable_lines(batches: pl.DataFrame) -> pl.Series:
    """line_no of the rows with a value `_not_storable` kept: a known key in `extra` is one (other known
    items go to their column, or nowhere when the key belongs to the other side)."""
    if not batches.height:
        return pl.Series("line_no", [], pl.Int64)
    kept = pl.col("extra").list.eval(pl.element().struct.field("key").is_in(KNOWN_STATS_KEYS)).list.any()
    return batches.filter(kept.fill_null(False))["line_no"]


def _stats_lead(st: pl.DataFrame) -> pl.DataFrame:
    """kind, iteration and item list of stats lines, from their message."""
    lead = _groups("message", RE_STATS)
    leader = lead.struct.field("1")
    body = lead.struct.field("3")
    # the May 2024 wording separates items with `. `: the same items as `, ` lists
    # (its last item may end in `.` too, unless the line is cut: `69.` may be `69.16%`)
    dots = body.str.replace_all(STATS_DOT_SEP, "$1, ")
    dots = pl.when(pl.col("unterminated")).then(dots).otherwise(dots.str.replace(r"([0-9%])\.$", "$1"))
    body = pl.when(leader.is_in(STATS_DOT_LEADERS)).then(dots).otherwise(body)
    return st.with_columns(
        kind=leader.replace_strict(STATS_LEADERS, default=None),
        _iter=lead.struct.field("2"),
        _body=body.str.strip_chars_end(", "),
        # a cut line's last item is whole when a separator closed it
        _closed=body.str.contains(r",\s*$"),
    )


def _batches(st: pl.DataFrame) -> pl.DataFrame:
    """Batches rows from stats lines with `kind`, `_iter` and `_body` (see `_stats_lead`).

    Items are `key: value` in any order, unknown keys go to `extra`, what has no `: ` to `tail`;
    of a column's keys the first item wins, and side-specific keys count only on their side.
    """
    # A cut line's last item may itself be cut (`#queue-req: 13` of 130): keep it as tail only.
    cut_last = pl.col("unterminated") & ~pl.col("_closed") & pl.col("_body").str.contains(", ")
    st = st.with_columns(
        _items=pl.when(cut_last).then(pl.col("_body").str.replace(r", [^,]*$", "")).otherwise(pl.col("_body")),
        _cut=pl.when(pl.col("unterminated") & ~pl.col("_closed")).then(
            pl.when(cut_last).then(pl.col("_body").str.extract(r", ([^,]*)$", 1)).otherwise(pl.col("_body"))
        ),
    )
    st = st.with_columns(
        _items=pl.when(pl.col("unterminated") & ~pl.col("_closed") & ~cut_last)
        .then(pl.lit(""))
        .otherwise(pl.col("_items"))
    )
    cols = {}
    kept = []  # the items of values no column can hold, as (key, raw text) structs
    for col, keys, side, typ in STATS_KEYS:
        alt = "|".join(re.escape(k) for k in keys)
        item = pl.col("_items").str.extract_groups(rf"(?:^|, )((?:{alt})): ([^,]*)")
        raw = item.struct.field("2").str.strip_chars()
        v = _stats_value(raw, typ)
        lost = _not_storable(raw, v, typ)
        if side is not None:
            v = pl.when(pl.col("kind") == side).then(v)
            lost = lost & (pl.col("kind") == side)
        cols[col] = pl.when(lost).then(None).otherwise(v)
        kept.append(pl.when(lost).then(pl.struct(key=item.struct.field("1"), value=raw)))
    graph = pl.col("_items").str.extract(rf"(?:^|, ){RE_GRAPH}: ", 1)
    items = pl.col("_items").str.split(", ")
    known = pl.element().str.extract(r"^([^:]+): ", 1).is_in(KNOWN_STATS_KEYS)
    has_kv = pl.element().str.contains(": ")
    extra = items.list.eval(pl.element().filter(has_kv & ~known.fill_null(False)))
    tail_items = items.list.eval(pl.element().filter(~has_kv & (pl.element() != "")))
    st = st.with_columns(
        **cols,
        graph_backend=graph,
        _extra=extra,
        _tail=tail_items.list.join(", "),
        _kept=pl.concat_list(kept).list.drop_nulls(),
    )
    iter_entry = pl.when(pl.col("_iter").is_not_null()).then(pl.concat_list(pl.lit("iter: ") + pl.col("_iter")))
    st = st.with_columns(
        _extra=pl.when(iter_entry.is_not_null())
        .then(pl.concat_list(iter_entry, pl.col("_extra")))
        .otherwise(pl.col("_extra"))
    )
    st = st.with_columns(
        extra=pl.concat_list(
            pl.col("_extra").list.eval(
                pl.struct(
                    key=pl.element().str.extract(r"^([^:]+): ", 1), value=pl.element().str.extract(r"^[^:]+: (.*)$", 1)
                )
            ),
            pl.col("_kept"),
        ),
        tail=pl.concat_str(
            [pl.when(pl.col("_tail") != "").then(pl.col("_tail")), pl.col("_cut")], separator=", ", ignore_nulls=True
        ),
        truncated=pl.col("unterminated"),
    )
    return st.with_columns(tail=pl.when(pl.col("tail") != "").then(pl.col("tail"))).drop(
        "_iter", "_body", "_closed", "_items", "_cut", "_extra", "_tail", "_kept"
    )
