"""DuckDB over the store: every table a view of the same name, plus the derived views.

Base tables are read from Parquet as written (`raw_<table>`). The public view `<table>` applies the
explicit clock offsets of the store (clocks.json) to `ts`, so raw rows are never rewritten and
every query reads corrected time; `clock_offset_s` says how much each row was moved.
Derived views (forensics/views/*.sql) are created after the base views, in file-name order.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from importlib import resources
from pathlib import Path

import duckdb
import polars as pl

from forensics.core import schema
from forensics.ingest.store import Store

_DUCK_TYPES = {
    pl.Utf8: "VARCHAR", pl.Int64: "BIGINT", pl.Int32: "INTEGER", pl.Int16: "SMALLINT", pl.Int8: "TINYINT",
    pl.UInt64: "UBIGINT", pl.UInt32: "UINTEGER", pl.Float64: "DOUBLE", pl.Float32: "FLOAT",
    pl.Boolean: "BOOLEAN", pl.Date: "DATE",
}


def duck_type(dtype) -> str:
    if isinstance(dtype, pl.Datetime):
        return "TIMESTAMPTZ" if dtype.time_zone else "TIMESTAMP"
    if isinstance(dtype, pl.List):
        inner = dtype.inner
        if isinstance(inner, pl.Struct) and [f.name for f in inner.fields] == ["key", "value"]:
            return "MAP(VARCHAR, VARCHAR)"
        return f"{duck_type(inner)}[]"
    if isinstance(dtype, pl.Struct):
        return "STRUCT(" + ", ".join(f'"{f.name}" {duck_type(f.dtype)}' for f in dtype.fields) + ")"
    for k, v in _DUCK_TYPES.items():
        if dtype == k:
            return v
    raise TypeError(f"no DuckDB type for {dtype}")


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _empty_select(t: schema.Table) -> str:
    cols = ", ".join(f'CAST(NULL AS {duck_type(c.dtype)}) AS "{c.name}"' for c in t.columns)
    return f"SELECT {cols} WHERE false"


def connect(store: Store, offsets: dict[str, float] | None = None, materialize: bool = False
            ) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the store's tables and views.

    `offsets` overrides the store's clocks.json (host -> seconds the host's clock is ahead).
    Derived views already materialized for this exact store state are read from their cache;
    `materialize` computes and caches the missing ones (reports do, ad-hoc SQL does not).
    """
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    # a laptop runs this after an incident: spill big joins to disk rather than eat all memory
    con.execute("SET memory_limit = '4GB'")
    if store.exists():
        con.execute(f"SET temp_directory = {_quote(str(store.root / '.tmp' / 'duckdb'))}")
    offsets = store.clocks() if offsets is None else offsets
    con.execute("CREATE TABLE clock_offsets (host VARCHAR PRIMARY KEY, offset_s DOUBLE)")
    if offsets:
        con.executemany("INSERT INTO clock_offsets VALUES (?, ?)", sorted(offsets.items()))
    for t in schema.TABLES.values():
        if t.view:
            continue
        files = store.table_files(t.name)
        if files:
            src = f"SELECT * FROM read_parquet([{', '.join(_quote(f) for f in files)}], union_by_name = true)"
        else:
            src = _empty_select(t)
        con.execute(f'CREATE VIEW "raw_{t.name}" AS {src}')
        names = {c.name for c in t.columns}
        if {"ts", "host"} <= names:
            con.execute(
                f'CREATE VIEW "{t.name}" AS SELECT r.* REPLACE ('
                "r.ts - to_microseconds(CAST(round(COALESCE(o.offset_s, 0) * 1e6) AS BIGINT)) AS ts), "
                "COALESCE(o.offset_s, 0) AS clock_offset_s "
                f'FROM "raw_{t.name}" r LEFT JOIN clock_offsets o USING (host)'
            )
        else:
            con.execute(f'CREATE VIEW "{t.name}" AS SELECT * FROM "raw_{t.name}"')
    for name, sql in derived_views():
        try:
            con.execute(sql)
        except duckdb.Error as e:
            from forensics.core.errors import ForensicsError

            raise ForensicsError(f"derived view {name} does not build: {str(e).splitlines()[0]}",
                                 file=f"forensics/views/{name}",
                                 help="a bug in the toolkit, not in your data: report it with this line") from None
    _use_cache(con, store, offsets, materialize)
    return con


_VIEW_NAME = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)", re.I)


def _cache_dir(store: Store, offsets: dict) -> Path:
    """A folder named after everything the derived views depend on: inputs, offsets and view SQL."""
    from forensics import __version__

    h = hashlib.sha256()
    h.update(__version__.encode())
    h.update(json.dumps(sorted(store.committed())).encode())
    h.update(json.dumps(sorted(offsets.items())).encode())
    for name, sql in derived_views():
        h.update(name.encode() + sql.encode())
    return store.root / "derived" / h.hexdigest()[:24]


def _use_cache(con, store: Store, offsets: dict, materialize: bool) -> None:
    """Swap the expensive derived views (transfers, rooms, replies, ...) for Parquet snapshots.

    The joins behind them take minutes on a large incident; their result only changes when an
    input, a clock offset or the view SQL does, and all three are in the cache folder's name.
    Views are done in file order, so each one is computed from its already cached inputs.
    """
    if not store.exists():
        return
    cache = _cache_dir(store, offsets)
    for _, sql in derived_views():
        for name in _VIEW_NAME.findall(sql):
            path = cache / f"{name}.parquet"
            if not path.exists():
                if not materialize:
                    return
                try:
                    cache.mkdir(parents=True, exist_ok=True)
                    tmp = cache / f".{name}.{os.getpid()}.parquet"
                    con.execute(f"COPY (SELECT * FROM \"{name}\") TO {_quote(str(tmp))} (FORMAT parquet)")
                    os.replace(tmp, path)
                except (OSError, duckdb.Error):
                    return  # a read-only store still answers, just without the cache
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT * FROM read_parquet({_quote(str(path))})')
    # snapshots of an older state of the store are never read again
    for old in (store.root / "derived").iterdir():
        if old != cache and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def derived_views() -> list[tuple[str, str]]:
    """(file name, SQL) of forensics/views/*.sql, in file-name order."""
    pkg = resources.files("forensics.catalog.views")
    return [(e.name, e.read_text()) for e in sorted(pkg.iterdir(), key=lambda p: p.name) if e.name.endswith(".sql")]
