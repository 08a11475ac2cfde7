"""Ingest: discover inputs, pick a parser for each, parse into the store.

One pool of worker processes, one per core this process may use (or `--jobs`), parses every input:
a small input whole in one worker, a large one pass by pass on all of them, each pass written where
it ran. An input goes to the store's .tmp and is committed with one rename; its sha256 (of the
decompressed content) is the key, so the same content is ingested once whatever its name. A file
that grew since it was committed is read on from where it ended (forensics/ingest/grown.py); a
signal stops the ingest between commits (forensics/ingest/stop.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed

import polars as pl

from forensics.core.errors import ForensicsError, InputError, UsageError
from forensics.ingest import grown, stop
from forensics.ingest.sources import discover, not_a_log
from forensics.parsers import PARSERS, by_name, server_log
from forensics.parsers.base import Batch, Context, Source, Written
from forensics.parsers.lines import TextStream, count_newlines
from forensics.store import Store, pieces
from forensics.store.parts import write_part

SNIFF_BYTES = 64 << 10
_ROTATION = re.compile(r"(\.(log|txt|out|err|jsonl?|gz|zst|\d+))+$", re.I)


@dataclasses.dataclass
class FileResult:
    path: str
    format: str | None = None
    host: str | None = None
    role: str | None = None
    lines: int = 0
    parsed: int = 0
    continuation: int = 0
    unparsed: int = 0
    status: str = "ingested"  # ingested | duplicate | failed | skipped (not a log: see skip_kind)
    error: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    skip_kind: str | None = None
    skip_reason: str | None = None


@dataclasses.dataclass
class Options:
    host: str | None = None
    role: str | None = None
    tz: str = "UTC"
    year: int | None = None
    date: str | None = None  # YYYY-MM-DD (or YYYY, as `year`) for lines with a time and no date
    run: str | None = None
    format: str | None = None
    jobs: int | None = None

    def __post_init__(self) -> None:
        if self.date is None:
            return
        d = self.date.strip()
        if len(d) == 4 and d.isdigit():  # a year alone says what --year says
            self.date, self.year = None, self.year or int(d)
            return
        try:
            self.date = dt.date.fromisoformat(d).isoformat()
        except ValueError:
            raise UsageError(f"--date wants YYYY-MM-DD or YYYY, got {d!r}", help="e.g. --date 2024-11-29") from None
        if self.year is not None and self.year != int(self.date[:4]):
            raise UsageError(f"--date {self.date} and --year {self.year} disagree", help="pass one of them")


def default_host(src_path: str, roots: list[str], member: str | None = None) -> str:
    """Host from the path: the folder a file sits in, unless that is the folder given to ingest.

    The folder's name is kept as it is (`decode!7` stays `decode!7`): only an archive member's
    path says where the archive ends (`member`), a `!` in a folder or file name is a character.
    """
    path = src_path[: -len(member) - 1] if member and src_path.endswith("!" + member) else src_path
    if member:
        parts = [p for p in member.split("/") if p not in ("", ".", "..")]
        if len(parts) >= 2:
            return parts[-2]
        return _ROTATION.sub("", parts[-1]) if parts else "unknown"
    parent = os.path.dirname(os.path.abspath(path))
    if any(os.path.abspath(r) == parent for r in roots if os.path.isdir(r)) or all(not os.path.isdir(r) for r in roots):
        return _ROTATION.sub("", os.path.basename(path)) or os.path.basename(path)
    return os.path.basename(parent)


class NotALog(Exception):
    """An input no parser should read: ingest lists it in `files` as skipped, with its kind and why."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def choose_parser(src: Source, forced: str | None):
    """The parser forced, else the most confident one; NotALog when the input is not a log."""
    if forced:
        try:
            return by_name(forced)
        except KeyError:
            raise UsageError(f"unknown parser {forced!r}", help="see `forensics formats` for the names") from None
    if os.path.isdir(src.fs_path) and src.member is None:
        best = max(PARSERS, key=lambda p: getattr(p, "sniff_dir", lambda _: 0.0)(src.fs_path))
        return best
    from forensics.parsers.lines import NUL_RUN, TextStream, read_upto

    with src.open() as f:
        raw = head = read_upto(f, SNIFF_BYTES)
    if b"\0" * NUL_RUN in raw or (b"\r" in raw and b"\n" not in raw):
        # a copytruncate hole before the first line, or CR line ends: text parsers read the file as
        # TextStream gives it (`_parse_one`), so they sniff it that way too
        with src.open() as f:
            head = read_upto(TextStream(f), SNIFF_BYTES)
    if not head and src.size:
        # compressed bytes that decompress to nothing (a stream cut before its first block) are no
        # empty file: the server log's read keeps what there is and notes a cut, as for any cut log;
        # so is a file of NULs alone (truncated by copytruncate, nothing written since)
        return server_log
    scores = {p.name: _sniff(p, raw, head, src.path) for p in PARSERS}
    # On a tie a parser that reads structure (JSON objects, a binary header) wins over the server
    # log, which counts markers in text: a transcript whose replies quote log lines has them too.
    # Otherwise the first listed wins (a stable sort).
    ranked = sorted(PARSERS, key=lambda p: (scores[p.name], p is not server_log), reverse=True)
    doc = not_a_log(head, src.path)
    if doc is not None:
        # notes and summaries quote log lines: a document kind outranks the server-log sniff, not a
        # parser of structure that claims the input (an opencode session is a .json file)
        best = next((p for p in ranked if p is not server_log), None)
        if best is None or scores[best.name] < 0.5:
            raise NotALog(*doc)
        return best
    best = ranked[0]
    if scores[best.name] >= 0.5:
        return best
    if _looks_binary(head):
        raise NotALog("binary", "binary content that no parser reads (pass --parser to force one)")
    raise NotALog("text", f"no server-log, transcript or trace markers in its first {SNIFF_BYTES >> 10} KiB")


