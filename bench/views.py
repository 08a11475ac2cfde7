"""What each derived view costs beside the whole ingest it follows, measured in the same run:

    python bench/views.py [--size 256M] [--runs 3] [--data DIR]

One generated decode log (bench/gen.py) ingested with one worker (`-j 1`, the whole ingest as the
user waits for it), then the derived views of that store computed again from nothing, each view's
`COPY` timed on its own, in build order, each reading the snapshots before it as ingest does.
Medians of --runs; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen  # noqa: E402


def _bytes(s: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * units[s[-1].upper()]) if s[-1].upper() in units else int(s)


def view_times(store: str) -> tuple[dict[str, float], float]:
    """Each derived view's COPY in seconds, and the whole connection that computed them."""
    from forensics import catalog
    from forensics.store import Store

    shutil.rmtree(os.path.join(store, "derived"), ignore_errors=True)
    times: dict[str, float] = {}
    copy = catalog._copy_view

    def timed(con, name, path, memory, query=None):
        t0 = time.perf_counter()
        copy(con, name, path, memory, query)
        times[name] = time.perf_counter() - t0

    catalog._copy_view = timed
    try:
        t0 = time.perf_counter()
        catalog.connect(Store(store), materialize=True).close()
        return times, time.perf_counter() - t0
    finally:
        catalog._copy_view = copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="256M", help="bytes of decode log (default 256M)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", default=os.path.join(HERE, "out", "views"), help="where the log and stores go")
    a = ap.parse_args()
    dump = os.path.join(a.data, "dump")
    log = os.path.join(dump, "decode-0", "sglang.log")
    if not os.path.exists(log) or os.path.getsize(log) < _bytes(a.size) * 0.9:
        os.makedirs(os.path.dirname(log), exist_ok=True)
        gen.write_log(log, "decode", _bytes(a.size), 7)
    ingests, per_view, connects = [], {}, []
    for _ in range(a.runs):
        store = os.path.join(a.data, "store")
        shutil.rmtree(store, ignore_errors=True)
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "forensics.cli", "ingest", dump, "--store", store, "-j", "1"]
        subprocess.run(cmd, check=True, capture_output=True, cwd="/tmp")
        ingests.append(time.perf_counter() - t0)
        times, total = view_times(store)
        connects.append(total)
        for k, v in times.items():
            per_view.setdefault(k, []).append(v)
    whole = statistics.median(ingests)
    views = {k: statistics.median(v) for k, v in per_view.items()}
    print(f"decode log {os.path.getsize(log) / 1e6:.0f} MB, {a.runs} runs, medians")
    print(f"{'whole ingest (-j 1)':<28} {whole:8.3f} s")
    print(f"{'all derived views':<28} {sum(views.values()):8.3f} s  {100 * sum(views.values()) / whole:5.1f}%")
    for k, v in sorted(views.items(), key=lambda kv: -kv[1]):
        print(f"  {k:<26} {v:8.3f} s  {100 * v / whole:5.1f}%")
    print(f"{'the connection computing them':<28} {statistics.median(connects):8.3f} s")


if __name__ == "__main__":
    main()
