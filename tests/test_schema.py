"""schema.conform: exactly the stored columns, in order and type, and never rows that were not there."""

import polars as pl

from forensics.core import schema


def test_an_empty_batch_conforms_to_no_rows():
    for table in ("turns", "events", "unparsed"):
        out = schema.conform(table, pl.DataFrame())
        assert out.height == 0
        assert out.schema == pl.Schema({c.name: c.dtype for c in schema.TABLES[table].stored})


def test_a_batch_without_any_table_column_keeps_its_height():
    out = schema.conform("events", pl.DataFrame({"not_a_column": [1, 2, 3]}))
    assert out.height == 3 and out["kind"].null_count() == 3


def test_missing_columns_are_null_and_present_ones_cast():
    out = schema.conform("events", pl.DataFrame({"line_no": ["7", "8"], "kind": ["abort", None]}))
    assert out["line_no"].to_list() == [7, 8] and out["line_no"].dtype == pl.Int64
    assert out["kind"].to_list() == ["abort", None]
    assert out["host"].null_count() == 2
