"""Every parser's samples are a contract: each produces exactly the rows it promises."""

import pytest

from forensics.analysis import verdicts
from forensics.parsers import PARSERS
from tests.helpers import parse_text

CASES = [(p, s) for p in PARSERS for s in p.samples]


@pytest.mark.parametrize("parser,sample", CASES, ids=[f"{p.name}:{s.name}" for p, s in CASES])
def test_sample(parser, sample):
    tables, ctx = parse_text(parser, sample.text, name=f"{sample.name}.log")
    if "turns" in tables:  # samples promise the turns as the public view shows them, verdicts included
        tables["turns"] = verdicts.apply(tables["turns"])
    for table, rows in sample.expect.items():
        got = tables.get(table)
        assert got is not None and got.height == len(rows), f"{table}: {got}"
        for i, exp in enumerate(rows):
            row = got.row(i, named=True)
            for k, v in exp.items():
                assert row[k] == v, f"{sample.name} row {i} column {k}: {row[k]!r} != {v!r}"
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines


def test_every_parser_has_samples():
    for p in PARSERS:
        assert p.samples, f"{p.name} has no samples"
