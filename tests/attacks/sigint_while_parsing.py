"""Ctrl-C while a parser reads a large log: the one line, the input being read not in the store."""

from __future__ import annotations

from tests.attacks import Attack, attack, good


@attack
def sigint_while_parsing(t: Attack) -> None:
    """SIGINT (to the ingest or its process group) at a drawn moment while a large server log is parsed in the
    ingest process beside the incident's logs: exit 130 within its one line naming what was not committed, the
    log being read has no row in any table, verify finds nothing wrong; the same ingest then completes with
    every input and every line once."""
    dump, inputs = t.incident()
    t.write("dump/decode-2/sglang.log", good(t.rng.randint(150_000, 200_000)))
    line = t.stop_and_resume(dump, inputs + 1, "parsing", within=1.0)
    assert "run the same ingest again" in line or "all " in line, line
