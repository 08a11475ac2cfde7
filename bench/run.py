"""Benchmark `forensics` at incident scale: ingest throughput and memory, query latency.

    python bench/run.py                 # 1 GiB of logs, 3 runs each (a few minutes)
    python bench/run.py --size 200M     # quick
    python bench/run.py --size 4G --runs 1 --skip-store   # the flat-memory check

Every figure is the median of --runs whole-process runs (`forensics ingest` as a subprocess, a
fresh store each time), measured beside `grep -c` over the same input in the same run. Peak RSS is
the largest resident set of the ingest process or any of its workers (wait4 rusage), and the
largest sum over the process tree sampled every 20 ms (what the machine needs). Results go to
bench/out/results.json and bench/out/summary.txt.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out")
sys.path.insert(0, HERE)
sys.path.append(ROOT)  # tools/ from the checkout, after the installed package (see gen.py)

import gen  # noqa: E402

# several files of one PD dump: share of the total size, role, seed, CRI wrapper
DUMP = [
    ("decode-0.log", 0.35, "decode", 11, False),
    ("decode-1-k8s.log", 0.25, "decode", 12, True),
    ("prefill-0.log", 0.25, "prefill", 13, False),
    ("prefill-1.log", 0.15, "prefill", 14, False),
]
SINGLE = ("decode-big.log", "decode", 7, False)
# one file of short lines, a quarter of --size: the memory case (RSS follows lines, not bytes)
SHORT = ("short-lines.log", 0.25, 15)


def parse_size(s: str) -> int:
    s = s.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(float(s.rstrip("KMG")) * mult)


_CMD: list[str] = []


def forensics_cmd() -> list[str]:
    """The installed console script when it runs this checkout (what a user runs), else `python -m`."""
    if not _CMD:
        script = os.path.join(sysconfig.get_path("scripts"), "forensics")
        where = subprocess.run(
            [sys.executable, "-c", "import forensics; print(forensics.__file__)"],
            capture_output=True,
            text=True,
            cwd="/",
        ).stdout.strip()
        mine = os.path.realpath(where).startswith(os.path.realpath(ROOT) + os.sep)
        _CMD.extend([script] if os.path.exists(script) and mine else [sys.executable, "-m", "forensics.cli"])
    return _CMD


# -- data -------------------------------------------------------------------------------------


def make_data(size: int) -> dict:
    """Generate (or reuse) the single big file and the several-files dump; return the manifest."""
    d = os.path.join(OUT, "data", str(size))
    mpath = os.path.join(d, "manifest.json")
    h = hashlib.sha256()
    for src in (os.path.join(HERE, "gen.py"), os.path.join(ROOT, "tools", "loglines.py")):  # gen's line shapes
        with open(src, "rb") as f:
            h.update(f.read())
    version = h.hexdigest()[:12]
    if os.path.exists(mpath):
        m = json.load(open(mpath))
        if (
            m.get("gen") == version
            and "short" in m
            and all(os.path.exists(os.path.join(d, f["name"])) for f in m["single"] + m["dump"] + m["short"])
        ):
            return m
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "dump"))
    t0 = time.perf_counter()
    name, role, seed, cri = SINGLE
    b, n = gen.write_log(os.path.join(d, name), role, size, seed, cri)
    single = [{"name": name, "bytes": b, "lines": n}]
    dump = []
    for name, share, role, seed, cri in DUMP:
        rel = os.path.join("dump", name)
        b, n = gen.write_log(os.path.join(d, rel), role, int(size * share), seed, cri)
        dump.append({"name": rel, "bytes": b, "lines": n})
    name, share, seed = SHORT
    b, n = gen.write_short_lines(os.path.join(d, name), int(size * share), seed)
    short = [{"name": name, "bytes": b, "lines": n}]
    m = {
        "gen": version,
        "size": size,
        "dir": d,
        "single": single,
        "dump": dump,
        "short": short,
        "generated_s": round(time.perf_counter() - t0, 1),
    }
    json.dump(m, open(mpath, "w"), indent=1)
    print(f"generated {2.25 * size / 1e6:.0f} MB of logs in {m['generated_s']} s -> {d}", flush=True)
    return m


# -- measuring a process ------------------------------------------------------------------------


def _tree_rss_kib(root: int) -> int:
    """Sum of VmRSS over `root` and its descendants (from /proc)."""
    kids: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            kids.setdefault(int(st[1]), []).append(int(p))
            rss[int(p)] = int(st[21]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(kids.get(p, []))
    return total


def run_proc(cmd: list[str], cwd: str | None = None, env=None) -> dict:
    """Run `cmd`; wall time, exit code, peak RSS of any one process and of the whole tree, and the
    CPU of the whole tree (`_reap_tree`)."""
    out = open(os.path.join(OUT, "last_stdout.txt"), "wb")
    err = open(os.path.join(OUT, "last_stderr.txt"), "wb")
    _subreaper()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd, env=env)
    peak_tree = 0
    stop = threading.Event()

    def sample():
        nonlocal peak_tree
        while not stop.wait(0.02):
            peak_tree = max(peak_tree, _tree_rss_kib(p.pid))

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    _reap_tree()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out.close()
    err.close()
    return {
        "wall_s": wall,
        "rc": p.returncode,
        "peak_rss_mib": ru.ru_maxrss / 1024,
        "peak_tree_rss_mib": peak_tree / 1024,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }


def _subreaper() -> None:
    """Make this process the subreaper of the commands it runs (Linux prctl): the parse workers
    are children of multiprocessing's fork server, which the ingest process never waits for, so
    only here are they reaped and their CPU counted (RUSAGE_CHILDREN)."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _reap_tree(timeout: float = 60) -> None:
    """Wait for what the last command left running (its fork server and workers end with it)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def grep_time(paths: list[str]) -> float:
    t0 = time.perf_counter()
    # into a pipe, not /dev/null: GNU grep stops at the first match when its output is /dev/null
    subprocess.run(["grep", "-c", "batch", *paths], capture_output=True, env={**os.environ, "LC_ALL": "C"})
    return time.perf_counter() - t0


def bench_ingest(label: str, paths: list[str], nbytes: int, nlines: int, runs: int, jobs: int | None) -> dict:
    store = os.path.join(OUT, "store-ingest")
    rows = []
    for i in range(runs):
        shutil.rmtree(store, ignore_errors=True)
        g = grep_time(paths)
        cmd = forensics_cmd() + ["ingest", *paths, "--store", store] + (["-j", str(jobs)] if jobs else [])
        r = run_proc(cmd, cwd=ROOT)
        if r["rc"] != 0:
            sys.exit(f"error: ingest failed (exit {r['rc']}); see {OUT}/last_stderr.txt")
        r["grep_s"] = g
        rows.append(r)
        print(
            f"  {label} run {i + 1}: {r['wall_s']:.2f} s, {nbytes / r['wall_s'] / 1e6:.0f} MB/s, "
            f"peak {r['peak_rss_mib']:.0f} MiB/process, {r['peak_tree_rss_mib']:.0f} MiB/tree, grep {g:.3f} s",
            flush=True,
        )
    shutil.rmtree(store, ignore_errors=True)
    wall = statistics.median(r["wall_s"] for r in rows)
    grep = statistics.median(r["grep_s"] for r in rows)
    return {
        "label": label,
        "files": len(paths),
        "bytes": nbytes,
        "lines": nlines,
        "runs": runs,
        "wall_s": wall,
        "mb_s": nbytes / wall / 1e6,
        "lines_s": nlines / wall,
        "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in rows),
        "peak_tree_rss_mib": statistics.median(r["peak_tree_rss_mib"] for r in rows),
        "cpu_s": statistics.median(r["cpu_s"] for r in rows),
        "grep_s": grep,
        "x_grep": wall / grep,
        "all_runs": rows,
    }


def parser_path() -> str:
    """Which paths the parsers take here: the native modules need a C compiler at install."""
    r = subprocess.run(
        [sys.executable, "-c", "import json; from forensics.core import native; print(json.dumps(native.status()))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    status = json.loads(r.stdout) if r.returncode == 0 else {}
    scanner = (
        "native scanner (parsers/_fastlog.c) + polars"
        if status.get("_fastlog") == "enabled"
        else f"polars only ({status.get('_fastlog', 'the loader failed')})"
    )
    trace = (
        "field splitter (parsers/_fasttrace.c) + DuckDB"
        if status.get("_fasttrace") == "enabled"
        else f"DuckDB only ({status.get('_fasttrace', 'the loader failed')})"
    )
    return f"server logs: {scanner}; transfer traces: {trace}"


_IMPORTS = [sys.executable, "-c", "import polars, duckdb, pyarrow.parquet"]
SMALL = os.path.join(ROOT, "sample_logs", "incident", "decode-1", "sglang.log")


def bench_fixed(runs: int) -> dict:
    """The fixed cost: a whole ingest of the demo's decode-1 log beside importing polars, duckdb and
    pyarrow.parquet in a fresh interpreter, interleaved, medians of `runs`."""
    store = os.path.join(OUT, "store-small")
    ing, imp = [], []
    for _ in range(max(runs, 3)):
        imp.append(run_proc(_IMPORTS, cwd=ROOT)["wall_s"])
        shutil.rmtree(store, ignore_errors=True)
        r = run_proc(forensics_cmd() + ["ingest", SMALL, "--store", store], cwd=ROOT)
        if r["rc"] != 0:
            sys.exit(f"error: ingest failed (exit {r['rc']}); see {OUT}/last_stderr.txt")
        ing.append(r["wall_s"])
    shutil.rmtree(store, ignore_errors=True)
    return {"ingest_s": statistics.median(ing), "import_s": statistics.median(imp), "all": [ing, imp]}


def targets_table(results: dict) -> str:
    """Every target of the ingest with its figure, its reference measured in the same run, the ratio."""
    rows = []

    def row(name, figure, ref, ratio, want, met):
        rows.append(f"| {name} | {figure} | {ref} | {ratio:.2f} | {want} | {'met' if met else 'missed'} |")

    ln, sc, tr, fx = (results.get(k) or {} for k in ("lnav", "scaling", "trace", "fixed"))
    if ln and "skipped" not in ln:
        row(
            f"per core: whole ingest of a {ln['bytes'] / 2**20:.0f} MiB decode log",
            f"{ln['ingest_s']:.2f} s",
            f"lnav load+index {ln['lnav_s']:.2f} s",
            ln["x_lnav"],
            "lnav/ingest >= 1.0",
            ln["x_lnav"] >= 1.0,
        )
    if sc and "skipped" not in sc:
        ig, pa = sc["ingest"], sc["parse"]
        mb = sc["bytes"] / ig["1core_s"] / 1e6
        row("per core: MB/s on one core (taskset -c 0)", f"{mb:.0f} MB/s", "200 MB/s", mb / 200, ">= 1.0", mb >= 200)
        row(
            "scaling: 2 cores over 1",
            f"{ig['2core_s']:.2f} s",
            f"1 core {ig['1core_s']:.2f} s",
            ig["x"],
            ">= 1.8",
            ig["x"] >= 1.8,
        )
        share = max(0.0, ig["1core_s"] - pa["1core_s"]) / ig["1core_s"]
        row(
            "derived views: share of the whole ingest (1 core)",
            f"{ig['1core_s'] - pa['1core_s']:.2f} s",
            f"whole {ig['1core_s']:.2f} s",
            share,
            "<= 0.25",
            share <= 0.25,
        )
    for r in results.get("ingest", []):
        peak = max(r["peak_rss_mib"], 0)
        row(
            f"memory: largest process, {r['label']}", f"{peak:.0f} MiB", "1024 MiB", peak / 1024, "<= 1.0", peak <= 1024
        )
    if tr:
        row(
            f"transfer trace: {tr['bytes'] / 2**20:.0f} MiB whole ingest",
            f"{tr['mb_s']:.0f} MB/s",
            f"150 MB/s (grep -c {tr['grep_mb_s']:.0f} MB/s)",
            tr["mb_s"] / 150,
            ">= 1.0",
            tr["mb_s"] >= 150,
        )
    if fx:
        x = fx["ingest_s"] / fx["import_s"]
        row(
            "fixed cost: the demo's decode-1 log",
            f"{fx['ingest_s']:.2f} s",
            f"import polars, duckdb, pyarrow.parquet {fx['import_s']:.2f} s",
            x,
            "<= 2.0",
            x <= 2.0,
        )
    head = ["| target | figure | reference (same run) | ratio | wanted | |", "|---|---|---|---|---|---|"]
    return "\n".join(head + rows)


def bench_help(runs: int) -> dict:
    times = []
    for _ in range(max(runs, 5)):
        r = run_proc(forensics_cmd() + ["--help"], cwd=ROOT)
        times.append(r["wall_s"])
    return {"help_s": statistics.median(times), "all": times}


# -- against lnav and the transfer trace ------------------------------------------------------------


def ensure_lnav() -> str | None:
    """lnav on PATH, installing the Debian package (0.11) when it is missing and we may."""
    path = shutil.which("lnav")
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        print("installing lnav (apt-get install -y lnav) ...", flush=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "lnav"],
            capture_output=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        path = shutil.which("lnav")
    return path


def bench_lnav(path: str, nlines: int, runs: int) -> dict:
    """`forensics ingest` of one PD server log vs lnav loading and indexing it, `wc -l` beside.

    `lnav -n` alone prints the whole file to stdout; with a count over all_logs it indexes every
    line and prints one number, which proves it read the file (it merges multi-line records, so the
    count is a little under `wc -l`).
    """
    lnav = ensure_lnav()
    if lnav is None:
        return {"skipped": "lnav is not installed (apt-get install lnav)"}
    store = os.path.join(OUT, "store-lnav")
    rows = []
    for i in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["wc", "-l", path], capture_output=True)
        wc = time.perf_counter() - t0
        ln = run_proc([lnav, "-n", "-c", ";SELECT count(*) AS n FROM all_logs", path])
        seen = open(os.path.join(OUT, "last_stdout.txt")).read().split()
        counted = int(seen[-1]) if seen and seen[-1].isdigit() else 0
        if ln["rc"] != 0 or counted < 0.9 * nlines:
            sys.exit(f"error: lnav did not index {path} (exit {ln['rc']}, {counted:,} of {nlines:,} lines)")
        shutil.rmtree(store, ignore_errors=True)
        fx = run_proc(forensics_cmd() + ["ingest", path, "--store", store], cwd=ROOT)
        if fx["rc"] != 0:
            sys.exit(f"error: ingest failed (exit {fx['rc']}); see {OUT}/last_stderr.txt")
        rows.append(
            {
                "wc_s": wc,
                "lnav_s": ln["wall_s"],
                "lnav_cpu_s": ln["cpu_s"],
                "lnav_lines": counted,
                "ingest_s": fx["wall_s"],
                "ingest_cpu_s": fx["cpu_s"],
            }
        )
        print(
            f"  lnav run {i + 1}: lnav {ln['wall_s']:.2f} s ({ln['cpu_s']:.2f} s CPU), forensics ingest "
            f"{fx['wall_s']:.2f} s ({fx['cpu_s']:.2f} s CPU), wc -l {wc:.3f} s",
            flush=True,
        )
    shutil.rmtree(store, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {
        **med,
        "bytes": os.path.getsize(path),
        "lines": nlines,
        "runs": runs,
        "all_runs": rows,
        "x_lnav": med["lnav_s"] / med["ingest_s"],
        "x_lnav_cpu": med["lnav_cpu_s"] / med["ingest_cpu_s"],
    }


# the trace parser alone, in a process of its own: what ingest spends beyond it is the store's
_TRACE_PARSE = """
import os, sys, time
t0 = time.perf_counter()
from forensics.parsers import transfer_trace as tt
from forensics.parsers.base import Context, Source
path = sys.argv[1]
ctx = Context(host="bench")
t1 = time.perf_counter()
for batch in tt.parse(Source(path=path, fs_path=path, size=os.path.getsize(path)), ctx):
    pass
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, ctx.parsed_lines, ctx.unparsed_lines, int(tt.fast_enabled()))
"""


def _tree_cpu(cmd: list[str], cwd: str) -> tuple[float, float, int]:
    """Run `cmd`; its wall time, the CPU seconds of its whole process tree (`run_proc`), its exit code.

    Under a shared load the wall ratio reads low (the kernel's autogroups share the cores between
    sessions, not processes); the CPU of the tree says what the parallel run costs beside the
    serial one.
    """
    r = run_proc(cmd, cwd=cwd)
    return r["wall_s"], r["cpu_s"], r["rc"]


_PIPELINE_ONLY = (
    "import sys; from forensics.ingest import pipeline as p; "
    "r = p.run([sys.argv[1]], sys.argv[2], p.Options()); sys.exit(r[0].status != 'ingested')"
)


def bench_scaling(path: str, runs: int) -> dict:
    """One large decode log on 1 core and on 2 (`taskset -c 0` vs `taskset -c 0,1`), interleaved.

    Two figures per core count: the whole `forensics ingest` process, and its parse and commit
    alone (`pipeline.run` without the store summary the command computes after it). The load
    average is read before each run: under the other users of the machine the ratio reads low.
    """
    taskset = shutil.which("taskset")
    if taskset is None or len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        return {"skipped": "needs taskset and cores 0 and 1"}
    store = os.path.join(OUT, "store-scaling")
    cases = {
        "ingest": forensics_cmd() + ["ingest", path, "--store", store],
        "parse": [sys.executable, "-c", _PIPELINE_ONLY, path, store],
    }
    rows: dict[str, dict[str, list[float]]] = {c: {"1": [], "2": []} for c in cases}
    cpu: dict[str, dict[str, list[float]]] = {c: {"1": [], "2": []} for c in cases}
    loads = []
    for i in range(runs):
        for case, cmd in cases.items():
            for n, cpus in (("1", "0"), ("2", "0,1")):
                shutil.rmtree(store, ignore_errors=True)
                loads.append(os.getloadavg()[0])
                wall, used, rc = _tree_cpu([taskset, "-c", cpus, *cmd], cwd=ROOT)
                if rc != 0:
                    sys.exit(f"error: {case} on {n} core(s) failed (exit {rc})")
                rows[case][n].append(wall)
                cpu[case][n].append(used)
        print(
            f"  scaling run {i + 1}: ingest 1 core {rows['ingest']['1'][-1]:.2f} s, 2 cores "
            f"{rows['ingest']['2'][-1]:.2f} s; parse+commit 1 core {rows['parse']['1'][-1]:.2f} s "
            f"({cpu['parse']['1'][-1]:.2f} s CPU), 2 cores {rows['parse']['2'][-1]:.2f} s "
            f"({cpu['parse']['2'][-1]:.2f} s CPU); load {loads[-1]:.1f}",
            flush=True,
        )
    shutil.rmtree(store, ignore_errors=True)
    out = {
        "bytes": os.path.getsize(path),
        "runs": runs,
        "load_avg": statistics.median(loads),
        "all_runs": rows,
        "all_cpu": cpu,
    }
    for case in cases:
        one, two = statistics.median(rows[case]["1"]), statistics.median(rows[case]["2"])
        c1, c2 = statistics.median(cpu[case]["1"]), statistics.median(cpu[case]["2"])
        # what 2 cores would give if they were the run's alone: its CPU spread over both
        out[case] = {
            "1core_s": one,
            "2core_s": two,
            "x": one / two,
            "1core_cpu_s": c1,
            "2core_cpu_s": c2,
            "x_cpu_bound": c1 / (c2 / 2),
        }
    return out


def bench_trace(size: int, runs: int) -> dict:
    """Ingest of a KV transfer trace (docs/formats/TRANSFER_TRACE.md) as a whole process beside `grep -c` over
    the same file, and the trace parser alone in a process of its own; medians of `runs`."""
    d = os.path.join(OUT, "data", f"trace-{size}")
    path = os.path.join(d, "kvtrace.jsonl")
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        gen.write_trace(path, size, 21)
    nbytes = os.path.getsize(path)
    with open(path, "rb") as f:
        nlines = sum(b.count(b"\n") for b in iter(lambda: f.read(1 << 24), b""))
    store = os.path.join(OUT, "store-trace")
    rows = []
    for i in range(runs):
        load = os.getloadavg()[0]
        g = grep_time([path])
        shutil.rmtree(store, ignore_errors=True)
        r = run_proc(forensics_cmd() + ["ingest", path, "--store", store], cwd=ROOT)
        if r["rc"] != 0:
            sys.exit(f"error: ingest failed (exit {r['rc']}); see {OUT}/last_stderr.txt")
        p = run_proc([sys.executable, "-c", _TRACE_PARSE, path], cwd=ROOT)
        if p["rc"] != 0:
            sys.exit(f"error: the trace parser failed (exit {p['rc']}); see {OUT}/last_stderr.txt")
        imp, parse_s, parsed, unparsed, fast = open(os.path.join(OUT, "last_stdout.txt")).read().split()
        rows.append(
            {
                "load": load,
                "grep_s": g,
                "ingest_s": r["wall_s"],
                "ingest_cpu_s": r["cpu_s"],
                "peak_rss_mib": r["peak_rss_mib"],
                "parse_proc_s": p["wall_s"],
                "parse_s": float(parse_s),
                "parse_cpu_s": p["cpu_s"],
                "import_s": float(imp),
            }
        )
        print(
            f"  trace run {i + 1}: ingest {r['wall_s']:.2f} s ({nbytes / r['wall_s'] / 1e6:.0f} MB/s, "
            f"{r['cpu_s']:.2f} s CPU), parser alone {p['wall_s']:.2f} s as a process ({p['cpu_s']:.2f} s CPU) "
            f"({nbytes / p['wall_s'] / 1e6:.0f} MB/s; its loop {float(parse_s):.2f} s), grep -c {g:.3f} s "
            f"({nbytes / g / 1e6:.0f} MB/s), load {load:.1f}",
            flush=True,
        )
    shutil.rmtree(store, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {
        **med,
        "label": "transfer trace",
        "bytes": nbytes,
        "lines": nlines,
        "runs": runs,
        "all_runs": rows,
        "parsed": int(parsed),
        "unparsed": int(unparsed),
        "fast_path": fast == "1",
        "wall_s": med["ingest_s"],
        "mb_s": nbytes / med["ingest_s"] / 1e6,
        "parse_mb_s": nbytes / med["parse_proc_s"] / 1e6,
        "grep_mb_s": nbytes / med["grep_s"] / 1e6,
        "x_grep": med["ingest_s"] / med["grep_s"],
        "target_mb_s": 150,
    }


def trace_line(tr: dict) -> str:
    """The transfer trace's figures, the reference beside them, in one line."""
    return (
        f"transfer trace ({tr['bytes'] / 1e6:.0f} MB, {tr['lines']:,} lines, median of {tr['runs']}, load "
        f"{tr['load']:.1f}): ingest {tr['mb_s']:.0f} MB/s ({tr['wall_s']:.2f} s, {tr['ingest_cpu_s']:.2f} s "
        f"CPU), parser alone {tr['parse_mb_s']:.0f} MB/s ({tr['parse_proc_s']:.2f} s as a process, "
        f"{tr['parse_cpu_s']:.2f} s CPU, imports {tr['import_s']:.2f} s of its wall); grep -c "
        f"{tr['grep_mb_s']:.0f} MB/s ({tr['grep_s']:.3f} s), ingest {tr['x_grep']:.1f}x grep; peak "
        f"{tr['peak_rss_mib']:.0f} MiB; target >= {tr['target_mb_s']} MB/s: "
        + ("met" if tr["mb_s"] >= tr["target_mb_s"] else f"missed ({tr['mb_s'] / tr['target_mb_s']:.2f}x)")
        + ("" if tr["fast_path"] else " [field splitter not built: reference path]")
    )


