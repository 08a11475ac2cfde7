"""Committing an input whose parts lie in many partition folders: its manifest is the commit point.

    <store>/inputs/<key>.json        the input's manifest: its parts (path under tables/, bytes)
    <store>/.tmp/<key>.<pid>/        its parts while written: <table>/host=<h>/date=<d>/<NNNNN>.parquet

A commit (`commit`) goes:

1. every part is written in the input's folder in .tmp (by this process or the workers), the
   `files` row last, and a token is written there (`.commit`);
2. the manifest, naming the parts, the folder and the token, is written beside inputs/ and linked
   into inputs/<key>.json: one link, refused when the key is there (the same content committed
   before, or meanwhile by another input). From here the input is committed;
3. each part is renamed from .tmp into its partition folder as part-<key>-NNNNN.parquet; the input
   it replaces, if any, is dropped; the folder in .tmp goes.

A kill before step 2 leaves the folder in .tmp alone, which the next ingest clears: no part ever
reached tables/. A kill during step 3 leaves a manifest whose folder in .tmp still holds its token:
the next ingest (`recover`, under the store's lock) finishes the renames. Our readers read the
parts the manifests list, and a part not yet renamed from where it waits (`resolve`), so they see
an input whole or not at all; readers that glob tables/ (DuckDB, Spark, ...) see only parts of
committed inputs, all of them once step 3 ends.

An input is dropped (`drop`: a failed record once its input is ingested, `verify --repair`, a
grown file's piece replaced) by renaming its manifest into .tmp first (it is no longer committed),
then removing its parts; a kill between leaves the renamed manifest, whose parts `recover` removes.
A replacing manifest names the input it replaces: readers leave that one out from the moment it is
linked, so the old piece and the new are never read together.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

from forensics.store import hive

INPUTS = "inputs"
_FORMAT = 1
_TOKEN = ".commit"
_DROPPED = "dropped-"

# manifest path -> ((inode, size, mtime), manifest): a process reads each one once while it is unchanged
_cache: dict[str, tuple[tuple, dict]] = {}


def manifest_path(store, key: str) -> Path:
    return store.root / INPUTS / f"{key}.json"


def read(path: Path) -> dict | None:
    """The manifest at `path` (None when it is not there or not one this version reads)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    sig = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _cache.get(str(path))
    if hit is not None and hit[0] == sig:
        return hit[1]
    try:
        m = json.loads(Path(path).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not (isinstance(m, dict) and m.get("format") == _FORMAT and isinstance(m.get("parts"), list)):
        return None
    _cache[str(path)] = (sig, m)
    return m


def manifests(store) -> dict[str, dict]:
    """key -> manifest of every input committed now: those replaced by another committed one left out."""
    found = present(store)
    replaced = {m.get("replaces") for m in found.values() if m.get("replaces")}
    return {k: m for k, m in found.items() if k not in replaced}


def present(store) -> dict[str, dict]:
    """key -> manifest of every manifest in inputs/, those a replacing one hides (until dropped) too."""
    folder = store.root / INPUTS
    try:
        names = [e.name for e in os.scandir(folder) if e.name.endswith(".json") and not e.name.startswith(".")]
    except FileNotFoundError:
        return {}
    found = {}
    for name in names:
        m = read(folder / name)
        found[name.removesuffix(".json")] = m if m is not None else {"format": None, "parts": [], "unreadable": True}
    return found


def staged_dir(store, m: dict) -> Path | None:
    return store.tmp / m["staged"] if m.get("staged") else None


def resolve(store, m: dict, rel: str) -> Path:
    """Where a listed part is: in tables/, else (its commit not yet finished) in the folder it waits in."""
    final = store.tables / rel
    if final.exists():
        return final
    folder = staged_dir(store, m)
    if folder is not None:
        staged = folder / hive.staged_rel(rel)
        if staged.exists():
            return staged
    return final


def staged_parts(folder: Path) -> list[str]:
    """The parts waiting in an input's folder, relative to it (<table>/host=/date=/<tag>.parquet)."""
    out = []
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            if f.endswith(".parquet"):
                out.append(os.path.relpath(os.path.join(dirpath, f), folder).replace(os.sep, "/"))
    return sorted(out)


def commit(store, key: str, folder: Path, replaces: str | None = None, drop_parts: list[str] | None = None) -> bool:
    """Commit the parts waiting in `folder` as input `key` (see the module docstring); False, the
    folder removed, when `key` is committed already."""
    parts = [{"file": hive.final_rel(rel, key), "bytes": (folder / rel).stat().st_size} for rel in staged_parts(folder)]
    token = secrets.token_hex(8)
    m = {
        "format": _FORMAT,
        "key": key,
        "parts": parts,
        "staged": folder.name,
        "token": token,
        "replaces": replaces,
        "drop": drop_parts or [],
    }
    (folder / _TOKEN).write_text(f"{key} {token}")
    inputs = store.root / INPUTS
    inputs.mkdir(exist_ok=True)
    tmp = inputs / f".{key}.{os.getpid()}.{token}.tmp"
    tmp.write_text(json.dumps(m, indent=1))
    try:
        os.link(tmp, manifest_path(store, key))
    except FileExistsError:
        shutil.rmtree(folder, ignore_errors=True)
        return False
    finally:
        tmp.unlink(missing_ok=True)
    finish(store, m)
    return True


def rewrite(store, key: str, folder: Path, keep: list[dict], drop_parts: list[str]) -> None:
    """Replace input `key`'s manifest by one listing `keep` and the parts waiting in `folder` (a
    compaction): the manifest is swapped in with one rename, then the parts moved and `drop_parts` removed."""
    parts = keep + [
        {"file": hive.final_rel(rel, key), "bytes": (folder / rel).stat().st_size} for rel in staged_parts(folder)
    ]
    old = read(manifest_path(store, key)) or {}
    token = secrets.token_hex(8)
    m = {**old, "parts": parts, "staged": folder.name, "token": token, "replaces": None, "drop": drop_parts}
    (folder / _TOKEN).write_text(f"{key} {token}")
    tmp = store.root / INPUTS / f".{key}.{os.getpid()}.{token}.tmp"
    tmp.write_text(json.dumps(m, indent=1))
    os.replace(tmp, manifest_path(store, key))
    finish(store, m)


def finish(store, m: dict) -> None:
    """Step 3 of a commit: the parts renamed into tables/, what it replaces dropped, its folder removed."""
    folder = staged_dir(store, m)
    if folder is not None and folder.is_dir():
        for p in m["parts"]:
            src = folder / hive.staged_rel(p["file"])
            if src.exists():
                dst = store.tables / p["file"]
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
    for rel in m.get("drop") or []:
        (store.tables / rel).unlink(missing_ok=True)
    if m.get("replaces"):
        drop(store, m["replaces"])
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def drop(store, key: str) -> bool:
    """Take input `key` out of the store: its manifest first (one rename), then its parts. False when it was not in."""
    path = manifest_path(store, key)
    m = read(path)
    store.tmp.mkdir(parents=True, exist_ok=True)
    gone = store.tmp / f"{_DROPPED}{key}.{os.getpid()}.{secrets.token_hex(4)}.json"
    try:
        os.replace(path, gone)
    except FileNotFoundError:
        return False
    _remove_parts(store, m or {})
    gone.unlink(missing_ok=True)
    return True


def _remove_parts(store, m: dict) -> None:
    for p in m.get("parts") or []:
        f = store.tables / p["file"]
        f.unlink(missing_ok=True)
        _prune(store, f.parent)


def _prune(store, folder: Path) -> None:
    """Remove partition folders left empty (date=, then host=, then the table's)."""
    for _ in range(3):
        if folder == store.tables:
            return
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def recover(store) -> None:
    """What killed ingests left in .tmp: commits finished, drops finished, the rest removed.

    Run under the store's lock, before anything is written."""
    if not store.tmp.is_dir():
        return
    committed = {k: m for k, m in manifests(store).items()}
    for e in list(os.scandir(store.tmp)):
        path = Path(e.path)
        if e.name.startswith(_DROPPED) and e.name.endswith(".json"):
            key = e.name[len(_DROPPED) :].split(".", 1)[0]
            if key not in committed:  # committed again since: the parts are the new commit's
                _remove_parts(store, read(path) or {})
            path.unlink(missing_ok=True)
            continue
        if e.is_dir():
            try:
                key, token = (path / _TOKEN).read_text().split()
            except (OSError, ValueError):
                continue  # never committed: cleared with .tmp
            m = read(manifest_path(store, key))
            if m is not None and m.get("staged") == e.name and token == m.get("token"):
                finish(store, m)
    for e in list(os.scandir(store.root / INPUTS)) if (store.root / INPUTS).is_dir() else []:
        if e.name.startswith(".") and e.name.endswith(".tmp"):
            os.unlink(e.path)
