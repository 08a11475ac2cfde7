"""The fleet benchmark: a fleet's dump ingested by the local engine and by Ray on a local cluster.

    python bench/fleet.py [--hosts 64] [--per-host 64M] [--runs 3] [--engines local,ray] [-j N]
    python bench/fleet.py --hosts 8 --per-host 8M --runs 3      # a 2-core machine

The dump is one folder per host (`node-NNN/`), each a PD server log (prefill and decode hosts in
turn; three quarters of --per-host) and a KV transfer trace (the rest), every host its own seed,
so no two inputs share content. It is generated once under --data and reused.

Each run is a process of its own (`--one`), on a fresh store: it starts the engine and its
workers' imports, timed apart (for Ray, the local cluster of -j CPUs: a fleet's cluster is up
before its ingest; for the local engine, its fork server, which the ingest's pool then forks
from), then times the ingest itself (`pipeline.run`: every input parsed, written and committed) and the work after it
that the command line does (`after_ingest.finish`: clock offsets, verdicts, the derived views and
the summary), serial on the driver whatever the engine. The table gives medians of --runs, and
MB/s per CPU of the ingest: the dump's bytes over its wall time over -j. Results go to
bench/out/fleet.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gen  # noqa: E402
from run import parse_size  # noqa: E402

TRACE_SHARE = 0.25


def _host(d: str, h: int, per_host: int) -> None:
    host = os.path.join(d, f"node-{h:03d}")
    os.makedirs(host)
    role = "prefill" if h % 2 == 0 else "decode"
    gen.write_log(os.path.join(host, "sglang.log"), role, int(per_host * (1 - TRACE_SHARE)), 1000 + h)
    gen.write_trace(os.path.join(host, "kvtrace.jsonl"), int(per_host * TRACE_SHARE), 5000 + h)


def make_dump(data: str, hosts: int, per_host: int) -> str:
    """The fleet's dump under `data` (made once, a host per core at a time): its folder."""
    from concurrent.futures import ProcessPoolExecutor

    d = os.path.join(data, f"fleet-{hosts}x{per_host}")
    done = os.path.join(d, ".done")
    if os.path.exists(done):
        return d
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor() as ex:
        list(ex.map(_host, [d] * hosts, range(hosts), [per_host] * hosts))
    open(done, "w").close()
    print(f"generated {hosts} hosts x {per_host / 1e6:.0f} MB in {time.perf_counter() - t0:.0f} s -> {d}", flush=True)
    return d


def dump_bytes(d: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs if not f.startswith("."))


def _warm() -> None:
    """A worker's first task: the imports of the parsers, as every task needs them."""
    import forensics.ingest.parse  # noqa: F401


def one(dump: str, store: str, engine: str, jobs: int, after: bool = True) -> dict:
    """One run in this process: the engine started, the ingest, the command line's work after it."""
    from forensics.analysis import after_ingest
    from forensics.ingest import pipeline
    from forensics.store import Store

    out = {"engine": engine, "jobs": jobs}
    started = None
    t0 = time.perf_counter()
    if engine == "ray":
        from forensics.ingest.rayengine import RayEngine

        started = RayEngine(jobs)  # the ingest borrows the running cluster
        ready = [started.submit(_warm) for _ in range(jobs)]
    else:
        from forensics.ingest.pool import LocalEngine

        # the fork server outlives this pool: the ingest's own pool forks from it, warm
        warm = LocalEngine(jobs)
        ready = [warm.submit(_warm) for _ in range(jobs)]
    for f in ready:
        f.result()
    if engine != "ray":
        warm.shutdown()
    out["start_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = pipeline.run([dump], store, pipeline.Options(jobs=jobs, engine=engine))
    out["ingest_s"] = time.perf_counter() - t0
    out["statuses"] = sorted({r.status for r in res})
    out["inputs"] = len(res)
    if started is not None:
        started.shutdown()
    t0 = time.perf_counter()
    if after:
        after_ingest.finish(Store(store), res, {}, None, None)
    out["after_s"] = time.perf_counter() - t0 if after else float("nan")
    return out


def run_one(dump: str, engine: str, jobs: int, store: str, after: bool) -> dict:
    shutil.rmtree(store, ignore_errors=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--one", dump, "--engine-one", engine, "-j", str(jobs)]
    cmd += [] if after else ["--skip-after"]
    # from /tmp: the workers import the installed package, whatever the working directory holds
    r = subprocess.run(cmd + ["--store", store], capture_output=True, text=True, cwd="/tmp")
    if r.returncode:
        sys.exit(f"error: a {engine} run failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _sha256_rate() -> float:
    """MB/s of hashlib's sha256 on one core: the driver hashes every large input it reads."""
    import hashlib

    b = os.urandom(64 << 20)
    t0 = time.perf_counter()
    for _ in range(4):
        hashlib.sha256(b).digest()
    return 4 * len(b) / 1e6 / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--per-host", default="64M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("-j", "--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--data", default="/tmp/fleet-data")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--skip-after", action="store_true", help="time the ingest alone, not the work after it")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--engine-one", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.store, a.engine_one, a.jobs, not a.skip_after)))
        return
    dump = make_dump(a.data, a.hosts, parse_size(a.per_host))
    nbytes = dump_bytes(dump)
    store = os.path.join(a.data, "store")
    rows: dict[str, list[dict]] = {e: [] for e in a.engines.split(",")}
    for i in range(a.runs):  # the engines interleaved: the machine's load falls on both alike
        for e in rows:
            r = run_one(dump, e, a.jobs, store, not a.skip_after)
            rows[e].append(r)
            print(
                f"run {i + 1} {e}: start {r['start_s']:.1f} s, ingest {r['ingest_s']:.1f} s, after {r['after_s']:.1f} s",
                flush=True,
            )
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    result_sha = _sha256_rate()
    result = {
        "hosts": a.hosts,
        "per_host": parse_size(a.per_host),
        "bytes": nbytes,
        "jobs": a.jobs,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "load_after": load,
        "sha256_mb_s": result_sha,
        "runs": rows,
    }
    lines = [
        f"{a.hosts} hosts x {parse_size(a.per_host) / 1e6:.0f} MB ({nbytes / 1e6:.0f} MB, {2 * a.hosts} inputs), "
        f"-j {a.jobs} on {os.cpu_count()} CPUs, Python {result['python']}, medians of {a.runs} (load after: {' '.join(load)}); "
        f"one core's sha256 {result_sha:.0f} MB/s (what the driver reads a large input at)",
        "",
        "| engine | engine start (s) | ingest (s) | MB/s | MB/s per CPU | after the ingest (s) |",
        "|---|---|---|---|---|---|",
    ]
    for e, rs in rows.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("start_s", "ingest_s", "after_s")}
        mbs = nbytes / 1e6 / med["ingest_s"]
        result[e] = {**med, "mb_s": mbs, "mb_s_per_cpu": mbs / a.jobs}
        lines.append(
            f"| {e} | {med['start_s']:.1f} | {med['ingest_s']:.1f} | {mbs:.1f} | {mbs / a.jobs:.1f} | {med['after_s']:.1f} |"
        )
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "fleet.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
