"""Find the inputs under the paths given to ingest: files, folders, archive members."""

from __future__ import annotations

import os
import re
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
    ".md": "markdown", ".markdown": "markdown", ".rst": "markdown",
    ".json": "json", ".csv": "csv", ".tsv": "csv", ".yaml": "yaml", ".yml": "yaml",
    ".png": "image", ".jpg": "image", ".jpeg": "image", ".gif": "image", ".webp": "image", ".svg": "image",
    ".bmp": "image", ".tif": "image", ".tiff": "image", ".pdf": "pdf", ".html": "html", ".htm": "html",
}
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image"), (b"\xff\xd8\xff", "image"), (b"GIF87a", "image"), (b"GIF89a", "image"),
    (b"II*\x00", "image"), (b"MM\x00*", "image"), (b"%PDF-", "pdf"),
)
_KIND_TEXT = {
    "markdown": "a Markdown document", "json": "a JSON document",
    "csv": "a CSV table", "yaml": "a YAML document", "image": "an image", "pdf": "a PDF document",
    "html": "an HTML page", "empty": "an empty file",
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
