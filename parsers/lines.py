"""Streaming lines out of a byte stream in large blocks, as polars frames.

The hot path never loops over lines in Python: a block of up to `block_bytes` is cut at its last
newline, decoded once, and split into a polars Series in Rust.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import polars as pl

BLOCK_BYTES = 16 << 20
MAX_LINE_CHARS = 64 << 10  # what unparsed keeps of one line


def read_blocks(stream: IO[bytes], block_bytes: int = BLOCK_BYTES, on_progress=None, notes: list | None = None
                ) -> Iterator[tuple[pl.DataFrame, bool]]:
    """Yield (frame of line_no, line, unterminated, last_line) and whether it is the last block.

    Invalid UTF-8 is kept as `\\xNN` escapes so no byte is lost and the text stays valid.
    `unterminated` is true only for a final line with no newline (a cut log).
    """
    pending = None
    for df in _blocks(stream, block_bytes, on_progress, notes):
        if pending is not None:
            yield pending.with_columns(last_line=pl.lit(False)), False
        pending = df
    if pending is not None:
        yield pending.with_columns(last_line=pl.col("line_no") == pl.col("line_no").max()), True


def safe_read(stream: IO[bytes], n: int, notes: list | None) -> bytes:
    """Read, treating a cut .gz / .zst (a crashed writer, a partial copy) as the end of the data."""
    # Small reads: a decompressor that hits the cut raises and drops what that one call had read.
    parts, got = [], 0
    read = getattr(stream, "read1", stream.read)  # read1: one decompressor step, nothing held back
    while got < n:
        try:
            b = read(min(1 << 20, n - got))
        except (EOFError, OSError, ValueError) as e:
            if notes is not None:
                notes.append(f"compressed stream is cut ({type(e).__name__}: {e}); kept what was readable")
            break
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _blocks(stream: IO[bytes], block_bytes: int, on_progress, notes) -> Iterator[pl.DataFrame]:
    line_no = 1
    rest = b""
    while True:
        data = safe_read(stream, block_bytes, notes)
        if on_progress and data:
            on_progress(len(data))
        eof = not data
        buf = rest + data
        if eof:
            if not buf:
                return
            body, rest, unterminated = buf, b"", True
        else:
            cut = buf.rfind(b"\n")
            if cut < 0:
                # a single line longer than a block: keep reading until it ends
                rest = buf
                continue
            body, rest, unterminated = buf[:cut], buf[cut + 1:], False
        text = body.decode("utf-8", "backslashreplace")
        lines = pl.Series("line", [text], dtype=pl.Utf8).str.split("\n").explode()
        n = lines.len()
        df = pl.DataFrame({
            "line_no": pl.int_range(line_no, line_no + n, dtype=pl.Int64, eager=True),
            "line": lines.str.strip_suffix("\r"),
        }).with_columns(unterminated=(pl.col("line_no") == line_no + n - 1) & pl.lit(unterminated))
        line_no += n
        yield df
        if eof:
            return
