"""Peak memory of every report command on the large bench store (bench/bigstore.py).

    python bench/memory.py                       # the default store: 10 M transfer events, 1 M stats lines
    python bench/memory.py --transfers 2000000   # a smaller store (say so when quoting figures)
    python bench/memory.py --store S --only html # one store as it is, some commands
    python bench/memory.py --log 4G              # also: ingest a generated 4 GiB decode log, then every
                                                 # command on that store (half an hour on 2 cores)

Each command runs as its own process, one after the other, in the order a user would (the first
report pays for the derived views). Peak RSS is the largest resident set of the process tree
(run.run_proc). Results go to bench/out/memory.json; a command over the limit is listed with its
figure so the report can say where the memory goes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402

LIMIT_MIB = 1024


BIGSTORE_ROOM = str(1_000_000_000_000_000_000 + 3_000_000_007)  # bigstore's first room: every table has it


def commands(store: str, out: str, room: str = BIGSTORE_ROOM) -> list[tuple[str, list[str]]]:
    """(label, argv) of every command a user runs on a store, exports included."""
    s = ["--store", store]
    cmds = [("timeline (first report)", ["timeline", *s])]
    for fmt in ("markdown", "csv", "json"):
        cmds.append(
            (f"timeline --format {fmt}", ["timeline", "--format", fmt, *s, "-o", os.path.join(out, f"t.{fmt}")])
        )
    for fmt, ext in (("html", "html"), ("png", "png"), ("svg", "svg"), ("perfetto", "json")):
        cmds.append(
            (f"timeline --format {fmt}", ["timeline", "--format", fmt, *s, "-o", os.path.join(out, f"t-{fmt}.{ext}")])
        )
    cmds.append(
        (
            "timeline --format perfetto --bucket 1s",
            ["timeline", "--format", "perfetto", "--bucket", "1s", *s, "-o", os.path.join(out, "t-1s.json")],
        )
    )
    cmds.append(
        (
            "timeline --format html --bucket 1s",
            ["timeline", "--format", "html", "--bucket", "1s", *s, "-o", os.path.join(out, "t-1s.html")],
        )
    )
    cmds += [
        ("evidence", ["evidence", *s]),
        ("replies", ["replies", *s]),
        ("room", ["room", room, *s]),
        ("sql rooms", ["sql", *s, "SELECT count(*), count(DISTINCT bootstrap_room) FROM rooms"]),
        ("sql transfer_events", ["sql", *s, "SELECT * FROM transfer_events ORDER BY ts LIMIT 20"]),
        ("summary", ["summary", *s]),
    ]
    return cmds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transfers", type=int, default=10_000_000)
    ap.add_argument("--batches", type=int, default=1_000_000)
    ap.add_argument("--replies", type=int, default=100_000)
    ap.add_argument(
        "--store", help="measure this store as it is (no build): e.g. a copy whose derived views are cached"
    )
    ap.add_argument(
        "--only", action="append", default=[], help="only the commands whose label contains this (repeatable)"
    )
    ap.add_argument(
        "--log",
        type=run.parse_size,
        default=None,
        metavar="SIZE",
        help="also ingest one generated decode log of SIZE (e.g. 4G) and measure every command on its store",
    )
    a = ap.parse_args()
    os.makedirs(run.OUT, exist_ok=True)
    if a.store:
        store, counts = a.store, {}
    else:
        store, counts = run.build_store(a.transfers, a.batches, a.replies)
    report = {"store": counts, "commands": measure(store, a.only, room=first_room(store) if a.store else BIGSTORE_ROOM)}
    text = [
        table(
            report["commands"],
            f"the store {store}"
            if a.store
            else "the large store (" + ", ".join(f"{k}={v:,}" for k, v in counts.items()) + ")",
        )
    ]
    if a.log:
        report["log"] = from_log(a.log, a.only)
        text.append(
            table(
                [report["log"]["ingest"], *report["log"]["commands"]],
                f"a store ingested from one {report['log']['bytes'] / 2**30:.1f} GiB decode log "
                f"({report['log']['lines']:,} lines)",
            )
        )
    json.dump(report, open(os.path.join(run.OUT, "memory.json"), "w"), indent=1)
    print("\n\n".join(text))


def from_log(size: int, only: list[str]) -> dict:
    """Generate one decode log of `size` bytes (bench/gen.py, as run.py's single file), ingest it
    (peak RSS and wall measured), then every command on its store; the log is deleted after."""
    import gen

    d = os.path.join(run.OUT, "memory-log")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    name, role, seed, cri = run.SINGLE
    path = os.path.join(d, name)
    nbytes, lines = gen.write_log(path, role, size, seed, cri)
    store = os.path.join(d, "store")
    print(f"  generated {nbytes / 2**30:.2f} GiB, {lines:,} lines", flush=True)
    r = run.run_proc(run.forensics_cmd() + ["ingest", path, "--store", store], cwd=run.ROOT)
    ingest = {
        "command": "ingest (with its store summary)",
        "wall_s": r["wall_s"],
        "rc": r["rc"],
        "peak_rss_mib": r["peak_rss_mib"],
        "peak_tree_rss_mib": r["peak_tree_rss_mib"],
        "output_bytes": None,
    }
    print(
        f"  ingest: {r['wall_s']:.1f} s, peak {max(r['peak_rss_mib'], r['peak_tree_rss_mib']):.0f} MiB, exit {r['rc']}",
        flush=True,
    )
    os.remove(path)
    results = measure(store, only, room=first_room(store))
    return {"bytes": nbytes, "lines": lines, "ingest": ingest, "commands": results}


def first_room(store: str) -> str:
    """A room of the store, for `forensics room`."""
    r = subprocess.run(
        run.forensics_cmd()
        + ["sql", "--store", store, "--format", "csv", "SELECT min(bootstrap_room) AS room FROM rooms"],
        capture_output=True,
        text=True,
        cwd=run.ROOT,
    )
    lines = r.stdout.split()
    return lines[1] if r.returncode == 0 and len(lines) > 1 and lines[1] else BIGSTORE_ROOM


def measure(store: str, only: list[str] = (), room: str = BIGSTORE_ROOM) -> list[dict]:
    out = os.path.join(run.OUT, "exports")
    os.makedirs(out, exist_ok=True)
    results = []
    for label, argv in commands(store, out, room):
        if only and not any(o in label for o in only):
            continue
        if not run._has_command(argv[0]):
            results.append({"command": label, "skipped": "no such command"})
            continue
        r = run.run_proc(run.forensics_cmd() + argv, cwd=run.ROOT)
        size = None
        if "-o" in argv and os.path.exists(argv[argv.index("-o") + 1]):
            size = os.path.getsize(argv[argv.index("-o") + 1])
        row = {
            "command": label,
            "wall_s": r["wall_s"],
            "rc": r["rc"],
            "peak_rss_mib": r["peak_rss_mib"],
            "peak_tree_rss_mib": r["peak_tree_rss_mib"],
            "output_bytes": size,
        }
        if r["rc"] != 0:
            row["stderr"] = open(os.path.join(run.OUT, "last_stderr.txt")).read().strip().splitlines()[-1:]
        results.append(row)
        print(
            f"  {label}: {r['wall_s']:.1f} s, peak {max(r['peak_rss_mib'], r['peak_tree_rss_mib']):.0f} MiB, "
            f"exit {r['rc']}" + (f", {size / 1e6:.1f} MB written" if size is not None else ""),
            flush=True,
        )
    return results


def table(results: list[dict], what: str) -> str:
    lines = [
        f"peak RSS on {what}; limit {LIMIT_MIB} MiB",
        f"{'command':<42}{'wall s':>8}{'RSS MiB':>9}{'limit':>7}{'x limit':>9}{'output MB':>11}  exit",
    ]
    for r in results:
        if "skipped" in r:
            lines.append(f"{r['command']:<42}  skipped ({r['skipped']})")
            continue
        rss = max(r["peak_rss_mib"], r["peak_tree_rss_mib"])
        size = f"{r['output_bytes'] / 1e6:.1f}" if r.get("output_bytes") is not None else ""
        flag = "  OVER" if rss > LIMIT_MIB else ""
        lines.append(
            f"{r['command']:<42}{r['wall_s']:>8.1f}{rss:>9.0f}{LIMIT_MIB:>7}{rss / LIMIT_MIB:>9.2f}{size:>11}"
            f"  {r['rc']}{flag}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
