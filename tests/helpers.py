"""Shared helpers for tests: parse text with a parser without a store."""

from __future__ import annotations

import os
import tempfile

import polars as pl

from forensics.parsers.base import Context, Source


def parse_text(parser, text: str | bytes, name: str = "sample.log", **ctx_kw):
    """Run `parser` over `text` written to a temp file; return ({table: frame}, ctx)."""
    data = text.encode() if isinstance(text, str) else text
    # property tests call this thousands of times: the file goes once parsed
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(data)
        ctx = Context(host=ctx_kw.pop("host", "h"), **ctx_kw)
        outs = list(parser.parse(Source(path=name, fs_path=p, size=len(data)), ctx))
    tables: dict[str, pl.DataFrame] = {}
    for o in outs:
        for t, df in o.items():
            if df.height:
                tables[t] = pl.concat([tables[t], df], how="diagonal_relaxed") if t in tables else df
    return tables, ctx
