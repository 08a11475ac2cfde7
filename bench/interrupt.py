"""How long `forensics ingest` takes to stop on SIGINT / SIGTERM, and what a grown file costs.

    python bench/interrupt.py               # both signals, both ways of running, median of 5
    python bench/interrupt.py --runs 3 --case inline_sigint
    python bench/interrupt.py --grown       # re-ingest of a grown log beside its first ingest
    python bench/interrupt.py --phases      # SIGINT at a drawn moment of each phase, median of 5

Cases (a dump generated in a temporary folder, deleted afterwards):
  inline_sigint / inline_sigterm   six 18 MB server logs, parsed in the ingest process itself
  pool_sigint / pool_sigterm       the same with --jobs 2: a pool of worker processes

Each run starts a fresh ingest, waits until it writes its first input, sends the signal and times
until the process has exited and every process of its session is gone (its workers too). Printed:
median and maximum stop latency, the exit codes seen, and whether the store stayed consistent
(files rows count distinct contents; no .tmp left).

--phases runs the ingest through tools/phases.py, which marks when each phase starts (reading,
parsing, committing, deriving, summarising), and sends SIGINT to the process group at a drawn
moment of the phase asked for (the commit held open 0.3 s so that the signal lands in it), on the
generated incident at --scale 3 beside a 120,000-line log and an archive of 150 small logs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# bench/ is not installed: its scripts find tools/ from the checkout
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tools import procs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = (
    "[2026-10-30 10:{m:02d}:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
)
CASES = {
    "inline_sigint": ((), signal.SIGINT),
    "inline_sigterm": ((), signal.SIGTERM),
    "pool_sigint": (("--jobs", "2"), signal.SIGINT),
    "pool_sigterm": (("--jobs", "2"), signal.SIGTERM),
}


def _log(lines: int, h: int, hosts: int, first: int = 0) -> str:
    return "".join(LINE.format(m=(i // 60) % 60, s=i % 60, n=i * hosts + h) for i in range(first, first + lines))


def _dump(root: str, hosts: int = 6, lines: int = 120_000) -> str:
    for h in range(hosts):
        os.makedirs(os.path.join(root, f"decode-{h}"))
        with open(os.path.join(root, f"decode-{h}", "sglang.log"), "w") as f:
            f.write(_log(lines, h, hosts))
    return root


def _consistent(store: str) -> bool:
    import duckdb

    from forensics.store import Store

    files = Store(store).table_files("files")
    tmp = os.path.join(store, ".tmp")
    if os.path.isdir(tmp) and os.listdir(tmp):
        return False
    if not files:
        return True
    n, d = (
        duckdb.connect()
        .execute("SELECT count(*), count(DISTINCT sha256) FROM read_parquet($f)", {"f": files})
        .fetchone()
    )
    return n == d


def run_case(py: str, dump: str, work: str, extra: tuple, sig: int) -> tuple[float, int, bool]:
    store = os.path.join(work, "store")
    shutil.rmtree(store, ignore_errors=True)
    proc = subprocess.Popen(
        [py, "-m", "forensics.cli", "ingest", dump, "--store", store, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    tmp = os.path.join(store, ".tmp")
    end = time.monotonic() + 300
    while time.monotonic() < end and proc.poll() is None:
        if os.path.isdir(tmp) and any(n.startswith("tmp") for n in os.listdir(tmp)):
            break
        time.sleep(0.02)
    time.sleep(0.3)  # into the parse, not at its first byte
    t0 = time.monotonic()
    os.kill(proc.pid, sig)
    proc.communicate(timeout=120)
    while procs.session(proc.pid) and time.monotonic() - t0 < 60:
        time.sleep(0.005)
    return time.monotonic() - t0, proc.returncode, _consistent(store)


def grown(py: str, work: str) -> None:
    """First ingest of a 120,000-line log, then of the same log grown by 1,000 lines."""
    d = os.path.join(work, "grown", "decode-0")
    os.makedirs(d)
    log = os.path.join(d, "sglang.log")
    with open(log, "w") as f:
        f.write(_log(120_000, 0, 1))
    store = os.path.join(work, "grown-store")
    for label, more in (("first ingest", 0), ("grown by 1,000 lines", 1000), ("unchanged", 0)):
        if more:
            with open(log, "a") as f:
                f.write(_log(more, 0, 1, first=120_000))
        t0 = time.monotonic()
        subprocess.run(
            [py, "-m", "forensics.cli", "ingest", os.path.dirname(d), "--store", store], check=True, capture_output=True
        )
        print(f"  {label:<22} {time.monotonic() - t0:6.2f} s")


# phase: (seconds into the phase the signal is drawn from, what tools.phases holds open)
PHASES = {
    "reading": (0.3, None),
    "parsing": (1.0, None),
    "committing": (0.3, 0.3),
    "deriving": (1.0, None),
    "summarising": (0.3, 0.3),
}


def _phase_dump(py: str, work: str) -> str:
    import io
    import tarfile

    dump = os.path.join(work, "phases")
    subprocess.run([py, "-m", "tools.samplegen", dump, "--scale", "3"], check=True, capture_output=True, cwd=ROOT)
    os.makedirs(os.path.join(dump, "decode-9"))
    with open(os.path.join(dump, "decode-9", "sglang.log"), "w") as f:
        f.write(_log(120_000, 9, 10))
    with tarfile.open(os.path.join(dump, "more.tar.gz"), "w:gz") as tf:
        for i in range(150):
            data = _log(2, i, 150, first=i).encode()
            info = tarfile.TarInfo(f"decode-{i % 3}/req-{i}.log")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return dump


def run_phase(py: str, dump: str, work: str, phase: str, rng) -> tuple[float, int, bool]:
    within, hold = PHASES[phase]
    store, marks = os.path.join(work, "store"), os.path.join(work, "marks")
    shutil.rmtree(store, ignore_errors=True)
    if os.path.exists(marks):
        os.unlink(marks)
    holds = ["--hold", f"{phase}={hold}"] if hold else []
    proc = subprocess.Popen(
        [py, "-m", "tools.phases", marks, *holds, "--", "ingest", dump, "--store", store, "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=ROOT,
    )
    at = None
    while at is None and proc.poll() is None:
        if os.path.exists(marks):
            with open(marks) as f:
                at = next((float(ln.split()[1]) for ln in f if ln.split()[0] == phase), None)
        time.sleep(0.005)
    if at is None:
        return float("nan"), proc.wait(), False
    time.sleep(max(0.0, at + rng.uniform(0, within) - time.monotonic()))
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=120)
    while procs.session(proc.pid) and time.monotonic() - t0 < 60:
        time.sleep(0.005)
    return time.monotonic() - t0, proc.returncode, _consistent(store)


def phases(py: str, work: str, runs: int) -> None:
    import random

    rng = random.Random(29)
    dump = _phase_dump(py, work)
    print(f"{'phase':<12} {'median s':>9} {'max s':>7}  exit codes  consistent")
    for phase in PHASES:
        got = [run_phase(py, dump, work, phase, rng) for _ in range(runs)]
        lat = [g[0] for g in got]
        print(
            f"{phase:<12} {statistics.median(lat):9.3f} {max(lat):7.3f}  {sorted({g[1] for g in got})!s:<10}  "
            f"{all(g[2] for g in got)}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--case", choices=sorted(CASES), action="append")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--grown", action="store_true", help="time a grown log's re-ingest instead")
    ap.add_argument("--phases", action="store_true", help="SIGINT in each phase of an ingest instead")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="forensics-interrupt-")
    try:
        if a.grown:
            grown(a.python, work)
            return
        if a.phases:
            phases(a.python, work, a.runs)
            return
        dump = _dump(os.path.join(work, "dump"))
        print(f"{'case':<16} {'median s':>9} {'max s':>7}  exit codes  consistent")
        for name in a.case or sorted(CASES):
            extra, sig = CASES[name]
            got = [run_case(a.python, dump, work, extra, sig) for _ in range(a.runs)]
            lat = [g[0] for g in got]
            print(
                f"{name:<16} {statistics.median(lat):9.3f} {max(lat):7.3f}  {sorted({g[1] for g in got})!s:<10}  "
                f"{all(g[2] for g in got)}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
