"""Ingest's typed records: the files row is the schema's, the options and the scan are frozen."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from forensics.core import schema
from forensics.core.inputs import Context, Scan
from forensics.ingest.records import FilesRow, Options, ParseReport


def test_a_files_row_has_the_columns_of_the_files_table_and_no_other():
    at = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    df = schema.conform("files", FilesRow(path="a.log", status="ingested", piece=1, ingested_at=at).frame())
    assert df.columns == [c.name for c in schema.FILES.stored]
    row = df.row(0, named=True)
    assert (row["path"], row["status"], row["piece"], row["ingested_at"]) == ("a.log", "ingested", 1, at)
    assert row["sha256"] is None and row["lines"] is None  # not given: NULL, as a skipped file's counts
    with pytest.raises(TypeError):
        FilesRow(paht="a.log")  # a column the table lacks


def test_options_and_scan_are_frozen_and_reach_the_parsers_context():
    opts = Options(tz="Asia/Shanghai", date="2024", scan=Scan(block_bytes=300))
    assert (opts.date, opts.year) == (None, 2024)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.tz = "UTC"
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.scan.block_bytes = 1
    ctx = opts.context("h", None, None)
    assert (ctx.host, ctx.tz, ctx.year, ctx.scan.block_bytes) == ("h", "Asia/Shanghai", 2024, 300)


def test_a_parse_report_is_the_context_read_once():
    ctx = Context(host="given", role=None)
    ctx.account(parsed=3, continuation=2, unparsed=1)
    ctx.inferred_host, ctx.inferred_role = "seen", "decode"
    ctx.notes.append("a note")
    rep = ParseReport.of(ctx)
    ctx.notes.append("later")  # the report keeps what it read
    assert (rep.host, rep.role, rep.lines, rep.parsed, rep.continuation, rep.unparsed) == ("seen", "decode", 6, 3, 2, 1)
    assert rep.notes == ("a note",)