# Parsers that read binary records: they get the input's bytes as they are, never a TextStream.
BINARY_FORMATS = {"nixl_telemetry", "opencode"}


def _sniff(parser, raw: bytes, text: bytes, path: str) -> float:
    if parser.name in BINARY_FORMATS or text is raw:
        return parser.sniff(raw, path)
    return max(parser.sniff(raw, path), parser.sniff(text, path))


def _looks_binary(head: bytes) -> bool:
    """More than 10% bytes that no text log contains (NULs and C0 controls other than tab/newlines)."""
    if not head:
        return False
    odd = sum(1 for b in head[:8192] if b < 9 or 13 < b < 32 or b == 127)
    return odd > len(head[:8192]) * 0.10


class _HashingStream:
    """Wraps a binary stream and hashes what is read through it; `eof` once it was read to the end.

    The hash and the newline count run on a thread of their own (both release the GIL), one
    chunk behind the read: with the passes parsed in the workers, what this process does per
    byte bounds how many cores one input can use, and this was most of it.
    """

    def __init__(self, inner):
        self.inner, self._h, self.n, self.eof = inner, hashlib.sha256(), 0, False
        self._newlines, self.last = 0, b""  # for the extent of what was read (`_extent`)
        self._behind: Future | None = None

    def _add(self, b: bytes) -> None:
        self._h.update(b)
        self._newlines += count_newlines(b)

    def _caught_up(self) -> None:
        if self._behind is not None:
            self._behind.result()
            self._behind = None

    @property
    def h(self):
        self._caught_up()
        return self._h

    @property
    def newlines(self) -> int:
        self._caught_up()
        return self._newlines

    def _seen(self, b: bytes, asked) -> bytes:
        if b:
            self._caught_up()
            self._behind = _hash_thread().submit(self._add, b)
            self.n += len(b)
            self.last = b[-1:]
        elif asked != 0:
            self.eof = True
        return b

    def read(self, n=-1):
        return self._seen(self.inner.read(n), n)

    def read1(self, n=-1):
        return self._seen(self.inner.read1(n) if hasattr(self.inner, "read1") else self.inner.read(n), n)

    def readline(self, limit=-1):
        return self._seen(self.inner.readline(limit), limit)

    def __iter__(self):
        while line := self.readline():
            yield line

    def peek(self, n=0):
        return self.inner.peek(n) if hasattr(self.inner, "peek") else b""

    def __getattr__(self, a):
        return getattr(self.inner, a)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # kept open: ingest drains the rest into the hash, then closes it
        return None


@functools.cache
def _hash_thread():
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(1, thread_name_prefix="sha256")


def _content_digest(open_stream, hasher: "_HashingStream | None") -> tuple[str, int, str | None, int]:
    """sha256 and size of the decompressed content, why a compressed stream was cut, if it was, and
    its lines.

    The parser's own read is reused when it went to the end; a parser that read only a head and
    then used the file by path (SQLite) gets a fresh full read, so that two files never share a
    hash because they share a header.
    """
    from forensics.core.inputs import was_cut
    from forensics.parsers.lines import read_upto

    # a parser that read to the end stops there: a live log written on meanwhile is not hashed
    # past what was parsed (the next ingest reads it on from here)
    if hasher is not None and not hasher.closed and not hasher.eof:
        while read_upto(hasher, 1 << 22):
            pass
    if hasher is None or not hasher.eof:
        if hasher is not None:
            hasher.inner.close()
        hasher = _HashingStream(open_stream())
        while read_upto(hasher, 1 << 22):
            pass
    cut = was_cut(hasher.inner)
    hasher.inner.close()
    return hasher.h.hexdigest(), hasher.n, cut, grown.extent_lines(hasher.newlines, hasher.last)


