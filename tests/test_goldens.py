"""Golden tests per line kind and era: sample_logs/eras/* against tests/golden/eras/*.csv."""

import pytest

from tests.goldens import CASES, GOLDEN, TABLES, snapshot


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case):
    got = snapshot(case)
    for table, _ in TABLES:
        expected = (GOLDEN / case / f"{table}.csv").read_text()
        assert got[table] == expected, f"{case}/{table} differs from its golden: run `make goldens` and read the diff"
