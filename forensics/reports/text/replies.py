"""The replies listing: one row per agent reply with its verdict.

They know the result model, not SQL. The JSON shapes are a contract documented in the README.
"""

from __future__ import annotations

import re
import sys

import polars as pl

from forensics.reports.escape import escape_control, rich_text
from forensics.reports.render import print_table
from forensics.reports.text.common import _cell

_MARK = re.compile(r"⟦(.*?)⟧", re.S)


def print_replies(df: pl.DataFrame, out=None) -> None:
    """A rich table; the part of the evidence that fired is highlighted, control characters escaped."""

    from rich.text import Text

    styles = {
        "clean": "green",
        "parse_leak": "bold red",
        "incoherent": "bold magenta",
        "empty": "yellow",
        "config": "cyan",
        "transfer_error": "bold blue",
    }

    def rows():
        for row in df.iter_rows(named=True):
            cells = []
            for c, v in row.items():
                if c == "evidence" and v:
                    text, pos = Text(), 0
                    ev = escape_control(v)
                    for m in _MARK.finditer(ev):
                        text.append(ev[pos : m.start()])
                        text.append(m.group(1), style="bold black on yellow")
                        pos = m.end()
                    text.append(ev[pos:])
                    cells.append(text)
                elif c == "corruption_class":
                    cells.append(rich_text(v, style=styles.get(v)))
                else:
                    cells.append(_cell(v))
            yield cells

    # the evidence is what a reader came for: it wraps, whole, where other cells are cut
    print_table(
        out or sys.stdout,
        df.columns,
        rows,
        wrap=frozenset({"evidence", "session_id", "turn_id"}),
        show_lines=True,
        first=("t_end", "corruption_class", "evidence", "session_id", "turn_id"),
    )
