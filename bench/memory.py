"""Peak memory of every report command on the large bench store (bench/bigstore.py).

    python bench/memory.py                       # the default store: 10 M transfer events, 1 M stats lines
    python bench/memory.py --transfers 2000000   # a smaller store (say so when quoting figures)

Each command runs as its own process, one after the other, in the order a user would (the first
report pays for the derived views). Peak RSS is the largest resident set of the process tree
(run.run_proc). Results go to bench/out/memory.json; a command over the limit is listed with its
figure so the report can say where the memory goes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402

LIMIT_MIB = 1024


def commands(store: str, out: str) -> list[tuple[str, list[str]]]:
    """(label, argv) of every command a user runs on a store, exports included."""
    s = ["--store", store]
    room = str(1_000_000_000_000_000_000 + 3_000_000_007)  # bigstore's first room: every table has it
    cmds = [("timeline (first report)", ["timeline", *s])]
    for fmt in ("markdown", "csv", "json"):
        cmds.append((f"timeline --format {fmt}", ["timeline", "--format", fmt, *s, "-o", os.path.join(out, f"t.{fmt}")]))
    for fmt, ext in (("html", "html"), ("png", "png"), ("svg", "svg"), ("perfetto", "json")):
        cmds.append((f"timeline --format {fmt}", ["timeline", "--format", fmt, *s, "-o", os.path.join(out, f"t-{fmt}.{ext}")]))
    cmds.append(("timeline --format perfetto --bucket 1s",
                 ["timeline", "--format", "perfetto", "--bucket", "1s", *s, "-o", os.path.join(out, "t-1s.json")]))
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
    ap.add_argument("--store", help="measure this store as it is (no build): e.g. a copy whose derived views are cached")
    ap.add_argument("--only", action="append", default=[], help="only the commands whose label contains this (repeatable)")
    a = ap.parse_args()
    os.makedirs(run.OUT, exist_ok=True)
    if a.store:
        store, counts = a.store, {}
    else:
        store, counts = run.build_store(a.transfers, a.batches, a.replies)
    results = measure(store, a.only)
    json.dump({"store": counts, "commands": results}, open(os.path.join(run.OUT, "memory.json"), "w"), indent=1)
    print(table(results, counts))


def measure(store: str, only: list[str] = ()) -> list[dict]:
    out = os.path.join(run.OUT, "exports")
    os.makedirs(out, exist_ok=True)
    results = []
    for label, argv in commands(store, out):
        if only and not any(o in label for o in only):
            continue
        if not run._has_command(argv[0]):
            results.append({"command": label, "skipped": "no such command"})
            continue
        r = run.run_proc(run.forensics_cmd() + argv, cwd=run.ROOT)
        size = None
        if "-o" in argv and os.path.exists(argv[argv.index("-o") + 1]):
            size = os.path.getsize(argv[argv.index("-o") + 1])
        row = {"command": label, "wall_s": r["wall_s"], "rc": r["rc"], "peak_rss_mib": r["peak_rss_mib"],
               "peak_tree_rss_mib": r["peak_tree_rss_mib"], "output_bytes": size}
        if r["rc"] != 0:
            row["stderr"] = open(os.path.join(run.OUT, "last_stderr.txt")).read().strip().splitlines()[-1:]
        results.append(row)
        print(f"  {label}: {r['wall_s']:.1f} s, peak {max(r['peak_rss_mib'], r['peak_tree_rss_mib']):.0f} MiB, "
              f"exit {r['rc']}" + (f", {size / 1e6:.1f} MB written" if size is not None else ""), flush=True)
    return results


def table(results: list[dict], counts: dict) -> str:
    lines = ["peak RSS on the large store (" + (", ".join(f"{k}={v:,}" for k, v in counts.items()) or "as given")
             + f"); limit {LIMIT_MIB} MiB",
             f"{'command':<42}{'wall s':>8}{'RSS MiB':>9}{'x limit':>9}{'output MB':>11}  exit"]
    for r in results:
        if "skipped" in r:
            lines.append(f"{r['command']:<42}  skipped ({r['skipped']})")
            continue
        rss = max(r["peak_rss_mib"], r["peak_tree_rss_mib"])
        size = f"{r['output_bytes'] / 1e6:.1f}" if r.get("output_bytes") is not None else ""
        flag = "  OVER" if rss > LIMIT_MIB else ""
        lines.append(f"{r['command']:<42}{r['wall_s']:>8.1f}{rss:>9.0f}{rss / LIMIT_MIB:>9.2f}{size:>11}  {r['rc']}{flag}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
