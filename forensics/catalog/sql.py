"""Run SQL over a store. Values always travel as bound parameters, never inside the SQL text."""

from __future__ import annotations

import duckdb
import polars as pl

from forensics.catalog import connect
from forensics.core.errors import QueryError
from forensics.ingest.store import Store


def run_sql(store: Store, sql: str, params: dict | None = None, offsets: dict[str, float] | None = None,
            con: duckdb.DuckDBPyConnection | None = None, materialize: bool = False) -> pl.DataFrame:
    """Run `sql` with `params` bound; on a connection of its own unless `con` is given.

    `materialize` caches the derived views for the next run (see catalog.connect).
    """
    own = con is None
    if own:
        con = connect(store.require(), offsets, materialize=materialize)
    try:
        rel = con.sql(sql, params=params or None)
        if rel is None:  # a statement without a result
            return pl.DataFrame()
        return pl.from_arrow(rel.to_arrow_table())
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0]
        shown = next((ln for ln in sql.strip().splitlines() if ln.strip() and not ln.startswith("--")), "")
        raise QueryError(first, text=shown, help="`forensics tables` lists the tables and their columns") from None
    finally:
        if own:
            con.close()
