"""The analysis layer's connection: the store's catalog, its verdicts computed first."""

from __future__ import annotations

import duckdb

from forensics import catalog
from forensics.analysis import verdicts
from forensics.store import Store


def connect(
    store: Store, offsets: dict[str, float] | None = None, materialize: bool = False
) -> duckdb.DuckDBPyConnection:
    """`forensics.catalog.connect` after `verdicts.ensure`, so `turns` and `replies` carry current verdicts."""
    verdicts.ensure(store)
    return catalog.connect(store, offsets, materialize)
