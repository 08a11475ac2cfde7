"""Whether an ingest put one dump's inputs into a store that holds another's: a note, nothing refused.

The inputs the store held before the ingest are another dump's when no host of theirs is among the
ingest's and every one of them lies more than a day from the ingest's inputs. Hosts and
days come from the inputs' manifests (the host= and date= folders of their parts), so the common
cases (a second host of the same incident, the same dump again) read no Parquet; only inputs days
apart by their folders have their `files` rows read, for their first and last timestamps and paths.

What cannot be judged says nothing: a shared host (the same machine days later: a rerun, which may
belong with the first), no new input, or no timestamp on either side (hosts alone are no proof:
`sglang` is every file named sglang.log).
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from forensics.ingest.records import FileResult
from forensics.store import Store, hive, pieces

GAP = dt.timedelta(hours=24)  # more than this between two inputs: not one incident's
SHOWN = 3  # inputs and hosts named before "and N more"
_TICK = dt.timedelta(microseconds=1)


@dataclasses.dataclass(frozen=True)
class OtherDump:
    """The store held inputs of another dump: which, when, and how far from this ingest's."""

    store: str
    held: list[str]  # their paths, sorted
    hosts: list[str]  # their hosts, sorted
    first: dt.datetime  # the earliest and latest time of the held inputs
    last: dt.datetime
    apart: dt.timedelta  # the least time between a held input and one of this ingest's (a lower bound)

    def lines(self) -> list[str]:
        """The note in the one warning shape (forensics/core/errors.py): what, the inputs, the fix."""
        n = len(self.held)
        hosts = f"host{'s' if len(self.hosts) != 1 else ''} {_few(self.hosts)}; " if self.hosts else ""
        return [
            f"warning: the store already held {n} input{'s' if n != 1 else ''} of another dump "
            f"({hosts}{_t(self.first)} to {_t(self.last)} UTC): no host in common with this ingest's "
            f"inputs, and at least {_duration(self.apart)} from them",
            f"  | {_few(self.held)}",
            f"  = help: this ingest's inputs are stored beside them, and every report reads the whole store; to keep a "
            f"dump apart, ingest it into a fresh store: `forensics ingest --store NEWDIR ...` "
            f"(this one is {self.store})",
        ]


def judge(store: Store, results: list[FileResult]) -> OtherDump | None:
    """The other dump the store held before this ingest (`results`), or None when it held none, or
    when that cannot be told."""
    this = {r.key for r in results if r.key}
    if not any(r.key and r.status == "ingested" for r in results):
        return None  # nothing added: the store mixes nothing it did not mix before
    found = {k: _folders(m) for k, m in store.manifests().items()}
    held = {k: f for k, f in found.items() if k not in this}
    mine = {k: f for k, f in found.items() if k in this}
    if not held or set().union(*(h for h, _ in mine.values())) & set().union(*(h for h, _ in held.values())):
        return None
    mine_dated = {k: days for k, (_, days) in mine.items() if days}
    dated = {k: days for k, (_, days) in held.items() if days}
    if not mine_dated or not dated:
        return None
    # by the date folders alone first: an input with rows on a day the ingest's have rows on is near
    mine_days = {d for days in mine_dated.values() for d in days}
    if any(d in mine_days for days in dated.values() for d in days):
        return None
    rows = _spans(store, set(dated) | set(mine_dated), found)
    # a server log without a timed line has rows only where they were placed, at its file's date
    dated = {k: d for k, d in dated.items() if rows[k] is not None}
    mine_dated = {k: d for k, d in mine_dated.items() if rows[k] is not None}
    if not mine_dated or not dated:
        return None
    apart = min(_apart(rows[k], dated[k], rows[n], mine_dated[n]) for k in dated for n in mine_dated)
    if apart <= GAP:
        return None
    return OtherDump(
        store=str(store.root),
        held=sorted({rows[k][2] for k in dated if rows[k][2]}),
        hosts=sorted(set().union(*(held[k][0] for k in dated))),
        first=min(rows[k][0] for k in dated),
        last=max(rows[k][1] for k in dated),
        apart=apart,
    )


def _apart(a: tuple, a_days: list[dt.date], b: tuple, b_days: list[dt.date]) -> dt.timedelta:
    """How far apart two inputs lie at the least: the time between their first-to-last spans, or, where
    the spans overlap (an input of lines days apart), by the days they have rows on."""
    between = max(b[0] - a[1], a[0] - b[1])
    if between > dt.timedelta(0):
        return between
    days = min(abs((x - y).days) for x in a_days for y in b_days)
    # rows on days `days` apart lie more than `days - 1` days apart
    return dt.timedelta(days=days - 1) + _TICK


def _folders(m: dict) -> tuple[set[str], list[dt.date]]:
    """The hosts and the days of an input, from the partition folders its manifest lists."""
    hosts, days = set(), set()
    for p in m.get("parts") or []:
        where = hive.values_of(p.get("file", ""))
        if where.get("host"):
            hosts.add(where["host"])
        if where.get("date"):
            try:
                days.add(dt.date.fromisoformat(where["date"]))
            except ValueError:
                pass
    return hosts, sorted(days)


def _spans(store: Store, keys: set[str], found: dict) -> dict[str, tuple[dt.datetime, dt.datetime, str | None] | None]:
    """key -> (first, last, path) of each input among `keys` with a date folder: its files row's
    first and last timestamps, else (a row without them) the whole of its first and last days;
    None for a server log without them, whose lines had no time and were placed at its file's."""
    manifests = store.manifests()
    files = [f for k in sorted(keys) if k in manifests for f in store.input_parts(k, "files", manifests[k])]
    out = {}
    for r in pieces.files_rows(files, ("path", "format", "first_ts", "last_ts")):
        days = found[r["_key"]][1]
        first, last = _utc(r.get("first_ts")), _utc(r.get("last_ts"))
        if (first is None or last is None) and r.get("format") == "server_log":
            out[r["_key"]] = None
            continue
        if first is None or last is None:
            first, last = _midnight(days[0]), _midnight(days[-1] + dt.timedelta(days=1))
        out[r["_key"]] = (first, last, r.get("path"))
    for k in keys - set(out):  # no files row read: its days say when
        days = found[k][1]
        out[k] = (_midnight(days[0]), _midnight(days[-1] + dt.timedelta(days=1)), None)
    return out


def _utc(t) -> dt.datetime | None:
    if not isinstance(t, dt.datetime):
        return None
    return t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t.astimezone(dt.timezone.utc)


def _midnight(d: dt.date) -> dt.datetime:
    return dt.datetime(d.year, d.month, d.day, tzinfo=dt.timezone.utc)


def _few(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _t(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M")


def _duration(d: dt.timedelta) -> str:
    if d >= dt.timedelta(days=2):
        return f"{d.days} days"
    return f"{int(d.total_seconds() // 3600)} hours"
