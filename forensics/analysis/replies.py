"""`forensics replies`: the assistant turns of the store, filtered, with their evidence highlighted."""

from __future__ import annotations

import polars as pl

from forensics.analysis.clocks import clock_warnings
from forensics.analysis.detectors import CLASSES
from forensics.analysis.models import Replies
from forensics.analysis.session import Session, using
from forensics.catalog import named as queries
from forensics.core.errors import UsageError
from forensics.store import Store


def list_replies(
    session: Session | Store, corrupted: bool = False, cls: str | None = None, session_id: str | None = None
) -> pl.DataFrame:
    """Rows of `replies` in time order, optionally only corrupted ones, one class, one session."""
    if cls is not None and cls not in CLASSES:
        raise UsageError(f"unknown class {cls!r}", help="classes: " + ", ".join(CLASSES))
    # bound as given: a session id that reads NULL is still a session id
    with using(session) as s:
        return s.sql(queries.internal("_replies_list").sql, {"corrupted": corrupted, "cls": cls, "session": session_id})


def build(session: Session, corrupted: bool = False, cls: str | None = None, session_id: str | None = None) -> Replies:
    """`forensics replies`: the rows, and the header's clock warnings."""
    rows = list_replies(session, corrupted, cls, session_id)
    return Replies(rows, clock_warnings(session), session.excerpts(rows))
