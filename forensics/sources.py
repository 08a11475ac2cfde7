"""Find the inputs under the paths given to ingest and open them decompressed.

Compression is recognised by magic bytes, not by name, so rotated names such as
`decode.log.1.gz` or a `.log` that is really gzip both work.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from collections.abc import Iterator

from forensics.errors import InputError
from parsers.base import Source

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# notes that travel with a bundle, not inputs (the sample bundle documents itself in them)
SKIP_NAMES = {".DS_Store", "planted.json", "README.md"}


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


def _decompress(raw: io.BufferedIOBase) -> io.BufferedIOBase:
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if head.startswith(GZIP_MAGIC):
        return io.BufferedReader(_CutTolerant(gzip.GzipFile(fileobj=raw), (EOFError, OSError, zlib.error)),
                                 buffer_size=1 << 20)
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
        tf = tarfile.open(src.fs_path, "r:*")
        f = tf.extractfile(src.member)
        if f is None:
            raise InputError(f"archive member is not a regular file: {src.member}", file=src.fs_path)
        return _decompress(io.BufferedReader(f, buffer_size=1 << 20))  # type: ignore[arg-type]
    except OSError as e:
        raise InputError(f"cannot read {src.path}: {e.strerror or e}", file=src.path,
                         help="check the file exists and is readable (permissions, a broken link)") from e


def _is_tar(path: str) -> bool:
    name = path.lower()
    if not name.endswith((".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.bz2", ".tar.xz")):
        return False
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def _tar_members(path: str, display: str) -> Iterator[Source]:
    # Members are only ever read into memory, never extracted, so names such as ../x or /etc/x
    # cannot write anywhere; they are reported under the archive's name.
    with tarfile.open(path, "r:*") as tf:
        for m in tf:
            if m.isfile():
                yield Source(path=f"{display}!{m.name}", fs_path=path, member=m.name, size=m.size, mtime=m.mtime)


def discover(paths: list[str], dir_claim=None) -> Iterator[Source | tuple[str, str]]:
    """Yield a Source per input file, or (dir, format) for a directory a parser claims whole.

    `dir_claim(dir) -> format | None` lets transcript parsers take a folder as one input
    (an opencode storage tree, a folder of generated outputs).
    """
    for p in paths:
        if not os.path.exists(p):
            raise InputError(f"no such file or directory: {p}", help="check the path given to ingest")
        if os.path.isdir(p):
            yield from _walk(p, dir_claim)
        else:
            yield from _file(p)


def _file(path: str) -> Iterator[Source]:
    if os.path.basename(path) in SKIP_NAMES:
        return
    if _is_tar(path):
        yield from _tar_members(path, path)
        return
    try:
        st = os.stat(path)
    except OSError:
        yield Source(path=path, fs_path=path)  # fails on open, with the reason, under its name
        return
    yield Source(path=path, fs_path=path, size=st.st_size, mtime=st.st_mtime)


def _walk(root: str, dir_claim) -> Iterator[Source | tuple[str, str]]:
    # followlinks=False: a directory symlink loop in a dump must not recurse forever.
    for d, dirs, files in os.walk(root, followlinks=False):
        claimed = dir_claim(d) if dir_claim else None
        if claimed:
            dirs[:] = []
            yield (d, claimed)
            continue
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        for f in sorted(files):
            full = os.path.join(d, f)
            if f.startswith("."):
                continue
            if os.path.islink(full) and not os.path.exists(full):
                # a dangling link is reported (ingest fails it by name), never skipped in silence
                yield Source(path=full, fs_path=full)
                continue
            if not os.path.isfile(full):
                continue
            yield from _file(full)
