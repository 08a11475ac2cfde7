"""One input into the store, in named stages (`parse_one`):

    examine   a file committed before: unchanged (a duplicate), grown (read on), or new (grown.py)
    sniff     the parser that reads it, or why none should (sniff.py: NotALog, a crash)
    read      the parser reads through the hash (digest.HashingStream); its batches are written as
              they come, in this process or where its passes ran (pool.InputPool)
    digest    the content's sha256, size and lines: its key in the store, and the files row's extent
    commit    the files row, then the input's manifest under its key (`commit`, forensics/store/commits.py)

The commit (with the last writes) is returned as a function, so that it overlaps with the next
input's read (pipeline.py). Whatever goes wrong inside one input (a parser's bug, JSON nested too
deep, a decoder error) fails that input alone: its lines go to `unparsed` with the reason
(`record_failed`), and ingest goes on with the others.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import io
import json
import os
from collections.abc import Callable
from concurrent.futures import Future

import polars as pl

from forensics.core.errors import ForensicsError, InputError, UsageError
from forensics.ingest import derive, grown, reread, stop
from forensics.ingest.digest import HashingStream, content_digest, dir_digest
from forensics.ingest.pool import InputPool, Pool
from forensics.ingest.records import FileResult, FilesRow, Options, ParseReport
from forensics.ingest.sniff import BINARY_FORMATS, NotALog, choose_parser
from forensics.parsers import by_name
from forensics.parsers.base import Context, Source, Written
from forensics.parsers.lines import TextStream
from forensics.store import Store, commits, pieces


def ingest_one(
    store_root: str,
    src: Source,
    opts: Options,
    host: str,
    progress: Callable[[int], None] | None = None,
    prior: pieces.Prior | None = None,
) -> FileResult:
    """Parse one input into the store. Runs in a worker process."""
    finish = parse_one(store_root, src, opts, host, progress, prior, None)
    return finish() if callable(finish) else finish


def parse_one(
    store_root: str,
    src: Source,
    opts: Options,
    host: str,
    progress: Callable[[int], None] | None = None,
    prior: pieces.Prior | None = None,
    pool: Pool | None = None,
) -> FileResult | Callable[[], FileResult]:
    """Parse one input; what is left once every line is parsed (writing the last parts, the files
    row and the commit) is returned as a function. Fails early with the FileResult itself. With
    `pool` the parser may parse its passes there."""
    store = Store(store_root)
    if src.special:
        return skip_special(store, src, opts)
    growth = examine(src, prior, opts)
    pieces_held: tuple[str, ...] = ()
    if growth == "same":
        # unchanged since it was committed: nothing to read, unless the options given now read it otherwise
        if not (opts.explicit and reread.differences(opts, host, reread.held_with(store, prior.last.key))):
            return FileResult(
                path=src.path,
                format=prior.last.format,
                host=host,
                role=opts.role,
                status="duplicate",
                key=prior.last.key,
            )
        growth, pieces_held = None, prior.keys
    chosen = sniff(store, src, opts, host, growth)
    if isinstance(chosen, FileResult):
        return chosen
    parser, growth = chosen
    one = Input(store, src, opts, host, parser, growth, progress, pool)
    one.pieces_held = pieces_held
    try:
        writes = one.read()
        sha, nbytes, lines = one.digest()
    except Exception as e:
        return one.failed(e)
    return functools.partial(one.finish, writes, sha, nbytes, one.extent(nbytes, lines))


def examine(src: Source, prior: pieces.Prior | None, opts: Options) -> grown.Growth | str | None:
    """'same' for a file committed as it is, a Growth for one that grew since, None for a new input."""
    if prior is None:
        return None
    try:
        return grown.examine(src, prior, opts.format)
    except (ForensicsError, OSError, EOFError):
        return None  # read as a new input, which reports the error


def sniff(store: Store, src: Source, opts: Options, host: str, growth: grown.Growth | None):
    """(parser, growth) for the input, else its FileResult: skipped as not a log, or failed."""
    try:
        parser = by_name(growth.format) if growth else choose_parser(src, opts.format, opts.scan.sniff_bytes)
    except KeyError:  # a parser of an older version, gone: read the file as new
        growth, parser = None, choose_parser(src, opts.format, opts.scan.sniff_bytes)
    except NotALog as e:
        return skip(store, src, e, opts)
    except InputError as e:
        return FileResult(path=src.path, status="failed", error=e.render())
    except UsageError:
        raise
    except Exception as e:  # a sniff that crashed: the input fails alone
        return record_failed(store, src, opts, host, None, e)
    return parser, growth


class Input:
    """One input being read: its parser and context, the hash it is read through, and the folder in
    .tmp it is written into."""

    def __init__(self, store: Store, src: Source, opts: Options, host: str, parser, growth, progress, pool):
        self.store, self.given, self.opts, self.host = store, src, opts, host
        self.parser, self.growth = parser, growth
        self.pieces_held: tuple[str, ...] = ()  # a held file read again: every piece the store holds of it
        self.res = FileResult(path=src.path, format=parser.name)
        self.ctx = opts.context(host, progress, growth.state if growth else None, src.path)
        self.is_dir = os.path.isdir(src.fs_path) and src.member is None
        self.hasher: HashingStream | None = None
        self.texts: list[TextStream] = []
        # the input as discovered (a failed parse reads its lines from there), and as parsed
        self.src = src if self.is_dir else self.open_through_hash(src)
        self.writer = store.writer(f"tmp{os.getpid()}_{abs(hash(src.path))}")
        self.started = dt.datetime.now(dt.timezone.utc)
        if pool is not None and not (growth and growth.line_offset):
            # a grown file's later piece is renumbered here after parsing (`_renumbered`): its
            # passes stay in this process
            self.ctx.pool = InputPool(pool, self.writer.dir)

    def open_through_hash(self, src: Source) -> Source:
        """`src` opening through the hash: the parser's read is the digest's, one pass over the data.
        Text parsers get it as a TextStream (NUL runs and CR line ends made lines)."""
        g = self.growth
        self.open_raw = grown.window(src.open, g.start, g.size) if g else src.open

        def hashed_open():
            raw = self.open_raw()
            self.hasher = HashingStream(raw)
            if self.parser.name in BINARY_FORMATS:
                return self.hasher
            text = TextStream(self.hasher)
            if g is None and isinstance(getattr(raw, "raw", None), io.FileIO):
                # a plain file read from its start: the workers read their passes' bytes from it
                text.plain_file = os.path.abspath(src.fs_path)
            self.texts.append(text)
            return text

        src = dataclasses.replace(src)
        src.open = hashed_open  # type: ignore[method-assign]
        return src

    def read(self) -> list[Future]:
        """Run the parser over the input; the writes of its last batches still under way."""
        batches = self.parser.parse(self.src, self.ctx)
        if self.growth and self.growth.line_offset:
            batches = _renumbered(batches, self.growth.line_offset)
        return write_all(batches, self.writer, lambda: self.hasher is not None and self.hasher.eof)

    def digest(self) -> tuple[str, int, int | None]:
        """sha256, bytes and lines of what was read (lines: None for a folder), with the notes of the read."""
        if self.is_dir:
            sha, nbytes = dir_digest(self.given.fs_path)
            return sha, nbytes, None
        g = self.growth
        if g:
            sha, nbytes, cut, lines = g.sha256, g.size - g.start, g.cut, g.lines
            if self.hasher is not None:
                self.hasher.inner.close()
        else:
            sha, nbytes, cut, lines = content_digest(self.open_raw, self.hasher)
        if cut:
            self.ctx.notes.append(f"compressed stream is cut ({cut}); kept what was readable")
        read_whole = [t for t in self.texts if t.at_end]
        if read_whole:
            self.ctx.notes.extend(read_whole[-1].notes())
        return sha, nbytes, lines

    def extent(self, nbytes: int, lines: int | None) -> dict:
        given = reread.given_state(self.opts)
        return extent(self.growth, nbytes, lines, self.host, self.ctx, self.texts, given, self.given.mtime)

    def failed(self, e: Exception) -> FileResult:
        self.writer.abort()
        res = self.res
        if isinstance(e, ForensicsError):
            res.status, res.error = "failed", e.render()
            return res
        if isinstance(e, (OSError, EOFError)):
            # a truncated .gz / .zst ends in an error after its good part; keep what was read
            res.status, res.error = "failed", f"cannot read {self.given.path}: {e}"
            return res
        return record_failed(self.store, self.given, self.opts, self.host, self.parser.name, e)

    def finish(self, writes: list[Future], sha: str, nbytes: int, ext: dict) -> FileResult:
        """The last writes, then the commit."""
        try:
            for w in writes:
                w.result()
        except Exception as e:
            return self.failed(e)
        try:
            # what the derived views need of this input, from its own parts (forensics.ingest.derive)
            for table, rows in derive.summarise(self.writer.dir, f"{sha[:20]}/{ext['piece']}").items():
                self.writer.write(table, rows)
        except Exception as e:  # the lines are stored: without the summary its hosts' wedges read them
            self.ctx.notes.append(f"no wedge summary ({type(e).__name__}): its hosts' wedges are read from the tables")
        g = self.growth
        try:
            return commit(
                self.store,
                self.writer,
                self.res,
                ParseReport.of(self.ctx),
                self.parser.name,
                self.given.path,
                sha,
                nbytes,
                self.opts,
                self.started,
                ext,
                g.replaces.key if g and g.replaces else None,
                self.host if self.given.member is None and not self.is_dir else None,
                self.pieces_held,
            )
        except stop.Interrupted:
            self.writer.abort()
            raise


def extent(
    growth: grown.Growth | None,
    nbytes: int,
    lines: int | None,
    host: str,
    ctx: Context,
    texts: list[TextStream],
    given: dict | None = None,
    mtime: float | None = None,
) -> dict:
    """The files columns saying which bytes and lines of the file a row covers, what the parser
    knew at its end (read back if the file grows), the options it was read with (`given`) and its
    file's modification time (the reports warn of lines dated long after it)."""
    state = {"host": host, **(ctx.carry or {}), **({"given": given} if given else {})}
    if mtime:
        state["mtime"] = mtime
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