# -- the large store ----------------------------------------------------------------------------


def _has_command(name: str) -> bool:
    r = subprocess.run(forensics_cmd() + [name, "--help"], capture_output=True, cwd=ROOT)
    return r.returncode == 0


def build_store(transfers: int, batches: int, replies: int) -> tuple[str, dict]:
    sys.path.insert(0, HERE)
    import bigstore

    return bigstore.build(os.path.join(OUT, "store-large"), transfers=transfers, batches=batches, replies=replies)


def bench_queries(store: str, runs: int, args: dict[str, list[str]]) -> dict:
    res = {}
    for name in ("timeline", "evidence"):
        if not _has_command(name):
            print(f"  skip `forensics {name}`: the command does not exist yet (another issue builds it)")
            res[name] = {"skipped": "command does not exist yet"}
            continue
        times, rc = [], 0
        for _ in range(runs):
            r = run_proc(forensics_cmd() + [name, *args.get(name, []), "--store", store], cwd=ROOT)
            times.append(r["wall_s"])
            rc = r["rc"]
        if rc != 0:
            msg = open(os.path.join(OUT, "last_stderr.txt")).read().strip().splitlines()[-3:]
            print(f"  `forensics {name}` exited {rc}: {' | '.join(msg)}")
        res[name] = {"wall_s": statistics.median(times), "rc": rc, "all": times}
        print(f"  forensics {name}: {res[name]['wall_s']:.2f} s (exit {rc})", flush=True)
    return res