def _dir_digest(path: str) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    for d, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(d, f)
            h.update(os.path.relpath(full, path).encode() + b"\0")
            with open(full, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
                    n += len(chunk)
    return h.hexdigest(), n


def ingest_one(
    store_root: str,
    src: Source,
    opts: Options,
    host: str,
    progress: Callable[[int], None] | None = None,
    prior: pieces.Prior | None = None,
) -> FileResult:
    """Parse one input into the store. Runs in a worker process."""
    finish = _parse_one(store_root, src, opts, host, progress, prior, None)
    return finish() if callable(finish) else finish


def _parse_one(
    store_root: str,
    src: Source,
    opts: Options,
    host: str,
    progress: Callable[[int], None] | None = None,
    prior: pieces.Prior | None = None,
    pool: "_Pool | None" = None,
) -> "FileResult | Callable[[], FileResult]":
    """Parse one input; what is left once every line is parsed (writing the last parts, the files
    row and the commit) is returned as a function, to overlap with the next input
    (`_one_after_another`). Fails early with the FileResult itself. With `pool` the parser may
    parse its passes there (`_InputPool`).

    Whatever goes wrong inside one input (a parser's bug, JSON nested too deep, a decoder error)
    fails that input alone: its lines go to `unparsed` with the reason (`_record_failed`), and
    ingest goes on with the others.
    """
    store = Store(store_root)
    res = FileResult(path=src.path)
    if src.special:
        return _skip_special(store, src, opts)
    growth = None
    if prior is not None:
        try:
            growth = grown.examine(src, prior, opts.format)
        except (ForensicsError, OSError, EOFError):
            growth = None  # read as a new input below, which reports the error
        if growth == "same":  # unchanged since it was committed: nothing to read
            return FileResult(path=src.path, format=prior.last.format, host=host, role=opts.role, status="duplicate")
    try:
        parser = by_name(growth.format) if growth else choose_parser(src, opts.format)
    except KeyError:  # a parser of an older version, gone: read the file as new
        growth, parser = None, choose_parser(src, opts.format)
    except NotALog as e:
        return _skip(store, src, e, opts)
    except InputError as e:
        res.status, res.error = "failed", e.render()
        return res
    except UsageError:
        raise
    except Exception as e:  # a sniff that crashed: the input fails alone
        return _record_failed(store, src, opts, host, None, e)
    res.format = parser.name
    ctx = Context(
        host=host,
        role=opts.role,
        tz=opts.tz,
        year=opts.year,
        date=opts.date,
        run=opts.run,
        on_progress=progress,
        resume=growth.state if growth else None,
    )
    is_dir = os.path.isdir(src.fs_path) and src.member is None
    src_given = src  # as discovered: a failed parse reads its lines from here
    hasher: _HashingStream | None = None
    texts: list[TextStream] = []
    if not is_dir:
        orig_open = src.open
        if growth:
            orig_open = grown.window(src.open, growth.start, growth.size)

        def hashed_open():
            nonlocal hasher
            hasher = _HashingStream(orig_open())
            if parser.name in BINARY_FORMATS:
                return hasher
            texts.append(TextStream(hasher))
            return texts[-1]

        # the parser reads through the hash: one pass over the data, not two
        src = dataclasses.replace(src)
        src.open = hashed_open  # type: ignore[method-assign]
    writer = store.writer(f"tmp{os.getpid()}_{abs(hash(src.path))}")
    started = dt.datetime.now(dt.timezone.utc)
    if pool is not None and not (growth and growth.line_offset):
        # a grown file's later piece is renumbered here after parsing (`_renumbered`): its passes
        # stay in this process
        ctx.pool = _InputPool(pool, writer.dir)

    def failed(e: Exception) -> FileResult:
        writer.abort()
        if isinstance(e, ForensicsError):
            res.status, res.error = "failed", e.render()
            return res
        if isinstance(e, (OSError, EOFError)):
            # a truncated .gz / .zst ends in an error after its good part; keep what was read
            res.status, res.error = "failed", f"cannot read {src.path}: {e}"
            return res
        return _record_failed(store, src_given, opts, host, parser.name, e)

    try:
        batches = parser.parse(src, ctx)
        if growth and growth.line_offset:
            batches = _renumbered(batches, growth.line_offset)
        writes = _write_all(batches, writer, lambda: hasher is not None and hasher.eof)
        lines = None
        if is_dir:
            sha, nbytes = _dir_digest(src.fs_path)
        elif growth:
            sha, nbytes, cut, lines = growth.sha256, growth.size - growth.start, growth.cut, growth.lines
            if hasher is not None:
                hasher.inner.close()
        else:
            sha, nbytes, cut, lines = _content_digest(orig_open, hasher)
        if not is_dir:
            if cut:
                ctx.notes.append(f"compressed stream is cut ({cut}); kept what was readable")
            read_whole = [t for t in texts if t.at_end]
            if read_whole:
                ctx.notes.extend(read_whole[-1].notes())
    except Exception as e:
        return failed(e)
    extent = _extent(growth, nbytes, lines, host, ctx, texts)

    def finish() -> FileResult:
        try:
            for w in writes:
                w.result()
        except Exception as e:
            return failed(e)
        try:
            return _commit(
                store,
                writer,
                res,
                ctx,
                parser.name,
                src.path,
                sha,
                nbytes,
                opts,
                started,
                extent,
                growth.replaces.key if growth and growth.replaces else None,
                host if src.member is None and not is_dir else None,
            )
        except stop.Interrupted:
            writer.abort()
            raise

    return finish


def _extent(
    growth: "grown.Growth | None", nbytes: int, lines: int | None, host: str, ctx: Context, texts: list[TextStream]
) -> dict:
    """The files columns saying which bytes and lines of the file a row covers, and what the parser
    knew at its end (read back if the file grows)."""
    state = {"host": host, **(ctx.carry or {})}
    if texts:
        state["cr_only"] = bool(texts[-1].cr_only)
    start, first_line, piece = (growth.start, growth.line_offset + 1, growth.piece) if growth else (0, 1, 1)
    ext = {
        "piece": piece,
        "byte_start": start,
        "byte_end": start + nbytes,
        "line_start": first_line,
        "line_end": first_line - 1 + lines if lines is not None else None,
        "grown": growth.mode if growth else None,
        "resume_state": json.dumps(state, sort_keys=True, default=str),
    }
    if growth and growth.replaces:
        ext |= {"replaced_sha256": growth.replaces.sha256, "replaced_bytes": growth.replaces.byte_end}
    return ext


def _renumbered(batches, offset: int):
    """A later piece's rows with the file's line numbers: its own plus the lines before it."""
    for batch in batches:
        yield {
            t: df.with_columns(pl.col("line_no") + offset) if "line_no" in df.columns else df for t, df in batch.items()
        }


def failure_reason(e: BaseException) -> str:
    """The unparsed reason of the lines of an input whose parser failed: `parser_failed:<kind>`."""
    return f"parser_failed:{type(e).__name__}"


def _record_failed(store: Store, src: Source, opts: Options, host: str, fmt: str | None, e: Exception) -> FileResult:
    """Every line of an input whose parse failed, in `unparsed` with the reason, and its files row
    (status 'failed'), committed on its own.

    The store key hashes the path with the content (`_failed_key`), never the content alone: a
    later ingest whose parser reads the input ingests it under its content key, and drops this
    record then (`_commit`), so that its lines are never in the store twice.
    """
    from forensics.core import schema
    from forensics.parsers.lines import MAX_LINE_CHARS, read_blocks

    why = f"{type(e).__name__}: {e}"[:500]
    res = FileResult(
        path=src.path,
        format=fmt,
        host=host,
        role=opts.role,
        status="failed",
        error=f"error: {src.path}: the {fmt or 'format detection'} parser failed ({why})\n"
        f"  = help: its lines are in `unparsed` with reason {failure_reason(e)!r}; "
        "the other inputs are ingested",
    )
    started = dt.datetime.now(dt.timezone.utc)
    writer = store.writer(f"failed{os.getpid()}_{abs(hash(src.path))}")
    n = 0
    try:
        hasher = _HashingStream(src.open())
    except (ForensicsError, OSError) as again:
        writer.abort()
        res.error += f"\n  = note: its lines could not be read either ({again})"
        return res
    try:
        text = TextStream(hasher)
        for df, _ in read_blocks(text):
            n += df.height
            writer.write(
                "unparsed",
                df.select(
                    pl.lit(src.path).alias("source_file"),
                    "line_no",
                    pl.col("line").str.slice(0, MAX_LINE_CHARS),
                    pl.lit(failure_reason(e)).alias("reason"),
                    pl.lit(fmt).alias("format"),
                ).cast(schema.UNPARSED.polars_schema),
            )
        res.notes = text.notes()
    except (ForensicsError, OSError, EOFError) as again:
        writer.abort()
        res.error += f"\n  = note: its lines could not be read either ({again})"
        return res
    finally:
        hasher.inner.close()
    res.lines = res.unparsed = n
    sha = hasher.h.hexdigest()
    writer.write(
        "files",
        pl.DataFrame(
            [
                {
                    "path": src.path,
                    "sha256": sha,
                    "bytes": hasher.n,
                    "format": fmt,
                    "host": host,
                    "role": opts.role,
                    "lines": n,
                    "parsed_lines": 0,
                    "continuation_lines": 0,
                    "unparsed_lines": n,
                    "tz": opts.tz,
                    "run": opts.run,
                    "ingested_at": started,
                    "status": "failed",
                    "skip_reason": why,
                }
            ]
        ),
    )
    key = _failed_key(src.path, sha)
    keyed = store.tmp / f"{key}.{os.getpid()}"
    os.replace(writer.dir, keyed)
    writer.dir, writer.key = keyed, key
    with stop.committing():
        writer.commit()  # False when the same failure of the same input was recorded before
    return res


def _commit(
    store: Store,
    writer,
    res: FileResult,
    ctx: Context,
    fmt: str,
    path: str,
    sha: str,
    nbytes: int,
    opts: Options,
    started: dt.datetime,
    extent: dict | None = None,
    replaces: str | None = None,
    listed: str | None = None,
) -> FileResult:
    """The files row, then the input's parts under their content key, committed (or a duplicate);
    in place of the committed piece `replaces` for a grown file re-read from that piece."""
    res.host, res.role = ctx.inferred_host or ctx.host, ctx.role or ctx.inferred_role
    res.lines, res.parsed, res.continuation, res.unparsed = (
        ctx.lines,
        ctx.parsed_lines,
        ctx.continuation_lines,
        ctx.unparsed_lines,
    )
    res.notes = ctx.notes
    files_row = pl.DataFrame(
        [
            {
                "path": path,
                "sha256": sha,
                "bytes": nbytes,
                "format": fmt,
                "host": res.host,
                "role": res.role,
                "lines": ctx.lines,
                "parsed_lines": ctx.parsed_lines,
                "continuation_lines": ctx.continuation_lines,
                "unparsed_lines": ctx.unparsed_lines,
                "first_ts": ctx.first_ts,
                "last_ts": ctx.last_ts,
                "tz": opts.tz,
                "run": opts.run,
                "ingested_at": started,
                "status": "ingested",
                **(extent or {}),
            }
        ]
    )
    writer.write("files", files_row)
    final_key = sha[:32]
    # rename the tmp folder to its content key; commit decides whether it is new
    keyed = store.tmp / f"{final_key}.{os.getpid()}"
    os.replace(writer.dir, keyed)
    writer.dir, writer.key = keyed, final_key
    if listed is not None:  # a plain file, which may grow: its pieces are found by path and host
        pieces.note(store, path, listed, final_key)
    with stop.committing():
        fresh = writer.replace(replaces) if replaces else writer.commit()
        res.status = "ingested" if fresh else "duplicate"
        _drop_failed(store, path, sha)
    if (extent or {}).get("grown"):
        res.notes.append(
            f"grown since it was ingested: {extent['grown']} as piece {extent['piece']} (bytes "
            f"{extent['byte_start']}-{extent['byte_end']}, lines from {extent['line_start']})"
        )
    return res


def _failed_key(path: str, sha: str) -> str:
    return hashlib.sha256(f"failed\0{path}\0{sha}".encode()).hexdigest()[:32]


def _drop_failed(store: Store, path: str, sha: str) -> None:
    """Remove the record of an earlier failed parse of this input, now that it is ingested.

    Moved out of data/ with one rename first, so a reader sees it whole or not at all.
    """
    import shutil

    old = store.data / _failed_key(path, sha)
    if not old.is_dir():
        return
    gone = store.tmp / f"dropped-{old.name}.{os.getpid()}"
    try:
        os.replace(old, gone)
    except OSError:
        return
    shutil.rmtree(gone, ignore_errors=True)


def _skip(store: Store, src: Source, why: NotALog, opts: Options) -> FileResult:
    """The files row of an input that is not a log (status 'skipped'), committed on its own.

    Its line counts stay NULL: nothing of it was read as lines, and an empty log's 0 means
    something else. The store key hashes the path with the content, so that each name of a
    note is listed once (re-ingesting the dump adds nothing) and never takes the content key a
    parse of the same bytes under --parser would use.
    """
    res = FileResult(path=src.path, status="skipped", skip_kind=why.kind, skip_reason=why.reason)
    started = dt.datetime.now(dt.timezone.utc)
    try:
        sha, nbytes, _cut, _lines = _content_digest(src.open, None)
    except (ForensicsError, OSError, EOFError) as e:
        res.status, res.error = "failed", f"cannot read {src.path}: {e}"
        return res
    writer = store.writer(hashlib.sha256(f"skipped\0{src.path}\0{sha}".encode()).hexdigest()[:32])
    writer.write(
        "files",
        pl.DataFrame(
            [
                {
                    "path": src.path,
                    "sha256": sha,
                    "bytes": nbytes,
                    "run": opts.run,
                    "ingested_at": started,
                    "status": "skipped",
                    "skip_kind": why.kind,
                    "skip_reason": why.reason,
                }
            ]
        ),
    )
    with stop.committing():
        writer.commit()  # False when this name and content were listed by an earlier ingest
    return res


def _skip_special(store: Store, src: Source, opts: Options) -> FileResult:
    """The files row of a FIFO, socket or device (status 'skipped'): listed, never opened."""
    reason = f"a {src.special}, not a file: never opened (reading it could block or never end)"
    res = FileResult(
        path=src.path, status="skipped", skip_kind="special", skip_reason=reason, notes=[f"skipped: {reason}"]
    )
    writer = store.writer(hashlib.sha256(f"special\0{src.path}\0{src.special}".encode()).hexdigest()[:32])
    writer.write(
        "files",
        pl.DataFrame(
            [
                {
                    "path": src.path,
                    "run": opts.run,
                    "ingested_at": dt.datetime.now(dt.timezone.utc),
                    "status": "skipped",
                    "skip_kind": "special",
                    "skip_reason": reason,
                }
            ]
        ),
    )
    with stop.committing():
        writer.commit()
    return res


def _write_all(batches, writer, drained: Callable[[], bool] = lambda: False) -> list[Future]:
    """Write each batch while the parser works on the next one (Parquet encoding releases the GIL).

    While the parser still reads, at most one batch waits to be written, so memory stays bounded
    by two passes. Once it has read its input to the end (`drained`), it starts no more work and
    the batches it still yields are queued without waiting: the writes not yet done are returned.
    """
    from concurrent.futures import ThreadPoolExecutor

    def write(batch):
        for table, df in batch.items():
            writer.write(table, df)

    pool = ThreadPoolExecutor(1, thread_name_prefix="parquet")
    writes: list[Future] = []
    try:
        for batch in batches:
            if isinstance(batch, Written):  # a worker wrote it
                continue
            if writes and not drained():
                writes[-1].result()  # one thread: the writes before it are done too
                writes.clear()
            writes.append(pool.submit(write, batch))
    except BaseException:
        for w in writes:  # the writer's files are removed next: let its writes stop first
            w.cancel() or w.exception()
        raise
    finally:
        pool.shutdown(wait=False)  # its thread ends with the last write
    return writes


def _free_heap_back_to_the_os() -> None:
    """Return the heap the last input freed to the OS (glibc's malloc_trim).

    glibc keeps freed memory for reuse, and an input's large parse blocks leave the heap
    fragmented, so RSS grew from file to file. A fixed mmap threshold cured that at the price of
    page faults on every block; a trim between inputs costs next to nothing.
    """
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)  # glibc only
    except (OSError, AttributeError):
        pass


