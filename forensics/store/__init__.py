"""The incident store: Parquet tables on disk, one folder per ingested input.

    <store>/data/<sha16>/<table>-<part>.parquet   committed inputs (one folder each)
    <store>/.tmp/<sha16>.<pid>/                   an input being written
    <store>/clocks.json                           explicit per-host clock offsets

An input is written into .tmp and becomes visible with a single directory rename, so a killed
ingest never leaves a partial input behind: readers glob data/ only, and the next ingest clears
.tmp. Raw rows are never rewritten; corrections live in the DuckDB views.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from forensics.core.errors import ForensicsError, StoreError, UsageError

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

# polars / pyarrow are imported where used: the CLI imports this module for DEFAULT_STORE, and
# `forensics --help` must not pay for loading them.

DEFAULT_STORE = "forensics-store"

# a clock further off than this is not a skew but a wrong date (or a typo): set the date instead
MAX_OFFSET_S = 86400.0


def offset_problem(seconds) -> str | None:
    """Why `seconds` is not a clock offset (None: it is one): a finite number within a day."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return f"{type(seconds).__name__} {json.dumps(seconds)[:40]} is not a number of seconds"
    try:
        value = float(seconds)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        return f"{seconds} is not a finite number of seconds"
    if abs(value) > MAX_OFFSET_S:
        return f"{seconds:g} s is more than a day ({MAX_OFFSET_S:g} s)"
    return None


def clocks_problem(data) -> str | None:
    """What is wrong with the parsed content of a clocks.json (None: nothing)."""
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not an object of host -> seconds"
    for host, v in data.items():
        if not host:
            return "names an empty host"
        why = offset_problem(v)
        if why:
            return f"gives host {host!r} an offset that is not one: {why}"
    return None


def read_clocks(path: Path) -> dict:
    """The parsed JSON of a clocks.json, unchecked; StoreError when it is not JSON."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise _clocks_error(path, f"cannot be read ({type(e).__name__})") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise _clocks_error(path, f"is not JSON ({type(e).__name__})") from None


def _clocks_error(path: Path, what: str) -> StoreError:
    return StoreError(
        f"clocks.json {what}",
        file=str(path),
        help="`forensics verify --repair` keeps its valid entries (the file moves to "
        "clocks.json.broken); or fix it by hand, or delete it and `forensics clocks set HOST SECONDS`",
    )


def _to_arrow(table: str, df: pl.DataFrame) -> pa.Table:
    """Arrow table in the schema's shape; list<struct<key,value>> columns become Parquet MAPs."""
    import polars as pl
    import pyarrow as pa

    from forensics.core import schema

    # Strings stay arrow string views, polars' own layout: no copy into offsets and data buffers
    # on polars' pool thread. The Parquet files hold the same BYTE_ARRAY columns either way.
    at = schema.conform(table, df).to_arrow(compat_level=pl.CompatLevel.newest())
    for i, name in enumerate(at.column_names):
        col = at.column(i)
        t = col.type
        if pa.types.is_large_list(t) or pa.types.is_list(t):
            vt = t.value_type
            if pa.types.is_struct(vt) and [f.name for f in vt] == ["key", "value"]:
                arr = col.combine_chunks().cast(pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())])))
                flat = arr.flatten()
                m = pa.MapArray.from_arrays(
                    arr.offsets, flat.field("key"), flat.field("value").cast(pa.string()), mask=arr.is_null()
                )
                at = at.set_column(i, name, m)
        elif name in _PER_INPUT and _is_text(t):
            at = at.set_column(i, name, _one_value_as_dictionary(col))
    return at


def _is_text(t: "pa.DataType") -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


# Columns a parser fills with one value per input (server logs: the host, role and file).
_PER_INPUT = ("host", "role", "source_file")


def _one_value_as_dictionary(col: "pa.ChunkedArray") -> "pa.ChunkedArray | pa.DictionaryArray":
    """`col` as a dictionary array when it holds one value throughout: the Parquet writer then
    skips hashing every row; DuckDB reads the same."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(col) == 0 or col.null_count or not pc.all(pc.equal(col, col[0])).as_py():
        return col
    return pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(len(col), dtype=np.int32)), pa.array([col[0].as_py()], pa.string())
    )


def _encodings(at: "pa.Table") -> dict:
    """Dictionaries only for strings that repeat (kind, host, path...), statistics only where a
    reader prunes with them (times, numbers, those strings): a dictionary tried on messages or
    line numbers and min/max of every message cost a large share of the write for nothing.

    Integers and times are delta-encoded: line numbers, times and counters move by small steps, so
    the files are smaller, and both the write and DuckDB's scan of them faster, than plain."""
    import pyarrow as pa
    import pyarrow.compute as pc

    repeats = []
    for name, col in zip(at.column_names, at.columns):
        if pa.types.is_dictionary(col.type):
            repeats.append(name)
        elif _is_text(col.type):
            head = col.slice(0, 2000).cast(pa.string())  # count_distinct takes no string views
            if head.null_count == len(head) or pc.count_distinct(head).as_py() <= len(head) // 20:
                repeats.append(name)
    stats = [
        n
        for n, c in zip(at.column_names, at.columns)
        if n in repeats or not (_is_text(c.type) or pa.types.is_map(c.type) or pa.types.is_list(c.type))
    ]
    delta = {
        n: "DELTA_BINARY_PACKED"
        for n, c in zip(at.column_names, at.columns)
        if n not in repeats and (pa.types.is_integer(c.type) or pa.types.is_temporal(c.type))
    }
    return {"use_dictionary": repeats, "write_statistics": stats, "column_encoding": delta}


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
        data = read_clocks(self.clocks_file)
        why = clocks_problem(data)
        if why:
            raise _clocks_error(self.clocks_file, why)
        return {h: float(v) for h, v in data.items()}

    def set_clock(self, host: str, seconds: float) -> None:
        why = offset_problem(seconds)
        if why:
            raise UsageError(
                f"clock offset for {host}: {why}",
                help=f"an offset is a finite number of seconds within ±{MAX_OFFSET_S:g}; a clock off by "
                "more has the wrong date: ingest with --date or --tz",
            )
        c = self.clocks()
        c[host] = float(seconds)
        p = self.root / "clocks.json"
        tmp = p.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(c, indent=1, sort_keys=True))
        os.replace(tmp, p)

    def unset_clock(self, host: str) -> None:
        c = self.clocks()
        c.pop(host, None)
        p = self.root / "clocks.json"
        tmp = p.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(c, indent=1, sort_keys=True))
        os.replace(tmp, p)


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
        n = self.parts.get(table, 0)
        self.parts[table] = n + 1
        self.rows[table] = self.rows.get(table, 0) + df.height
        write_part(self.dir, table, n, df)

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


def write_part(folder, table: str, n: int, df: pl.DataFrame) -> None:
    """Part `n` of a table of the input being written into `folder` (an `InputWriter`'s, from any
    process: parts are read in the order of `n`)."""
    if df.height == 0:
        return
    import pyarrow.parquet as pq

    at = _to_arrow(table, df)
    # snappy, not zstd: zstd halves the store but makes the ingest's write much slower (a
    # context per column chunk), and the store is scratch space on the laptop
    pq.write_table(at, Path(folder) / f"{table}-{n:05d}.parquet", compression="snappy", **_encodings(at))
