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


def read_blocks(stream: IO[bytes], block_bytes: int = BLOCK_BYTES, on_progress=None
                ) -> Iterator[tuple[pl.DataFrame, bool]]:
    """Yield (frame of line_no, line, unterminated, last_line) and whether it is the last block.

    Invalid UTF-8 is kept as `\\xNN` escapes so no byte is lost and the text stays valid.
    `unterminated` is true only for a final line with no newline (a cut log).
    """
    pending = None
    for df in _blocks(stream, block_bytes, on_progress):
        if pending is not None:
            yield pending.with_columns(last_line=pl.lit(False)), False
        pending = df
    if pending is not None:
        yield pending.with_columns(last_line=pl.col("line_no") == pl.col("line_no").max()), True


def read_upto(stream: IO[bytes], n: int) -> bytes:
    """Up to `n` bytes, less only at the end of the data.

    read1 steps: a decompressor hands over each piece as it has it, so a stream that ends early
    (sources._CutTolerant) still yields everything before the cut.
    """
    parts, got = [], 0
    read = getattr(stream, "read1", stream.read)
    while got < n:
        b = read(min(1 << 20, n - got))
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _blocks(stream: IO[bytes], block_bytes: int, on_progress) -> Iterator[pl.DataFrame]:
    line_no = 1
    rest = b""
    while True:
        data = read_upto(stream, block_bytes)
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
