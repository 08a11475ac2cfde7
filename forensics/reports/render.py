"""Render a result (a polars frame) as a table, CSV, TSV, JSON, JSON Lines, Markdown or Parquet.

Text from logs and transcripts is untrusted: each format escapes it with forensics.reports.escape
(terminal escapes visible, CSV and TSV formulas quoted, Markdown syntax escaped, JSON with control
characters as \\u escapes). Parquet holds the values themselves, typed: it is read by tools, not shown.

Tables are for a person (see `table`): as wide as the terminal, cells cut with `…`, columns that do
not fit left out and counted, long lists shortened to their first items and a count.

JSON numbers: integers and decimals within 2^53 are numbers; beyond it (63-bit rooms, 128-bit sums)
they are strings holding the exact digits, since a JSON reader would round them to a double.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import sys

import polars as pl

from forensics.reports import formats
from forensics.reports.escape import escape_control, markdown_text, rich_text
from forensics.reports.serialize import _cell, csv_text, dumps_json, jsonl_text, markdown, to_json_rows, tsv_text

FORMATS = formats.RESULT.formats
# formats whose bytes are not text: written to a file only
BINARY = frozenset(formats.RESULT.binary)


@dataclasses.dataclass
class TableOptions:
    """How wide a table may be (None: the terminal's width) and whether to show everything (--wide)."""

    max_width: int | None = None
    wide: bool = False


TABLE = TableOptions()


def render(
    df: pl.DataFrame,
    fmt: str,
    out=None,
    title: str | None = None,
    wrap: frozenset[str] = frozenset(),
    first: tuple[str, ...] = (),
) -> None:
    """Write `df` as `fmt` to the text stream `out` (parquet: use write_parquet, it is not text). For a table,
    `wrap`: columns whose text folds onto more lines instead of being cut; `first`: columns kept before others."""
    out = out or sys.stdout
    if fmt == "csv":
        out.write(csv_text(df))
    elif fmt == "tsv":
        out.write(tsv_text(df))
    elif fmt == "json":
        out.write(dumps_json(to_json_rows(df)) + "\n")
    elif fmt == "jsonl":
        out.write(jsonl_text(df))
    elif fmt == "markdown":
        out.write(markdown(df))
    elif fmt in BINARY:
        raise ValueError(f"{fmt} is written to a file (write_parquet)")
    else:
        table(df, out, title=title, wrap=wrap, first=first)


def write_parquet(df: pl.DataFrame, path: str) -> None:
    """`df` as a Parquet file, every value and type as it is."""
    df.write_parquet(path)


# -- tables for a person ----------------------------------------------------------------------------


def table_width(out) -> int | None:
    """The width a table may take on `out`: --max-width, else the terminal's, else $COLUMNS, else 120; None: --wide."""
    if TABLE.wide:
        return None
    if TABLE.max_width:
        return TABLE.max_width
    isatty = getattr(out, "isatty", None)
    if isatty and isatty():
        return shutil.get_terminal_size().columns
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() and int(cols) > 0 else 120


def table(
    df: pl.DataFrame,
    out=None,
    title: str | None = None,
    wrap: frozenset[str] = frozenset(),
    first: tuple[str, ...] = (),
) -> None:
    """`df` as a table a person reads (print_table); lists shortened unless --wide."""

    def cells():
        return ([_cell(v, whole=TABLE.wide) for v in row] for row in df.iter_rows())

    print_table(out or sys.stdout, df.columns, cells, title=title, n_rows=df.height, wrap=wrap, first=first)


# a cell wider than this is cut while other columns are left out for lack of room; a column holding
# nothing wider is shown whole, as DuckDB's duckbox does
MAX_COL, HIDDEN_MARK = 40, "…"
# a column that wraps asks for less: it takes more lines instead
FOLD_COL = 24


# a table longer than this is rendered a part at a time (rich holds every cell it renders at once,
# and a replies table of a large store is a hundred thousand rows)
CHUNK_ROWS = 500


def print_table(
    out,
    headers: list[str],
    rows,
    *,
    title: str | None = None,
    styles=None,
    wrap: frozenset[str] = frozenset(),
    n_rows: int | None = None,
    show_lines: bool = False,
    ends: bool = True,
    first: tuple[str, ...] = (),
) -> None:
    """Rows of cells (str, or rich Text for styled ones) as a box table no wider than table_width(out).

    As DuckDB's duckbox does: cells too long are cut with `…`, and when even cut columns do not fit,
    columns from the middle are left out (the first and last kept), a `…` column stands for them, and a
    line below says how many (`ends=False`: columns are kept from the left, for reports whose columns
    are in order of importance; `first`: columns kept before any other). Columns in `wrap` fold their text
    onto more lines instead of cutting it.
    `rows`: a list, or a function giving a fresh iterator of them each call (called twice: the widths,
    then the rendering, so no more than CHUNK_ROWS rows of cells exist at once).
    `styles`: one rich style (or None) per row. Nothing in a cell is read as markup or an emoji code.
    """
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    def length(c) -> int:
        return max((cell_len(x) for x in (c.plain if isinstance(c, Text) else c).split("\n")), default=0)

    source = rows if callable(rows) else (lambda: rows)
    n = len(headers)
    natural = [length(h) for h in headers]
    count = 0
    for r in source():
        natural = [max(w, length(c)) for w, c in zip(natural, r)]
        count += 1
    natural = [max(1, w) for w in natural]
    limit = table_width(out)
    keep = list(range(n))
    widths = list(natural)
    if limit is not None:
        keep, widths = _fit(
            natural, [h in wrap for h in headers], limit, ends, [headers.index(h) for h in first if h in headers]
        )
    hidden = n - len(keep)
    cut = any(headers[i] not in wrap and widths[pos] < natural[i] for pos, i in enumerate(keep))

    def make(part, at: int = 0) -> Table:
        t = Table(
            title=None if title is None else rich_text(title),
            header_style="bold",
            show_lines=show_lines,
            collapse_padding=False,
        )
        for pos, i in enumerate(keep):
            if hidden and pos == _split(keep):
                t.add_column(HIDDEN_MARK, width=1, no_wrap=True)
            folds = headers[i] in wrap
            t.add_column(
                rich_text(headers[i]), width=widths[pos], no_wrap=not folds, overflow="fold" if folds else "ellipsis"
            )
        for k, r in enumerate(part, at):
            cells = [c if isinstance(c, Text) else rich_text(c) for c in (r[i] for i in keep)]
            if hidden:
                cells.insert(_split(keep), Text(HIDDEN_MARK))
            t.add_row(*cells, style=(styles[k] if styles else None))
        return t

    total = sum(widths) + 3 * (len(keep) + (1 if hidden else 0)) + 1
    con = console(out, width=max(total, limit or 0, 20))
    if count <= CHUNK_ROWS:
        con.print(make(source()))
    else:
        _print_in_parts(con, make, source(), n, show_lines)
    if hidden or cut:
        rows_n = count if n_rows is None else n_rows
        what = f"{rows_n} row{'s' * (rows_n != 1)}, {n} columns"
        what += f" ({n - hidden} shown)" if hidden else ""
        con.print(
            Text(f"{what}; … marks what is cut: --wide shows everything, --max-width N sets the width"), soft_wrap=True
        )


def _print_in_parts(con, make, rows, n_cols: int, show_lines: bool) -> None:
    """The table `make(rows)` would print, rendered CHUNK_ROWS rows at a time: the widths are fixed,
    so each part's rows render as they would in the whole; the parts are joined by cutting their
    header and bottom edge off (and putting back the line between rows)."""

    def lines(t) -> list[str]:
        with con.capture() as cap:
            con.print(t)
        return cap.get().splitlines(keepends=True)

    # a table of blank one-line rows: title, top edge, header and the rule under it, then the rows
    # (with the line between them), then the bottom edge
    blank = lines(make([[""] * n_cols] * 2))
    head, bottom = blank[: -4 if show_lines else -3], blank[-1]
    between = blank[-3] if show_lines else ""
    at = 0
    it = iter(rows)
    while True:
        part = list(itertools.islice(it, CHUNK_ROWS))
        if not part:
            break
        body = lines(make(part, at))[len(head) : -1]
        con.file.write("".join(head) if at == 0 else between)
        con.file.write("".join(body))
        at += len(part)
    con.file.write(bottom)


def _split(keep: list[int]) -> int:
    """Where the `…` column goes: after the kept columns that come before the first one left out."""
    return next((p for p, (a, b) in enumerate(zip(keep, keep[1:]), 1) if b != a + 1), len(keep))


def _fit(
    natural: list[int], folds: list[bool], limit: int, ends: bool = True, first: list[int] | None = None
) -> tuple[list[int], list[int]]:
    """Which columns fit in `limit` characters and how wide each is.

    Each column asks for its widest cell, at most MAX_COL; columns are taken from both ends inwards
    while they fit (the first and last kept, a 4-character `…` column for the rest); the room left
    over goes back to the columns that were cut, folding ones first (the longest text first), then from the left. A folding column
    asks for FOLD_COL at most.
    """
    n = len(natural)
    ask = [min(w, FOLD_COL if f else MAX_COL) for w, f in zip(natural, folds)]
    order = list(
        dict.fromkeys(
            [*(first or []), *(x for pair in zip(range(n), reversed(range(n))) for x in pair)]
            if ends
            else [*(first or []), *range(n)]
        )
    )
    keep: list[int] = []
    for i in order:
        mark = 4 if len(keep) + 1 < n else 0
        if keep and sum(ask[j] + 3 for j in keep) + ask[i] + 3 + 1 + mark > limit:
            if i in (first or []):
                continue
            break
        keep.append(i)
    keep.sort()
    room = limit - 1 - 3 * len(keep) - (4 if len(keep) < n else 0)
    widths = [ask[i] for i in keep]
    if sum(widths) > room:  # one column alone is too wide: cut it to the room
        widths = [max(1, room - sum(widths[1:]))] + widths[1:]
    spare = room - sum(widths)
    # folding columns hold the text a table is read for (evidence, meaning): they widen first
    for p, i in sorted(enumerate(keep), key=lambda pi: (not folds[pi[1]], -natural[pi[1]] if folds[pi[1]] else 0)):
        if spare <= 0:
            break
        add = min(spare, natural[i] - widths[p])
        widths[p] += max(0, add)
        spare -= max(0, add)
    return keep, widths


def head_line(line: str, fmt: str) -> str:
    """A line printed above a result in `fmt`: escaped as Markdown text beside Markdown, else terminal text."""
    return markdown_text(line) if fmt == "markdown" else escape_control(line)


def console(out, **kw):
    """A rich console that reads no markup, emoji codes or highlights in what it prints."""
    from rich.console import Console

    return Console(file=out, markup=False, emoji=False, highlight=False, **kw)
