"""Streaming lines out of a byte stream in large blocks, as polars frames.

The hot path never loops over lines in Python: a block of up to `block_bytes` is cut at its last
newline, decoded once, and split into a polars Series in Rust (or handed undecoded to the native
scanner, parsers/native.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import IO, Pattern

import polars as pl

try:
    from forensics.parsers._fastlog import count_newlines
except ImportError:  # the native scanner is optional (parsers/native.py)
    def count_newlines(b) -> int:
        return bytes(b).count(b"\n")

BLOCK_BYTES = 12 << 20  # see parsers/server_log/__init__.py, `parse`
MAX_LINE_CHARS = 64 << 10  # what unparsed keeps of one line

RECORD_BACKTRACK = 1 << 20  # how far back a block's cut looks for a record's head
# A block's frames cost per line more than per byte: a block of short lines would hold many times
# the memory of one of PD log lines, so shorter lines make smaller blocks.
MAX_BLOCK_LINES = 1 << 16


@dataclasses.dataclass
class RawBlock:
    """Whole lines of a stream, undecoded: what `read_blocks` frames, and the native scanner scans."""

    body: bytes | memoryview  # the lines, without the newline after the last one
    line_no: int  # 1-based number of its first line
    lines: int
    unterminated: bool  # its last line has no newline: the cut end of a file
    last: bool  # the last block of the stream


def read_blocks(stream: IO[bytes], block_bytes: int = BLOCK_BYTES, on_progress=None
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
    return with_flags(pl.DataFrame({
        "line_no": pl.int_range(raw.line_no, raw.line_no + raw.lines, dtype=pl.Int64, eager=True),
        "line": lines.str.strip_suffix("\r"),
    }), raw)


def with_flags(df: pl.DataFrame, raw: RawBlock) -> pl.DataFrame:
    """`unterminated` and `last_line` for (some of) the lines of `raw`, from their line_no."""
    at_end = pl.col("line_no") == raw.line_no + raw.lines - 1
    return df.with_columns(unterminated=at_end & raw.unterminated, last_line=at_end & raw.last)


def read_raw_blocks(stream: IO[bytes], block_bytes: int = BLOCK_BYTES, on_progress=None,
                    continues: Pattern[bytes] | None = None, max_lines: int = MAX_BLOCK_LINES) -> Iterator[RawBlock]:
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


def _blocks(stream: IO[bytes], block_bytes: int, on_progress, continues: Pattern[bytes] | None = None,
            max_lines: int = MAX_BLOCK_LINES) -> Iterator[RawBlock]:
    line_no = 1
    rest = b""
    while True:
        # one copy per read: the carried-over line and the new data are joined once, and the
        # blocks are views of the result
        buf = read_upto(stream, block_bytes, rest)
        got = len(buf) - len(rest)
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
            yield RawBlock(view[start:end], line_no, n, eof and not capped and not terminated, False)
            line_no += n
            if not capped:
                if eof:
                    return
                rest = buf[end + 1:]
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