def record_failed(store: Store, src: Source, opts: Options, host: str, fmt: str | None, e: Exception) -> FileResult:
    """Every line of an input whose parse failed, in `unparsed` with the reason, and its files row
    (status 'failed'), committed on its own.

    The store key hashes the path with the content (`_failed_key`), never the content alone: a
    later ingest whose parser reads the input ingests it under its content key, and drops this
    record then (`commit`), so that its lines are never in the store twice.
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
        hasher = HashingStream(src.open())
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
    row = FilesRow(
        path=src.path,
        sha256=sha,
        bytes=hasher.n,
        format=fmt,
        host=host,
        role=opts.role,
        lines=n,
        parsed_lines=0,
        continuation_lines=0,
        unparsed_lines=n,
        tz=opts.tz,
        run=opts.run,
        ingested_at=started,
        status="failed",
        skip_reason=why,
    )
    writer.rekey(_failed_key(src.path, sha))  # before the files row, which names the parts
    writer.write("files", row.frame())
    with stop.committing():
        writer.commit()  # False when the same failure of the same input was recorded before
    res.key = writer.key
    return res


def commit(
    store: Store,
    writer,
    res: FileResult,
    report: ParseReport,
    fmt: str,
    path: str,
    sha: str,
    nbytes: int,
    opts: Options,
    started: dt.datetime,
    extent: dict | None = None,
    replaces: str | None = None,
    listed: str | None = None,
    pieces_held: tuple[str, ...] = (),
) -> FileResult:
    """The files row, then the input's parts under their content key, committed (or a duplicate);
    in place of the committed piece `replaces` for a grown file re-read from that piece; in place
    of the input the store holds of the same content (and `pieces_held`, the pieces of the same
    file) where the options given now read it otherwise (ingest/reread.py)."""
    res.host, res.role = report.host, report.role
    res.lines, res.parsed, res.continuation, res.unparsed = (
        report.lines,
        report.parsed,
        report.continuation,
        report.unparsed,
    )
    res.notes = list(report.notes)
    res.warnings = list(report.warnings)
    row = FilesRow(
        path=path,
        sha256=sha,
        bytes=nbytes,
        format=fmt,
        host=res.host,
        role=res.role,
        lines=report.lines,
        parsed_lines=report.parsed,
        continuation_lines=report.continuation,
        unparsed_lines=report.unparsed,
        first_ts=report.first_ts,
        last_ts=report.last_ts,
        tz=opts.tz,
        run=opts.run,
        ingested_at=started,
        status="ingested",
        **(extent or {}),
    )
    final_key = sha[:32]
    again = reread.differences(opts, res.host, reread.held_with(store, final_key)) if opts.explicit else []
    dropped = [final_key, *(k for k in pieces_held if k != final_key)] if again and not replaces else []
    # the content key, before the files row (which names the parts); commit decides whether it is new
    writer.rekey(final_key)
    writer.write("files", row.frame())
    if listed is not None:  # a plain file, which may grow: its pieces are found by path and host
        pieces.note(store, path, listed, final_key)
    with stop.committing():
        for key in dropped:
            commits.drop(store, key)
        fresh = writer.replace(replaces) if replaces else writer.commit()
        res.status = "ingested" if fresh else "duplicate"
        if dropped and fresh:
            res.notes.append(reread.replace_note(again))
        res.key = writer.key
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

    Its manifest goes first (commits.drop), so a reader sees it whole or not at all.
    """
    commits.drop(store, _failed_key(path, sha))


