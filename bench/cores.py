"""The scaling table on a machine of many cores, beside `grep -c` of the same bytes measured in the
same run:

    python bench/cores.py [--cores 1,2,4,8,16] [--data DIR]

One generated 1 GiB decode log ingested whole under `taskset -c 0-(N-1)` for each N, then eight
256 MiB decode logs (one folder each) with `-j` the largest N. Each ingest runs from /tmp, so the
workers import the installed package whatever the working directory holds. The table goes to
stdout and to bench/out/cores.md (or $OUT/cores.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen  # noqa: E402


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, cwd="/tmp", env={**os.environ, "LC_ALL": "C"})
    if r.returncode not in (0, 1):  # grep -c exits 1 on no match
        sys.exit(f"error: {' '.join(cmd)} exited {r.returncode}: {r.stderr.decode()[-500:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", default="1,2,4,8,16")
    ap.add_argument("--data", default="/tmp/cores-data")
    ap.add_argument("--size", type=int, default=1 << 30)
    a = ap.parse_args()
    cores = [int(c) for c in a.cores.split(",") if int(c) <= os.cpu_count()]
    big = os.path.join(a.data, "decode-1g.log")
    eight = os.path.join(a.data, "eight")
    if not os.path.exists(big):
        os.makedirs(a.data, exist_ok=True)
        gen.write_log(big, "decode", a.size, 7)
        for i in range(8):
            os.makedirs(os.path.join(eight, f"decode-{i}"), exist_ok=True)
            gen.write_log(os.path.join(eight, f"decode-{i}", "sglang.log"), "decode", a.size // 4, 30 + i)
    nbytes = os.path.getsize(big)
    fx = [sys.executable, "-m", "forensics.cli", "ingest"]
    store = "/tmp/cores-store"
    grep = timed(["grep", "-c", "batch", big])
    lines = [
        f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; one {nbytes / 2**30:.1f} GiB decode log "
        f"(`grep -c` {grep:.2f} s in the same run)",
        "",
        "| cores (taskset) | whole ingest (s) | MB/s | × 1 core | × `grep -c` |",
        "|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    one = None
    for n in cores:
        shutil.rmtree(store, ignore_errors=True)
        w = timed(["taskset", "-c", f"0-{n - 1}", *fx, big, "--store", store])
        one = one or w
        lines.append(f"| {n} | {w:.2f} | {nbytes / w / 1e6:.0f} | {one / w:.2f} | {w / grep:.1f} |")
        print(lines[-1], flush=True)
    shutil.rmtree(store, ignore_errors=True)
    files = [os.path.join(eight, d, "sglang.log") for d in sorted(os.listdir(eight))]
    n = cores[-1]
    g8 = timed(["grep", "-c", "batch", *files])
    w8 = timed(["taskset", "-c", f"0-{n - 1}", *fx, eight, "--store", store, "-j", str(n)])
    total = sum(os.path.getsize(f) for f in files)
    lines += [
        "",
        f"eight {total / 8 / 2**20:.0f} MiB decode logs, `-j {n}` on {n} cores: {w8:.2f} s, "
        f"{total / w8 / 1e6:.0f} MB/s (target 1000 MB/s); `grep -c` {g8:.2f} s, ingest {w8 / g8:.1f}× it",
    ]
    print(lines[-1], flush=True)
    shutil.rmtree(store, ignore_errors=True)
    out = os.environ.get("OUT") or os.path.join(HERE, "out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "cores.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
