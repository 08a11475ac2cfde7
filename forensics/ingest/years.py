"""The year of lines that print none, from the other inputs before the file date.

glog and abseil lines (`E0917 16:23:13.419399`) and 2025-era SGLang prefixes (`[09-17 16:23:13]`)
print a month and a day, no year. The parser takes the year from a dated line in the input's own
head; failing that, ingest looks at the heads of the other inputs (docs/formats/SGLANG.md, "Time
zones and dates"), in this order:

1. the inputs of the same host with dated lines: the year most of them give;
2. an input of another host, in this ingest or already in the store, that names a bootstrap room
   or a request id the input names: one request, one incident;
3. an input of this ingest whose dated lines fall in the same minutes (month, day, hour and
   minute) as the input's: the two sides of one incident, written at once.

Only then the file's date, which a copy (`cp`, `scp`, `kubectl cp`) sets to the day of the copy.
Each input says which, in its notes. The heads are read once (the first 64 KiB), from regular
files only: a FIFO or a device is never opened.
"""

from __future__ import annotations

import collections
import os
import re
import stat

from forensics.core.inputs import Source
from forensics.parsers.lines import read_upto
from forensics.parsers.server_log import guess_year

HEAD_BYTES = 64 << 10
_ROOM = re.compile(r"(?:bootstrap_room|room)[=: ]+([0-9]{15,19})\b")
_RID = re.compile(r"\brid[=:] *'?([0-9a-f]{32})\b")
_DATED_MINUTE = re.compile(r"\b20[0-9]{2}-([0-9]{2}-[0-9]{2})[ T]([0-9]{2}:[0-9]{2}):[0-9]{2}")
_YEARLESS_MINUTE = (
    re.compile(r"\[([0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}):[0-9]{2}"),  # sglang `[09-17 16:23:13`
    re.compile(r"^[IWEF]([0-9]{2})([0-9]{2}) ([0-9]{2}:[0-9]{2}):[0-9]{2}", re.M),  # glog `E0917 16:23:13`
    # vLLM `(EngineCore_DP0 pid=1) ERROR 09-17 16:23:13 [core.py:712]`
    re.compile(
        r"^(?:\([^()]*pid=[0-9]+[^()]*\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) ([0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}):",
        re.M,
    ),
)


class Head:
    """What one input's head says about its year: the year of its dated lines, the rooms and rids
    it names, and the minutes its stamps fall in."""

    def __init__(self, path: str, host: str, text: str):
        self.path, self.host = path, host
        self.year = guess_year(text)
        self.keys = set(_ROOM.findall(text)) | set(_RID.findall(text))
        if self.year is not None:
            self.minutes = {f"{md} {hm}" for md, hm in _DATED_MINUTE.findall(text)}
        else:
            sg, glog, vllm = _YEARLESS_MINUTE
            self.minutes = {f"{md} {hm}" for md, hm in sg.findall(text) + vllm.findall(text)}
            self.minutes |= {f"{m}-{d} {hm}" for m, d, hm in glog.findall(text)}


def heads(sources: list[Source], hosts: dict) -> list[Head]:
    out = []
    for s in sources:
        host = hosts.get(s.path)
        try:
            # a FIFO or a device is never opened (sources.py skips it); a folder is a claimed format
            if host is None or not stat.S_ISREG(os.stat(s.fs_path).st_mode):
                continue
            with s.open() as f:
                text = read_upto(f, HEAD_BYTES).decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - an input that cannot be read fails in its own parse
            continue
        out.append(Head(s.path, host, text))
    return out


def host_years(found: list[Head]) -> tuple[tuple[str, int, str], ...]:
    """(host, year, path) for each host with inputs whose heads hold dated lines: the year most of
    them give (the later on a tie), and the first input giving it."""
    seen: dict[str, dict[int, list[str]]] = {}
    for h in found:
        if h.year is not None:
            seen.setdefault(h.host, {}).setdefault(h.year, []).append(h.path)
    out = []
    for host, years in sorted(seen.items()):
        year = max(years, key=lambda y: (len(years[y]), y))
        out.append((host, year, years[year][0]))
    return tuple(out)


def linked_years(found: list[Head], store=None) -> tuple[tuple[str, int, str, str], ...]:
    """(path, year, source, how) for each input whose head has yearless stamps and whose host has
    no dated input: the year of the other inputs that share a room or request id with it (this
    ingest's, then the store's), else of this ingest's inputs with lines in the same minutes."""
    dated_hosts = {h.host for h in found if h.year is not None}
    dated = [h for h in found if h.year is not None]
    out = []
    for h in found:
        if h.year is not None or h.host in dated_hosts or not h.minutes:
            continue
        got = _by_keys(h, dated) or (_in_store(h, store) if store is not None else None) or _by_minutes(h, dated)
        if got:
            out.append((h.path, *got))
    return tuple(out)


def _by_keys(h: Head, dated: list[Head]) -> tuple[int, str, str] | None:
    got = _vote(dated, lambda d: sorted(h.keys & d.keys))
    if got is None:
        return None
    year, path, shared = got
    what = "request id" if len(shared[0]) == 32 else "room"
    return year, path, f"an input of another host naming the same {what} ({shared[0]})"


def _by_minutes(h: Head, dated: list[Head]) -> tuple[int, str, str] | None:
    got = _vote(dated, lambda d: sorted(h.minutes & d.minutes))
    return None if got is None else (got[0], got[1], "an input with lines in the same minutes")


def _vote(dated: list[Head], shared) -> tuple[int, str, list[str]] | None:
    """The year the dated inputs sharing most with the input give (the later on a tie), the first
    of them to give it, and what it shares (`shared(d)`: a sorted list, empty for nothing)."""
    votes: collections.Counter = collections.Counter()
    first: dict[int, tuple[str, list[str]]] = {}
    for d in dated:
        if common := shared(d):
            votes[d.year] += len(common)
            first.setdefault(d.year, (d.path, common))
    if not votes:
        return None
    year = max(votes, key=lambda y: (votes[y], y))
    return year, *first[year]


def _in_store(h: Head, store) -> tuple[int, str, str] | None:
    """The year of the store's events that name one of the head's rooms (the inputs ingested before)."""
    rooms = sorted(int(k) for k in h.keys if len(k) != 32 and int(k) < 1 << 63)
    if not rooms or not store.inputs.is_dir():
        return None
    files = store.table_files("events")
    if not files:
        return None
    import duckdb

    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        row = con.execute(
            f"SELECT year(ts) AS y, count(*) AS n, min(source_file) FROM read_parquet([{listed}], union_by_name = true) "
            "WHERE bootstrap_room IN (SELECT unnest($rooms)) AND ts IS NOT NULL AND coalesce(ts_raw, '') "
            "NOT SIMILAR TO '([0-9]{2}-[0-9]{2} |[IWEF][0-9]{3,4} ).*' GROUP BY y ORDER BY n DESC, y DESC LIMIT 1",
            {"rooms": rooms},
        ).fetchone()
    finally:
        con.close()
    if row is None:
        return None
    year, _, path = row
    return int(year), path, "an input already in the store naming the same room"
