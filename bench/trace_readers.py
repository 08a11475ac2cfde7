"""The transfer trace's readers side by side: the C field splitter, the DuckDB reference path, and
DuckDB's own `read_ndjson` with explicit columns, on one generated trace (bench/gen.py).

    python bench/trace_readers.py                  # 256 MiB, median of 3
    python bench/trace_readers.py --size 64M --runs 3

Each case runs in a process of its own, one after another, the same file in the page cache; the
figure is the time of its loop (imports and connection set-up left out) and the CPU of the whole
process. Cases:

- `c_split`: `_fasttrace.scan` over the blocks `read_raw_blocks` cuts, nothing else: the splitter;
- `parse_native`: `transfer_trace.parse` as ingest runs it (splitter, frames, handed-back lines);
- `parse_duckdb`: the same with FORENSICS_NATIVE=0, every line through the reference query;
- `ndjson_varchar`: `read_ndjson(..., columns={every known field: VARCHAR}, format='newline_delimited')`
  into Arrow, no checks: the least a read_ndjson path would cost;
- `ndjson_s7`: the same with JSON-typed columns and the reference query's coercions and checks
  (docs/formats/TRANSFER_TRACE.md, "Reader rules") on top, into Arrow. It still lacks what read_ndjson cannot give: a row's line number and
  text (unparsed rows, file order) and its unknown fields (`extra`).

The load average is printed beside every run: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gen  # noqa: E402
from run import OUT, parse_size  # noqa: E402

_PARSE = """
import os, sys, time
from forensics.parsers import transfer_trace as tt
from forensics.parsers.base import Context, Source
path = sys.argv[1]
ctx = Context(host="bench")
t0, c0 = time.perf_counter(), time.process_time()
for batch in tt.parse(Source(path=path, fs_path=path, size=os.path.getsize(path)), ctx):
    pass
print(time.perf_counter() - t0, time.process_time() - c0, ctx.parsed_lines)
"""

_SPLIT = """
import sys, time
from forensics.core import native
from forensics.parsers.lines import read_raw_blocks
scan = native.module("_fasttrace").scan
t0, c0 = time.perf_counter(), time.process_time()
n = 0
with open(sys.argv[1], "rb") as f:
    for raw in read_raw_blocks(f):
        n += scan(raw.body, raw.line_no, raw.lines)["n"]
print(time.perf_counter() - t0, time.process_time() - c0, n)
"""

_NDJSON = """
import sys, time, duckdb
from forensics.parsers import transfer_trace as tt
path, typ = sys.argv[1], sys.argv[2]
con = duckdb.connect(":memory:")
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
cols = "{" + ", ".join(f"'{f}': '{typ}'" for f in tt.KNOWN_FIELDS) + "}"
src = f"read_ndjson('{path}', columns={cols}, format='newline_delimited', ignore_errors=true)"
if typ == "VARCHAR":
    sql = f"SELECT * FROM {src}"
else:
    # the reference query over the columns read_ndjson gives: each field's JSON type and text as the
    # reference path's one json_type/json_extract_string pass gives them
    t = ", ".join(f"coalesce(json_type(\\"{f}\\"), 'NULL')" for f in tt.KNOWN_FIELDS)
    s = ", ".join(f"json_extract_string(\\"{f}\\", '$')" for f in tt.KNOWN_FIELDS)
    raw = (f"SELECT row_number() OVER () AS line_no, '{{}}' AS line, [{t}] AS _t, [{s}] AS _s FROM {src}")
    head, rest = tt.QUERY.split("\\nx AS (", 1)
    sql = "WITH raw AS MATERIALIZED (" + raw + "),\\nx AS (" + rest
t0, c0 = time.perf_counter(), time.process_time()
n = con.sql(sql).arrow().read_all().num_rows
print(time.perf_counter() - t0, time.process_time() - c0, n)
"""

CASES = {
    "c_split": ([_SPLIT], {}),
    "parse_native": ([_PARSE], {"FORENSICS_NATIVE": "1"}),
    "parse_duckdb": ([_PARSE], {"FORENSICS_NATIVE": "0"}),
    "ndjson_varchar": ([_NDJSON, "VARCHAR"], {}),
    "ndjson_s7": ([_NDJSON, "JSON"], {}),
}

# (DuckDB reader, the C path doing the same work)
PAIRS = (("ndjson_varchar", "c_split"), ("ndjson_s7", "parse_native"), ("parse_duckdb", "parse_native"))


def run_case(case: str, path: str) -> dict:
    (code, *extra), env = CASES[case]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", code, path, *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"error: {case} failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    loop_s, loop_cpu_s, rows = p.stdout.split()[-3:]
    return {
        "loop_s": float(loop_s),
        "loop_cpu_s": float(loop_cpu_s),
        "proc_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "rows": int(rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="256M", help="bytes of transfer trace (default 256M)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    a = ap.parse_args()
    size = parse_size(a.size)
    d = os.path.join(OUT, "data", f"trace-{size}")
    path = os.path.join(d, "kvtrace.jsonl")
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        gen.write_trace(path, size, 21)
    nbytes = os.path.getsize(path)
    cases = a.cases.split(",")
    runs: dict[str, list[dict]] = {c: [] for c in cases}
    for i in range(a.runs):
        for c in cases:
            load = os.getloadavg()[0]
            r = run_case(c, path)
            runs[c].append({**r, "load": load})
            print(
                f"run {i + 1} {c:15s} {r['loop_s']:7.2f} s loop ({nbytes / r['loop_s'] / 1e6:6.0f} MB/s, "
                f"{r['loop_cpu_s']:.2f} s CPU), "
                f"{r['proc_s']:6.2f} s process, {r['cpu_s']:6.2f} s CPU, {r['rows']:,} rows, load {load:.1f}",
                flush=True,
            )
    med = {
        c: {k: statistics.median(r[k] for r in rs) for k in ("loop_s", "loop_cpu_s", "proc_s", "cpu_s", "load")}
        for c, rs in runs.items()
    }
    print(f"\n{nbytes / 1e6:.0f} MB trace, median of {a.runs}, load average now {os.getloadavg()}")
    for c, m in med.items():
        print(
            f"  {c:15s} loop {m['loop_s']:7.2f} s ({nbytes / m['loop_s'] / 1e6:6.0f} MB/s), {m['loop_cpu_s']:6.2f} s CPU; "
            f"process {m['proc_s']:6.2f} s, {m['cpu_s']:6.2f} s CPU; load {m['load']:.1f}"
        )
    # each DuckDB reader beside the C path that does the same work: the C splitter stays where it
    # wins by more than 1.5x
    for duck, c in PAIRS:
        if duck in med and c in med:
            x, y = med[duck], med[c]
            print(
                f"  {duck} / {c}: {x['loop_s'] / y['loop_s']:.2f}x the wall, {x['loop_cpu_s'] / y['loop_cpu_s']:.2f}x the CPU"
            )
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "trace_readers.json"), "w") as f:
        json.dump({"bytes": nbytes, "runs": runs, "median": med}, f, indent=1)


if __name__ == "__main__":
    main()
