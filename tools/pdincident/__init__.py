"""Generate a PD incident the way real deployments fail, written apart from the detectors.

    python -m tools.pdincident OUT_DIR --seed N [--minutes M]

Writes OUT_DIR as an operator leaves a dump (one folder per host, the servers' own file names, agent
transcripts beside them) and OUT_DIR/../truth.json, outside the dump, with what was planted. Every
line shape comes from docs/formats/ (SGLANG.md, NIXL.md, TRANSFER_TRACE.md, and TRANSCRIPTS.md,
"What real transcript files look like"), and the incident follows the shapes real incidents took
(docs/formats/SGLANG.md, "What a wedge looks like in the log"): a wedge that the health endpoint keeps logging
through, an agent with 80 sessions killed into an abort storm seen on three hosts (one of them with
an unset clock skew), and corrupted replies that rise with prefill load, beside clean replies that
quote logs, tracebacks, tables and code. The seed varies times, counts, hosts, the wedge kind and
the skew; nothing here reads the toolkit's detectors or views.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tools.pdincident.incident import Incident


def generate(out: Path, seed: int, minutes: float = 24.0) -> dict:
    inc = Incident(seed, minutes)
    inc.run()
    inc.write_logs()
    inc.write(out)
    truth = inc.make_truth()
    (out.parent / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False), encoding="utf-8")
    return truth


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tools.pdincident", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--minutes", type=float, default=24.0, help="length of the incident")
    a = ap.parse_args(argv)
    t = generate(a.out, a.seed, a.minutes)
    w, s = t["wedge"], t["abort_storm"]
    print(
        f"wrote {a.out} and {a.out.parent / 'truth.json'}: wedge {w['kind']} on {w['host']} rank {w['rank']} "
        f"{w['start']} .. {w['end']} ({len(w['stuck_rooms'])} stuck rooms); abort storm {s['start']} "
        f"({s['count']} requests); {len(t['replies']['corrupted'])} corrupted, "
        f"{len(t['replies']['hard_negatives'])} hard negatives, {len(t['replies']['errors'])} error replies"
    )


if __name__ == "__main__":
    main()
