"""The tests `make check` leaves out by measurement: tests/slow.txt, one pytest node id a line.

A test marked `slow` in its file is left out by its nature (a large input, a subprocess per case);
the ones listed in slow.txt are left out by their time: each took half a second or more of call
time when the fast tier last ran here. tests/conftest.py reads the list and marks them slow at collection.

    python -m tests.slowlist    # run the fast tier with --durations=0 and write slow.txt anew

Read `git diff tests/slow.txt` before committing: a test that grew slow shows up there.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = HERE / "slow.txt"
THRESHOLD_S = 0.5
_DURATION = re.compile(r"^([0-9.]+)s call\s+(\S+)")


def main() -> int:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(HERE),
            "-n",
            "auto",
            "--dist",
            "loadscope",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow and not browser and not real_data",
            "--durations=0",
            "-o",
            "addopts=--strict-markers",
        ],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "FORENSICS_NO_SLOW_LIST": "1"},
    )
    if res.returncode != 0:
        sys.stdout.write(res.stdout[-4000:])
        return res.returncode
    slow = sorted(
        {
            m.group(2)
            for line in res.stdout.splitlines()
            if (m := _DURATION.match(line)) and float(m.group(1)) >= THRESHOLD_S
        }
    )
    LIST.write_text(
        f"# measured by `python -m tests.slowlist` (call time >= {THRESHOLD_S} s): make check leaves these out\n"
        + "".join(f"{s}\n" for s in slow),
        encoding="utf-8",
    )
    print(f"wrote {LIST.relative_to(HERE.parent)}: {len(slow)} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
