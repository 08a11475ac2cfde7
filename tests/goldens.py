"""Golden snapshots: sample_logs/<case>/ in, expected rows out (tests/golden/<case>/<table>.csv).

Regenerate deliberately with `make goldens` (python -m tests.goldens --update), then read the diff
before committing it.
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

import polars as pl

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
CASES = {"eras": ROOT / "sample_logs" / "eras"}
# (table, ORDER BY); columns that depend on where the checkout lives are normalised away
TABLES = [
    ("files", "path"),
    ("batches", "source_file, line_no"),
    ("events", "source_file, line_no"),
    ("unparsed", "source_file, line_no"),
]
DROP = {"files": ["ingested_at", "sha256", "resume_state", "data_files"]}  # parser internals, file dates, part sizes


def snapshot(case: str) -> dict[str, str]:
    from forensics.catalog.sql import run_sql
    from forensics.ingest import pipeline as ingest
    from forensics.reports.serialize import flat
    from forensics.store import Store

    src = CASES[case]
    with tempfile.TemporaryDirectory() as d:
        ingest.run([str(src)], d, ingest.Options(jobs=1))
        out = {}
        for table, order in TABLES:
            df = run_sql(Store(d), f"SELECT * FROM {table} ORDER BY {order}")
            df = df.drop([c for c in DROP.get(table, []) + ["clock_offset_s"] if c in df.columns])
            for c in ("source_file", "path"):
                if c in df.columns:
                    df = df.with_columns(pl.col(c).str.replace(str(src), f"sample_logs/{case}", literal=True))
            out[table] = flat(df).write_csv()
        return out


# internal queries whose defaults select nothing on the sample store (the toolkit always gives these):
# a window of the incident, one of its failed rooms
_WINDOW = {"since": "2026-11-20 14:00:00", "before": "2026-11-20 14:30:00"}
_GRID = {"lo_us": 1795183200000000, "bucket_us": 60_000_000}  # 2026-11-20 14:00 UTC, 1 min buckets
GOLDEN_PARAMS = {
    "_room_story": {"room": 2347773765981786812},
    "_active_ranks": _WINDOW,
    "_perfetto_counters": {**_WINDOW, "host": "prefill-0"},
    "_room_counts": _GRID,
    "_room_pick": _GRID,
    "_mark_counts": _GRID,
    "_mark_pick": _GRID,
    "_reply_counts": _GRID,
    "_reply_pick": _GRID,
    "_failed_requests_window": _WINDOW,
    "_far_inputs": {"lo": "2026-11-20 13:00:00", "hi": "2026-11-20 15:00:00"},
}


def query_snapshot(store, name: str) -> dict:
    """A named query's output on a store, as CSV (nested values as JSON), with its column names.

    An internal query (queries/_<name>.sql) runs over the query its header names, at its defaults
    or GOLDEN_PARAMS; one without an ORDER BY of its own (counts the caller adds up) is written in sorted rows."""
    from forensics.catalog import named as queries
    from forensics.reports.serialize import flat
    from forensics.store import Store

    if name.startswith("_"):
        df = queries.run_internal(Store(store), name, GOLDEN_PARAMS.get(name), materialize=True)
        if "ORDER BY" not in queries.internal(name).sql.upper():
            df = df.sort(df.columns, nulls_last=True)
    else:
        df = queries.run(Store(store), name)
    # inputs are named by their path: the checkout's place is normalised away
    return {"columns": df.columns, "csv": flat(df).write_csv().replace(f"{ROOT}/", "")}


def sample_store(path) -> str:
    """Ingest all of sample_logs/ into `path` (once), with its verdicts; return it."""
    from forensics.analysis import verdicts
    from forensics.ingest import pipeline as ingest
    from forensics.store import Store

    ingest.run([str(ROOT / "sample_logs")], str(path), ingest.Options())
    verdicts.ensure(Store(path))
    return str(path)


# CLI snapshots (tests/golden/cli/<name>.txt): args, exit code, stdout and stderr together, the
# store's path written STORE; run on the store of sample_store
CLI_SNAPSHOTS = {
    f"sql-{what}-{width}": [*args, "--max-width", str(width)]
    for width in (100, 160)
    for what, args in {
        "rooms": ["sql", "SELECT * FROM rooms ORDER BY bootstrap_room LIMIT 4"],
        "abort-storms": ["sql", "-f", "queries/abort_storms.sql"],
    }.items()
} | {f"query-wedges-{width}": ["query", "run", "wedges", "--max-width", str(width)] for width in (100, 160)}


# the incident's server side alone (no transcripts): its logs and transfer traces, copied into a
# folder of their own and ingested from beside it, so that every path is `incident/...` (and a table
# of them as wide on every machine)
SERVER_INPUTS = ("prefill-0", "decode-0", "decode-1", "trace")
# the same reports at three terminal widths on that store (tests/golden/cli/<name>.txt): the
# columns kept, folded and left out as the width shrinks
SERVER_SNAPSHOTS = {
    f"{what}-{width}": [*args, "--max-width", str(width)]
    for width in (80, 120, 160)
    for what, args in {
        "timeline-server": [
            "timeline",
            "--since",
            "2026-11-20T14:09:00",
            "--until",
            "2026-11-20T14:12:00",
            "--bucket",
            "1m",
        ],
        "room-server": ["room", "2347773765981786812"],
    }.items()
}


def server_store(path) -> str:
    """Ingest the incident's SERVER_INPUTS into `path`, read from `<path>-inputs/incident/`; return it."""
    import os
    import shutil

    from forensics.analysis import verdicts
    from forensics.ingest import pipeline as ingest
    from forensics.store import Store

    inputs = pathlib.Path(f"{path}-inputs")
    for d in SERVER_INPUTS:
        shutil.copytree(ROOT / "sample_logs" / "incident" / d, inputs / "incident" / d)
    cwd = os.getcwd()
    os.chdir(inputs)
    try:
        ingest.run(["incident"], str(path), ingest.Options())
    finally:
        os.chdir(cwd)
    verdicts.ensure(Store(path))
    return str(path)