def run(paths: list[str], store_root: str, opts: Options, progress=None) -> list[FileResult]:
    """Ingest `paths` into the store at `store_root`; return one result per input."""
    if opts.role not in (None, "prefill", "decode", "unified"):
        raise UsageError(f"--role must be prefill, decode or unified, not {opts.role!r}")
    store = Store(store_root)
    lock = store.lock()
    sources: list[Source] = []
    results: list[FileResult] = []
    try:
        store.clear_tmp()
        before = store.committed()
        try:
            _find_and_ingest(paths, store, opts, sources, results, progress)
        except stop.Interrupted as e:  # a signal while inputs were found, hashed or parsed
            _stopped(store, sources, results, before, e)
            raise
        order = {s.path: i for i, s in enumerate(sources)}
        results.sort(key=lambda r: order.get(r.path, 0))
        return results
    finally:
        import shutil

        shutil.rmtree(store.tmp / "archives", ignore_errors=True)
        lock.close()


def _find_and_ingest(
    paths: list[str], store: Store, opts: Options, sources: list[Source], results: list[FileResult], progress
) -> None:
    """The inputs under `paths` into `sources`, then each into the store, its result into `results`."""
    dir_claim = _dir_claimer()
    for item in discover(paths, dir_claim, spool=str(store.tmp / "archives"), skip=(str(store.root),)):
        if isinstance(item, tuple):
            d, _fmt = item
            sources.append(Source(path=d, fs_path=d))
        else:
            sources.append(item)
    hosts = {s.path: opts.host or default_host(s.path, paths, s.member) for s in sources}
    priors = pieces.committed(store, sources, hosts)
    if progress:
        progress.start(sum(s.size or 0 for s in sources), len(sources))
    _ingest_all(str(store.root), sources, opts, hosts, priors, results, progress)


