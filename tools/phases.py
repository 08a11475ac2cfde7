"""`forensics ingest` that writes down when it enters each phase, for the interrupt cases and bench.

    python -m tools.phases MARKS [--hold PHASE=SECONDS ...] -- ingest DUMP --store STORE ...

Runs the real command line in this process and appends `<phase> <CLOCK_MONOTONIC seconds>` to
MARKS as each phase starts, so that a caller can send a signal at a moment of the phase it wants:

  reading      inputs are found, sniffed and hashed (no part written yet)
  parsing      a parser reads an input (its parts are written into the store's .tmp)
  committing   an input's commit: its renames, under the commit gate
  deriving     every input committed: the verdicts, then the derived views
  summarising  the derived views computed: the summary's queries and the clock estimates

`--hold PHASE=SECONDS` sleeps that long where the phase starts (for committing: inside the gate,
before the rename), so that a signal lands in a phase that would otherwise pass in microseconds.
"""

from __future__ import annotations

import functools
import os
import sys
import time

PHASES = ("reading", "parsing", "committing", "deriving", "summarising")


def _marker(path: str, holds: dict[str, float]):
    seen: set[str] = set()

    def mark(phase: str) -> None:
        if phase not in seen:
            seen.add(phase)
            with open(path, "a") as fh:
                fh.write(f"{phase} {time.monotonic():.6f}\n")
        if phase in holds:
            time.sleep(holds.pop(phase))

    return mark


def _patch(mark) -> None:
    from forensics import catalog
    from forensics.analysis import verdicts
    from forensics.ingest import parse, pipeline
    from forensics.store import InputWriter

    def before(phase, fn):
        @functools.wraps(fn)
        def wrapped(*a, **kw):
            mark(phase)
            return fn(*a, **kw)

        return wrapped

    pipeline._find_and_ingest = before("reading", pipeline._find_and_ingest)
    parse.Input.read = before("parsing", parse.Input.read)
    InputWriter.commit = before("committing", InputWriter.commit)
    InputWriter.replace = before("committing", InputWriter.replace)
    verdicts.ensure = before("deriving", verdicts.ensure)  # the first step after the last commit
    connect = catalog.connect

    # the summary's session opens the one connection that computes the derived views
    def connected(*a, **kw):
        con = connect(*a, **kw)
        mark("summarising")
        return con

    catalog.connect = connected


def main(argv: list[str]) -> None:
    if "--" not in argv or not argv:
        sys.exit(__doc__)
    marks, rest = argv[0], argv[argv.index("--") + 1 :]
    holds = {}
    opts = argv[1 : argv.index("--")]
    for name, value in zip(opts[::2], opts[1::2]):
        if name != "--hold":
            sys.exit(f"unknown option {name}")
        phase, _, seconds = value.partition("=")
        holds[phase] = float(seconds)
    from forensics.cli import main as cli

    _patch(_marker(marks, holds))
    sys.argv = ["forensics", *rest]
    cli()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main(sys.argv[1:])
