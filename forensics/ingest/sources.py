"""Find the inputs under the paths given to ingest: files, folders, archive members."""

from __future__ import annotations

import os
import re
import stat
import tarfile
from collections.abc import Iterator

from forensics.core.errors import InputError
from forensics.core.inputs import Source

# Finder metadata, never worth a line in `files`. Notes that travel with a dump (README.md, a
# bundle's planted.json, screenshots) are not skipped by name: ingest lists them in `files` as
# skipped, with the kind it took them for (`not_a_log`).
SKIP_NAMES = {".DS_Store"}

# Document kinds by name. A log is never written under these extensions; a notes file quoting log
# lines would otherwise read as one. `--parser` still reads such a file with the parser named.
DOCUMENT_EXTENSIONS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "markdown",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "csv",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".gif": "image",
    ".webp": "image",
    ".svg": "image",
    ".bmp": "image",
    ".tif": "image",
    ".tiff": "image",
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".py": "python",
    ".ipynb": "json",
}
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image"),
    (b"\xff\xd8\xff", "image"),
    (b"GIF87a", "image"),
    (b"GIF89a", "image"),
    (b"II*\x00", "image"),
    (b"MM\x00*", "image"),
    (b"%PDF-", "pdf"),
)
_KIND_TEXT = {
    "markdown": "a Markdown document",
    "json": "a JSON document",
    "csv": "a CSV table",
    "yaml": "a YAML document",
    "image": "an image",
    "pdf": "a PDF document",
    "html": "an HTML page",
    "python": "Python source",
    "empty": "an empty file",
}
# a JSON document or JSON Lines; docker's `{"log":` lines are server logs, sglang's prefix is `[2026-`
_JSON_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*(?:\{(?!"log":)|\[\s*[\[{"\]])')


def not_a_log(head: bytes, path: str) -> tuple[str, str] | None:
    """(kind, reason) when the name or the first bytes say the input is a document, not a log.

    The kinds: empty, image, pdf (by their first bytes), json (by content or name), markdown,
    csv, yaml, html (by name). The decision outranks the server-log sniff, never a transcript or
    trace parser that claims the input (an opencode session is a `.json` file).
    """
    name = path.split("!")[-1]
    if not head.strip():
        return "empty", _KIND_TEXT["empty"] if not head else "only blank lines"
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind, _KIND_TEXT[kind]
    base = name.lower()
    for comp in (".gz", ".zst", ".bz2", ".xz"):
        base = base.removesuffix(comp)
    ext = os.path.splitext(base)[1]
    kind = DOCUMENT_EXTENSIONS.get(ext)
    if kind is not None:
        return kind, f"{_KIND_TEXT[kind]} ({ext}), not a log"
    if _JSON_START.match(head):
        return "json", "JSON that no transcript or trace parser claims, not a log"
    return None


# a file named like this is a log whatever its first lines show (an unknown build, a crash dump, a
# process's redirected output), unless its content says it is a document
_LOG_NAME = re.compile(r"(?:.+\.(?:log|out|err)|.+\.log\.\d+|stdout|stderr)", re.I)
_PYTHON = re.compile(r"(?:import [\w.]+|from [\w.]+ import |def \w+\(|class \w+[(:]|if __name__ == )")
_MD_HEADING = re.compile(r"#{1,6} \S")
_MD_BLOCK = re.compile(r"\s*(?:[-*+] \S|```|\d+\. \S)")
_YAML_ITEM = re.compile(r"\s*(?:[\w.-]+:(?:\s|$)|- )")
_CSV_HEAD = re.compile(r"[A-Za-z_][\w .()/-]*")


def names_a_log(path: str) -> bool:
    """Whether the file's name says it is a log: `*.log`, `*.log.N`, `*.out`, `*.err`, `stdout`, `stderr`
    (compressed or not)."""
    base = os.path.basename(path.split("!")[-1])
    for comp in (".gz", ".zst", ".bz2", ".xz"):
        if base.lower().endswith(comp):
            base = base[: -len(comp)]
    return _LOG_NAME.fullmatch(base) is not None


def document_by_content(head: bytes) -> tuple[str, str] | None:
    """(kind, reason) when the first lines are a document's: Markdown, YAML, CSV or Python source.

    Used where no parser claims an input: a file named like a log is refused only when this says what
    else it is (a missing marker alone says nothing). Each rule wants two signs, so that a log of an
    unknown build (`INFO: ...` lines, a `#`-framed crash report) is not taken for one."""
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines()[:40] if ln.strip()]
    if not lines:
        return None
    first = lines[0]
    if re.match(r"#!.*\bpython", first) or (
        sum(1 for ln in lines if _PYTHON.match(ln)) >= 2 and not any("Traceback (most recent" in ln for ln in lines)
    ):
        return "python", "Python source, not a log"
    if _MD_HEADING.match(first) and sum(1 for ln in lines[1:] if _MD_BLOCK.match(ln)) >= 2:
        return "markdown", "a Markdown document, not a log"
    if first.strip() in ("---", "%YAML") or first.startswith("%YAML "):
        if sum(1 for ln in lines[1:] if _YAML_ITEM.match(ln)) >= min(2, len(lines) - 1) >= 1:
            return "yaml", "a YAML document, not a log"
    import csv

    rows = list(csv.reader(lines[:6]))
    if (
        len(rows) >= 3
        and len(rows[0]) >= 2
        and all(len(r) == len(rows[0]) for r in rows)
        and all(_CSV_HEAD.fullmatch(c.strip()) for c in rows[0])
    ):
        return "csv", "a CSV table, not a log"
    return None


def _is_tar(path: str) -> bool:
    name = path.lower()
    if not name.endswith((".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.bz2", ".tar.xz")):
        return False
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


_COMPRESSED_TAR = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "lzma"))


def _tar_members(path: str, display: str, spool: str | None = None) -> Iterator[Source]:
    """One Source per regular member, each read in place by its offset: linear in the members.

    Finding a member by name reads the archive's index up to it, and a compressed archive must be
    decompressed from its start for each one: a tarball of many small members took hours. A
    compressed archive is decompressed once, into `spool` (the store's scratch folder), and its
    members are read from there.
    """
    # Members are only ever read, never extracted, so names such as ../x or /etc/x cannot write
    # anywhere; they are reported under the archive's name.
    plain = path
    with open(path, "rb") as fh:
        magic = fh.read(6)
    kind = next((k for m, k in _COMPRESSED_TAR if magic.startswith(m)), None)
    if kind is not None and spool is not None:
        plain = _decompressed(path, kind, spool)
    try:
        tf = tarfile.open(plain, "r:" if plain != path or kind is None else "r:*")
    except tarfile.TarError:
        tf = tarfile.open(path, "r:*")
        plain = path
    seekable = plain != path or kind is None
    with tf:
        try:
            for m in tf:
                if m.isfile():
                    offset = m.offset_data if seekable and not m.issparse() else None
                    yield Source(
                        path=f"{display}!{m.name}",
                        fs_path=plain,
                        member=m.name,
                        size=m.size,
                        mtime=m.mtime,
                        offset=offset,
                    )
        except (tarfile.TarError, EOFError, OSError):
            return  # a cut archive: the members before the cut are read, the cut one fails on read


def _decompressed(path: str, kind: str, spool: str) -> str:
    """The archive decompressed into `spool` (as much of it as is readable)."""
    import bz2
    import gzip
    import hashlib
    import lzma
    import shutil

    os.makedirs(spool, exist_ok=True)
    out = os.path.join(spool, hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:24] + ".tar")
    opener = {"gzip": gzip.open, "bz2": bz2.open, "lzma": lzma.open}[kind]
    with opener(path, "rb") as src, open(out, "wb") as dst:
        try:
            shutil.copyfileobj(src, dst, 1 << 20)
        except (EOFError, OSError, lzma.LZMAError):
            pass  # cut: what decompressed is kept, and tarfile stops at the cut
    return out


_SPECIAL = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def special_kind(path: str) -> str | None:
    """'FIFO', 'socket', 'character device' or 'block device' for a file that is no regular file
    (a link is followed): opening a FIFO blocks until a writer comes, a device never ends."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


# What marks a folder as a forensics store (forensics/store/__init__.py), whatever its name: its
# inputs folder (data in the layout before) and one of the files only a store has.
def is_store(path: str) -> bool:
    """True for a forensics store: never read as an input, even inside the dump folder."""
    return any(os.path.isdir(os.path.join(path, d)) for d in ("inputs", "data")) and any(
        os.path.exists(os.path.join(path, m)) for m in (".lock", ".tmp", "derived")
    )


def discover(
    paths: list[str], dir_claim=None, spool: str | None = None, skip: tuple[str, ...] = ()
) -> Iterator[Source | tuple[str, str]]:
    """Yield a Source per input file, or (dir, format) for a directory a parser claims whole.

    `dir_claim(dir) -> format | None` lets transcript parsers take a folder as one input
    (an opencode storage tree, a folder of generated outputs). `spool` is where compressed
    archives are decompressed once; folders in `skip` (the store being written) and any folder
    that is a store are never walked. FIFOs, sockets and devices come back with `special` set,
    never opened.
    """
    skip_real = {os.path.realpath(x) for x in skip}
    for p in paths:
        if not os.path.exists(p):
            raise InputError(f"no such file or directory: {p}", help="check the path given to ingest")
        if os.path.isdir(p):
            if os.path.realpath(p) in skip_real or is_store(p):
                continue
            yield from _walk(p, dir_claim, spool, skip_real)
        else:
            yield from _file(p, spool)


def _file(path: str, spool: str | None = None) -> Iterator[Source]:
    if os.path.basename(path) in SKIP_NAMES:
        return
    kind = special_kind(path)
    if kind is not None:
        yield Source(path=path, fs_path=path, special=kind)
        return
    if _is_tar(path):
        yield from _tar_members(path, path, spool)
        return
    try:
        st = os.stat(path)
    except OSError:
        yield Source(path=path, fs_path=path)  # fails on open, with the reason, under its name
        return
    yield Source(path=path, fs_path=path, size=st.st_size, mtime=st.st_mtime)


def _walk(
    root: str, dir_claim, spool: str | None = None, skip: set[str] = frozenset()
) -> Iterator[Source | tuple[str, str]]:
    # followlinks=False: a directory symlink loop in a dump must not recurse forever.
    for d, dirs, files in os.walk(root, followlinks=False):
        claimed = dir_claim(d) if dir_claim and not any(special_kind(os.path.join(d, f)) for f in files) else None
        if claimed:
            dirs[:] = []
            yield (d, claimed)
            continue
        # a store in the dump (a run before this one put it there) is output, not input
        dirs[:] = sorted(
            x
            for x in dirs
            if not x.startswith(".")
            and os.path.realpath(os.path.join(d, x)) not in skip
            and not is_store(os.path.join(d, x))
        )
        for f in sorted(files):
            full = os.path.join(d, f)
            if f.startswith("."):
                continue
            if os.path.islink(full) and not os.path.exists(full):
                # a dangling link is reported (ingest fails it by name), never skipped in silence
                yield Source(path=full, fs_path=full)
                continue
            if not os.path.isfile(full):
                if special_kind(full):
                    yield Source(path=full, fs_path=full, special=special_kind(full))
                continue
            yield from _file(full, spool)
