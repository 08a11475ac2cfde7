"""Runs the attack corpus (tests/attacks/): one test per hostile or damaged case, named after what it breaks.

Each case's docstring is its expected outcome; tests/attacks/__init__.py lists the invariants every case
holds besides it. FORENSICS_TEST_SEED=N replays a draw, FORENSICS_TEST_SEED=random draws a fresh one.
"""

from __future__ import annotations

import pytest

# the cases' own asserts explain themselves as a test's would
pytest.register_assert_rewrite("tests.attacks")

from tests import attacks  # noqa: E402

CASES = attacks.discover()


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
@pytest.mark.slow
def test_attack(case, tmp_path):
    t = attacks.Attack(case.name, tmp_path)
    try:
        case.fn(t)
    except AssertionError as e:
        raise AssertionError(f"attack {case.name} (FORENSICS_TEST_SEED={attacks.SEED}): {e}") from e
    finally:
        t.close()
    assert t.runs, f"attack {case.name} ran no command"


def test_every_case_states_its_outcome():
    assert len(CASES) >= 20
    for case in CASES.values():
        assert len(case.outcome.split()) >= 12, f"{case.name}: say what a user needs to happen"