def _stopped(
    store: Store, sources: list[Source], results: list[FileResult], before: set[str], e: stop.Interrupted
) -> None:
    """After a signal: the commit under way ends, the inputs being written are removed from .tmp,
    and `e` says what was committed and what was not (by the store's folders: an input finished
    on a thread or in a worker as the signal came is committed with no result here)."""
    stop.settle()
    store.clear_tmp()
    done = {r.path for r in results}
    new = [
        str(store.data / k / f)
        for k in store.committed() - before
        for f in os.listdir(store.data / k)
        if f.startswith("files-")
    ]
    done |= {r["path"] for r in pieces.files_rows(new)}
    e.total, e.done = len(sources), len(done)
    e.not_done = [s.path for s in sources if s.path not in done]


def _ingest_all(
    store_root: str,
    sources: list[Source],
    opts: Options,
    hosts: dict,
    priors: dict,
    results: list[FileResult],
    progress,
) -> None:
    """Every input into the store, each result appended to `results` as it comes.

    One pool of `jobs` workers does the parsing: each small input goes to it whole; the large ones
    are read here, two at a time (`_one_after_another`), and their passes go to the same pool,
    behind the small ones. On one core everything runs in this process.
    """
    jobs = opts.jobs or cores()
    pooled = [s for s in sources if _is_small(s)] if jobs > 1 else []
    large = [s for s in sources if not _is_small(s)] if jobs > 1 else sources
    if len(pooled) <= 1 and sum(_weight(s) for s in large) < POOL_INPUT_BYTES:  # workers would only add their start-up
        pooled, large = [], pooled + large
    ex = _start_pool(jobs) if pooled or (jobs > 1 and large) else None
    try:
        futs = {ex.submit(ingest_one, store_root, s, opts, hosts[s.path], None, priors.get(s.path)): s for s in pooled}
        for r in _one_after_another(store_root, large, opts, hosts, progress, priors, _Pool(ex, jobs) if ex else None):
            results.append(r)
            if progress:
                progress.done_file(r)
            stop.check()
        for fut in as_completed(futs):
            s = futs[fut]
            try:
                r = fut.result()
            except Exception as e:  # a worker crash must not lose the other files
                r = _record_failed(Store(store_root), s, opts, hosts[s.path], None, e)
            results.append(r)
            if progress:
                progress.advance(s.size or 0)
                progress.done_file(r)
            stop.check()
    except BaseException:
        if ex is not None:
            _kill_pool(ex)
        raise
    if ex is not None:
        ex.shutdown()


