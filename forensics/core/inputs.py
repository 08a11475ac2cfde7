"""One input as parsers see it (`Source`, `Context`), and its bytes decompressed on demand.

Compression is recognised by magic bytes, not by name, so rotated names such as
`decode.log.1.gz` or a `.log` that is really gzip both work.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import tarfile
import zlib
from collections.abc import Callable
from typing import IO

from forensics.core.errors import InputError


@dataclasses.dataclass
class Source:
    """One input as the parser sees it: a display path and its decompressed bytes on demand.

    Picklable, so that ingest can hand it to a worker process.
    """

    path: str  # as reported in source_file (archive members read "archive.tar.gz!member")
    fs_path: str  # the file on disk (the archive, for a member)
    member: str | None = None  # name inside a tar archive
    size: int | None = None  # size on disk, for progress
    mtime: float | None = None  # seconds since the epoch, for sources timed by file date
    offset: int | None = None  # where a member's bytes start in an uncompressed tar (read in place)
    special: str | None = None  # 'FIFO', 'socket', 'device': never opened (ingest skips it)

    def open(self) -> IO[bytes]:
        """A fresh binary stream of the decompressed content."""
        return open_source(self)


@dataclasses.dataclass(frozen=True)
class Scan:
    """How ingest reads its inputs: the parsers' block and pass sizes, and which inputs its workers
    take. One object, passed down with the options (tests shrink the sizes to cut small inputs
    into many blocks), so nothing is a module constant to patch."""

    sniff_bytes: int = 64 << 10  # of an input's head, to choose its parser
    # Block size trades speed for memory: the native path reads up to `group_blocks` blocks per
    # polars pass, and a pass's frames are most of the peak: larger blocks are faster and hold
    # more. A block also ends at `max_block_lines` lines, since the frames cost per line: a block
    # of short lines would otherwise hold many times the memory.
    block_bytes: int = 12 << 20
    max_block_lines: int = 1 << 16
    group_blocks: int = 3
    # a pass holds at most this many lines (parsers/server_log/passes.py)
    pass_lines: int = 170_000
    small_input_bytes: int = 8 << 20  # under one block: parsed whole in one worker
    # A pool costs about a second of CPU to start (the fork server imports what a worker needs):
    # the large inputs are worth it with a few passes to spread.
    pool_input_bytes: int = 64 << 20


@dataclasses.dataclass
class Context:
    """What the user told ingest about a file, plus what the parser learns while reading it."""

    host: str | None = None
    role: str | None = None  # 'prefill' | 'decode' | None (infer)
    tz: str = "UTC"
    year: int | None = None
    date: str | None = None  # YYYY-MM-DD for lines that print a time and no date (--date)
    # (year, path, how) of another input with dated lines (of the same host, naming the same room,
    # ...: forensics/ingest/years.py): the year of lines without one
    host_year: tuple[int, str, str] | None = None
    run: str | None = None
    # Filled by the parser:
    lines: int = 0
    parsed_lines: int = 0
    continuation_lines: int = 0
    unparsed_lines: int = 0
    inferred_role: str | None = None
    inferred_host: str | None = None
    outer_offset_s: float | None = None  # inner clock minus a shipper's viewer clock (Kibana)
    first_ts: object = None  # datetime, UTC
    last_ts: object = None
    notes: list[str] = dataclasses.field(default_factory=list)
    # what ingest prints as a warning about the input (`warning: <path>: ...`), once each
    warnings: list[str] = dataclasses.field(default_factory=list)
    on_progress: Callable[[int], None] | None = None  # called with decompressed bytes consumed
    # A grown file is read on from where its committed piece ended: `resume` is what the parser
    # left there (its `carry` then), `carry` what it leaves at the end of this piece (JSON-able).
    resume: dict | None = None
    carry: dict | None = None
    # ingest's worker processes (parsers.base.PassPool), when a parser may spread its passes over
    # them; None: the parser does all of it in this process
    pool: object = None
    scan: Scan = Scan()

    def account(self, parsed: int = 0, continuation: int = 0, unparsed: int = 0) -> None:
        self.parsed_lines += parsed
        self.continuation_lines += continuation
        self.unparsed_lines += unparsed
        self.lines += parsed + continuation + unparsed

    def widen(self, first_ts, last_ts) -> None:
        """The input's time span grown to take in [first_ts, last_ts] (either may be None)."""
        if first_ts is not None and (self.first_ts is None or first_ts < self.first_ts):
            self.first_ts = first_ts
        if last_ts is not None and (self.last_ts is None or last_ts > self.last_ts):
            self.last_ts = last_ts


GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _CutTolerant(io.RawIOBase):
    """A decompressed stream that ends quietly where a cut or damaged .gz / .zst ends (`cut` says so).

    A crashed writer or a partial copy leaves a compressed file without its end marker; everything
    before the cut is still good data, and every parser gets it without handling the error itself.
    """

    def __init__(self, inner, errors: tuple):
        self.inner, self.errors, self.cut, self.error = inner, errors, False, None

    def readable(self):
        return True

    def readinto(self, b):
        if self.cut:
            return 0
        try:
            data = self.inner.read1(len(b)) if hasattr(self.inner, "read1") else self.inner.read(len(b))
        except self.errors as e:
            self.cut, self.error = True, f"{type(e).__name__}: {e}"
            return 0
        b[: len(data)] = data
        return len(data)

    def close(self):
        self.inner.close()
        super().close()


class _Slice(io.RawIOBase):
    """`size` bytes of an open file from where it stands: one member of an uncompressed tar."""

    def __init__(self, f, size: int):
        self.f, self.left = f, size

    def readable(self):
        return True

    def readinto(self, b):
        n = self.f.readinto(memoryview(b)[: min(len(b), self.left)]) if self.left else 0
        self.left -= n or 0
        return n

    def close(self):
        self.f.close()
        super().close()


def _decompress(raw: io.BufferedIOBase) -> io.BufferedIOBase:
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if head.startswith(GZIP_MAGIC):
        return io.BufferedReader(
            _CutTolerant(gzip.GzipFile(fileobj=raw), (EOFError, OSError, zlib.error)), buffer_size=1 << 20
        )
    if head.startswith(ZSTD_MAGIC):
        import zstandard

        inner = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return io.BufferedReader(_CutTolerant(inner, (EOFError, OSError, zstandard.ZstdError)), buffer_size=1 << 20)
    return raw


def was_cut(stream) -> str | None:
    """The error that ended a cut compressed stream early, if it was cut."""
    raw = getattr(stream, "raw", None)
    return raw.error if isinstance(raw, _CutTolerant) and raw.cut else None


def open_source(src: Source) -> io.BufferedIOBase:
    """A fresh decompressed binary stream for `src` (archive members included)."""
    try:
        if src.member is None:
            return _decompress(io.BufferedReader(open(src.fs_path, "rb"), buffer_size=1 << 20))
        if src.offset is not None:
            # seek to the member: finding it by name would read the archive's index again per member
            f = open(src.fs_path, "rb")
            f.seek(src.offset)
            return _decompress(io.BufferedReader(_Slice(f, src.size or 0), buffer_size=1 << 20))
        tf = tarfile.open(src.fs_path, "r:*")
        f = tf.extractfile(src.member)
        if f is None:
            raise InputError(f"archive member is not a regular file: {src.member}", file=src.fs_path)
        return _decompress(io.BufferedReader(f, buffer_size=1 << 20))  # type: ignore[arg-type]
    except OSError as e:
        raise InputError(
            f"cannot read {src.path}: {e.strerror or e}",
            file=src.path,
            help="check the file exists and is readable (permissions, a broken link)",
        ) from e
