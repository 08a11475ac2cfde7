"""A log's blocks, in passes of several, into its tables: the native scanner first when it is
built, polars for the rest (and for everything without it)."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Iterator

import polars as pl

from forensics.core import schema
from forensics.parsers import lines, native
from forensics.parsers.base import Batch, Context, Written
from forensics.parsers.lines import MAX_LINE_CHARS, RawBlock
from forensics.parsers.server_log import scanner, stats
from forensics.parsers.server_log.classify import (
    _classify,
    _cri_ts,
    _fold_continuations,
    _join_partials,
    _local_to_utc,
    _strip_wrappers,
)
from forensics.parsers.server_log.events import (
    _NATIVE_EVENT_COLUMNS,
    _event_fields,
    _event_rooms,
    _events,
    _ready_rows,
    _regex_thread,
)
from forensics.parsers.server_log.grammar import ENGINE_FAMILIES, JSON_BODY_LEAD, RE_EXC_LINE, RE_TB, SGLANG_STAMP

NAME = "server_log"


# Blocks the native path reads in one pass (`_parse_raws`, `ctx.scan.group_blocks`): each pass
# pays polars' fixed cost once, and a pass's frames are most of the peak memory of the process
# that parses it; more blocks a pass are faster and hold more. A pass's frames cost per line more
# than per byte, so a pass also holds at most `ctx.scan.pass_lines` lines: three blocks of PD log
# lines, but two of short lines, which a block holds `max_block_lines` of. The polars path, which
# holds a whole block as text, keeps one block a pass.


@dataclasses.dataclass
class Tally:
    """What a file's passes add up to besides their rows: its time range, its stats lines with a
    value no column can store (count, first line), its lines whose two stamps disagree (by which
    stamp dated them: count, first line, the gap there in seconds), its lines dated by a stamp
    without a year, and its lines dated after the time they could have been written by (count,
    first line)."""

    first_ts: dt.datetime | None = None
    last_ts: dt.datetime | None = None
    unstorable: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    stamps: dict[str, tuple[int, int, float]] = dataclasses.field(default_factory=dict)
    yearless: int = 0
    late: tuple[int, int] | None = None
    engines: dict[str, int] = dataclasses.field(default_factory=dict)  # other engines' lines read, by family
    glued_bodies: tuple[int, int] | None = None  # lines with a JSON body glued in front of them (count, first line)

    def add(self, other: "Tally") -> None:
        if other.first_ts is not None and (self.first_ts is None or other.first_ts < self.first_ts):
            self.first_ts = other.first_ts
        if other.last_ts is not None and (self.last_ts is None or other.last_ts > self.last_ts):
            self.last_ts = other.last_ts
        self.unstorable.extend(other.unstorable)
        for k, (n, first, gap) in other.stamps.items():
            m, f, g = self.stamps.get(k, (0, first, gap))
            self.stamps[k] = (m + n, *((f, g) if f < first else (first, gap)))
        self.yearless += other.yearless
        for k, n in other.engines.items():
            self.engines[k] = self.engines.get(k, 0) + n
        if other.glued_bodies:
            n, first = self.glued_bodies or (0, other.glued_bodies[1])
            self.glued_bodies = (n + other.glued_bodies[0], min(first, other.glued_bodies[1]))
        if other.late:
            n, first = self.late or (0, other.late[1])
            self.late = (n + other.late[0], min(first, other.late[1]))


# A line's two stamps (a shipper's or launcher's, SGLang's own) that differ by more than this are
# noted once per input (issue 42)
STAMPS_APART_S = 60
# the stamp at the start of a prefix: ISO 8601 or `YYYY-MM-DD HH:MM:SS`, bracketed or not, with or
# without a zone (docker-json's prefix names itself first)
_RE_PREFIX_STAMP = (
    r"^(?:docker-json )?\[?([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,]([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})?"
)
# ts_raw of a stamp that has no year: `MM-DD HH:MM:SS` (sglang), `EMMDD HH:MM:SS.us` (glog, c10d)
_RE_YEARLESS_RAW = r"^(?:[0-9]{2}-[0-9]{2} |[IWEF][0-9]{3,4} )"


def tally(out: Batch, tz: str = "UTC", late_after: dt.datetime | None = None) -> Tally:
    """A finished pass's `Tally`; `late_after`: the latest time a line of the file can be dated."""
    t = Tally()
    if (bad := stats.unstorable_lines(out["batches"])).len():
        t.unstorable.append((bad.len(), bad.min()))
    tabs = [n for n in ("batches", "events") if n in out and out[n].height]
    for name in tabs:
        # a time placed from the file date is no line's: the input's span is its lines'
        df = out[name]
        ts = (df.filter(pl.col("ts_placed").fill_null("") != "file_time") if "ts_placed" in df.columns else df)["ts"]
        t.add(Tally(ts.min(), ts.max()))
    if not tabs:
        return t
    if "events" in tabs and (eng := out["events"].filter(pl.col("source").is_in(ENGINE_FAMILIES))).height:
        t.engines = dict(eng["source"].value_counts().iter_rows())
    rows = pl.concat([out[n].select("line_no", "ts", "ts_raw", "prefix") for n in tabs]).filter(
        pl.col("ts").is_not_null()
    )
    t.yearless = int(rows.select(pl.col("ts_raw").str.contains(_RE_YEARLESS_RAW).fill_null(False).sum()).item())
    # a response body another writer left without a line end: the line is the log line's record
    glued = rows.filter(pl.col("prefix").str.starts_with(JSON_BODY_LEAD).fill_null(False))["line_no"]
    if glued.len():
        t.glued_bodies = (glued.len(), int(glued.min()))
    if late_after is not None:
        late = rows.filter(pl.col("ts") > late_after)["line_no"]
        if late.len():
            t.late = (late.len(), int(late.min()))
    if rows["prefix"].null_count() < rows.height:
        t.stamps = _stamps_apart(rows.filter(pl.col("prefix").is_not_null()), tz)
    return t


