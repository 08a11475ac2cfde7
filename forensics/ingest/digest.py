"""Digests: the sha256, size and lines of what a parser read, the key of an input in the store.

The parser reads through `HashingStream`, so the content is read once for both; what it left
unread is drained into the hash after it (`content_digest`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from concurrent.futures import Future

from forensics.ingest.grown import extent_lines
from forensics.parsers.lines import count_newlines


class HashingStream:
    """Wraps a binary stream and hashes what is read through it; `eof` once it was read to the end.

    The hash and the newline count run on a thread of their own (both release the GIL), one
    chunk behind the read: with the passes parsed in the workers, what this process does per
    byte bounds how many cores one input can use, and this was most of it.
    """

    def __init__(self, inner):
        self.inner, self._h, self.n, self.eof = inner, hashlib.sha256(), 0, False
        self._newlines, self.last = 0, b""  # for the extent of what was read (`parse.extent`)
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


def content_digest(open_stream, hasher: "HashingStream | None") -> tuple[str, int, str | None, int]:
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
        hasher = HashingStream(open_stream())
        while read_upto(hasher, 1 << 22):
            pass
    cut = was_cut(hasher.inner)
    hasher.inner.close()
    return hasher.h.hexdigest(), hasher.n, cut, extent_lines(hasher.newlines, hasher.last)


def dir_digest(path: str) -> tuple[str, int]:
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