def cli_snapshot(store, args: list[str]) -> str:
    """One CLI run as a snapshot: its args, exit code, stdout and stderr, the store's path normalised."""
    import os

    from click.testing import CliRunner

    from forensics.cli import main as cli
    from forensics.reports import render

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        r = CliRunner(env={"COLUMNS": None, "TZ": "UTC"}).invoke(cli, [*args, "--store", str(store)])
    finally:
        os.chdir(cwd)
        render.TABLE.max_width, render.TABLE.wide = None, False
    text = f"args: {' '.join(args)}\nexit: {r.exit_code}\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}"
    return text.replace(str(store), "STORE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--update", action="store_true", help="rewrite the golden files")
    args = ap.parse_args()
    if args.update:
        from forensics.catalog import named as queries

        with tempfile.TemporaryDirectory() as d:
            store = sample_store(d)
            for name in [*queries.all_queries(), *queries.internal_queries()]:
                p = GOLDEN / "queries" / f"{name}.csv"
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(query_snapshot(store, name)["csv"])
                print(f"wrote {p.relative_to(ROOT)}")
            for name, argv in CLI_SNAPSHOTS.items():
                p = GOLDEN / "cli" / f"{name}.txt"
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(cli_snapshot(store, argv))
                print(f"wrote {p.relative_to(ROOT)}")
        with tempfile.TemporaryDirectory() as d:
            store = server_store(f"{d}/store")
            for name, argv in SERVER_SNAPSHOTS.items():
                p = GOLDEN / "cli" / f"{name}.txt"
                p.write_text(cli_snapshot(store, argv))
                print(f"wrote {p.relative_to(ROOT)}")
    for case in CASES:
        for table, text in snapshot(case).items():
            p = GOLDEN / case / f"{table}.csv"
            if args.update:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
                print(f"wrote {p.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