def _stamps_apart(rows: pl.DataFrame, tz: str) -> dict[str, tuple[int, int, float]]:
    """Lines whose prefix's stamp and SGLang's own are over STAMPS_APART_S apart, by the one that
    dated them: "zone" (the prefix's, which has a zone) or "engine" (SGLang's, the later one).

    A line whose ts is not its SGLang stamp (`ts_raw`, read in --tz) was dated by a shipper's
    stamp with a zone; only the other lines' prefixes are read, and of them only the ones no
    shipper wrote (CRI, docker): a shipper's stamp with a zone dated its line.
    """
    inner = _local_to_utc(pl.col("ts_raw").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us"), tz)
    rows = rows.with_columns(_gap=(pl.col("ts") - inner).dt.total_microseconds() / 1e6)
    zoned = rows.filter(pl.col("_gap").abs() > STAMPS_APART_S)
    prefix = pl.col("prefix")
    lead = rows.filter(
        ((pl.col("_gap").abs() <= STAMPS_APART_S) | pl.col("_gap").is_null())
        & prefix.str.contains(r"^\[?[0-9]{4}-")
        & ~prefix.str.ends_with(" F")
        & ~prefix.str.ends_with(" P")
    )
    if lead.height:
        m = prefix.str.extract_groups(_RE_PREFIX_STAMP)
        local = pl.concat_str(
            m.struct.field("1"), pl.lit(" "), m.struct.field("2"), pl.lit("."), m.struct.field("3").fill_null("0")
        ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
        lead = (
            lead.with_columns(_zone=m.struct.field("4"), _gap=(pl.col("ts") - _local_to_utc(local, tz)))
            .filter(pl.col("_zone").is_null())
            .with_columns(_gap=pl.col("_gap").dt.total_microseconds() / 1e6)
            .filter(pl.col("_gap").abs() > STAMPS_APART_S)
        )
    out = {}
    for key, part in (("zone", zoned), ("engine", lead)):
        if part.height:
            first = part.sort("line_no").row(0, named=True)
            out[key] = (part.height, first["line_no"], first["_gap"])
    return out


def stamp_notes(totals: Tally, tz: str) -> list[str]:
    """What the two stamps of a line were and which dated it, once per input (issue 42)."""
    notes = []
    for key, (n, first, gap) in sorted(totals.stamps.items()):
        lines_ = f"{n} line{'s' * (n != 1)}"
        if key == "zone":
            # SGLang's clock runs -gap from the zoned stamp; Etc/GMT zones invert their sign
            hours = -gap / 3600
            fix = f"--tz Etc/GMT{-round(hours):+d}" if tz == "UTC" and abs(hours - round(hours)) < 0.01 else "--tz"
            notes.append(
                f"{lines_} carry a shipper's stamp with a zone and SGLang's own, which runs {hours:+.2f} h from "
                f"it read in --tz {tz} (first at line {first}): the stamp with the zone dates them; "
                f"`prefix` keeps it and `ts_raw` SGLang's ({fix} reads SGLang's clock in its zone)"
            )
        else:
            notes.append(
                f"{lines_} carry a launcher's stamp before SGLang's own, {_apart(gap)} apart (first at "
                f"line {first}): SGLang's stamp dates them, the launcher's is kept in `prefix`"
            )
    return notes


def glued_body_note(totals: Tally) -> list[str]:
    """What a JSON body glued in front of a log line leaves uncounted: a line is one record, the log's."""
    if not totals.glued_bodies:
        return []
    n, first = totals.glued_bodies
    return [
        f"{n} line{'s' * (n != 1)} begin{'s' * (n == 1)} with a JSON body glued in front of the log line (first at line "
        f"{first}): the log line is the record, the body is kept in `prefix` and what it says (an error "
        "message, a failed request) is not counted"
    ]


def _apart(gap_s: float) -> str:
    return f"{abs(gap_s) / 3600:.2f} h" if abs(gap_s) >= 3600 else f"{abs(gap_s):.0f} s"


@dataclasses.dataclass
class PassInfo:
    """What a pass parsed in a worker sends back besides its rows: its counts and notes, what it
    learnt of the Kibana offset, its `Tally`, and the clock it leaves (`pooled_pass`)."""

    parsed: int
    continuation: int
    unparsed: int
    outer_offset_s: float | None
    notes: list[str]
    clock: "Clock | None"  # None: its lines need the clock of the passes before it
    tally: Tally | None = None


def parse_blocks(
    blocks,
    ctx: Context,
    year: int,
    role: str,
    path: str,
    clock: "Clock",
    totals: Tally,
    late_after: dt.datetime | None = None,
) -> Iterator["Batch | Written"]:
    """`_parse_raws` over the blocks, then `clock_pass`, in order; each pass's `Tally` into `totals`
    (`late_after`: the latest time a line of the file can be dated by, for `Tally.late`).

    With ingest's worker processes (`ctx.pool`) the passes run there side by side, each written
    where it ran: this process only reads the blocks and adds up what each pass sends back. A pass
    whose lines take their time from the lines above them (time-only prefixes, bare stats lines)
    comes back whole and is finished here, in file order. Each pass gets its own copy of the
    context and the counts are merged in order. The first pass runs alone when it may teach the
    Kibana viewer offset (its text has the ` @ ` of a Kibana time), so what it learns reaches every
    later pass as it did when passes ran one after another.
    """
    import multiprocessing

    # a worker process parsing a whole (small) input has one core, the others theirs: one block
    # at a time, not grouped, keeps the whole tree's memory flat
    worker = multiprocessing.parent_process() is not None
    group = ctx.scan.group_blocks if native.enabled() and not worker else 1
    pool = ctx.pool
    waiting = _Waiting(clock)
    if pool is None:
        for raws in _passes(blocks, group, ctx.scan.pass_lines):
            for _, out in waiting.offer(None, clock_pass(_parse_raws(raws, ctx, year, role, path), clock)):
                totals.add(tally(out, clock.tz, late_after))
                yield out
        for _, out in waiting.finish():
            totals.add(tally(out, clock.tz, late_after))
            yield out
        return

    def merge(part, fut):
        got, info = fut.result()
        ctx.account(parsed=info.parsed, continuation=info.continuation, unparsed=info.unparsed)
        if ctx.outer_offset_s is None and info.outer_offset_s is not None:
            ctx.outer_offset_s = info.outer_offset_s
            ctx.notes.extend(info.notes)
        if info.clock is None:
            got = clock_pass(got, clock)
        else:
            _follow(clock, info.clock)
            totals.add(info.tally)
        return [w if isinstance(w, Written) else write(k, w) for k, w in waiting.offer(part, got)]

    def write(part, out):
        totals.add(tally(out, clock.tz, late_after))
        return pool.write(part, out)

    # two passes more than workers in flight: a worker that finishes finds the next one waiting
    # while this process reads the one after it
    window = pool.workers + 2
    queue: collections.deque = collections.deque()

    def merge_first() -> list[Written]:
        # the pass leaves the queue only once it has ended: a signal in the wait leaves it there
        # for the `finally` below, which waits for it before the input's folder goes
        got = merge(*queue[0])
        queue.popleft()
        return got

    try:
        for part, raws in enumerate(_passes(blocks, group, ctx.scan.pass_lines)):
            alone = part == 0 and any(_mentions(r, b" @ ") for r in raws)
            for r in raws:
                lines.left_out(r)  # the worker reads the text from the file itself where it can
            bctx = dataclasses.replace(
                ctx,
                lines=0,
                parsed_lines=0,
                continuation_lines=0,
                unparsed_lines=0,
                notes=[],
                pool=None,
                on_progress=None,
            )
            queue.append(
                (part, pool.submit(part, pooled_pass, raws, bctx, year, role, path, clock.base, clock.tz, late_after))
            )
            del raws
            if alone or len(queue) >= window:
                yield from merge_first()
        while queue:
            yield from merge_first()
        for part, out in waiting.finish():
            yield write(part, out)
    finally:
        # stopped early (a failed pass, a signal): the input's folder is removed next, so the
        # passes still running finish first
        for _, fut in queue:
            if not fut.cancel():
                fut.exception()


def pooled_pass(
    raws: list[RawBlock],
    ctx: Context,
    year: int,
    role: str,
    path: str,
    base: dt.date,
    tz: str,
    late_after: dt.datetime | None = None,
):
    """One pass in a worker (`parse_blocks`): (batch, PassInfo, whether the worker writes it).

    The pass is finished with a clock of its own. When none of its lines asked that clock for a
    time (no time-only prefix, no bare stats line), the rows are what the file's clock would give
    and the pass is written there; the clock it leaves goes back to be followed in order.
    Otherwise its rows go back unfinished, for the clock of the passes before it.
    """
    out = _parse_raws([lines.load(r) for r in raws], ctx, year, role, path)
    own = Clock(base, "", tz)
    done = clock_pass(out, own)
    asked = own.time_only or own.inherited or own.untimed or own.unplaced
    info = PassInfo(
        ctx.parsed_lines,
        ctx.continuation_lines,
        ctx.unparsed_lines,
        ctx.outer_offset_s,
        ctx.notes,
        None if asked else own,
        None if asked else tally(done, tz, late_after),
    )
    return (out, info, False) if asked else (done, info, True)


def _follow(clock: "Clock", after: "Clock") -> None:
    """The file's clock after a pass that read no time from it and left `after`."""
    if after.date is not None:
        clock.date, clock.secs = after.date, after.secs
    if after.last_ts is not None:
        clock.last_ts = after.last_ts
        clock.first_ts = clock.first_ts or after.first_ts
    for how, n in after.placed.items():
        clock.placed[how] = clock.placed.get(how, 0) + n


def _passes(blocks: Iterable[RawBlock], group: int, max_lines: int) -> Iterator[list[RawBlock]]:
    """The blocks in order, in runs of at most `group` blocks and `max_lines` lines (one block
    alone may have more lines)."""
    raws: list[RawBlock] = []
    n = 0
    for raw in blocks:
        if raws and n + raw.lines > max_lines:
            yield raws
            raws, n = [], 0
        raws.append(raw)
        n += raw.lines
        if len(raws) >= group:
            yield raws
            raws, n = [], 0
    if raws:
        yield raws


def _mentions(raw: RawBlock, needle: bytes) -> bool:
    """Whether the block's text has `needle`, without copying the block."""
    return re.search(re.escape(needle), raw.body) is not None


def _parse_raws(raws: list[RawBlock], ctx: Context, year: int, role: str, path: str) -> Batch:
    """Consecutive blocks, each read as it would be alone, in one pass.

    With the native scanner built, it splits the lines and reads the common ones whole: plain stats
    lines, the prefix of every other sglang line, canonical access lines and request logs. Polars
    does the rest, and all of a block with a k8s partial record. Its fixed cost (per call, a
    hundred calls, whatever the rows) is paid once for all the blocks; `_blk` keeps
    them apart where lines of a block affect each other (folding, rooms lent, the Kibana offset).
    It takes the blocks over: their text is dropped once scanned.
    """
    if not native.enabled():
        return _concat_batches([_parse_block(lines.frame(r), ctx, year, role, path) for r in raws])
    cfg = scanner.config()
    ds = [native.scan(cfg, r, year) for r in raws]
    # a k8s partial record may swallow the line after it, and a launcher's stamp before SGLang's
    # reads as SGLang's prefix to the scanner: the polars path decides such a block
    whole = [bool(d["partial"]) or _stamped_lead(d, r) for r, d in zip(raws, ds)]
    if any(whole):
        return _concat_batches(
            [
                _parse_block(lines.frame(r), ctx, year, role, path)
                if w
                else _parse_scanned([r], [d], ctx, year, role, path)
                for r, d, w in zip(raws, ds, whole)
            ]
        )
    for r in raws:
        r.body = b""  # read: the text goes while the frames are built
    return _parse_scanned(raws, ds, ctx, year, role, path)


# what is left of a line after a launcher's stamp that the scanner read as SGLang's prefix
# (RE_STAMPED_LEAD, in the scanner's message)
_RE_STAMPED_REST = rf"^(?:\[[^\[\]]*\]|[: ])*?{SGLANG_STAMP}"


def _stamped_lead(d: dict, raw: RawBlock) -> bool:
    """Whether a line the scanner read as SGLang's has a second SGLang stamp behind the first
    (`classify._strip_stamped_lead`); only blocks whose text has `] [` or `][` are looked at."""
    if not d["sg.n"] or not (_mentions(raw, b"] [") or _mentions(raw, b"][")):
        return False
    msg = pl.from_arrow(native.sg_messages(d)).cast(pl.Utf8)
    return bool(msg.filter(msg.str.starts_with("[")).str.contains(_RE_STAMPED_REST).any())


def _concat_batches(batches: list[Batch]) -> Batch:
    if len(batches) == 1:
        return batches[0]
    return {t: pl.concat([schema.conform(t, b[t]) for b in batches]) for t in batches[0]}


def _parse_scanned(raws: list[RawBlock], ds: list[dict], ctx: Context, year: int, role: str, path: str) -> Batch:
    """Blocks the scanner read (`ds`, none with a partial record) into their tables."""

    def each(frame):
        return pl.concat(
            [frame(d, raw).with_columns(_blk=pl.lit(i, dtype=pl.Int32)) for i, (d, raw) in enumerate(zip(ds, raws))]
        )

    nat = each(lambda d, raw: native.stats_frame(d, scanner.COLUMNS))
    nat = nat.with_columns(
        ts=pl.coalesce(_cri_ts(nat), _local_to_utc(pl.col("local"), ctx.tz)),
        prefix=pl.concat_str(pl.col("cri"), pl.lit(" F")),
        tail=pl.lit(None, dtype=pl.Utf8),
        truncated=pl.lit(False),
        host=pl.lit(ctx.host),
        role=pl.lit(role),
        source_file=pl.lit(path),
    )
    rest = each(native.rest_frame)
    other = (
        _classified_none(rest, ctx, year)
        if not rest.height
        else _regex_thread("lines", lambda r=rest: _classify(_join_partials(_strip_wrappers(r)), ctx, year))
    )
    del rest  # the lines' text goes as soon as they are classified
    sg = each(lambda d, raw: lines.with_flags(native.sglang_frame(d), raw))
    ds.clear()  # the scanner's buffers, the caller's reference too: the frames hold what they need
    sg = sg.with_columns(
        prefix=pl.concat_str(pl.col("cri"), pl.lit(" F")),
        partial=pl.when(pl.col("cri").is_not_null()).then(False),
        outer_ts=_cri_ts(sg),
        folded=pl.lit(0, dtype=pl.Int64),
        family=pl.lit("sglang"),
    ).with_columns(ts=pl.coalesce(pl.col("outer_ts"), _local_to_utc(pl.col("local"), ctx.tz)))
    # what _classify gives such a line: no level, glog file, peer or c10d rank (null columns); no
    # raw line either, which only unparsed rows keep
    sg = sg.select(
        [pl.col(c) if c in sg.columns else pl.lit(None).alias(c) for c in other.columns] + _NATIVE_EVENT_COLUMNS
    ).cast(other.schema)
    other = other.with_columns(pl.lit(None, dtype=sg.schema[c]).alias(c) for c in _NATIVE_EVENT_COLUMNS)
    # An access or request line read whole is an event head with nothing to fold into it unless a
    # line the scanner left follows it (a traceback body): the others skip folding.
    read = (sg["_acc_status"].is_not_null() | sg["_req_kind"].is_not_null()) & ~(sg["line_no"] + 1).is_in(
        other["line_no"].implode()
    )
    # `sg` stays whole: the events merge gathers the rows read whole and drops the others in the
    # one gather that puts the events in line order (a filter first cost a gather of every row)
    classified = _merge_by_line([other, sg.filter(~read)])
    del other
    # a block's first line has no line above it: nothing folds across blocks
    classified = classified.with_columns(_brk=pl.col("_brk") | (pl.col("_blk") != pl.col("_blk").shift(1)))
    return _finish_block(classified, ctx, role, path, taken=nat, ready=sg.with_columns(_keep=read))


_CLASSIFIED_NONE: dict[tuple, pl.DataFrame] = {}


def _classified_none(rest: pl.DataFrame, ctx: Context, year: int) -> pl.DataFrame:
    """`_classify` of no lines (the scanner read every line of the pass): its columns, computed
    once per process, since its hundred polars calls cost as much on no rows as on a block's rest
    and a small input is nothing else."""
    key = (str(rest.schema), ctx.tz, year, ctx.outer_offset_s is None)
    if key not in _CLASSIFIED_NONE:
        _CLASSIFIED_NONE[key] = _regex_thread(
            "lines", lambda: _classify(_join_partials(_strip_wrappers(rest)), ctx, year)
        )
    return _CLASSIFIED_NONE[key]


def _merge_by_line(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Frames of one schema, each in line order, as one in line order: no sort when only one has
    rows (`merge_sorted` measured slower than concat and sort).

    Rows with a false `_keep` (when the frames have that column) are left out in the same gather.
    """
    full = [f for f in frames if f.height]
    if "_keep" not in frames[0].columns:
        if len(full) <= 1:
            return full[0] if full else frames[0]
        return pl.concat(full).sort("line_no")
    both = pl.concat(full) if full else frames[0]
    keep = both["_keep"]
    order = both.select(pl.int_range(pl.len(), dtype=pl.UInt32).filter(keep).sort_by(pl.col("line_no").filter(keep)))
    return both.drop("_keep")[order.to_series()]


def _parse_block(df: pl.DataFrame, ctx: Context, year: int, role: str, path: str) -> Batch:
    """A block's lines (`parsers.lines.frame`) into its tables, on the polars path alone."""
    return _finish_block(_classify(_join_partials(_strip_wrappers(df)), ctx, year), ctx, role, path)


def _finish_block(
    df: pl.DataFrame,
    ctx: Context,
    role: str,
    path: str,
    taken: pl.DataFrame | None = None,
    ready: pl.DataFrame | None = None,
) -> Batch:
    """Classified lines of a block into its tables; `taken` (finished batches rows) are the stats
    lines the native scanner took, `ready` the sglang lines it read, where `_keep` marks the
    access and request lines read whole, each an event of its own (the other rows of `ready` are
    in `df`)."""
    # Nothing folds across blocks: blocks are cut before a record's head (parsers/lines.py), unless
    # its body runs over RECORD_BACKTRACK; such orphaned body lines land in unparsed with their numbers.
    df = _fold_continuations(df)
    is_stats = pl.col("family").is_not_null() & ~pl.col("_is_event")
    df = df.with_columns(
        _table=pl.when(pl.col("_cont"))
        .then(pl.lit("cont"))
        .when(is_stats)
        .then(pl.lit("batches"))
        .when(pl.col("family").is_not_null())
        .then(pl.lit("events"))
        .otherwise(pl.lit("unparsed")),
        host=pl.lit(ctx.host),
        role=pl.lit(role),
        source_file=pl.lit(path),
    )
    # traceback text and exception type per record
    conts = (
        df.filter(pl.col("_table") == "cont")
        .group_by("_grp", maintain_order=True)
        .agg(
            traceback=pl.col("body").str.join("\n"),
            exc_type=pl.col("body").filter(~pl.col("body").str.contains(r"^\s")).last().str.extract(RE_EXC_LINE, 1),
        )
    )
    ev = df.filter(pl.col("_table") == "events").join(conts, on="_grp", how="left")
    if "_acc_status" in ev.columns:
        # access and request lines the native scanner read skip `_event_fields`; the rooms one
        # line lends another are then found over all of them
        read = ev["_acc_status"].is_not_null() | ev["_req_kind"].is_not_null()
        parts = [_event_fields(ev.filter(~read).drop(_NATIVE_EVENT_COLUMNS), ctx), _ready_rows(ev.filter(read))]
        if ready is not None and ready.height:
            parts.append(
                _ready_rows(ready).with_columns(host=pl.lit(ctx.host), role=pl.lit(role), source_file=pl.lit(path))
            )
        ready = None
        # the events columns, the block of each row while rooms are lent, and which rows to keep
        parts = [
            schema.conform("events", p.with_columns(truncated=pl.col("unterminated"))).with_columns(
                p["_blk"], p["_keep"] if "_keep" in p.columns else pl.lit(True).alias("_keep")
            )
            for p in parts
        ]
        ev = _merge_by_line(parts)
        del parts
        ev = _event_rooms(ev).drop("_blk")
    else:
        ev = _events(ev, ctx).with_columns(truncated=pl.col("unterminated"))
    st = df.filter(pl.col("_table") == "batches")
    if taken is not None:
        # the scanner's rows are in line order; the few stats lines it left are merged in
        parts = [schema.conform("batches", taken)]
        if st.height:
            parts.append(schema.conform("batches", stats._batches(stats._stats_lead(st)).sort("line_no")))
        st = _merge_by_line(parts)
    else:
        st = stats._batches(stats._stats_lead(st))
    un = df.filter(pl.col("_table") == "unparsed").with_columns(
        line=pl.col("line").str.slice(0, MAX_LINE_CHARS),
        reason=pl.when(pl.col("line").str.strip_chars() == "")
        .then(pl.lit("blank"))
        .when(
            pl.col("unterminated")
            | (pl.col("last_line") & pl.col("body").str.contains(r"^(?:\[[0-9=-]|[IWEF][0-9]|\{)"))
        )
        .then(pl.lit("truncated"))
        .when(pl.col("body").str.contains(RE_TB))
        .then(pl.lit("orphan_continuation"))
        .otherwise(pl.lit("unrecognised")),
        format=pl.lit(NAME),
    )
    n_cont = int((df["_table"] == "cont").sum()) + int(df["folded"].sum())
    ctx.account(parsed=ev.height + st.height, continuation=n_cont, unparsed=un.height)
    return {"events": ev, "batches": st, "unparsed": un}


# A time-only prefix (`[16:43:29 TP0]`, 2024 builds) whose time runs back by more than this from
# the line before it is on the next day; less is lines of several processes interleaving (or a
# DST change of one hour).
NEXT_DAY_BACK_S = 3600
_RE_TIME_ONLY = r"^[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?$"
_RE_DATED = r"^([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2})"


@dataclasses.dataclass
class Clock:
    """What a file's earlier passes leave for the later ones (`clock_pass`): the date and time of
    the last line with a sglang prefix, and the time of the last timed line."""

    base: dt.date  # the date of time-only lines before any dated line
    base_from: str  # where `base` comes from, for the note
    tz: str = "UTC"
    date: dt.date | None = None
    secs: int | None = None
    last_ts: dt.datetime | None = None
    first_ts: dt.datetime | None = None  # of the file's first timed line: the one below the lines before it
    time_only: int = 0  # time-only lines dated
    inherited: int = 0  # stats lines that took the time of a line above
    untimed: int = 0  # stats lines with no timed line above or below them
    file_ts: dt.datetime | None = None  # the input's file time: for events in an input without a timed line
    # lines without a time of their own, by how their time was placed (`PLACED`)
    placed: dict[str, int] = dataclasses.field(default_factory=dict)
    unplaced: int = 0  # events no timed line of the pass came before: the clock of the passes before decides


def clock_pass(out: Batch, clock: Clock) -> Batch:
    """Times for the lines of a pass that carry none of their own, in file order across passes.

    A time-only sglang prefix takes the date of the dated line above it (the base date before
    the first), a day later each time its clock runs backwards by hours. A stats line with no
    prefix (2024 builds print bare ones) takes the time of the nearest timed line above it and
    keeps a null `ts_raw`, which says so.
    """
    tabs = [t for t in ("events", "batches") if t in out and out[t].height]
    if not tabs:
        return out
    rows = pl.concat([out[t].select("line_no", "ts", "ts_raw") for t in tabs]).sort("line_no")
    time_only = pl.col("ts").is_null() & pl.col("ts_raw").str.contains(_RE_TIME_ONLY).fill_null(False)
    dated = pl.col("ts_raw").str.contains(_RE_DATED).fill_null(False)
    # the regexes run on every row only in a file that has time-only lines: elsewhere every line
    # with a time-only shape lacks a ts, and the clock only needs the last dated line
    untimed = rows.filter(pl.col("ts").is_null() & pl.col("ts_raw").is_not_null())
    if untimed.select(time_only.any()).item():
        seq = rows.filter(time_only | dated).with_columns(_dated=dated, _timeonly=time_only)
    else:
        timed_rows = rows.filter(pl.col("ts").is_not_null())
        seq = timed_rows.tail(4096).filter(dated)
        if not seq.height:
            seq = timed_rows.filter(dated)
        seq = seq.tail(1).with_columns(_dated=pl.lit(True), _timeonly=pl.lit(False))
    if seq["_timeonly"].any():
        clock.time_only += int(seq["_timeonly"].sum())
        secs = pl.col("ts_raw").str.extract(r"([0-9]{2}:[0-9]{2}:[0-9]{2})", 1).str.to_time("%H:%M:%S", strict=False)
        seq = seq.with_columns(
            _secs=(secs.cast(pl.Int64) // 1_000_000_000).cast(pl.Int64),
            _day=pl.col("ts_raw").str.extract(_RE_DATED, 1).str.to_date(strict=False),
        )
        prev = pl.col("_secs").shift(1, fill_value=clock.secs)
        back = (pl.col("_timeonly") & ((prev - pl.col("_secs")) > NEXT_DAY_BACK_S)).fill_null(False)
        grp = pl.col("_dated").cast(pl.Int64).cum_sum()
        start = clock.date if clock.date is not None else clock.base
        seq = seq.with_columns(_grp=grp, _back=back.cast(pl.Int32)).with_columns(
            _date=pl.col("_day").forward_fill().fill_null(start)
            + pl.duration(days=pl.col("_back").cum_sum().over("_grp"))
        )
        local = pl.concat_str(pl.col("_date").cast(pl.Utf8), pl.lit(" "), pl.col("ts_raw")).str.to_datetime(
            "%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us"
        )
        fixed = seq.filter(pl.col("_timeonly")).select("line_no", _ts=_local_to_utc(local, clock.tz))
        last = seq.row(-1, named=True)
        clock.date, clock.secs = last["_date"], last["_secs"]
        out = dict(out)
        for t in tabs:
            out[t] = (
                out[t]
                .join(fixed, on="line_no", how="left", maintain_order="left")
                .with_columns(ts=pl.coalesce("ts", "_ts"))
                .drop("_ts")
            )
        rows = pl.concat([out[t].select("line_no", "ts", "ts_raw") for t in tabs]).sort("line_no")
    elif seq.height:
        # the last dated line the time-only lines of a later pass follow (a date like Feb 30 dates nothing)
        day = pl.col("ts_raw").str.extract(_RE_DATED, 1).str.to_date(strict=False)
        clock_at = pl.col("ts_raw").str.extract(_RE_DATED, 2).str.to_time("%H:%M:%S", strict=False)
        ok = seq.select(_day=day, _t=clock_at).drop_nulls()
        if ok.height:
            last = ok.row(-1, named=True)
            clock.date = last["_day"]
            clock.secs = last["_t"].hour * 3600 + last["_t"].minute * 60 + last["_t"].second
    timed = rows.filter(pl.col("ts").is_not_null()).select("line_no", _ts="ts")
    if "batches" in tabs:
        b = out["batches"]
        bare = pl.col("ts").is_null() & pl.col("ts_raw").is_null()
        if b.select(bare.any()).item():
            untimed = b.filter(bare).select("line_no")
            placed = _placed(untimed, timed, clock)
            clock.inherited += placed.height
            clock.unplaced += untimed.height - placed.filter(pl.col("ts_placed") == "line_above").height
            out = dict(out)
            out["batches"] = _with_placed(b, placed)
    if "events" in tabs:
        # a line that prints no time of its own (a crash dump, a bare message) happened after the
        # last timed line above it; before the first, it came before the first below it
        e = out["events"]
        lost = pl.col("ts").is_null()
        if e.select(lost.any()).item():
            untimed = e.filter(lost).select("line_no")
            placed = _placed(untimed, timed, clock)
            clock.unplaced += untimed.height - placed.filter(pl.col("ts_placed") == "line_above").height
            _count_placed(clock, placed)
            out = dict(out)
            out["events"] = _with_placed(e, placed)
    timed = rows.filter(pl.col("ts").is_not_null())
    if timed.height:
        clock.last_ts = timed["ts"][-1]
        if clock.first_ts is None:
            clock.first_ts = timed["ts"][0]
    return out


def clock_notes(clock: Clock) -> list[str]:
    """What `clock_pass` did to a file, for its notes."""
    notes = []
    if clock.time_only:
        notes.append(
            f"time-only prefixes ({clock.time_only} lines): dated from the dated line above them, before "
            f"the first one from {clock.base_from} ({clock.base}); a day later where the time runs "
            f"backwards by more than {NEXT_DAY_BACK_S // 3600} h"
        )
    if clock.inherited:
        notes.append(
            f"stats lines without a prefix ({clock.inherited}): ts is the time of the nearest timed line "
            "above them (below them, before the file's first), ts_raw is null, ts_placed says which"
        )
    if clock.untimed:
        notes.append(f"stats lines without a prefix and no timed line near them ({clock.untimed}): ts is null")
    if clock.placed:
        n = sum(clock.placed.values())
        how = ", ".join(
            f"{PLACED[k]} ({v})" for k, v in sorted(clock.placed.items(), key=lambda kv: list(PLACED).index(kv[0]))
        )
        notes.append(
            f"{n} line{'s' * (n != 1)} without a time of {'their' if n != 1 else 'its'} own (crash dumps, bare "
            f"messages): ts placed at {how}; ts_placed says which"
        )
    return notes


# how `clock_pass` placed the time of a line without one (`ts_placed`), in the order it tries them
PLACED = {
    "line_above": "the nearest timed line above",
    "line_below": "the nearest timed line below",
    "file_time": "the file's time",
}


def _placed(untimed: pl.DataFrame, timed: pl.DataFrame, clock: "Clock") -> pl.DataFrame:
    """`line_no, _ts, ts_placed` of the `untimed` lines that get a time: the nearest timed line
    above (in this pass, else the passes before), else below (in this pass). The others wait for
    a later pass (`_Waiting`)."""
    dtype = timed.schema["_ts"]
    above = untimed.join_asof(timed, on="line_no", strategy="backward", allow_exact_matches=False)
    below = untimed.join_asof(timed.rename({"_ts": "_below"}), on="line_no", strategy="forward")
    last = pl.lit(clock.last_ts, dtype=dtype)
    got = above.with_columns(_below=below["_below"]).select(
        "line_no",
        _ts=pl.coalesce("_ts", last, "_below"),
        ts_placed=pl.when(pl.col("_ts").is_not_null() | last.is_not_null())
        .then(pl.lit("line_above"))
        .when(pl.col("_below").is_not_null())
        .then(pl.lit("line_below")),
    )
    return got.filter(pl.col("_ts").is_not_null())


def _count_placed(clock: "Clock", placed: pl.DataFrame) -> None:
    for how, n in placed.group_by("ts_placed").len().iter_rows():
        clock.placed[how] = clock.placed.get(how, 0) + n


# passes with lines without a time held while no line of the file has one: they wait for the
# first timed line below them. Past this many the wait ends (memory): events take the file's
# time, stats lines none
HELD_PASSES = 2


def _untimed(out: Batch) -> bool:
    return any(
        t in out and out[t].height and out[t].select(pl.col("ts").is_null().any()).item() for t in ("events", "batches")
    )


class _Waiting:
    """The passes before a file's first timed line whose lines have no time: held back until a
    later pass gives one (`line_below`), else, at the end or past HELD_PASSES, finished with the
    file's time for their events (`file_time`) and none for their stats lines."""

    def __init__(self, clock: "Clock"):
        self.clock = clock
        self.held: list = []
        self.waiting = 0  # held passes that have lines without a time

    def offer(self, key, out: "Batch | Written") -> list:
        """The (key, pass) pairs ready to be written, in order: none while `out` has to wait. A pass
        a worker wrote cannot wait and has no line that would (it would have come back)."""
        written = isinstance(out, Written)
        untimed = not written and _untimed(out)
        if self.clock.first_ts is None and not written and (self.held or untimed):
            # a pass with nothing to wait for waits too, behind one that does: passes stay in order
            self.held.append((key, out))
            self.waiting += untimed
            full = self.waiting > HELD_PASSES or len(self.held) > 4 * HELD_PASSES
            return self.finish() if full else []
        ready = self.finish() if self.held and (self.clock.first_ts is not None or not written) else []
        return [*ready, (key, out)]

    def finish(self) -> list:
        held, self.held, self.waiting = self.held, [], 0
        return [(k, _placed_at(o, self.clock)) for k, o in held]


def _placed_at(out: Batch, clock: "Clock") -> Batch:
    """A held pass's untimed lines at the file's first timed line, else its events at the file time."""
    out = dict(out)
    for t in ("events", "batches"):
        if t not in out or not out[t].height:
            continue
        df = out[t]
        lost = df.filter(pl.col("ts").is_null()).select("line_no")
        if not lost.height:
            continue
        dtype = df.schema["ts"]
        at, how = (clock.first_ts, "line_below") if clock.first_ts is not None else (clock.file_ts, "file_time")
        if at is None or (t == "batches" and how == "file_time"):
            if t == "batches":
                clock.untimed += lost.height
            continue
        placed = lost.select("line_no", _ts=pl.lit(at, dtype=dtype), ts_placed=pl.lit(how))
        if t == "batches":
            clock.inherited += placed.height
        else:
            _count_placed(clock, placed)
        out[t] = _with_placed(df, placed)
    return out


def _with_placed(df: pl.DataFrame, placed: pl.DataFrame) -> pl.DataFrame:
    """`df` with the times of `placed` where it had none, and how each was placed."""
    if "ts_placed" not in df.columns:
        df = df.with_columns(ts_placed=pl.lit(None, dtype=pl.Utf8))
    return (
        df.join(placed.rename({"ts_placed": "_how"}), on="line_no", how="left", maintain_order="left")
        .with_columns(ts=pl.coalesce("ts", "_ts"), ts_placed=pl.coalesce("ts_placed", "_how"))
        .drop("_ts", "_how")
    )
