"""Ctrl-C while the derived views are computed after an ingest: stopped at once, never exit 0."""

from __future__ import annotations

from tests.attacks import Attack, attack


@attack
def sigint_while_deriving(t: Attack) -> None:
    """SIGINT (to the ingest or its process group) at a drawn moment after every input is committed, while the
    verdicts and the derived views are computed (DuckDB queries in flight): exit 130 with one line saying all
    inputs are committed and the next report computes the views, no warning and no `forensics verify` help line,
    no half-written snapshot set is read, verify finds nothing wrong; `forensics summary` then computes them."""
    dump, inputs = t.incident()
    run, _ = t.interrupted_ingest(dump, phase="deriving", within=0.8)
    assert f"all {inputs} inputs are committed" in run.stderr, run.stderr[-1000:]
    t.check_stopped()
    summary = t.cli("summary", "--store", t.root / "store")
    assert f"{inputs} inputs ingested" in summary.output, summary.output[-2000:]
    t.check_stopped()
