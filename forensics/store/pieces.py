"""The committed pieces of each file: what a grown file is read on from (forensics/ingest/grown.py).

A file's `files` rows record each piece committed of it (its bytes, lines and the parser's state
where it ended); this module finds them by path and host.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

from forensics.core.inputs import Source
from forensics.store import hive


@dataclasses.dataclass
class Piece:
    """One committed piece of a file, as its `files` row records it."""

    key: str  # its store key (inputs/<key>.json)
    sha256: str  # of the content from byte 0 to byte_end
    format: str | None
    piece: int
    byte_start: int
    byte_end: int
    line_start: int
    line_end: int
    state: dict | None  # resume_state: None for rows written before pieces were recorded


@dataclasses.dataclass
class Prior:
    """What the store holds of one path: its last piece, and the one before (whose state a
    re-read of the last piece starts from)."""

    last: Piece
    before: Piece | None = None
    keys: tuple[str, ...] = ()  # of every committed piece of the path


# The committed pieces of a file are found by its path and host without reading every input's
# files row (a store of many inputs took seconds a file): <store>/pieces/<hash of path and host>
# lists the keys its pieces were committed under. A key is listed before its manifest is linked,
# so a listed key that is not committed never was (or was replaced), and every committed one is listed.
PIECES = "pieces"


def _hint_file(store, path: str, host: str):
    return store.root / PIECES / hashlib.sha256(f"{path}\0{host}".encode()).hexdigest()[:32]


def note(store, path: str, host: str, key: str) -> None:
    """List `key` as a folder of a piece of `path` (before it is committed)."""
    f = _hint_file(store, path, host)
    f.parent.mkdir(exist_ok=True)
    with open(f, "a") as fh:
        fh.write(key + "\n")


def committed(store, sources: list[Source], hosts: dict[str, str]) -> dict[str, Prior]:
    """The committed pieces of each plain file among `sources`, by path (same path, same host)."""
    plain = {
        s.path
        for s in sources
        if s.member is None and not s.special and s.size is not None and not os.path.isdir(s.fs_path)
    }
    if not plain or not store.inputs.is_dir():
        return {}
    if not (store.root / PIECES).is_dir():
        files = _listed_before_pieces(store, plain, hosts)
    else:
        files = []
        for path in sorted(plain):
            try:
                keys = set(_hint_file(store, path, hosts[path]).read_text().split())
            except OSError:
                continue
            committed = store.manifests()
            files += [f for k in sorted(keys) if k in committed for f in store.input_parts(k, "files", committed[k])]
    by_path: dict[str, list[tuple[object, Piece]]] = {}
    for r in files_rows(files):
        path = r.get("path")
        if r.get("status") != "ingested" or path not in plain:
            continue
        try:
            state = json.loads(r["resume_state"]) if r.get("resume_state") else None
        except ValueError:
            state = None
        if not isinstance(state, dict):
            state = None
        if (state or {}).get("host", r.get("host")) != hosts.get(path):
            continue
        nbytes = r.get("bytes") or 0
        start = r.get("byte_start") or 0
        lines = r.get("lines") or 0
        line_start = r.get("line_start") or 1
        p = Piece(
            key=r["_key"],
            sha256=r.get("sha256") or "",
            format=r.get("format"),
            piece=r.get("piece") or 1,
            byte_start=start,
            byte_end=r.get("byte_end") if r.get("byte_end") is not None else start + nbytes,
            line_start=line_start,
            line_end=r.get("line_end") if r.get("line_end") is not None else line_start + lines - 1,
            state=state,
        )
        by_path.setdefault(path, []).append((r.get("ingested_at"), p))
    out = {}
    for path, ps in by_path.items():
        last = max(ps, key=lambda t: (t[0] is not None, t[0] or 0, t[1].byte_end))[1]
        before = [p for _, p in ps if p.piece == last.piece - 1 and p.byte_end == last.byte_start]
        out[path] = Prior(last, before[-1] if before else None, tuple(sorted({p.key for _, p in ps})))
    return out


def _listed_before_pieces(store, plain: set[str], hosts: dict[str, str]) -> list[str]:
    """A store written before pieces were listed: every files row is read once, and the pieces of
    the plain files listed from then on."""
    files = store.table_files("files")
    found = []
    for r in files_rows(files):
        if r.get("status") != "ingested" or r.get("path") not in plain:
            continue
        try:
            given = (json.loads(r.get("resume_state") or "{}") or {}).get("host", r.get("host"))
        except (ValueError, AttributeError):
            given = r.get("host")
        if given == hosts[r["path"]]:
            note(store, r["path"], given, r["_key"])
            found.append(r["_file"])
    (store.root / PIECES).mkdir(exist_ok=True)
    return found


def files_rows(files: list[str], columns: tuple[str, ...] | None = None) -> list[dict]:
    """Every files row with the folder it is in (`_key`); a file that cannot be read is passed over.
    `columns`: those read (the host is the path's), else those a piece needs."""
    import pyarrow.parquet as pq

    want = columns or (
        "path",
        "sha256",
        "bytes",
        "format",
        "host",
        "lines",
        "status",
        "ingested_at",
        "piece",
        "byte_start",
        "byte_end",
        "line_start",
        "line_end",
        "resume_state",
    )
    rows = []
    for f in files:
        try:
            pf = pq.ParquetFile(f)
            t = pf.read(columns=[c for c in want if c in pf.schema_arrow.names], use_threads=False)
        except Exception:  # a damaged file is `forensics verify`'s to name; it holds no piece here
            continue
        key, where = hive.key_of(f), hive.values_of(f)  # the host is in the path, not the file
        for r in t.to_pylist():
            r["_key"], r["_file"] = key, f
            if "host" in where:
                r["host"] = where["host"]
            rows.append(r)
    return rows
