"""Instants for `--since` / `--until`: ISO times, and times relative to the store's last event.

A post-mortem is read hours or days after the logs end, so "the last hour" means the hour before
the store's last event, never before the wall clock: `-30m`, `30m`, `1h`, `2h ago`, `90s`, `1d`,
`today`, `yesterday`, `yesterday 14:00`. A clock time without a date (`14:00`) is on the day of the
store's events nearest to it (the last event's day, for a dump of one day), moved by a day when that
keeps `--since` before `--until`. The last event is the latest timestamp of the
inputs that hold at least 1% of the lines, the same rule the timeline's window follows, so one stray
far-away log does not move "the last hour" to another year. Relative times are UTC, like the store.
"""

from __future__ import annotations

import datetime as dt
import re

from forensics.catalog import named as queries
from forensics.core.errors import UsageError

_UTC = dt.timezone.utc
_UNIT_S = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "m": 60,
    "min": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
    "w": 604800,
    "week": 604800,
}
_AGO = re.compile(
    r"-?\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?|w|weeks?)"
    r"(\s+ago)?",
    re.I,
)
_DAY = re.compile(r"(today|yesterday)(?:[ T](\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?", re.I)
_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?")

HELP = (
    "write an ISO time (2026-11-20T14:00:00, UTC unless it carries a zone), or one relative to the store's "
    "last event: -30m, 1h, 2h ago, yesterday 14:00, 14:00"
)

# the sentence the timeline's header prints about a relative instant
NOTE = "{opt} {text}: {when}, {how} the store's last event ({last})"
CLOCK_NOTE = "{opt} {text}: {when}, on the day of the store's events nearest to it (they run {lo} to {hi})"
# ... and about a clock time moved by a day so that the window runs forwards
TURNED = "{opt} {text}: {when}, the day {how}, so that --since comes before --until"


def is_relative(text: str) -> bool:
    """Whether `text` needs the store's last event to mean an instant."""
    t = text.strip()
    return bool(_AGO.fullmatch(t) or _DAY.fullmatch(t) or _CLOCK.fullmatch(t))


def _unit(u: str) -> float:
    u = u.lower()
    for k in ("ms", "sec", "min", "hour", "day", "week"):
        if u.startswith(k):
            return _UNIT_S[k]
    return _UNIT_S[u[0]]


def parse(
    text: str, last: dt.datetime | None, opt: str = "--since", spans: list[tuple[dt.datetime, dt.datetime]] = ()
) -> tuple[dt.datetime, str | None]:
    """The UTC instant `text` names, and the header's note when it was relative to `last`; a clock
    time without a date falls on the day of `spans` (the main inputs' first and last times) nearest it."""
    t = str(text).strip()
    if m := _AGO.fullmatch(t):
        last = _need_last(last, opt, t)
        when = last - dt.timedelta(seconds=float(m.group(1)) * _unit(m.group(2)))
        return when, NOTE.format(opt=opt, text=t, when=fmt(when), how=f"{_amount(m)} before", last=fmt(last))
    if m := _DAY.fullmatch(t):
        last = _need_last(last, opt, t)
        day = last.date() - dt.timedelta(days=1 if m.group(1).lower() == "yesterday" else 0)
        when = _at(day, m.group(2) or "00:00", opt, t)
        return when, NOTE.format(
            opt=opt,
            text=t,
            when=fmt(when),
            how="the day of" if m.group(1).lower() == "today" else "the day before",
            last=fmt(last),
        )
    if _CLOCK.fullmatch(t):
        last = _need_last(last, opt, t)
        spans = spans or [(last, last)]
        when = nearest_day(_at(last.date(), t, opt, t), spans)
        return when, CLOCK_NOTE.format(
            opt=opt, text=t, when=fmt(when), lo=fmt(min(lo for lo, _ in spans)), hi=fmt(last)
        )
    try:
        when = dt.datetime.fromisoformat(t.replace("Z", "+00:00") if t.endswith(("Z", "z")) else t)
    except ValueError:
        raise UsageError(f"cannot read the time {opt} {t!r}", help=HELP) from None
    return (when.replace(tzinfo=_UTC) if when.tzinfo is None else when.astimezone(_UTC)), None


