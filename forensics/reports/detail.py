"""What the exports draw the timeline's detail with: the colours of classes and outcomes, times as text.

The detail itself (each host's load, each room, line mark and reply of the window) is gathered by
forensics.analysis.detail; the exports only draw it.
"""

from __future__ import annotations

import datetime as dt

from forensics.analysis.detail import us

__all__ = ["CLASS_COLORS", "OUTCOME_COLORS", "iso", "other_replies", "us"]

CLASS_COLORS = {
    "clean": "#c3c7cc",
    "parse_leak": "#c2255c",
    "incoherent": "#e8590c",
    "empty": "#7048e8",
    "config": "#82a01e",
    "transfer_error": "#8d5a3c",
}
OUTCOME_COLORS = {
    "ok": "#4263eb",
    "aborted": "#f59f00",
    "transfer_failed": "#e03131",
    "waiting_timeout": "#9c36b5",
    "bootstrap_timeout": "#9c36b5",
    "unknown": "#868e96",
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def other_replies(model) -> str:
    """Where replies go that no drawn host served (--host keeps every reply, as the bucket rows do)."""
    return "replies on other hosts or without a server link" if model["host"] else "replies without a server link"


def iso(t_us: int | None) -> str:
    """Microseconds since the epoch as a UTC time to the second."""
    if t_us is None:
        return "?"
    return (_EPOCH + dt.timedelta(microseconds=t_us)).strftime("%Y-%m-%d %H:%M:%S UTC")
