"""Ctrl-C in the middle of an input's commit: the commit ends whole, no other starts."""

from __future__ import annotations

from tests.attacks import Attack, attack


@attack
def sigint_while_committing(t: Attack) -> None:
    """SIGINT (to the ingest or its process group) while an input's folder is being renamed into the store (the
    commit held open a moment): that commit ends whole and is counted in the one line, no commit starts after
    it, exit 130, verify finds nothing wrong and no line is stored twice; the same ingest then completes with
    every input once."""
    dump, inputs = t.incident()
    line = t.stop_and_resume(dump, inputs, "committing", within=0.3, hold=0.3)
    assert "inputs committed" in line or "all " in line, line
    assert "0 of " not in line, f"the commit under way was cut: {line}"