def skip(store: Store, src: Source, why: NotALog, opts: Options) -> FileResult:
    """The files row of an input that is not a log (status 'skipped'), committed on its own.

    Its line counts stay NULL: nothing of it was read as lines, and an empty log's 0 means
    something else. The store key hashes the path with the content, so that each name of a
    note is listed once (re-ingesting the dump adds nothing) and never takes the content key a
    parse of the same bytes under --parser would use.
    """
    res = FileResult(path=src.path, status="skipped", skip_kind=why.kind, skip_reason=why.reason)
    started = dt.datetime.now(dt.timezone.utc)
    try:
        sha, nbytes, _cut, _lines = content_digest(src.open, None)
    except (ForensicsError, OSError, EOFError) as e:
        res.status, res.error = "failed", f"cannot read {src.path}: {e}"
        return res
    writer = store.writer(hashlib.sha256(f"skipped\0{src.path}\0{sha}".encode()).hexdigest()[:32])
    row = FilesRow(
        path=src.path,
        sha256=sha,
        bytes=nbytes,
        run=opts.run,
        ingested_at=started,
        status="skipped",
        skip_kind=why.kind,
        skip_reason=why.reason,
    )
    writer.write("files", row.frame())
    with stop.committing():
        writer.commit()  # False when this name and content were listed by an earlier ingest
    res.key = writer.key
    return res


