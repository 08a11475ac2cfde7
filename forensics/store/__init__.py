"""The incident store: Parquet tables on disk, one folder per ingested input.

    <store>/data/<sha16>/<table>-<part>.parquet   committed inputs (one folder each)
    <store>/.tmp/<sha16>.<pid>/                   an input being written
    <store>/clocks.json                           explicit per-host clock offsets (clocks.py)
    <store>/derived/                              snapshot sets and verdicts (snapshots.py)
    <store>/pieces/                               committed pieces of each file (pieces.py)

An input is written into .tmp and becomes visible with a single directory rename, so a killed
ingest never leaves a partial input behind: readers glob data/ only, and the next ingest clears
.tmp. Raw rows are never rewritten; corrections live in the DuckDB views.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from forensics.core.errors import ForensicsError
from forensics.store import clocks
from forensics.store.parts import write_part

if TYPE_CHECKING:
    import polars as pl

# polars / pyarrow are imported where used (parts.py): the CLI imports this module for
# DEFAULT_STORE, and `forensics --help` must not pay for loading them.

DEFAULT_STORE = "forensics-store"


class Store:
    """A store folder. Use `writer()` to add one input, `committed()` to see what is in it."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.data = self.root / "data"
        self.tmp = self.root / ".tmp"

    def exists(self) -> bool:
        return self.data.is_dir()

    def require(self) -> "Store":
        if not self.exists():
            raise ForensicsError(
                f"no store at {self.root}",
                help="run `forensics ingest DUMP_DIR` first, or pass --store / set FORENSICS_STORE",
            )
        return self

    def init(self) -> "Store":
        self.data.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        return self

    def lock(self):
        """An exclusive lock held while ingesting: two ingests into one store would race."""
        self.init()
        fh = open(self.root / ".lock", "w")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            fh.close()
            raise ForensicsError(
                f"another ingest is writing to {self.root}", help="wait for it to finish, or use another --store"
            ) from e
        return fh

    def clear_tmp(self) -> None:
        """Drop inputs that a killed ingest left half-written."""
        if self.tmp.is_dir():
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp.mkdir(parents=True, exist_ok=True)

    def committed(self) -> set[str]:
        if not self.data.is_dir():
            return set()
        return {p.name for p in self.data.iterdir() if p.is_dir()}

    def table_files(self, table: str) -> list[str]:
        if not self.data.is_dir():
            return []
        return sorted(str(p) for p in self.data.glob(f"*/{table}-*.parquet"))

    def writer(self, key: str) -> "InputWriter":
        return InputWriter(self, key)

    # -- clock offsets (explicit, per host) --------------------------------------------------
    @property
    def clocks_file(self) -> Path:
        return self.root / "clocks.json"

    def clocks(self) -> dict[str, float]:
        """host -> seconds its clock runs ahead; StoreError when clocks.json is not that."""
        return clocks.load(self.clocks_file)

    def set_clock(self, host: str, seconds: float) -> None:
        clocks.require_offset(host, seconds)
        c = self.clocks()
        c[host] = float(seconds)
        clocks.write(self.clocks_file, c)

    def unset_clock(self, host: str) -> None:
        c = self.clocks()
        c.pop(host, None)
        clocks.write(self.clocks_file, c)


class InputWriter:
    """Writes the tables of one input into .tmp, then commits them with one rename."""

    def __init__(self, store: Store, key: str):
        self.store, self.key = store, key
        self.dir = store.tmp / f"{key}.{os.getpid()}"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.parts: dict[str, int] = {}
        self.rows: dict[str, int] = {}

    def write(self, table: str, df: pl.DataFrame) -> None:
        if df.height == 0:
            return
        if table == "files":  # written last: the parts beside it are the input's whole data
            df = self._with_data_files(df)
        n = self.parts.get(table, 0)
        self.parts[table] = n + 1
        self.rows[table] = self.rows.get(table, 0) + df.height
        write_part(self.dir, table, n, df)

    def _with_data_files(self, df: pl.DataFrame) -> pl.DataFrame:
        """The files row with the parts of its folder (workers' too), which reads check against it."""
        import polars as pl

        from forensics.core import schema

        listed = sorted(
            (e.name, e.stat().st_size)
            for e in os.scandir(self.dir)
            if e.name.endswith(".parquet") and not e.name.startswith("files-")
        )
        dtype = schema.FILES.column("data_files").dtype
        value = [{"file": n, "bytes": b} for n, b in listed]
        return df.with_columns(pl.Series("data_files", [value] * df.height, dtype=dtype))

    def commit(self) -> bool:
        """Make the input visible. False if the same content was committed meanwhile."""
        final = self.store.data / self.key
        if final.exists():
            self.abort()
            return False
        try:
            os.replace(self.dir, final)
        except OSError:
            if not final.exists():
                raise
            self.abort()  # the same content, committed by another input between the check and here
            return False
        return True

    def replace(self, old: str) -> bool:
        """Make the input visible in place of the committed input `old`, which it extends.

        The two folders are swapped with one rename (renameat2 RENAME_EXCHANGE), so a reader sees
        the old version or the new, never both and never neither, and a kill at any point leaves
        one of them; the swapped-in folder then takes its own key. Where the exchange is not
        available the old folder goes first: a kill between the two renames leaves neither, and
        the next ingest reads the file on from the piece before it. False (the old one dropped)
        when the new content was committed meanwhile under another name.
        """
        final, gone = self.store.data / self.key, self.store.data / old
        out = self.store.tmp / f"replaced-{old}.{os.getpid()}"
        if final.exists():
            self.abort()
            _move_out(gone, out)
            return False
        if _exchange(self.dir, gone):
            os.replace(gone, final)
            shutil.rmtree(self.dir, ignore_errors=True)  # the old version, now in .tmp
            return True
        _move_out(gone, out)
        os.replace(self.dir, final)
        return True

    def abort(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _move_out(folder: Path, out: Path) -> None:
    try:
        os.replace(folder, out)
    except FileNotFoundError:
        return
    shutil.rmtree(out, ignore_errors=True)


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where that is missing."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0
