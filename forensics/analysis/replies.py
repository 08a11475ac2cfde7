"""`forensics replies`: the assistant turns of the store, filtered, with their evidence highlighted."""

from __future__ import annotations

import polars as pl

from forensics.analysis import verdicts
from forensics.analysis.detectors import CLASSES
from forensics.catalog import named as queries
from forensics.catalog.sql import run_sql
from forensics.core.errors import UsageError
from forensics.store import Store


def list_replies(
    store: Store, corrupted: bool = False, cls: str | None = None, session: str | None = None
) -> pl.DataFrame:
    """Rows of `replies` in time order, optionally only corrupted ones, one class, one session."""
    if cls is not None and cls not in CLASSES:
        raise UsageError(f"unknown class {cls!r}", help="classes: " + ", ".join(CLASSES))
    # bound as given: a session id that reads NULL is still a session id
    q = queries.internal("_replies_list").sql
    verdicts.ensure(store)
    return run_sql(store, q, {"corrupted": corrupted, "cls": cls, "session": session}, materialize=True)
