"""Parquet snapshots of the derived views: published whole, checked on every read, never removed under a reader.

    <store>/derived/<key>/<view>.parquet     one snapshot per derived view
    <store>/derived/<key>/MANIFEST.json      view, file, size, rows, schema and sha256 of each

A set is written into `derived/.build-<key>-<pid>-<n>/`, manifest last, and published with one
directory rename: a reader sees the whole set or none. A reader checks the manifest against the
files before it trusts them (sizes, Parquet footers, row counts, schemas; the checksums in
`forensics verify`), so a damaged or swapped snapshot is recomputed, never read.

Readers hold a shared flock on the folder they read for as long as their connection lives; a
folder of an older store state is removed only by a process that gets the exclusive lock, after
renaming it away, so a report never loses the snapshot under its queries.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import sys
import weakref
from pathlib import Path

MANIFEST = "MANIFEST.json"
# <store>/derived/verdicts/<detector version>/<input>.parquet: the verdicts, beside the snapshot sets
VERDICTS = "verdicts"
_FORMAT = 1
_BUILD = ".build-"
_TRASH = ".trash-"
_serial = itertools.count()


def verdicts_dir(store) -> Path:
    return store.root / "derived" / VERDICTS


def note(text: str) -> None:
    """A line on stderr about the store: results go to stdout, whatever their format."""
    from forensics.core.text import escape_control

    print(f"note: {escape_control(text)}", file=sys.stderr)


def _arrow_schema(path: Path) -> tuple[int, list[list[str]]]:
    import pyarrow.parquet as pq

    md = pq.read_metadata(path)
    return md.num_rows, [[f.name, str(f.type)] for f in md.schema.to_arrow_schema()]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def describe(view: str, path: Path) -> dict:
    """The manifest entry of one snapshot file."""
    rows, cols = _arrow_schema(path)
    return {
        "view": view,
        "file": path.name,
        "size": path.stat().st_size,
        "rows": rows,
        "schema": cols,
        "sha256": sha256(path),
    }


def read_manifest(folder: Path) -> dict:
    """The manifest of a snapshot folder; ValueError saying what is wrong with it."""
    try:
        m = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise ValueError("has no manifest") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"has an unreadable manifest ({type(e).__name__})") from None
    ok = (
        isinstance(m, dict)
        and m.get("format") == _FORMAT
        and isinstance(m.get("views"), list)
        and all(
            isinstance(v, dict)
            and isinstance(v.get("view"), str)
            and isinstance(v.get("file"), str)
            and "/" not in v["file"]
            and isinstance(v.get("size"), int)
            and isinstance(v.get("rows"), int)
            and isinstance(v.get("schema"), list)
            and isinstance(v.get("sha256"), str)
            for v in m["views"]
        )
    )
    if not ok:
        raise ValueError("has a manifest that is not one this version writes")
    return m


def check(folder: Path, views: list[str], deep: bool = False) -> str | None:
    """What is wrong with the snapshot folder `folder` for `views` (None: nothing).

    The cheap check reads each file's size and Parquet footer; `deep` also recomputes the checksums.
    """
    try:
        m = read_manifest(folder)
    except ValueError as e:
        return str(e)
    if m.get("key") != folder.name:
        return "holds the snapshots of another store state (its manifest names another key)"
    by_view = {v["view"]: v for v in m["views"]}
    if sorted(by_view) != sorted(views):
        return "lists other views than the toolkit defines"
    for name in views:
        v = by_view[name]
        path = folder / v["file"]
        try:
            size = path.stat().st_size
        except OSError:
            return f"lacks {v['file']}"
        if size != v["size"]:
            return f"has {v['file']} of {size} bytes, its manifest says {v['size']}"
        try:
            rows, cols = _arrow_schema(path)
        except Exception as e:  # pyarrow raises several kinds for a damaged footer
            return f"has {v['file']} that is not readable Parquet ({type(e).__name__})"
        if rows != v["rows"]:
            return f"has {v['file']} of {rows} rows, its manifest says {v['rows']}"
        if cols != v["schema"]:
            return f"has {v['file']} whose columns are not those its manifest lists"
        if deep and sha256(path) != v["sha256"]:
            return f"has {v['file']} whose checksum is not its manifest's"
    return None


# -- locks ---------------------------------------------------------------------------------------


def hold(folder: Path) -> int | None:
    """A shared lock on `folder` (a descriptor), or None when it is not there (or was just removed)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        # a cleaner may have renamed it away between the open and the lock
        st, now = os.fstat(fd), os.stat(folder)
        if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def keep_while(owner, fd: int) -> None:
    """Release the lock `fd` when `owner` (a connection) is garbage."""
    weakref.finalize(owner, _close, fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove(folder: Path) -> bool:
    """Remove a snapshot folder if nobody reads it (an exclusive lock); True if it is gone."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        # renamed first: a reader that opened it before our lock finds it gone once it gets its own
        trash = folder.with_name(f"{_TRASH}{folder.name.lstrip('.')}-{os.getpid()}-{next(_serial)}")
        try:
            os.rename(folder, trash)
        except OSError:
            return False
        shutil.rmtree(trash, ignore_errors=True)
        return True
    finally:
        os.close(fd)


def sweep(derived: Path, keep: set[str]) -> None:
    """Remove the snapshot folders of other store states that no reader holds."""
    try:
        children = list(derived.iterdir())
    except OSError:
        return
    for old in children:
        if old.name in keep or not old.is_dir():
            continue
        if old.name.startswith(_BUILD):
            # a build between its mkdir and its lock is unlocked: its writer's pid says it lives
            try:
                pid = int(old.name.rsplit("-", 2)[1])
            except (IndexError, ValueError):
                pid = -1
            if pid > 0 and pid != os.getpid() and _pid_alive(pid):
                continue
        remove(old)


# -- building --------------------------------------------------------------------------------------


class Build:
    """A snapshot set being written: a folder under derived/ that this process holds shared."""

    def __init__(self, derived: Path, key: str, about: dict | None = None):
        derived.mkdir(parents=True, exist_ok=True)
        self.key, self.derived, self.about = key, derived, about or {}
        self.folder = derived / f"{_BUILD}{key}-{os.getpid()}-{next(_serial)}"
        self.folder.mkdir()
        self.fd = hold(self.folder)
        if self.fd is None:
            raise OSError(errno.ENOENT, "snapshot build folder vanished", str(self.folder))
        self.entries: list[dict] = []

    def path(self, view: str) -> Path:
        return self.folder / f"{view}.parquet"

    def restart(self) -> None:
        """Start the set again (its files are written over): none of what it described so far holds."""
        self.entries = []

    def add(self, view: str) -> None:
        self.entries.append(describe(view, self.path(view)))

    def publish(self) -> Path:
        """Write the manifest, then rename the set into place; the folder the set is in now.

        When another process published the same state first, ours stays where it is: this
        process reads it (its lock keeps it) and a later sweep removes it.
        """
        tmp = self.folder / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps({"format": _FORMAT, "key": self.key, **self.about, "views": self.entries}, indent=1))
        os.replace(tmp, self.folder / MANIFEST)
        final = self.derived / self.key
        try:
            os.rename(self.folder, final)
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            return self.folder
        self.folder = final
        return final

    def abandon(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        _close(self.fd)
