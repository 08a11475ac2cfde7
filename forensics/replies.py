"""`forensics replies`: the assistant turns of the store, filtered, with their evidence highlighted."""

from __future__ import annotations

import re

import polars as pl

from forensics.detectors import CLASSES
from forensics.errors import UsageError
from forensics.sql import run_sql
from forensics.store import Store

COLUMNS = ("t_end", "source", "session_id", "turn_id", "model", "finish_reason", "corruption_class", "signatures",
           "link_method", "server_host", "evidence")
_MARK = re.compile(r"⟦(.*?)⟧", re.S)


def list_replies(store: Store, corrupted: bool = False, cls: str | None = None, session: str | None = None
                 ) -> pl.DataFrame:
    """Rows of `replies` in time order, optionally only corrupted ones, one class, one session."""
    if cls is not None and cls not in CLASSES:
        raise UsageError(f"unknown class {cls!r}", help="classes: " + ", ".join(CLASSES))
    q = (f"SELECT {', '.join(COLUMNS)} FROM replies "
         "WHERE ($corrupted = false OR corrupted) AND ($cls IS NULL OR corruption_class = $cls) "
         "AND ($session IS NULL OR session_id = $session) "
         "ORDER BY t_end NULLS LAST, t_start NULLS LAST, source, session_id, seq")
    return run_sql(store, q, {"corrupted": corrupted, "cls": cls, "session": session}, materialize=True)


def print_table(df: pl.DataFrame, out=None) -> None:
    """A rich table; the part of the evidence that fired is highlighted, control characters escaped."""
    import sys

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from forensics.render import _cell, escape_control

    styles = {"clean": "green", "parse_leak": "bold red", "incoherent": "bold magenta", "empty": "yellow",
              "config": "cyan", "transfer_error": "bold blue"}
    t = Table(header_style="bold", show_lines=True)
    for c in df.columns:
        t.add_column(c, overflow="fold", ratio=4 if c == "evidence" else None)
    for row in df.iter_rows(named=True):
        cells = []
        for c, v in row.items():
            if c == "evidence" and v:
                text, pos = Text(), 0
                ev = escape_control(v)
                for m in _MARK.finditer(ev):
                    text.append(ev[pos:m.start()])
                    text.append(m.group(1), style="bold black on yellow")
                    pos = m.end()
                text.append(ev[pos:])
                cells.append(text)
            elif c == "corruption_class":
                cells.append(Text(v or "", style=styles.get(v, "")))
            else:
                cells.append(Text(_cell(v)))
        t.add_row(*cells)
    Console(file=out or sys.stdout, highlight=False, width=max(120, min(250, 20 * df.width))).print(t)
