"""`forensics compact`: an input's small parts of one partition merged, no row changed.

A large input is written pass by pass, each pass a part per partition, so a partition can hold
many parts of a few MB: readers that open every file (Spark, Trino) pay for each. Compaction
merges the consecutive small parts of one input and one partition into parts of about `target`
bytes, rows in the order they were read, then commits the input's new manifest with one rename
(commits.rewrite: the merged parts wait in .tmp until then, and the next ingest finishes a
compaction that was killed after it). Parts of different inputs are never merged: an input stays
what a grown file's next piece replaces and `verify --repair` drops, whole. The `files` row's
`data_files` keeps the parts as ingest wrote them; inputs/<key>.json lists them as they are.
"""

from __future__ import annotations

import dataclasses
import os

from forensics.store import commits, hive

TARGET = 64 << 20  # bytes of a merged part: what Spark and Trino read well per file


@dataclasses.dataclass
class Report:
    inputs: int = 0  # inputs compacted
    parts_before: int = 0
    parts_after: int = 0
    bytes_merged: int = 0


def plan(parts: list[dict], target: int) -> list[list[dict]]:
    """Groups of two or more consecutive small parts of one partition, each up to about `target` bytes."""
    from forensics.store import _read_order

    by_dir: dict[str, list[dict]] = {}
    for p in sorted(parts, key=lambda p: _read_order(p["file"])):
        by_dir.setdefault(p["file"].rsplit("/", 1)[0], []).append(p)
    groups = []
    for ps in by_dir.values():
        run: list[dict] = []
        size = 0
        for p in ps + [None]:
            if p is not None and p["bytes"] < target and size < target:
                run.append(p)
                size += p["bytes"]
                continue
            if len(run) > 1:
                groups.append(run)
            run, size = ([p], p["bytes"]) if p is not None and p["bytes"] < target else ([], 0)
    return groups


def compact(store, target: int = TARGET) -> Report:
    """Compact every committed input of `store` (under its lock); what was done."""
    rep = Report()
    lock = store.lock()
    try:
        store.upgrade(locked=True)
        store.clear_tmp()
        for key, m in sorted(store.manifests().items()):
            rep.parts_before += len(m["parts"])
            groups = plan(m["parts"], target)
            if not groups:
                rep.parts_after += len(m["parts"])
                continue
            merged = {p["file"] for g in groups for p in g}
            folder = store.tmp / f"{key}.{os.getpid()}"
            folder.mkdir(parents=True)
            for g in groups:
                _merge(store, m, g, folder)
                rep.bytes_merged += sum(p["bytes"] for p in g)
            keep = [p for p in m["parts"] if p["file"] not in merged]
            commits.rewrite(store, key, folder, keep, sorted(merged))
            rep.inputs += 1
            rep.parts_after += len(keep) + len(groups)
    finally:
        lock.close()
    return rep


def _merge(store, m: dict, group: list[dict], folder) -> None:
    import polars as pl

    from forensics.core import schema
    from forensics.store.parts import write_file

    first = group[0]["file"]
    table = hive.table_of(first)
    frames = [pl.read_parquet(commits.resolve(store, m, p["file"]), hive_partitioning=False) for p in group]
    df = schema.conform(table, pl.concat(frames, how="diagonal_relaxed"))
    if "host" in df.columns:
        df = df.drop("host")
    staged = hive.staged_rel(first)
    head, tag = staged.rsplit("/", 1)
    # a name of its own, read in the place of the first part it merges (`_read_order`)
    write_file(folder / head / f"{tag.removesuffix('.parquet')}m{len(group)}.parquet", df)