def nearest_day(t: dt.datetime, spans: list[tuple[dt.datetime, dt.datetime]]) -> dt.datetime:
    """The time of day of `t` on the day that puts it nearest to one of `spans`: a person who types
    `16:34` about a dump of 16:30-16:33 means that day, not the day before the last event (the
    later day on a tie, nearer the incident that made someone read the logs)."""

    def gap(c: dt.datetime) -> float:
        return min(max((lo - c).total_seconds(), (c - hi).total_seconds(), 0.0) for lo, hi in spans)

    days = sorted(
        {lo.date() + dt.timedelta(days=i) for lo, hi in spans for i in range((hi.date() - lo.date()).days + 1)}
    )
    candidates = [dt.datetime.combine(d, t.timetz()) for d in days] or [t]
    return min(reversed(candidates), key=gap)


def _amount(m: re.Match) -> str:
    n = m.group(1)
    return f"{n} {m.group(2)}"


def _at(day: dt.date, clock: str, opt: str, text: str) -> dt.datetime:
    try:
        t = dt.time.fromisoformat(clock.zfill(len(clock) + 2 - clock.index(":")))
    except ValueError:
        raise UsageError(f"cannot read the time {opt} {text!r}", help=HELP) from None
    return dt.datetime.combine(day, t, tzinfo=_UTC)


def _need_last(last: dt.datetime | None, opt: str, text: str) -> dt.datetime:
    if last is None:
        raise UsageError(
            f"{opt} {text!r} is relative to the store's last event, and the store holds no timestamps",
            help="give an ISO time, e.g. 2026-11-20T14:00:00",
        )
    return last if last.tzinfo else last.replace(tzinfo=_UTC)


def fmt(t: dt.datetime) -> str:
    return t.astimezone(_UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def last_event(con) -> dt.datetime | None:
    """The latest timestamp of the inputs holding at least 1% of the lines (see the module docstring)."""
    [(last,)] = con.execute(queries.internal("_last_event").sql).fetchall()
    return last


def _spans(con) -> list[tuple[dt.datetime, dt.datetime]]:
    def utc(t: dt.datetime) -> dt.datetime:
        return t if t.tzinfo else t.replace(tzinfo=_UTC)

    return [(utc(lo), utc(hi)) for lo, hi in con.execute(queries.internal("_main_inputs").sql).fetchall()]


def resolve(con, since: str | None, until: str | None) -> tuple[str | None, str | None, list[str]]:
    """`since` and `until` as ISO UTC instants for the queries, and the header's notes on relative ones.

    A clock time that, on its nearest day, would come after --until (or before --since) moves by the
    day that keeps the window running forwards: `--since 23:30 --until 00:30` spans midnight."""
    relative = [v is not None and is_relative(v) for v in (since, until)]
    last = last_event(con) if any(relative) else None
    clock = [v is not None and bool(_CLOCK.fullmatch(v.strip())) for v in (since, until)]
    spans = _spans(con) if any(clock) else []
    out, notes = [], []
    for opt, v in (("--since", since), ("--until", until)):
        when, note = parse(v, last, opt, spans) if v is not None else (None, None)
        out.append(when)
        notes.append(note)
    if out[0] and out[1] and out[0] > out[1] and any(clock):
        # the one to move is a clock time: --since a day back if it is one, else --until a day on
        i, step, how = (0, -1, "before") if clock[0] else (1, 1, "after")
        moved = out[i] + dt.timedelta(days=step)
        if (moved <= out[1]) if i == 0 else (out[0] <= moved):
            out[i] = moved
            opt, v = ("--since", since) if i == 0 else ("--until", until)
            notes[i] = TURNED.format(opt=opt, text=v.strip(), when=fmt(moved), how=how)
    if out[0] and out[1] and out[0] > out[1]:
        raise UsageError(
            f"--since {since} ({fmt(out[0])}) is after --until {until} ({fmt(out[1])})",
            help="swap them, or widen the window",
        )
    return *(None if t is None else t.isoformat() for t in out), [n for n in notes if n]
