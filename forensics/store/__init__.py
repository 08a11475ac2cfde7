"""The incident store: Parquet tables on disk in Hive partitions, one manifest per ingested input.

    <store>/tables/<table>/host=<h>/date=<d>/part-<key>-<n>.parquet   the base tables (hive.py)
    <store>/inputs/<key>.json                     what commits an input: its manifest (commits.py)
    <store>/.tmp/<key>.<pid>/                     an input being written
    <store>/clocks.json                           explicit per-host clock offsets (clocks.py)
    <store>/derived/                              snapshot sets and verdicts (snapshots.py)
    <store>/pieces/                               committed pieces of each file (pieces.py)

An input is written into .tmp and becomes visible when its manifest is linked into inputs/; its
parts are then renamed into their partition folders (commits.py says how a kill at any point is
undone or finished by the next ingest). Readers read the parts that committed manifests list,
so a killed ingest never leaves a partial input behind. Raw rows are never rewritten;
corrections live in the DuckDB views. A store of the layout before (<store>/data/<key>/<table>-
NNNNN.parquet, one folder an input) is migrated by the first command that opens it (migrate.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from forensics.core.errors import ForensicsError
from forensics.store import clocks, commits, hive
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
        self.inputs = self.root / commits.INPUTS
        self.tables = self.root / hive.TABLES
        self.tmp = self.root / ".tmp"
        self.data = self.root / "data"  # the layout before: migrate.py

    def exists(self) -> bool:
        return self.inputs.is_dir() or self.data.is_dir()

    def require(self) -> "Store":
        if not self.exists():
            raise ForensicsError(
                f"no store at {self.root}",
                help="run `forensics ingest DUMP_DIR` first, or pass --store / set FORENSICS_STORE",
            )
        self.upgrade()
        return self

    def upgrade(self, locked: bool = False) -> "Store":
        """Migrate a store of the layout before (data/<key>/) to this one, once (migrate.py);
        `locked`: the caller holds the store's lock."""
        if self.data.is_dir():
            from forensics.store import migrate

            migrate.ensure(self, locked)
        return self

    def init(self) -> "Store":
        self.inputs.mkdir(parents=True, exist_ok=True)
        self.tables.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        return self

    def lock(self, wait: bool = False):
        """An exclusive lock held while ingesting: two ingests into one store would race. `wait`:
        block until the holder ends, rather than refuse."""
        self.init()
        fh = open(self.root / ".lock", "w")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError as e:
            fh.close()
            raise ForensicsError(
                f"another ingest is writing to {self.root}", help="wait for it to finish, or use another --store"
            ) from e
        return fh

    def clear_tmp(self) -> None:
        """Finish the commits a killed ingest left half-done, and drop the inputs it left half-written."""
        commits.recover(self)
        if self.tmp.is_dir():
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp.mkdir(parents=True, exist_ok=True)

    def manifests(self) -> dict[str, dict]:
        """key -> manifest of each committed input (commits.py)."""
        return commits.manifests(self)

    def committed(self) -> set[str]:
        return set(commits.manifests(self))

    def input_parts(self, key: str, table: str | None = None, manifest: dict | None = None) -> list[str]:
        """The part files of one committed input (of `table` only, when given), in read order."""
        m = manifest if manifest is not None else commits.read(commits.manifest_path(self, key))
        if not m:
            return []
        rels = [p["file"] for p in m["parts"] if table is None or hive.table_of(p["file"]) == table]
        return [str(commits.resolve(self, m, r)) for r in sorted(rels, key=_read_order)]

    def table_files(self, table: str) -> list[str]:
        """Every committed part of `table`: by input, then in the order the input's parts were written."""
        return [f for key, m in sorted(self.manifests().items()) for f in self.input_parts(key, table, m)]

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


def _read_order(rel: str) -> tuple:
    """Parts in the order they were written (their tag), each part's partitions as written."""
    head, name = rel.rsplit("/", 1)
    return (name, head)


class InputWriter:
    """Writes the tables of one input into .tmp, then commits them (commits.py)."""

    # Around each write into .tmp. The ingest sets it (forensics/ingest/stop.py) so that after a
    # signal no write starts and the sweep of .tmp waits for those under way: a thread that made
    # its folder behind the sweep would leave it half-written.
    gate: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext

    def __init__(self, store: Store, key: str):
        self.store, self.key = store, key
        self.dir = store.tmp / f"{key}.{os.getpid()}"
        with self.gate():
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
        with self.gate():
            write_part(self.dir, table, n, df)

    def rekey(self, key: str) -> None:
        """Take the store key `key` (known once the input is read): its folder renamed to match."""
        if key == self.key:
            return
        keyed = self.store.tmp / f"{key}.{os.getpid()}"
        with self.gate():
            shutil.rmtree(keyed, ignore_errors=True)
            os.replace(self.dir, keyed)
        self.dir, self.key = keyed, key

    def _with_data_files(self, df: pl.DataFrame) -> pl.DataFrame:
        """The files row with the other parts of the input (workers' too), as they will be named under tables/."""
        import polars as pl

        from forensics.core import schema

        listed = sorted(
            (hive.final_rel(rel, self.key), (self.dir / rel).stat().st_size)
            for rel in commits.staged_parts(self.dir)
            if hive.table_of(rel) != "files"
        )
        dtype = schema.FILES.column("data_files").dtype
        value = [{"file": n, "bytes": b} for n, b in listed]
        return df.with_columns(pl.Series("data_files", [value] * df.height, dtype=dtype))

    def commit(self) -> bool:
        """Make the input visible. False if the same content was committed meanwhile."""
        return commits.commit(self.store, self.key, self.dir)

    def replace(self, old: str) -> bool:
        """Make the input visible in place of the committed input `old`, which it extends.

        The new manifest names `old`: from the moment it is linked readers leave `old` out, so they
        see the old version or the new, never both and never neither; `old` is dropped right after
        (or by the next ingest, after a kill). False (the old one dropped) when the new content was
        committed meanwhile under another name.
        """
        if commits.commit(self.store, self.key, self.dir, replaces=old):
            return True
        commits.drop(self.store, old)
        return False

    def abort(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
