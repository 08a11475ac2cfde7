"""`forensics replies`: the assistant turns of the store, filtered, with their evidence highlighted."""

from __future__ import annotations

import polars as pl

from forensics.analysis import verdicts
from forensics.analysis.detectors import CLASSES
from forensics.catalog.sql import run_sql
from forensics.core.errors import UsageError
from forensics.store import Store

COLUMNS = (
    "t_end",
    "source",
    "session_id",
    "turn_id",
    "model",
    "finish_reason",
    "corruption_class",
    "signatures",
    "link_method",
    "server_host",
    "evidence",
)


def list_replies(
    store: Store, corrupted: bool = False, cls: str | None = None, session: str | None = None
) -> pl.DataFrame:
    """Rows of `replies` in time order, optionally only corrupted ones, one class, one session."""
    if cls is not None and cls not in CLASSES:
        raise UsageError(f"unknown class {cls!r}", help="classes: " + ", ".join(CLASSES))
    q = (
        f"SELECT {', '.join(COLUMNS)} FROM replies "
        "WHERE ($corrupted = false OR corrupted) AND ($cls IS NULL OR corruption_class = $cls) "
        "AND ($session IS NULL OR session_id = $session) "
        "ORDER BY t_end NULLS LAST, t_start NULLS LAST, source, session_id, seq"
    )
    verdicts.ensure(store)
    return run_sql(store, q, {"corrupted": corrupted, "cls": cls, "session": session}, materialize=True)
