"""Writing one table part, in the schema's shape and the store's encodings, one file per Hive partition.

Parts are written by whichever process parses (a worker or the ingest itself) into the folder of
the input being written, as `<table>/host=<h>/date=<d>/<NNNNN>.parquet` (forensics/store/hive.py);
`InputWriter` commits them (forensics/store/commits.py), each renamed to `part-<key>-NNNNN.parquet`
under the store's tables/.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from forensics.store import hive

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

# polars / pyarrow are imported where used: the CLI imports the store for DEFAULT_STORE, and
# `forensics --help` must not pay for loading them.


def _to_arrow(table: str, df: pl.DataFrame) -> pa.Table:
    """Arrow table of `df` in the table's shape (every stored column, the host included)."""
    from forensics.core import schema

    return _arrow_of(schema.conform(table, df))


def _arrow_of(df: pl.DataFrame) -> pa.Table:
    """Arrow table of `df` (already in the schema's shape); list<struct<key,value>> columns become Parquet MAPs."""
    import polars as pl
    import pyarrow as pa

    # Strings stay arrow string views, polars' own layout: no copy into offsets and data buffers
    # on polars' pool thread. The Parquet files hold the same BYTE_ARRAY columns either way.
    at = df.to_arrow(compat_level=pl.CompatLevel.newest())
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


# Columns a parser fills with one value per input (server logs: the role and file; the host is in the path).
_PER_INPUT = ("role", "source_file")


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


def write_part(folder, table: str, n: int, df: pl.DataFrame) -> list[str]:
    """Part `n` of a table of the input being written into `folder` (an `InputWriter`'s, from any
    process: parts are read in the order of `n`), one file per partition of its rows; the files'
    paths relative to `folder`."""
    if df.height == 0:
        return []
    from forensics.core import schema

    written = []
    for host, date, sub in hive.split(table, schema.conform(table, df)):
        rel = f"{hive.partition_dir(table, host, date)}/{n:05d}.parquet"
        write_file(Path(folder) / rel, sub)
        written.append(rel)
    return written


def write_file(path: Path, df: pl.DataFrame) -> None:
    """One Parquet file of `df` (the schema's shape, less the partition columns) in the store's encodings."""
    import pyarrow.parquet as pq

    at = _arrow_of(df)
    path.parent.mkdir(parents=True, exist_ok=True)
    # snappy, not zstd: zstd halves the store but makes the ingest's write much slower (a
    # context per column chunk), and the store is scratch space on the laptop
    pq.write_table(at, path, compression="snappy", **_encodings(at))
