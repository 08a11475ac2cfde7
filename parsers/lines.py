"""Streaming lines out of a byte stream in large blocks, as polars frames.

The hot path never loops over lines in Python: a block of up to `block_bytes` is cut at its last
newline, decoded once, and split into a polars Series in Rust (or handed undecoded to the native
scanner, parsers/native.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import IO, Pattern

import polars as pl

from forensics.core import native
from forensics.core.inputs import Scan

if native.built("_fastlog") is not None:
    count_newlines = native.built("_fastlog").count_newlines
else:  # the native scanner is optional (forensics/core/native.py)

    def count_newlines(b) -> int:
        return bytes(b).count(b"\n")


BLOCK_BYTES = Scan.block_bytes  # ingest passes its own (core.inputs.Scan)
MAX_LINE_CHARS = 64 << 10  # what unparsed keeps of one line
MAX_LINE_BYTES = 1 << 20  # a line longer than this keeps its head and its length (`TextStream`)
NUL_RUN = 16  # this many NULs in a row are never log text: a copytruncate hole, a preallocated tail

RECORD_BACKTRACK = 1 << 20  # how far back a block's cut looks for a record's head
# A block's frames cost per line more than per byte: a block of short lines would hold many times
# the memory of one of PD log lines, so shorter lines make smaller blocks.
MAX_BLOCK_LINES = Scan.max_block_lines


@dataclasses.dataclass
class RawBlock:
    """Whole lines of a stream, undecoded: what `read_blocks` frames, and the native scanner scans."""

    body: bytes | memoryview  # the lines, without the newline after the last one
    line_no: int  # 1-based number of its first line
    lines: int
    unterminated: bool  # its last line has no newline: the cut end of a file
    last: bool  # the last block of the stream
    # (file, offset, length) when the body is those bytes of a plain file as they are on disk: a
    # worker process reads them there (`load`) instead of being sent them
    at: tuple[str, int, int] | None = None


def load(raw: RawBlock) -> RawBlock:
    """`raw` with its body, read from its file where it was left out (`RawBlock.at`); its head and
    tail as the reader saw them (`RawBlock.at` keeps them) must be there still."""
    if raw.at is None or len(raw.body) == raw.at[2]:
        return raw
    import os

    from forensics.core.errors import InputError

    path, offset, n = raw.at
    with open(path, "rb") as f:
        body = os.pread(f.fileno(), n, offset)
    if len(body) != n or not (body.startswith(raw.body[:SEEN]) and body.endswith(raw.body[SEEN:])):
        raise InputError(
            f"{path} changed while it was read (lines {raw.line_no}-{raw.line_no + raw.lines - 1})",
            file=path,
            help="ingest a copy of a file that is rewritten in place, or ingest it again once it is quiet",
        )
    raw.body = body
    return raw


SEEN = 256  # bytes of each end of a block left out of a worker's task, to check its read against


def left_out(raw: RawBlock) -> RawBlock:
    """`raw` ready to go to a worker process: its text left out when the worker can read it from
    its file (`load`), else copied out of the read buffer (a view of it does not pickle)."""
    if raw.at is None or len(raw.body) <= 2 * SEEN:
        raw.body, raw.at = bytes(raw.body), None
    else:
        raw.body = bytes(raw.body[:SEEN]) + bytes(raw.body[-SEEN:])
    return raw


def read_blocks(
    stream: IO[bytes], block_bytes: int = BLOCK_BYTES, on_progress=None
) -> Iterator[tuple[pl.DataFrame, bool]]:
    """Yield (frame of line_no, line, unterminated, last_line) and whether it is the last block.

    Invalid UTF-8 is kept as `\\xNN` escapes so no byte is lost and the text stays valid.
    `unterminated` is true only for a final line with no newline (a cut log).
    """
    for raw in read_raw_blocks(stream, block_bytes, on_progress):
        yield frame(raw), raw.last


def frame(raw: RawBlock) -> pl.DataFrame:
    """The lines of a block as a frame of line_no, line, unterminated, last_line."""
    text = str(raw.body, "utf-8", "backslashreplace")
    lines = pl.Series("line", [text], dtype=pl.Utf8).str.split("\n").explode()
    return with_flags(
        pl.DataFrame(
            {
                "line_no": pl.int_range(raw.line_no, raw.line_no + raw.lines, dtype=pl.Int64, eager=True),
                "line": lines.str.strip_suffix("\r"),
            }
        ),
        raw,
    )


def with_flags(df: pl.DataFrame, raw: RawBlock) -> pl.DataFrame:
    """`unterminated` and `last_line` for (some of) the lines of `raw`, from their line_no."""
    at_end = pl.col("line_no") == raw.line_no + raw.lines - 1
    return df.with_columns(unterminated=at_end & raw.unterminated, last_line=at_end & raw.last)


def read_raw_blocks(
    stream: IO[bytes],
    block_bytes: int = BLOCK_BYTES,
    on_progress=None,
    continues: Pattern[bytes] | None = None,
    max_lines: int = MAX_BLOCK_LINES,
) -> Iterator[RawBlock]:
    """Blocks of whole lines, each knowing whether it is the last one (one block of look-ahead).

    A block has at most `block_bytes` (unless one line is longer) and `max_lines` lines.
    `continues` matches at the start of a line that carries on the record above it (a format's
    own grammar, e.g. a traceback's body): a block then does not start with one (`_record_cut`).
    """
    pending = None
    for raw in _blocks(stream, block_bytes, on_progress, continues, max_lines):
        if pending is not None:
            yield pending
        pending = raw
    if pending is not None:
        pending.last = True
        yield pending


def read_upto(stream: IO[bytes], n: int, prefix: bytes = b"") -> bytes:
    """`prefix` and up to `n` bytes after it, less only at the end of the data.

    read1 steps: a decompressor hands over each piece as it has it, so a stream that ends early
    (sources._CutTolerant) still yields everything before the cut.
    """
    parts, got = [prefix], 0
    read = getattr(stream, "read1", stream.read)
    while got < n:
        b = read(min(1 << 20, n - got))
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _blocks(
    stream: IO[bytes],
    block_bytes: int,
    on_progress,
    continues: Pattern[bytes] | None = None,
    max_lines: int = MAX_BLOCK_LINES,
) -> Iterator[RawBlock]:
    line_no = 1
    rest = b""
    # where the stream's bytes are a plain file's, as they are on disk (TextStream.file_range)
    file_range = getattr(stream, "file_range", None)
    read = 0  # bytes of the stream read so far
    while True:
        # one copy per read: the carried-over line and the new data are joined once, and the
        # blocks are views of the result
        buf = read_upto(stream, block_bytes, rest)
        got = len(buf) - len(rest)
        read += got
        pos = read - len(buf)  # where buf starts in the stream
        if on_progress and got:
            on_progress(got)
        eof = got < block_bytes  # read_upto stops short only at the end of the data
        if eof and not buf:
            return
        if not eof and buf.rfind(b"\n") < 0:
            # a single line longer than a block: keep reading until it ends
            rest = buf
            continue
        view = memoryview(buf)
        # lines carried from a record cut end with their newline; a truncated file's last has none
        terminated = buf.endswith(b"\n")
        start = 0
        while True:
            end = (len(buf) - terminated) if eof else buf.rfind(b"\n", start)
            if end < start:  # no newline after the last block cut: read on
                rest = buf[start:]
                break
            n = count_newlines(view[start:end]) + 1
            capped = n > max_lines
            if capped:
                end, n = _line_cap(buf, view, start, end, n, max_lines)
            if continues is not None and (capped or not eof):
                cut = _record_cut(buf, end, continues, start)
                n -= count_newlines(view[cut:end])
                end = cut
            at = file_range(pos + start, pos + end) if file_range is not None else None
            yield RawBlock(view[start:end], line_no, n, eof and not capped and not terminated, False, at)
            line_no += n
            if not capped:
                if eof:
                    return
                rest = buf[end + 1 :]
                break
            start = end + 1


def _line_cap(buf: bytes, view: memoryview, start: int, end: int, n: int, max_lines: int) -> tuple[int, int]:
    """A newline of `buf` that ends a block from `start` of at most `max_lines` lines, and their
    count; `n` lines from `start` to `end`. Guessed from the mean line length, then counted."""
    while n > max_lines:
        guess = start + (end - start) * max_lines // n
        at = buf.rfind(b"\n", start, guess + 1)
        end = at if at >= start else buf.find(b"\n", start, end)
        n = count_newlines(view[start:end]) + 1
    return end, n


def _record_cut(buf: bytes, cut: int, continues: Pattern[bytes], start: int = 0) -> int:
    """Where to end a block of `buf` from `start`, whose last newline is `cut`: before the last
    whole line, or before the head of the record that line carries on (`continues` matches the
    lines that carry on a record). The text after `cut` may be cut short by the read, so it decides
    nothing. Left at `cut` when no such newline is within RECORD_BACKTRACK bytes after `start`."""
    low = max(start, cut - RECORD_BACKTRACK)
    at = buf.rfind(b"\n", low, cut)
    while at >= 0 and continues.match(buf, at + 1):
        at = buf.rfind(b"\n", low, at)
    return cut if at < 0 else at


# What a cut line ends with after its first MAX_LINE_BYTES: the length it had, for readers
# (`cut_length`) and for whoever reads the unparsed row.
CUT_LINE = r" \.\.\.\[line of (\d+) bytes cut to its first \d+\]\s*$"  # a regex for polars, too
_CUT_MARK_STR = re.compile(CUT_LINE)
_NULS = re.compile(b"\x00{%d,}" % NUL_RUN)
_CHUNK = 1 << 20  # no more than MAX_LINE_BYTES: a line longer than that always spans two reads


def cut_length(line: str) -> int | None:
    """The length a line cut by `TextStream` had, or None for a line that was not cut."""
    m = _CUT_MARK_STR.search(line[-96:]) if line else None
    return int(m.group(1)) if m else None


class TextStream:
    """A binary stream of log text as parsers should see it, whatever the writer left.

    - Runs of NUL_RUN or more NULs are dropped: logrotate's copytruncate leaves the file's old
      length as a hole of NULs before the first new line, and a crash can leave a preallocated
      tail. A shorter run (a NUL inside a line) is kept.
    - A file whose first chunk with a line end (up to 1 MiB) holds CR and no LF ends its lines
      with CR (classic Mac, some serial-console captures): every CR becomes LF. A CR inside an LF file (a progress bar) stays.
    - A line past MAX_LINE_BYTES keeps its first MAX_LINE_BYTES and a marker with its length
      (`cut_length`); the rest is read and dropped, so memory stays bounded whatever its length.

    `nul_bytes`, `nul_runs`, `cr_only`, `cut_lines` and `longest_cut` say what was done, for notes.
    The bytes read from `inner` are the input's bytes (the content hash is taken below this).
    """

    def __init__(self, inner, max_line: int = MAX_LINE_BYTES, skip_nul_runs: bool = True):
        self.inner, self.max_line, self.skip_nul_runs = inner, max_line, skip_nul_runs
        self.nul_bytes = self.nul_runs = self.cut_lines = self.longest_cut = 0
        self.cr_only: bool | None = None  # decided on the first chunk holding a line end
        self._line = 0  # bytes of the line being passed on, since its last LF
        self._cutting = False
        self._nul_tail = 0  # NULs (fewer than NUL_RUN) held back at the end of the last chunk
        self._in_run = False  # the last chunk ended inside a run being dropped
        self._buf = b""
        self._eof = False
        # A plain file's path when `inner` reads it from its start as it is on disk (set by whoever
        # opens it): up to `_same_until` bytes of what this stream gives, nothing was changed, so
        # they are the file's bytes at the same offsets (`file_range`).
        self.plain_file: str | None = None
        self._out = 0  # bytes given so far, held ones included
        self._chunk_at = 0  # `_out` when the chunk being transformed began
        self._same_until = float("inf")

    def _changed(self) -> None:
        """The chunk being transformed is not the input's bytes as they are (NULs dropped, CRs
        made line ends, a line cut): from there on the stream is no longer the file's bytes."""
        self._same_until = min(self._same_until, self._chunk_at)

    def file_range(self, start: int, end: int) -> tuple[str, int, int] | None:
        """(file, offset, length) of the stream's bytes from `start` to `end` where they are a plain
        file's at the same offsets, else None."""
        if self.plain_file is None or end > self._same_until:
            return None
        return self.plain_file, start, end - start

    # -- the transformation ------------------------------------------------------------------
    def _fill(self) -> bool:
        """Put the next transformed chunk in the buffer; False at the end of the input."""
        read = getattr(self.inner, "read1", self.inner.read)
        while not self._buf:
            if self._eof:
                return False
            raw = read(min(_CHUNK, self.max_line))
            self._chunk_at = self._out
            if raw:
                self._buf = self._lines(self._nuls(raw))
                self._out += len(self._buf)
                continue
            self._eof = True
            # a short run at the very end is text like any other; a cut last line keeps its marker
            tail, self._nul_tail = b"\0" * self._nul_tail, 0
            self._buf = self._lines(tail) + self._line_end()
            self._out += len(self._buf)
        return True

    def _nuls(self, raw: bytes) -> bytes:
        if not self.skip_nul_runs:
            return raw
        if self._in_run:  # a run that began in an earlier chunk: dropped as it goes, never held
            self._changed()
            rest = raw.lstrip(b"\0")
            self.nul_bytes += len(raw) - len(rest)
            if not rest:
                return b""
            self._in_run, raw = False, rest
        elif self._nul_tail:
            raw, self._nul_tail = b"\0" * self._nul_tail + raw, 0
        elif b"\0" not in raw:
            return raw
        data = raw.rstrip(b"\0")
        hold = len(raw) - len(data)
        if b"\0" * NUL_RUN in data:
            self._changed()
            runs = len(_NULS.findall(data))
            before = len(data)
            data = _NULS.sub(b"", data)
            self.nul_runs += runs
            self.nul_bytes += before - len(data)
        if hold >= NUL_RUN:
            self._changed()
            self.nul_runs += 1
            self.nul_bytes += hold
            self._in_run = True
        else:  # a run may go on in the next chunk: decide on it there
            self._nul_tail = hold
        return data

    def _lines(self, data: bytes) -> bytes:
        if not data:
            return data
        if self.cr_only is None:
            if b"\n" in data:
                self.cr_only = False
            elif b"\r" in data:
                self.cr_only = True
        if self.cr_only:
            self._changed()
            data = data.replace(b"\r", b"\n")
        first = data.find(b"\n")
        if first < 0:
            return self._more_of_line(data)
        last = data.rfind(b"\n")
        if not self._cutting and self._line + first <= self.max_line:
            # the common case: no line of this chunk is too long, and it passes on uncopied
            self._line = len(data) - last - 1
            return data
        head = self._more_of_line(data[:first]) + self._line_end()
        # lines wholly inside one chunk are no longer than a chunk, which is at most max_line
        self._line = 0
        return head + data[first : last + 1] + self._more_of_line(data[last + 1 :])

    def _more_of_line(self, part: bytes) -> bytes:
        if self._cutting:
            self._line += len(part)
            return b""
        room = self.max_line - self._line
        self._line += len(part)
        if len(part) <= room:
            return part
        self._changed()
        self._cutting = True
        return part[:room]

    def _line_end(self) -> bytes:
        if not self._cutting:
            return b""
        self._changed()
        self._cutting = False
        self.cut_lines += 1
        self.longest_cut = max(self.longest_cut, self._line)
        return b" ...[line of %d bytes cut to its first %d]" % (self._line, self.max_line)

    def notes(self) -> list[str]:
        """What was dropped or changed, in words, for the input's notes."""
        out = []
        if self.nul_runs:
            out.append(
                f"{self.nul_runs} run{'s' if self.nul_runs != 1 else ''} of NULs skipped ({self.nul_bytes} "
                "bytes: a copytruncate hole or a preallocated tail, no log text)"
            )
        if self.cr_only:
            out.append("lines end in CR alone: read as line ends")
        if self.cut_lines:
            out.append(
                f"{self.cut_lines} line{'s' if self.cut_lines != 1 else ''} longer than "
                f"{self.max_line} bytes kept their first {self.max_line} bytes and their length "
                f"(longest {self.longest_cut} bytes)"
            )
        return out

    @property
    def at_end(self) -> bool:
        """The input was read to its end through this stream: its notes are the whole file's."""
        return self._eof

    # -- the stream interface parsers use -----------------------------------------------------
    def read1(self, n: int = -1) -> bytes:
        if not self._fill():
            return b""
        if n is None or n < 0 or n >= len(self._buf):
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def read(self, n: int = -1) -> bytes:
        if n is not None and n >= 0:
            return read_upto(self, n)
        parts = []
        while self._fill():
            parts.append(self._buf)
            self._buf = b""
        return b"".join(parts)

    def readline(self, limit: int = -1) -> bytes:
        parts = []
        while self._fill():
            at = self._buf.find(b"\n")
            if at >= 0:
                parts.append(self._buf[: at + 1])
                self._buf = self._buf[at + 1 :]
                break
            parts.append(self._buf)
            self._buf = b""
        return b"".join(parts)

    def __iter__(self):
        while line := self.readline():
            yield line

    def readable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return self.inner.closed

    def close(self) -> None:
        self.inner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.inner.__exit__(*exc)
