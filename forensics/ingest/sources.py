"""Find the inputs under the paths given to ingest: files, folders, archive members."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator

from forensics.core.errors import InputError
from forensics.core.inputs import Source

# notes that travel with a bundle, not inputs (the sample bundle documents itself in them)
SKIP_NAMES = {".DS_Store", "planted.json", "README.md"}


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
