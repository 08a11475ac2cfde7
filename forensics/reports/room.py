"""The head of `forensics room`: what the room was, the failure that decided it, then its consequences."""

from __future__ import annotations

import datetime as dt

from forensics.analysis.room import RoomStory
from forensics.reports.render import escape_control

SUMMARY_KEYS = (
    "outcome",
    "sides_seen",
    "prefill_host",
    "decode_host",
    "rid_prefill",
    "rid_decode",
    "checksum_verdict",
    "mismatched_units",
)
# the first failure's line, cut in the middle: its template leads, its reason (the KVTransferError text) ends it
ERROR_HEAD, ERROR_TAIL = 50, 100


def _ts(t: dt.datetime | None) -> str:
    if t is None:
        return "(no time)"
    return t.strftime("%Y-%m-%d %H:%M:%S.%f" if t.microsecond else "%Y-%m-%d %H:%M:%S")


def summary_lines(story: RoomStory) -> list[str]:
    """One line for the room, one for its first failure, one per later failure (`then +Δt side host outcome`)."""
    if not story.summary.height:
        return []
    row = story.summary.row(0, named=True)
    out = [
        f"room {story.room}: "
        + ", ".join(f"{k}={escape_control(str(row[k]))}" for k in SUMMARY_KEYS if row[k] is not None)
    ]
    if row["outcome_side"] is None and row["t_outcome"] is None and not row["later_failures"]:
        return out
    error = escape_control(row["first_error"] or "")
    if len(error) > ERROR_HEAD + ERROR_TAIL + 3:
        error = error[:ERROR_HEAD] + " … " + error[-ERROR_TAIL:]
    req = story.request.row(0, named=True) if story.request.height else None
    head = (
        f"{row['outcome_side']} {escape_control(str(row['outcome_host']))} {row['outcome']} ({row['outcome_reason']})"
    )
    later = list(row["later_failures"])
    tied = []
    if req is not None and req["first_simultaneous"] and row["t_outcome"] is not None:
        # whole-second lines of two sides in one second: neither is known to come first
        tied = [
            x
            for x in later
            if x["ts"] is not None
            and abs((x["ts"] - row["t_outcome"]).total_seconds()) < 1
            and (x["side"], x["host"]) != (row["outcome_side"], row["outcome_host"])
        ]
    if tied:
        others = "; ".join(
            f"{x['side']} {escape_control(str(x['host']))} {x['outcome']} ({x['reason']})"
            + (f" x{x['n']}" if x["n"] > 1 else "")
            for x in tied
        )
        out.append(
            f"simultaneous failures: {_ts(row['t_outcome'])} {head}; {others}: logged in the same second, "
            "nothing orders them (the outcome names one of them)" + (f": {error}" if error else "")
        )
        later = [x for x in later if x not in tied]
    else:
        out.append(f"first failure: {_ts(row['t_outcome'])} {head}" + (f": {error}" if error else ""))
    for x in later:
        when = (
            "+?"
            if x["ts"] is None or row["t_outcome"] is None
            else f"{(x['ts'] - row['t_outcome']).total_seconds():+.1f} s"
        )
        out.append(
            f"  then {when}  {x['side']} {escape_control(str(x['host']))} {x['outcome']} "
            f"({x['reason']})" + (f" x{x['n']}" if x["n"] > 1 else "")
        )
    if req is not None:
        # one request, however many lines: the count a reader compares with the table below
        out.append(
            f"failed request: logged by {req['n_ranks']:,} rank{'s' if req['n_ranks'] != 1 else ''} "
            f"({req['n_lines']:,} line{'s' if req['n_lines'] != 1 else ''}) on {escape_control(', '.join(req['hosts']))}"
        )
    return out