def cores() -> int:
    """The cores this process may run on (`taskset` limits them), not those of the machine."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _start_pool(jobs: int) -> ProcessPoolExecutor:
    import multiprocessing as mp
    from multiprocessing import forkserver

    # forkserver, not fork: a parent that already ran polars or DuckDB has worker threads
    # holding locks, and a forked child inherits those locks held forever (a deadlock).
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["forensics.ingest.pipeline", "pyarrow.parquet"])
    stop.quiet_resource_tracker()
    # A worker has one core's share: polars' own threads (one per core in every worker) would
    # only contend with the other workers. Its pool is sized when polars is imported, in the
    # fork server, which the workers inherit it from.
    saved = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"
    try:
        forkserver.ensure_running()
    finally:
        if saved is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
        else:
            os.environ["POLARS_MAX_THREADS"] = saved
    server = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    ex = ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=stop.worker_init, initargs=(os.getpid(), server)
    )
    # The workers start while this process finds, sniffs and reads the first inputs: a submit
    # waits for the start of the worker it adds, and that for the fork server's imports.
    import threading

    def start() -> None:
        try:
            for _ in range(jobs):
                if stop.requested():
                    return
                ex.submit(_ready)
        except Exception:  # noqa: BLE001 - a pool stopped meanwhile: nothing to start
            pass

    threading.Thread(target=start, name="pool-start", daemon=True).start()
    return ex


def _ready() -> None:
    """A worker's first task: nothing, so that it starts before there is work for it."""