def skip_special(store: Store, src: Source, opts: Options) -> FileResult:
    """The files row of a FIFO, socket or device (status 'skipped'): listed, never opened."""
    reason = f"a {src.special}, not a file: never opened (reading it could block or never end)"
    res = FileResult(
        path=src.path, status="skipped", skip_kind="special", skip_reason=reason, notes=[f"skipped: {reason}"]
    )
    writer = store.writer(hashlib.sha256(f"special\0{src.path}\0{src.special}".encode()).hexdigest()[:32])
    row = FilesRow(
        path=src.path,
        run=opts.run,
        ingested_at=dt.datetime.now(dt.timezone.utc),
        status="skipped",
        skip_kind="special",
        skip_reason=reason,
    )
    writer.write("files", row.frame())
    with stop.committing():
        writer.commit()
    res.key = writer.key
    return res


def write_all(batches, writer, drained: Callable[[], bool] = lambda: False) -> list[Future]:
    """Write each batch while the parser works on the next one (Parquet encoding releases the GIL).

    While the parser still reads, at most one batch waits to be written, so memory stays bounded
    by two passes. Once it has read its input to the end (`drained`), it starts no more work and
    the batches it still yields are queued without waiting: the writes not yet done are returned.
    """
    from concurrent.futures import ThreadPoolExecutor

    def write(batch):
        for table, df in batch.items():
            stop.check()  # after a signal, the writes still queued are not made
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
