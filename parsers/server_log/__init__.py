"""SGLang server logs of every era (2024-2026), with everything that interleaves in them.

One file of a PD server mixes sglang scheduler lines, uvicorn lines, request logs (text and JSON),
NIXL / Mooncake abseil-glog lines, UCX lines, torch c10d and NCCL lines, and Python tracebacks,
often wrapped by a log shipper (k8s CRI, docker, Kibana, a tqdm bar glued in front). Each line is
recognised on its own (docs/formats/SGLANG.md, "Classification order"):

  outer wrapper -> sglang prefix -> uvicorn -> abseil/glog -> UCX -> c10d -> NCCL -> bare known
  message -> traceback continuation -> unparsed

The grammar is data (`grammar`): the polars path (`classify`, `events`, `stats`) runs it, and the
native scanner is configured from it (`scanner`); `passes` drives both over blocks of lines.
Everything is vectorised over blocks; the only Python loops are per block or over the (rare) k8s
partial records.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator

import polars as pl

from forensics.parsers import engines, lines
from forensics.parsers.base import Batch, Context, Source
from forensics.parsers.lines import read_upto
from forensics.parsers.server_log import passes
from forensics.parsers.server_log.grammar import (
    CONTINUES,
    RE_BARE_KNOWN,
    RE_CRASH,
    RE_CRASH_OPEN,
    RE_GLOG,
    RE_NCCL,
    RE_UCX,
    ROLE_DECODE,
    ROLE_PREFILL,
    ROLE_ROUTER,
)
from forensics.parsers.server_log.samples import samples

__all__ = ["CONTINUES", "description", "infer_role", "name", "parse", "samples", "sniff"]

name = passes.NAME
HEAD_BYTES = 4 << 20  # read up front for the year and the role
description = "SGLang server log (prefill / decode / unified), with uvicorn, NIXL, UCX, NCCL lines and tracebacks"


def infer_role(text: str) -> str | None:
    """Role from content: PD prefill vs PD decode fields or failure lines.

    docs/formats/SGLANG.md, "Stats lines" and "PD transfer and bootstrap failures" say which are whose.
    """
    # polars' regex engine counts the same matches as re.findall, in a fraction of the time (the
    # head of every log is read before its first block is parsed)
    head = pl.Series([text])
    p = head.str.count_matches(ROLE_PREFILL).item()
    d = head.str.count_matches(ROLE_DECODE).item()
    if p or d:
        return "prefill" if p >= d else "decode"
    if re.search(r"Prefill batch[.,]", text) and re.search(r"Decode batch[.,]", text):
        return "unified"
    # the sgl-router's own lines (its targets, docs/formats/OTHER_ENGINES.md, "sgl-router"), half the
    # head or more: it serves no batches, it sends requests to the servers that do
    router = head.str.count_matches(ROLE_ROUTER).item()
    if router and router * 2 >= head.str.count_matches(r"(?m)^.").item():
        return "router"
    return None


def guess_year(text: str) -> int | None:
    m = re.search(r"(?:^|[\[ ])(20[0-9]{2})-[0-9]{2}-[0-9]{2}[ T]", text, re.M)
    if m:
        return int(m.group(1))
    m = re.search(r"^\[(1[0-9]{9})\.[0-9]+\] ", text, re.M)  # UCX epoch seconds
    if m:
        import datetime as _dt

        return _dt.datetime.fromtimestamp(int(m.group(1)), _dt.timezone.utc).year
    return None


# What makes a head a server log: an sglang prefix anywhere in the line (shippers wrap it), a
# scheduler stats line of any era, uvicorn access and startup lines, abseil/glog, UCX (with or
# without its head), NCCL, NIXL and the bare sglang messages of the grammar, a traceback header,
# the head or frame banner of a native crash dump.
# Counted over the whole head, so an excerpt that opens on a traceback tail or a cut line is
# still recognised by the lines after it.
_MARKERS = re.compile(
    "|".join(
        (
            r"\[(?:[0-9]{4}-)?[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}",
            r"\[[0-9]{2}:[0-9]{2}:[0-9]{2}(?: [A-Z_]+[0-9]+)+\]",  # time-only prefix (2024 builds)
            r"^[IWEF][0-9]{4} [0-9][0-9]:",
            r"UCX +[A-Z]+ ",
            r"NCCL (?:INFO|WARN)",
            r"(?:Prefill|Decode|new fill) batch[.,]",
            r"Traceback \(most recent",
            r':[0-9]+ - "[A-Z]+ \S+ HTTP/[0-9.]+" [0-9]{3}',
            r"Uvicorn running on|Application startup complete",
            r"sglang_router_rs::",
            # other engines' loggers (docs/formats/OTHER_ENGINES.md): their lines are read as theirs
            r"^(?:\([^()]*pid=[0-9]+[^()]*\) )?(?:INFO|WARNING|ERROR) [0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} \[?\S+:[0-9]+\] ",
            r"\[TRT-LLM\] |^\[TensorRT-LLM\]\[",
            r"Z +(?:INFO|WARN|ERROR) (?:\S+: )?dynamo_[a-z]+::",
            # a crash dump alone is a log all the same: the crash is the incident (docs/formats/SGLANG.md, "Crash dumps")
            f"(?:{RE_CRASH})",
            f"(?:{RE_CRASH_OPEN})",
            f"(?:{RE_GLOG})",
            f"(?:{RE_UCX})",
            f"(?:{RE_NCCL})",
            f"(?:{RE_BARE_KNOWN})",
        )
    ),
    re.M,
)
# Lines whose markers say nothing about the file: JSON objects and arrays (a transcript or a
# summary quoting log lines; docker's `{"log":` wrapper is a log line), members of a
# pretty-printed JSON document, and SSE framing (a captured stream's replies may quote logs).
_QUOTING = re.compile(r'^\s*(?:\{(?!"log":)|\[\s*[\[{"\]]|"[^"]*"\s*:|data:|event:)', re.M)


def sniff(head: bytes, path: str) -> float:
    """0 without any marker of a server log in the head; from 0.55 up to 1.0 with more of them."""
    text = head.decode("utf-8", "replace")
    if _QUOTING.search(text):
        text = "\n".join(ln for ln in text.split("\n") if not _QUOTING.match(ln))
    hits = sum(1 for _ in _MARKERS.finditer(text))
    if hits == 0:
        return 0.0  # not a log: ingest lists it as skipped, unless --parser forces this parser
    return min(1.0, 0.5 + hits / 20)


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
    # The head (for the year and the role) is read from its own stream: peeking a gzip stream
    # returns one buffer at most, and a cut one raises inside peek.
    with source.open() as head_stream:
        head_text = read_upto(head_stream, HEAD_BYTES).decode("utf-8", "replace")
    resume = ctx.resume or {}  # a grown file's later piece: what the piece before it had learnt
    year = ctx.year or (int(ctx.date[:4]) if ctx.date else None) or resume.get("year") or guess_year(head_text)
    # the year from the file date is noted only once a line is known to have needed a year
    year_note = None
    if year is None and ctx.host_year:
        year, other, how = ctx.host_year
        year_note = f"no dated line in the head: year {year} taken from {other}, {how}"
    if year is None and source.mtime:
        year = _dt.datetime.fromtimestamp(source.mtime, _dt.timezone.utc).year
        year_note = f"no dated line in the head: year {year} taken from the file date"
    year = year or 1970
    role = ctx.role or resume.get("role") or infer_role(head_text) or _role_from_name(source.path) or "unknown"
    ctx.inferred_role = role
    file_ts = _dt.datetime.fromtimestamp(source.mtime, _dt.timezone.utc) if source.mtime else None
    clock = passes.Clock(*_base_date(ctx, head_text, source), tz=ctx.tz, file_ts=file_ts)
    if resume.get("clock"):
        _resume_clock(clock, resume["clock"])
    if ctx.outer_offset_s is None:
        ctx.outer_offset_s = resume.get("outer_offset_s")
    with source.open() as stream:
        # the block and pass sizes are ingest's (core.inputs.Scan: speed against memory)
        blocks = lines.read_raw_blocks(
            stream, ctx.scan.block_bytes, ctx.on_progress, CONTINUES, ctx.scan.max_block_lines
        )
        totals = passes.Tally()
        late_after = _late_after(source)
        yield from passes.parse_blocks(blocks, ctx, year, role, source.path, clock, totals, late_after)
    ctx.first_ts, ctx.last_ts = totals.first_ts, totals.last_ts
    if year_note and totals.yearless:
        ctx.notes.append(f"{year_note} ({totals.yearless} line{'s' * (totals.yearless != 1)} without a year)")
    if totals.engines:
        ctx.notes.append(engines.read_note(totals.engines))
    ctx.notes.extend(passes.clock_notes(clock))
    ctx.notes.extend(passes.stamp_notes(totals, ctx.tz))
    ctx.notes.extend(passes.glued_body_note(totals))
    if totals.late:
        ctx.warnings.append(_late_warning(totals.late, late_after, source))
    if totals.unstorable:
        n = sum(k for k, _ in totals.unstorable)
        ctx.notes.append(
            f"{n} stats line{'s' * (n != 1)} with a value not finite or past its column's range "
            f"(first at line {min(f for _, f in totals.unstorable)}): the column is NULL, the text in `extra`"
        )
    ctx.carry = {
        "year": year,
        "role": role,
        "outer_offset_s": ctx.outer_offset_s,
        "clock": {
            "base": clock.base.isoformat(),
            "base_from": clock.base_from,
            "date": clock.date.isoformat() if clock.date else None,
            "secs": clock.secs,
            "last_ts": clock.last_ts.isoformat() if clock.last_ts else None,
        },
    }


# A line dated more than this after its file was last written is dated wrong (a year from the
# file date, a --tz the wrong way, a clock run ahead): ingest warns
LATE_AFTER_MTIME = _dt.timedelta(days=1)


def _late_after(source: Source) -> _dt.datetime:
    """The latest time a line of `source` can be dated by: now, or a day after its file date."""
    now = _dt.datetime.now(_dt.timezone.utc)
    if not source.mtime:
        return now
    return min(now, _dt.datetime.fromtimestamp(source.mtime, _dt.timezone.utc) + LATE_AFTER_MTIME)


def _late_warning(late: tuple[int, int], late_after: _dt.datetime, source: Source) -> str:
    n, first = late
    if source.mtime and late_after < _dt.datetime.now(_dt.timezone.utc):
        when = _dt.datetime.fromtimestamp(source.mtime, _dt.timezone.utc)
        what = f"more than a day after the file was last written ({when:%Y-%m-%d %H:%M} UTC)"
    else:
        what = f"later than now ({late_after:%Y-%m-%d %H:%M} UTC)"
    return (
        f"{n} line{'s' * (n != 1)} dated {what}, first at line {first}: a year, zone or clock is wrong "
        "(--year, --date or --tz set them)"
    )


def _resume_clock(clock: passes.Clock, state: dict) -> None:
    """The clock as the piece before left it: time-only and bare stats lines of a grown file's
    new lines are dated from the lines above them, as if the file had been read in one go."""
    clock.base = _dt.date.fromisoformat(state["base"])
    clock.base_from = state.get("base_from") or clock.base_from
    clock.date = _dt.date.fromisoformat(state["date"]) if state.get("date") else None
    clock.secs = state.get("secs")
    clock.last_ts = _dt.datetime.fromisoformat(state["last_ts"]) if state.get("last_ts") else None


def _base_date(ctx: Context, head_text: str, source: Source) -> tuple[_dt.date, str]:
    """The date of time-only prefixes before any dated line: --date, else the file's first dated
    line, else its modification date (in the log's zone; --year replaces its year)."""
    if ctx.date:
        return _dt.date.fromisoformat(ctx.date), "--date"
    m = re.search(r"(?:^|[\[ ])(20[0-9]{2}-[0-9]{2}-[0-9]{2}) [0-9]{2}:[0-9]{2}:[0-9]{2}", head_text, re.M)
    if m:
        try:
            return _dt.date.fromisoformat(m.group(1)), "the first dated line of the file"
        except ValueError:
            pass
    if source.mtime:
        from zoneinfo import ZoneInfo

        d = _dt.datetime.fromtimestamp(source.mtime, ZoneInfo(ctx.tz)).date()
        if ctx.year:
            d = d.replace(year=ctx.year) if not (d.month == 2 and d.day == 29) else _dt.date(ctx.year, 2, 28)
        return d, "the file's modification date (the day it was last written)"
    return _dt.date(ctx.year or 1970, 1, 1), "no --date, dated line or file date: January 1"


def _role_from_name(path: str) -> str | None:
    low = path.lower()
    if "prefill" in low:
        return "prefill"
    if "decode" in low:
        return "decode"
    if "router" in low or "gateway" in low:
        return "router"
    return None