class _Pool:
    """The worker processes, and room for the passes in flight of every input read at once: a
    pass holds its text here until a worker takes it."""

    def __init__(self, ex: ProcessPoolExecutor, workers: int):
        import threading

        self.ex, self.workers = ex, workers
        self.room = threading.BoundedSemaphore(workers + 2)


class _InputPool:
    """The pool lent to one input's parser (parsers.base.PassPool): its passes are written into
    the input's folder in .tmp as parts numbered by pass, wherever they ran."""

    def __init__(self, pool: _Pool, folder):
        self.pool, self.folder, self.workers = pool, str(folder), pool.workers

    def submit(self, part: int, fn, *args) -> Future:
        stop.check()  # a stop reads no further
        self.pool.room.acquire()
        try:
            fut = self.pool.ex.submit(_pass_in_worker, self.folder, part, fn, args)
        except BaseException:
            self.pool.room.release()
            raise
        fut.add_done_callback(lambda _: self.pool.room.release())
        return fut

    def write(self, part: int, batch: Batch) -> Written:
        _write_parts(self.folder, part, batch)
        return Written(part)


def _pass_in_worker(folder: str, part: int, fn, args):
    batch, info, write = fn(*args)
    if not write:
        return batch, info
    _write_parts(folder, part, batch)
    return Written(part), info


