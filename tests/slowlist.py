"""What the suite knows of its own times: tests/slow.txt and tests/weights.txt.

slow.txt, one pytest node id a line, is the tests `make check` leaves out by measurement. A test
marked `slow` in its file is left out by its nature (a large input, a subprocess per case); the ones
listed in slow.txt are left out by their time: each took a fifth of a second or more of call time when the
fast tier last ran here. tests/conftest.py reads the list and marks them slow at collection.

weights.txt, a module's seconds (setup, call and teardown of all its tests) and its path a line, is
the order the suite hands its modules to the xdist workers: the longest first, so that no worker is
left with a long module when the others are done. A module not listed goes first.

    python -m tests.slowlist            # run the fast tier with --durations=0 and write slow.txt anew
    python -m tests.slowlist --weights  # run the whole suite with --durations=0 and write weights.txt anew

Read `git diff tests/slow.txt` before committing: a test that grew slow shows up there.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = HERE / "slow.txt"
WEIGHTS = HERE / "weights.txt"
THRESHOLD_S = 0.2
_DURATION = re.compile(r"^([0-9.]+)s (call|setup|teardown)\s+(\S+)")


def _durations(markers: str | None) -> list[tuple[float, str, str]] | None:
    """(seconds, phase, node id) of every test phase of a run, None when the run failed."""
    args = [sys.executable, "-m", "pytest", str(HERE), "-n", "auto", "--dist", "loadscope", "-q"]
    args += ["-p", "no:cacheprovider", "--durations=0", "-o", "addopts=--strict-markers"]
    if markers:
        args += ["-m", markers]
    res = subprocess.run(
        args, cwd=HERE.parent, capture_output=True, text=True, env={**os.environ, "FORENSICS_NO_SLOW_LIST": "1"}
    )
    if res.returncode != 0:
        sys.stdout.write(res.stdout[-4000:])
        return None
    return [
        (float(m.group(1)), m.group(2), m.group(3)) for line in res.stdout.splitlines() if (m := _DURATION.match(line))
    ]


def weights_of(durations: list[tuple[float, str, str]]) -> dict[str, float]:
    """Seconds per test module."""
    out: collections.Counter = collections.Counter()
    for seconds, _, node in durations:
        out[node.split("::")[0]] += seconds
    return dict(out)


def write_weights(weights: dict[str, float], path: Path = WEIGHTS) -> None:
    path.write_text(
        "# measured by `python -m tests.slowlist --weights`: seconds of each module's tests, the longest handed out first\n"
        + "".join(f"{s:8.1f} {m}\n" for m, s in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))),
        encoding="utf-8",
    )


def main(argv: list[str]) -> int:
    if "--weights" in argv:
        durations = _durations(None)
        if durations is None:
            return 1
        write_weights(weights_of(durations))
        print(f"wrote {WEIGHTS.relative_to(HERE.parent)}")
        return 0
    durations = _durations("not slow and not browser and not real_data")
    if durations is None:
        return 1
    slow = sorted({node for seconds, phase, node in durations if phase == "call" and seconds >= THRESHOLD_S})
    LIST.write_text(
        f"# measured by `python -m tests.slowlist` (call time >= {THRESHOLD_S} s): make check leaves these out\n"
        + "".join(f"{s}\n" for s in slow),
        encoding="utf-8",
    )
    print(f"wrote {LIST.relative_to(HERE.parent)}: {len(slow)} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