def _manifest(store: str) -> dict:
    import re

    d = os.path.join(store, "derived")
    sets = [n for n in os.listdir(d) if re.fullmatch(r"[0-9a-f]{24}", n)] if os.path.isdir(d) else []
    newest = max(sets, key=lambda n: os.path.getmtime(os.path.join(d, n)), default=None)
    return json.load(open(os.path.join(d, newest, "MANIFEST.json"))) if newest else {}


def bench_refresh(store: str) -> dict:
    """What ingest leaves behind: the derived views computed for the whole store, then brought up
    to date after one more input, and the first reports on each state.

    `forensics summary` is ingest's last step (it computes the derived views); the whole
    computation runs once (minutes under load), on a store with its snapshot sets removed.
    The added input lives in a copy of the store, so the large store stays as bigstore built it.
    """
    import re

    d = os.path.join(store, "derived")
    for n in os.listdir(d) if os.path.isdir(d) else []:
        if re.fullmatch(r"[0-9a-f]{24}", n):
            shutil.rmtree(os.path.join(d, n))
    res = {}
    print("  derived views of the whole store (forensics summary, as at the end of an ingest) ...", flush=True)
    res["whole"] = run_proc(forensics_cmd() + ["summary", "--store", store], cwd=ROOT)
    plus = store + "-plus"
    shutil.rmtree(plus, ignore_errors=True)
    shutil.copytree(store, plus)
    try:
        import bigstore

        bigstore.add_input(plus)
        print("  one more input (20,000 events and 20,000 transfer events) ...", flush=True)
        res["one_more"] = run_proc(forensics_cmd() + ["summary", "--store", plus], cwd=ROOT)
        m = _manifest(plus)
        res["one_more"]["extended"] = "extends" in m
        res["one_more"]["rooms"] = m.get("rooms_recomputed")
        res["first_reports_after_one_more"] = {
            name: run_proc(forensics_cmd() + [name, "--store", plus], cwd=ROOT)["wall_s"]
            for name in ("timeline", "evidence")
        }
    finally:
        shutil.rmtree(plus, ignore_errors=True)
    for k in ("whole", "one_more"):
        r = res[k]
        print(
            f"  {k}: {r['wall_s']:.1f} s, peak {max(r['peak_rss_mib'], r['peak_tree_rss_mib']):.0f} MiB, exit {r['rc']}"
            + (f", {r['rooms']:,} rooms computed again" if r.get("rooms") else ""),
            flush=True,
        )
    return res


