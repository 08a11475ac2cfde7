"""A store of the layout before Hive partitions (<store>/data/<key>/<table>-NNNNN.parquet), migrated.

The first command that opens such a store migrates it, under the store's lock, and says so in one
line: each input's parts are read and written again into its partitions, then committed under the
same key as a new input would be (commits.py), then its old folder goes. The rows are the same
(the host and date move into the path; columns the old files lacked are NULL, as the old reads
gave them); keys, verdicts, snapshots and pieces are kept, since they are named by key. A kill
during it leaves inputs of both layouts; the next command goes on from there, an input committed
in the new layout being only removed from the old. A store that cannot be written is refused with
what to do, never read as if it were empty.
"""

from __future__ import annotations

import os
import re
import shutil

from forensics.core.errors import StoreError
from forensics.store import commits

_OLD_PART = re.compile(r"^(?P<table>[a-z_]+)-(?P<n>\d{5})\.parquet$")


def _old_keys(store) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(store.data) if e.is_dir())
    except FileNotFoundError:
        return []


def ensure(store, locked: bool = False) -> None:
    """Migrate `store` if it holds inputs of the layout before; `locked`: the caller holds its lock."""
    if not _old_keys(store):
        _remove_empty(store)
        return
    try:
        lock = None if locked else store.lock(wait=True)
    except OSError as e:
        raise StoreError(
            f"store {store.root} is of the layout before Hive partitions (data/<input>/) and cannot be "
            f"migrated here: {e.strerror or e}",
            file=str(store.root),
            help="run any forensics command on it once with write access (it migrates the store), "
            "or ingest the dump again into a new store",
        ) from None
    try:
        keys = _old_keys(store)  # another process may have migrated it while we waited
        if not keys:
            return
        commits.recover(store)
        dropped = []
        for key in keys:
            dropped += _migrate_input(store, key)
        _remove_empty(store)
        from forensics.store import snapshots

        snapshots.note(
            f"store {store.root} was of the layout before Hive partitions (data/<input>/): migrated to "
            f"tables/<table>/host=/date=/ ({len(keys)} inputs, rows unchanged)"
            + (f"; {len(dropped)} damaged files' inputs left out, ingest them again: {dropped[0]}" if dropped else "")
        )
    except OSError as e:
        raise StoreError(
            f"migrating store {store.root} to Hive partitions stopped: {e.strerror or e}",
            file=getattr(e, "filename", None) or str(store.root),
            help="free space or fix the store's mode, then run the command again: it goes on where it stopped",
        ) from None
    finally:
        if lock is not None:
            lock.close()


def _remove_empty(store) -> None:
    try:
        store.data.rmdir()
    except OSError:
        pass


def _migrate_input(store, key: str) -> list[str]:
    """One old input folder into the new layout under its key; the damaged files that kept it out."""
    import polars as pl
    import pyarrow.parquet as pq

    from forensics.core import schema
    from forensics.store import InputWriter
    from forensics.store.parts import write_part

    folder = store.data / key
    if commits.read(commits.manifest_path(store, key)) is None:
        writer = InputWriter(store, key)
        files = []
        damaged = []
        for name in sorted(os.listdir(folder)):
            m = _OLD_PART.match(name)
            if not m or m["table"] not in schema.TABLES:
                continue
            try:
                df = pl.from_arrow(pq.read_table(folder / name))
            except Exception:  # whatever pyarrow raises for a damaged file
                damaged.append(str(folder / name))
                continue
            if m["table"] == "files":
                files.append(df)
            else:
                write_part(writer.dir, m["table"], int(m["n"]), df)
        if damaged or not files:
            writer.abort()
            damaged = damaged or [f"{folder} (without its files row)"]
        else:
            for df in files:  # last: its data_files names the parts as they are now
                writer.write("files", df)
            writer.commit()
    else:
        damaged = []
    gone = store.tmp / f"migrated-{key}.{os.getpid()}"
    store.tmp.mkdir(parents=True, exist_ok=True)
    os.replace(folder, gone)
    shutil.rmtree(gone, ignore_errors=True)
    return damaged
