"""The README's console session is what the demo prints: each `$ forensics ...` line of its first
`console` block is run in order on a fresh store (in a 100-column terminal), and the lines under it
must be lines of that command's output, in order; `...` stands for lines left out.

`python -m tests.test_readme` prints the whole output of every command, to choose the lines from.
"""

from __future__ import annotations

import re
import shlex
import sys

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
STORE = "/tmp/inc"  # the store the session names; each run puts it in a folder of its own
WIDTH = "100"


def session() -> list[tuple[list[str], list[str]]]:
    """(argv, expected lines) of each command of the README's first console block."""
    block = re.search(r"```console\n(.*?)```", README.read_text(encoding="utf-8"), re.S).group(1)
    out: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            argv = shlex.split(line[2:])
            assert argv[0] == "forensics", line
            out.append((argv[1:], []))
        else:
            out[-1][1].append(line)
    return out


def run_session(store) -> list[tuple[list[str], str]]:
    """Every command of the session run on `store`, with its output (stdout then stderr), the store named STORE."""
    import os

    from click.testing import CliRunner

    from forensics.cli import main
    from forensics.reports import render

    done = []
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for argv, _ in session():
            argv = [str(store) if a == STORE else a for a in argv]
            r = CliRunner(env={"COLUMNS": WIDTH, "TZ": "UTC"}).invoke(main, argv)
            render.TABLE.max_width, render.TABLE.wide = None, False
            assert r.exit_code == 0, (argv, r.output)
            done.append((argv, (r.stdout + r.stderr).replace(str(store), STORE)))
    finally:
        os.chdir(cwd)
    return done


def _in_order(expected: list[str], lines: list[str]) -> list[str]:
    """The expected lines not found, in order, among `lines` (`...` skips any number)."""
    missing, at = [], 0
    for want in expected:
        if want.strip() == "...":
            continue
        try:
            at = lines.index(want.rstrip(), at) + 1
        except ValueError:
            missing.append(want)
    return missing


@pytest.mark.slow
def test_the_readme_session_is_the_demos_real_output(tmp_path):
    store = tmp_path / "inc"
    for (argv, expected), (_, output) in zip(session(), run_session(store)):
        lines = [ln.rstrip() for ln in output.splitlines()]
        missing = _in_order(expected, lines)
        assert not missing, f"`forensics {' '.join(argv)}` printed:\n{output}\nnot these README lines:\n" + "\n".join(
            missing
        )


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for argv, output in run_session(f"{d}/inc"):
            sys.stdout.write(f"$ forensics {' '.join(argv)}\n{output}")
