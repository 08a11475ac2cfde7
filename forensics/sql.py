"""Run SQL over a store. Values always travel as bound parameters, never inside the SQL text."""

from __future__ import annotations

import duckdb
import polars as pl

from forensics.catalog import connect
from forensics.errors import QueryError
from forensics.store import Store


def run_sql(store: Store, sql: str, params: dict | None = None, offsets: dict[str, float] | None = None
            ) -> pl.DataFrame:
    con = connect(store.require(), offsets)
    try:
        rel = con.sql(sql, params=params or None)
        if rel is None:  # a statement without a result
            return pl.DataFrame()
        return pl.from_arrow(rel.to_arrow_table())
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0]
        raise QueryError(first, text=sql.strip().splitlines()[0] if sql.strip() else "",
                         help="`forensics tables` lists the tables and their columns") from None
    finally:
        con.close()