def _write_parts(folder: str, part: int, batch: Batch) -> None:
    for table, df in batch.items():
        write_part(folder, table, part, df)


def _kill_pool(ex: ProcessPoolExecutor) -> None:
    """End the pool's workers now: what they were writing is in .tmp, never committed."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, AttributeError):
            pass
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(timeout=5)


def _one_after_another(
    store_root: str,
    sources: list[Source],
    opts: Options,
    hosts: dict,
    progress,
    priors: dict | None = None,
    pool: "_Pool | None" = None,
) -> Iterator[FileResult]:
    """The inputs read in this process, each parsed on every core (`pool`'s workers, else this
    process); the last parts of one are written while the next is read.

    Without a pool, writing an input's last parts once all its lines are parsed would leave the
    core idle: the finishing runs on a thread of its own, in input order, and ends before the
    input after the next starts, so at most one input finishes while another is parsed. With a
    pool, two inputs are read at once, so that the workers parse the next input's first passes
    while the last passes of one end; the pool bounds the passes in flight of both together.
    """
    from concurrent.futures import ThreadPoolExecutor

    def finished(finish) -> FileResult:
        try:
            return finish()
        finally:
            _free_heap_back_to_the_os()

    advance = progress.advance if progress else None
    if pool is not None:

        def one(s: Source) -> FileResult:
            finish = _parse_one(store_root, s, opts, hosts[s.path], advance, (priors or {}).get(s.path), pool)
            return finished(finish) if callable(finish) else finish

        with ThreadPoolExecutor(2, thread_name_prefix="input") as readers:
            for fut in [readers.submit(one, s) for s in sources]:
                yield fut.result()
        return
    with ThreadPoolExecutor(1, thread_name_prefix="finish") as tail:
        finishing = None
        for s in sources:
            finish = _parse_one(store_root, s, opts, hosts[s.path], advance, (priors or {}).get(s.path))
            if finishing is not None:
                yield finishing.result()
            finishing = tail.submit(finished, finish if callable(finish) else lambda r=finish: r)
        if finishing is not None:
            yield finishing.result()


SMALL_INPUT_BYTES = 8 << 20  # under one parse block (parsers.lines.BLOCK_BYTES)
# A pool costs about a second of CPU to start (the fork server imports what a worker needs): the
# large inputs are worth it with a few passes to spread (parsers/server_log/passes.GROUP_BLOCKS).
POOL_INPUT_BYTES = 64 << 20
COMPRESSED = (".gz", ".zst", ".bz2", ".xz")


def _weight(s: Source) -> int:
    """What a large input gives the pool to parse, by its size on disk (a compressed one counted at
    a few times that)."""
    if s.size is None:
        return POOL_INPUT_BYTES
    return s.size * (4 if s.fs_path.lower().endswith(COMPRESSED) else 1)


def _is_small(s: Source) -> bool:
    """A plain file well under one parse block: cheap to parse in a worker process."""
    if (s.member is not None and s.offset is None) or s.size is None or s.special or os.path.isdir(s.fs_path):
        return False
    return s.size < SMALL_INPUT_BYTES and not s.fs_path.lower().endswith(COMPRESSED)


def _dir_claimer():
    claimers = [p for p in PARSERS if hasattr(p, "sniff_dir")]
    if not claimers:
        return None

    def claim(d: str):
        best = max(claimers, key=lambda p: p.sniff_dir(d))
        return best.name if best.sniff_dir(d) >= 0.5 else None

    return claim
