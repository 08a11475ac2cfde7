"""Time the reply detectors per 1,000 replies, beside a reference pass over the same texts.

    python bench/detectors.py [--runs 7]

The replies are the hand-written hard negatives and positives of tests/replies/ plus the ordinary
session turns the hard-negative test puts around them, repeated to 1,000 and assessed 50 per
session, as verdicts.ensure does. The reference is one regex word count over the same texts in
the same run, so a noisy machine moves both figures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from forensics.analysis import detectors as d  # noqa: E402
from tests.test_hard_negatives import NEGATIVES, POSITIVES, _baseline  # noqa: E402

WORD = re.compile(r"\w+")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    turns = [c.turn for c in NEGATIVES + POSITIVES] + _baseline()
    batch = (turns * (1000 // len(turns) + 1))[:1000]
    det, ref = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        for i in range(0, 1000, 50):
            d.assess_session(batch[i : i + 50])
        det.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for t in batch:
            WORD.findall(t.content or "")
        ref.append(time.perf_counter() - t0)
    md, mr = statistics.median(det), statistics.median(ref)
    chars = sum(len(t.content or "") for t in batch)
    print(
        f"detectors: {md * 1000:.0f} ms per 1,000 replies ({chars / 1000:.0f} chars each on average), "
        f"median of {args.runs}"
    )
    print(f"reference (regex word count, same texts): {mr * 1000:.1f} ms; ratio {md / mr:.0f}x")


if __name__ == "__main__":
    main()
