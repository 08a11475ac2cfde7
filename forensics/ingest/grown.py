"""A file that grew since it was ingested: its new lines are read once, never its old ones again.

An input is keyed by its content, so a log written on since the last ingest is new content, and
read whole again each earlier line would be stored twice. A file at the same path and host whose
committed bytes are a prefix of it (checked by the committed size and the sha256 of that prefix,
never by the file's date) is read on from where the committed piece ended: line numbers go on from
its last one and the parser resumes with what it knew there (`Context.resume`: the year, the
role, the clock). Where the new lines cannot be read apart from the committed ones, the last
committed piece is read again with them and replaced with one rename (`InputWriter.replace`):

- the committed piece ended inside a line (a log caught mid-write): no line is stored half;
- the first new line carries on the record above it (a traceback written across the two reads),
  as a block of one read never starts with such a line (`parsers.lines.read_raw_blocks`);
- the input is compressed (a .gz grows by a new stream that must be decompressed from its
  start anyway), or read by a parser that folds lines across the whole file (transcripts:
  the blocks of one message are folded wherever they sit) or reads records that are no lines.

A file that is no extension of its committed version (rewritten, or truncated by copytruncate
and written again) is a new input, as before; archive members and folders never grow.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
from collections.abc import Callable

from forensics.core.inputs import GZIP_MAGIC, ZSTD_MAGIC, Source, _Slice, was_cut
from forensics.parsers.lines import read_upto
from forensics.store.pieces import Piece, Prior

# Formats whose lines are read one block at a time, so that a piece can start at any line that
# does not carry on the one above it. Transcript parsers fold a message's lines from anywhere in
# the file, and binary or whole-file formats are no lines: those are replaced whole.
APPENDABLE = {"server_log", "transfer_trace"}
_HEAD = 64 << 10  # of the new bytes, to see whether they open with a continuation line


@dataclasses.dataclass
class Growth:
    """How to read a grown file: the byte and line it starts after, and what it replaces."""

    mode: str  # 'appended' | 'replaced'
    sha256: str  # of the whole file as read now
    size: int
    start: int  # first byte to parse
    line_offset: int  # line numbers of the piece are its own plus this
    lines: int  # physical lines from `start` to `size`
    piece: int
    state: dict | None  # the parser's state at `start`
    replaces: Piece | None  # 'replaced': the committed piece it takes the place of
    format: str | None
    cut: str | None  # a compressed stream that ends early: why


def examine(src: Source, prior: Prior, forced: str | None) -> "Growth | str | None":
    """'same' for the committed content, a Growth for an extension of it, None for anything else."""
    last = prior.last
    if forced and forced != last.format:
        return None  # read with another parser: another input, as it always was
    f = src.open()
    h = hashlib.sha256()
    n = tail_lines = new_lines = 0
    prefix_last = new_last = b""
    head = b""
    try:
        while n < last.byte_end:
            b = read_upto(f, min(1 << 22, last.byte_end - n))
            if not b:
                return None  # shorter than what was committed: rewritten
            if n + len(b) > last.byte_start:
                tail_lines += b.count(b"\n", max(0, last.byte_start - n))
            h.update(b)
            n += len(b)
            prefix_last = b[-1:]
        if h.copy().hexdigest() != last.sha256:
            return None
        while b := read_upto(f, 1 << 22):
            if len(head) < _HEAD:
                head += b[: _HEAD - len(head)]
            h.update(b)
            n += len(b)
            new_lines += b.count(b"\n")
            new_last = b[-1:]
        cut = was_cut(f)
    finally:
        f.close()
    if n == last.byte_end:
        return "same"
    end_open = 1 if new_last != b"\n" else 0
    if _appendable(src, last, prefix_last, head):
        return Growth(
            "appended",
            h.hexdigest(),
            n,
            last.byte_end,
            last.line_end,
            new_lines + end_open,
            last.piece + 1,
            last.state,
            None,
            last.format,
            cut,
        )
    before = prior.before if last.piece > 1 else None
    return Growth(
        "replaced",
        h.hexdigest(),
        n,
        last.byte_start,
        last.line_start - 1,
        tail_lines + new_lines + end_open,
        last.piece,
        before.state if before else None,
        last,
        last.format,
        cut,
    )


def _appendable(src: Source, last: Piece, prefix_last: bytes, head: bytes) -> bool:
    if last.format not in APPENDABLE or last.state is None or last.state.get("cr_only"):
        return False
    if last.format == "server_log" and "clock" not in last.state:
        return False
    if prefix_last != b"\n" or _compressed(src.fs_path):
        return False
    if last.format == "server_log":
        from forensics.parsers.server_log.grammar import CONTINUES

        return CONTINUES.match(head) is None
    return True


def _compressed(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError:
        return True
    return magic.startswith(GZIP_MAGIC) or magic.startswith(ZSTD_MAGIC)


def window(open_stream: Callable[[], io.BufferedIOBase], start: int, end: int) -> Callable[[], io.BufferedIOBase]:
    """An opener of the file's decompressed bytes from `start` to `end`: the piece to parse. Bytes
    written after `end` (a live log) wait for the next ingest."""

    def opener():
        f = open_stream()
        if start:
            if f.seekable():
                f.seek(start)
            else:
                left = start
                while left:
                    b = f.read(min(1 << 22, left))
                    if not b:
                        break
                    left -= len(b)
        return io.BufferedReader(_Slice(f, end - start), buffer_size=1 << 20)

    return opener


def extent_lines(newlines: int, last: bytes) -> int:
    """Lines of a read that saw `newlines` line ends and ended on byte `last` (empty: no bytes)."""
    return newlines + (1 if last and last != b"\n" else 0)
