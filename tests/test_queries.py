"""Every named query: a complete header, checked against what DuckDB returns, and a golden output."""

import re

import pytest

from forensics.catalog import named as queries
from tests.goldens import GOLDEN, query_snapshot

ALL = sorted(queries.all_queries())
INTERNAL = sorted(queries.internal_queries())


def _query(name):
    return queries.internal(name) if name.startswith("_") else queries.get(name)


@pytest.mark.parametrize("name", ALL + INTERNAL)
def test_header_is_complete(name):
    q = _query(name)
    assert q.description, f"queries/{name}.sql: add `-- description: <one line>`"
    assert q.inputs, f"queries/{name}.sql: add `-- inputs: <tables it reads>`"
    assert q.columns, f"queries/{name}.sql: add `-- columns:` with one `--   <column>: <meaning>` line each"
    for col, doc in q.columns.items():
        assert doc, f"queries/{name}.sql: column {col} needs a one-line description"
    used = set(re.findall(r"\$(\w+)", q.sql))
    declared = {p.name for p in q.params}
    assert used == declared, f"queries/{name}.sql: parameters used {sorted(used)} but declared {sorted(declared)}"
    for p in q.params:
        assert p.doc, f"queries/{name}.sql: parameter {p.name} needs a description"
    if not name.startswith("_"):  # internal counts are summed by their caller: their golden sorts them
        assert "ORDER BY" in q.sql.upper(), f"queries/{name}.sql: reports need an ORDER BY to be deterministic"
    else:
        assert q.over is None or q.over in ALL, f"queries/{name}.sql: `-- over:` names no query"


@pytest.mark.parametrize("name", ALL + INTERNAL)
def test_golden_and_declared_columns(name, sample_store):
    got = query_snapshot(sample_store, name)
    assert got["columns"] == list(_query(name).columns), f"{name}: declared columns differ from DuckDB's"
    expected = (GOLDEN / "queries" / f"{name}.csv").read_text()
    assert got["csv"] == expected, f"{name} differs from its golden: run `make goldens` and read the diff"


def test_parameters_are_bound_not_pasted(sample_store):
    from forensics.core.errors import UsageError
    from forensics.store import Store

    hostile = "x'; DROP VIEW batches; --"
    df = queries.run(Store(sample_store), "timeline", {"bucket_s": "60", "host": hostile})
    assert df["transfers"].sum() == 0  # the hostile host matched nothing, and nothing broke
    with pytest.raises(UsageError):
        queries.run(Store(sample_store), "timeline", {"nope": "1"})
    with pytest.raises(UsageError):
        queries.run(Store(sample_store), "timeline", {"bucket_s": "ten"})
