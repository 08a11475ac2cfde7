"""Ctrl-C while the store summary is built at the end of an ingest: stopped, never a caught error and exit 0."""

from __future__ import annotations

from tests.attacks import Attack, attack


@attack
def sigint_while_summarising(t: Attack) -> None:
    """SIGINT (to the ingest or its process group) at a drawn moment while the summary's queries run after the
    derived views were computed: exit 130 with one line saying all inputs are committed, not exit 0 with a
    caught error's help line, verify finds nothing wrong (the snapshot set published whole), and the same ingest
    run again adds nothing and exits 0."""
    dump, inputs = t.incident()
    line = t.stop_and_resume(dump, inputs, "summarising", within=0.3, hold=0.3)
    assert f"all {inputs} inputs are committed" in line, line
