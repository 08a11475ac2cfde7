"""Digest every table and view of stores built from the same inputs, to show a refactor changed nothing.

    python -m tools.digest OUT.json [--keep DIR]

Ingests each input set (the sample logs, the test corpus and, when present, ../shared/real_logs and
../shared/real_transcripts) on the native path and on the polars path (FORENSICS_NATIVE=0), then
writes, per store and table, the row count and a hash of the rows in a canonical order. Compare
two runs with `diff` or `python -m tools.digest --compare A.json B.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
INPUTS = {
    "sample_logs": [ROOT / "sample_logs"],
    "corpus": [ROOT / "tests" / "corpus"],
    "real_logs": [SHARED / "real_logs"],
    "real_transcripts": [SHARED / "real_transcripts"],
}

_DIGEST = """
import hashlib, json, sys
try:  # one session per command: its connection has the verdicts made sure
    from forensics.analysis.session import Session

    def connect(store):
        return Session.open(store, materialize=False).con
except ImportError:
    try:
        from forensics.analysis.db import connect
    except ImportError:  # before the analysis step existed
        from forensics.catalog import connect
try:
    from forensics.core import schema
    from forensics.store import Store
except ImportError:  # before the store layer, or before the layers
    try:
        from forensics.core import schema
        from forensics.ingest.store import Store
    except ImportError:
        from forensics import schema
        from forensics.store import Store
try:  # the derived views, documented by their SQL headers
    from forensics.catalog import model
    TABLES = model.tables()
except ImportError:  # before they were
    TABLES = schema.TABLES
TABLES = globals().get("ONLY") or TABLES  # store_digest's choice
store = Store(sys.argv[1])
con = connect(store)
out = {}
for name in sorted(TABLES):
    # the clock, and the part files' names and sizes (how the rows were written, not what they say)
    cols = [c for c in con.sql(f'SELECT * FROM "{name}"').columns if c not in ("ingested_at", "data_files")]
    sel = ", ".join(f'"{c}"' for c in cols)
    rows = con.sql(f'SELECT {sel} FROM "{name}" ORDER BY ALL').fetchall()
    h = hashlib.sha256(json.dumps(cols).encode())
    for r in rows:
        h.update(repr(r).encode())
    out[name] = {"rows": len(rows), "sha": h.hexdigest()[:16]}
print(json.dumps(out))
"""


def store_digest(store: str | os.PathLike, tables=None) -> dict:
    """Every table and view of one store (or the `tables` named), by row count and hash (`_DIGEST`),
    in this process: a test's stores are read with the package it imported."""
    import contextlib
    import io

    out, argv = io.StringIO(), sys.argv
    sys.argv = [argv[0], str(store)]
    try:
        with contextlib.redirect_stdout(out):
            exec(_DIGEST, {"__name__": "tools.digest._DIGEST", "ONLY": tables})
    finally:
        sys.argv = argv
    return json.loads(out.getvalue().strip().splitlines()[-1])


def digest(keep: Path | None) -> dict:
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = keep or Path(tmp)
        for label, paths in INPUTS.items():
            paths = [p for p in paths if p.exists()]
            if not paths:
                continue
            for native in ("1", "0"):
                store = base / f"{label}-native{native}"
                env = {**os.environ, "FORENSICS_NATIVE": native}
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "forensics.cli",
                        "ingest",
                        *(os.path.relpath(p, ROOT) for p in paths),
                        "--store",
                        str(store),
                        "-j",
                        "1",
                    ],
                    env=env,
                    capture_output=True,
                    cwd=ROOT,
                )
                out = subprocess.run(
                    [sys.executable, "-c", _DIGEST, str(store)],
                    env=env,
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    check=True,
                )
                result[f"{label}/native={native}"] = json.loads(out.stdout)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--keep", type=Path, help="keep the stores in this folder")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    a = ap.parse_args()
    if a.compare:
        x, y = (json.loads(Path(p).read_text()) for p in a.compare)
        bad = [
            (s, t, x.get(s, {}).get(t), y.get(s, {}).get(t))
            for s in sorted(set(x) | set(y))
            for t in sorted(set(x.get(s, {})) | set(y.get(s, {})))
            if x.get(s, {}).get(t) != y.get(s, {}).get(t)
        ]
        for row in bad:
            print(*row, sep="\t")
        print(f"{len(bad)} tables differ" if bad else "identical")
        sys.exit(1 if bad else 0)
    Path(a.out).write_text(json.dumps(digest(a.keep), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