# -- report -------------------------------------------------------------------------------------


def summary(results: dict) -> str:
    t = results["targets"]
    lines = [
        f"forensics bench  {results['date']}  {results['machine']}",
        f"server-log parser: {results['parser']}",
        f"{'case':<28}{'MB/s':>8}{'Mlines/s':>10}{'wall s':>8}{'x grep':>8}{'RSS/proc':>10}{'RSS/tree':>10}",
    ]
    for r in results["ingest"]:
        lines.append(
            f"{r['label']:<28}{r['mb_s']:>8.0f}{r['lines_s'] / 1e6:>10.2f}{r['wall_s']:>8.2f}{r['x_grep']:>8.1f}"
            f"{r['peak_rss_mib']:>8.0f}Mi{r['peak_tree_rss_mib']:>8.0f}Mi"
        )
    lines.append(
        f"targets: >= {t['mb_s']} MB/s, <= {t['x_grep']}x grep -c, RSS <= {t['rss_mib']} MiB, "
        f"--help <= {t['help_s']} s, timeline/evidence <= {t['query_s']} s"
    )
    lines.append(f"forensics --help: {results['help']['help_s']:.3f} s")
    for name, q in results.get("queries", {}).items():
        lines.append(
            f"forensics {name}: "
            + (f"skipped ({q['skipped']})" if "skipped" in q else f"{q['wall_s']:.2f} s (exit {q['rc']})")
        )
    if results.get("store"):
        lines.append("large store rows: " + ", ".join(f"{k}={v:,}" for k, v in results["store"].items()))
    rf = results.get("refresh")
    if rf:
        w, o = rf["whole"], rf["one_more"]
        peak = lambda r: max(r["peak_rss_mib"], r["peak_tree_rss_mib"])  # noqa: E731
        lines.append(
            f"derived views at the end of an ingest (large store): whole store {w['wall_s']:.1f} s, peak "
            f"{peak(w):.0f} MiB; one more input {o['wall_s']:.1f} s, peak {peak(o):.0f} MiB "
            f"({'extended' if o.get('extended') else 'NOT extended'}, {o.get('rooms') or 0:,} rooms computed "
            f"again), {o['wall_s'] / w['wall_s']:.2f}x the whole; first reports after it: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in rf["first_reports_after_one_more"].items())
            + " (targets: <= 5 s, <= 1024 MiB)"
        )
    ln = results.get("lnav")
    if ln and "skipped" in ln:
        lines.append(f"against lnav: skipped ({ln['skipped']})")
    elif ln:
        lines.append(
            f"against lnav ({ln['bytes'] / 1e6:.0f} MB decode log, median of {ln['runs']}): forensics ingest "
            f"{ln['ingest_s']:.2f} s ({ln['ingest_cpu_s']:.2f} s CPU), lnav -n {ln['lnav_s']:.2f} s "
            f"({ln['lnav_cpu_s']:.2f} s CPU, {ln['lnav_lines']:,} records), wc -l {ln['wc_s']:.3f} s; "
            f"speed vs lnav {ln['x_lnav']:.2f}x wall (target >= 1), {ln['x_lnav_cpu']:.2f}x CPU (ingest's whole "
            f"process tree, its workers too)"
        )
    sc = results.get("scaling")
    if sc and "skipped" in sc:
        lines.append(f"scaling: skipped ({sc['skipped']})")
    elif sc:
        ig, pa = sc["ingest"], sc["parse"]
        lines.append(
            f"scaling ({sc['bytes'] / 1e6:.0f} MB decode log, median of {sc['runs']}, load average "
            f"{sc['load_avg']:.1f}): forensics ingest 1 core {ig['1core_s']:.2f} s, 2 cores {ig['2core_s']:.2f} s, "
            f"{ig['x']:.2f}x; its parse+commit alone 1 core {pa['1core_s']:.2f} s, 2 cores {pa['2core_s']:.2f} s, "
            f"{pa['x']:.2f}x (target >= 1.8x; taskset -c 0 vs 0,1); CPU of the process tree 1 core "
            f"{pa['1core_cpu_s']:.2f} s, 2 cores {pa['2core_cpu_s']:.2f} s: at best {pa['x_cpu_bound']:.2f}x "
            f"on 2 idle cores (the 1-core CPU over half the 2-core CPU)"
        )
    if results.get("trace"):
        lines.append(trace_line(results["trace"]))
    if results.get("memory"):
        import memory

        counts = results["memory"]["store"]
        lines.append(
            memory.table(
                results["memory"]["commands"],
                "the large store (" + ", ".join(f"{k}={v:,}" for k, v in counts.items()) + ")",
            )
        )
        lg = results["memory"].get("log")
        if lg:
            lines.append(
                memory.table(
                    [lg["ingest"], *lg["commands"]],
                    f"a store ingested from one {lg['bytes'] / 2**30:.1f} GiB decode log ({lg['lines']:,} lines)",
                )
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1G", help="bytes of log per case, e.g. 200M, 1G, 4G (default 1G)")
    ap.add_argument("--runs", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--skip-store", action="store_true", help="skip the large store and the query timings")
    ap.add_argument("--transfers", type=int, default=10_000_000)
    ap.add_argument("--batches", type=int, default=1_000_000)
    ap.add_argument("--replies", type=int, default=100_000)
    ap.add_argument("--timeline-args", default="", help="extra arguments for `forensics timeline`")
    ap.add_argument("--evidence-args", default="", help="extra arguments for `forensics evidence`")
    ap.add_argument("--lnav-size", default="256M", help="bytes of PD decode log for the lnav comparison (default 256M)")
    ap.add_argument("--trace-size", default="256M", help="bytes of transfer trace (default 256M)")
    ap.add_argument("--trace-only", action="store_true", help="only the transfer trace figure")
    ap.add_argument(
        "--memory",
        action="store_true",
        help="also peak RSS of every command on the large store "
        "(bench/memory.py; the first report there computes the derived views: tens of minutes under load)",
    )
    ap.add_argument(
        "--memory-log",
        type=parse_size,
        default=None,
        metavar="SIZE",
        help="with --memory, also ingest one generated decode log of SIZE (e.g. 4G) and measure every "
        "command on its store (about half an hour on 2 cores)",
    )
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    size = parse_size(a.size)
    if a.trace_only:
        print(trace_line(bench_trace(parse_size(a.trace_size), a.runs)))
        return
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.node()} {os.cpu_count()} cores "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, Python {platform.python_version()}",
        "size": size,
        "targets": {"mb_s": 250, "x_grep": 10, "rss_mib": 1024, "help_s": 0.3, "query_s": 5},
        "ingest": [],
        "parser": parser_path(),
    }
    if not a.skip_ingest:
        m = make_data(size)
        single = [os.path.join(m["dir"], f["name"]) for f in m["single"]]
        dump = [os.path.join(m["dir"], f["name"]) for f in m["dump"]]
        sb, sl = sum(f["bytes"] for f in m["single"]), sum(f["lines"] for f in m["single"])
        db, dl = sum(f["bytes"] for f in m["dump"]), sum(f["lines"] for f in m["dump"])
        print(
            f"ingest: one file ({sb / 1e6:.0f} MB, {sl:,} lines) vs {len(dump)} files in parallel "
            f"({db / 1e6:.0f} MB, {dl:,} lines), {a.runs} runs each",
            flush=True,
        )
        results["ingest"].append(bench_ingest("one file", single, sb, sl, a.runs, None))
        results["ingest"].append(bench_ingest(f"{len(dump)} files, all cores", dump, db, dl, a.runs, None))
        f = m["short"][0]
        results["ingest"].append(
            bench_ingest(
                "short lines (memory)", [os.path.join(m["dir"], f["name"])], f["bytes"], f["lines"], a.runs, None
            )
        )
    if not a.skip_ingest:
        lsize = parse_size(a.lnav_size)
        ld = os.path.join(OUT, "data", f"lnav-{lsize}")
        lpath = os.path.join(ld, "decode-lnav.log")
        if not os.path.exists(lpath):
            os.makedirs(ld, exist_ok=True)
            gen.write_log(lpath, "decode", lsize, 7)
        with open(lpath, "rb") as f:
            lines = sum(b.count(b"\n") for b in iter(lambda: f.read(1 << 24), b""))
        print(
            f"against lnav: one decode log ({os.path.getsize(lpath) / 1e6:.0f} MB, {lines:,} lines), {a.runs} runs",
            flush=True,
        )
        results["lnav"] = bench_lnav(lpath, lines, a.runs)
        print(f"scaling: the one-file case's decode log on 1 core and on 2, {a.runs} runs", flush=True)
        results["scaling"] = bench_scaling(single[0], a.runs)
        print("transfer trace ...", flush=True)
        results["trace"] = bench_trace(parse_size(a.trace_size), a.runs)
    if not a.skip_ingest:
        print("fixed cost: the demo's decode-1 log beside the imports ...", flush=True)
        results["fixed"] = bench_fixed(a.runs)
    results["help"] = bench_help(a.runs)
    if not a.skip_store:
        print("large store ...", flush=True)
        store, counts = build_store(a.transfers, a.batches, a.replies)
        results["store"] = counts
        results["refresh"] = bench_refresh(store)
        results["queries"] = bench_queries(
            store, a.runs, {"timeline": a.timeline_args.split(), "evidence": a.evidence_args.split()}
        )
    if a.memory:
        import memory

        store, counts = build_store(a.transfers, a.batches, a.replies)
        results["memory"] = {"store": counts, "commands": memory.measure(store)}
        if a.memory_log:
            results["memory"]["log"] = memory.from_log(a.memory_log, [])
    json.dump(results, open(os.path.join(OUT, "results.json"), "w"), indent=1, default=str)
    text = summary(results) + "\n\n" + targets_table(results)
    open(os.path.join(OUT, "summary.txt"), "w").write(text + "\n")
    print("\n" + text)


if __name__ == "__main__":
    main()
