"""Bringing the derived-view snapshots up to a new store state without recomputing the whole store.

Most of the cost of the derived views is in the ones whose rows belong to one bootstrap room and
are computed from that room's rows alone (ROOM_LOCAL): `transfers`, `room_events`, `room_failures`
and `rooms`. When the inputs committed since the last snapshot set add rows to a few rooms, only
those rooms are computed again, from every input's rows for them; the other rooms' rows are
copied from the last set. The views that look across rooms (clock estimates, reply links,
wedges, storms) are computed whole, from the room-level snapshots.

A set may be extended only when nothing else it depends on moved: same toolkit version, same
clock offsets, same view SQL (its `basis`), and no input it covered has gone (a replaced piece
of a grown file, say). `room_failures` orders failures with `clock_bounds`, which every room
feeds: the rooms with failures on both hosts of a pair whose bound moved are computed again too,
and when that is most rooms, it and `rooms` are computed whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import duckdb

from forensics.catalog import model
from forensics.core import schema
from forensics.store import snapshots


def _room_local() -> tuple[dict[str, str | None], frozenset[str], tuple[str, ...]]:
    """From the views' headers (`-- grain: room`, `-- order:`, `-- inputs:`): each room-local view
    and the ORDER BY a merged snapshot is written in, so that it is in the order a whole computation
    writes; those that read the global clock bounds (`clock_bounds`, directly or through another
    room-local view); and the stored tables they read, whose new rows name the touched rooms."""
    objs = model.derived()
    local = model.room_grain()
    bounds: set[str] = set()
    tables: list[str] = []
    for name in local:  # in build order: what a view reads is settled before it
        for i in objs[name].header.inputs:
            if i == "clock_bounds" or i in bounds:
                bounds.add(name)
            elif i in schema.TABLES and i not in tables:
                tables.append(i)
    return local, frozenset(bounds), tuple(tables)


ROOM_LOCAL, NEEDS_BOUNDS, ROOM_TABLES = _room_local()
# the share of the last set's rooms past which computing everything costs less than these rooms alone
_MAX_SHARE = 0.5


def basis(version: str, offsets: dict, views: list[tuple[str, str]]) -> str:
    """What a snapshot set depends on besides its inputs and the verdicts."""
    h = hashlib.sha256()
    h.update(version.encode())
    h.update(json.dumps(sorted(offsets.items())).encode())
    for name, sql in views:
        h.update(name.encode() + sql.encode())
    return h.hexdigest()[:24]


_KEY = re.compile(r"[0-9a-f]{24}")


def find_base(derived: Path, want_basis: str, inputs: set[str], views: list[str]) -> tuple[Path, int, set[str]] | None:
    """The newest readable snapshot set of the same basis whose inputs are a subset of `inputs`.

    Returns (folder, shared-lock descriptor, its inputs), the lock held so no sweep removes it
    while the new set is built from it.
    """
    try:
        children = sorted(derived.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for folder in children:
        if not _KEY.fullmatch(folder.name):
            continue
        try:
            m = snapshots.read_manifest(folder)
        except ValueError:
            continue
        covered = m.get("inputs")
        if m.get("basis") != want_basis or not isinstance(covered, list) or not set(covered) <= inputs:
            continue
        fd = snapshots.hold(folder)
        if fd is None:
            continue
        if snapshots.check(folder, views) is None:
            return folder, fd, set(covered)
        os.close(fd)
    return None


def _q(path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


class Incremental:
    """The rooms named by new inputs, and the room-local views restricted to them, on one connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, base: Path, new_files: list[str]):
        self.con, self.base = con, base
        if new_files:
            files = ", ".join(_q(f) for f in new_files)
            con.execute(
                "CREATE TEMP TABLE _touched AS SELECT DISTINCT bootstrap_room FROM "
                f"read_parquet([{files}], union_by_name = true, hive_partitioning = false) "
                "WHERE bootstrap_room IS NOT NULL AND bootstrap_room <> 0"
            )
        else:
            con.execute("CREATE TEMP TABLE _touched (bootstrap_room BIGINT)")
        self.touched = con.execute("SELECT count(*) FROM _touched").fetchone()[0]
        self.rooms_before = con.execute(
            f"SELECT count(*) FROM read_parquet({_q(base / 'rooms.parquet')}, hive_partitioning = false)"
        ).fetchone()[0]

    def worth_it(self) -> bool:
        """Recomputing most rooms alone costs more than computing them all at once."""
        return self.touched <= _MAX_SHARE * max(self.rooms_before, 1)

    def write(self, name: str, path: Path, done: dict[str, Path]) -> None:
        """Write room-local view `name` of the new state to `path`: the base set's rows of untouched
        rooms, and the touched rooms computed again (the views it reads restricted to them)."""
        con = self.con
        restricted = []
        for table in ROOM_TABLES:
            con.execute(f'ALTER VIEW "{table}" RENAME TO "_all_{table}"')
            con.execute(
                f'CREATE VIEW "{table}" AS SELECT * FROM "_all_{table}" '
                "WHERE bootstrap_room IN (SELECT bootstrap_room FROM _touched)"
            )
            restricted.append(table)
        try:
            # the room-local views already written read their new snapshots, restricted too
            for dep, dep_path in done.items():
                con.execute(
                    f'CREATE OR REPLACE VIEW "{dep}" AS SELECT * FROM read_parquet({_q(dep_path)}, hive_partitioning = false) '
                    "WHERE bootstrap_room IN (SELECT bootstrap_room FROM _touched)"
                )
            order = ROOM_LOCAL[name]
            kept = (
                f"SELECT * FROM read_parquet({_q(self.base / f'{name}.parquet')}, hive_partitioning = false) "
                "ANTI JOIN _touched USING (bootstrap_room)"
            )
            sql = f'SELECT * FROM ({kept} UNION ALL BY NAME SELECT * FROM "{name}")'
            if order:
                sql += f" ORDER BY {order}"
            cols = ", ".join(f'"{c[0]}"' for c in con.execute(f'DESCRIBE "{name}"').fetchall())
            con.execute(f"COPY (SELECT {cols} FROM ({sql})) TO {_q(path)} (FORMAT parquet)")
        finally:
            for table in restricted:
                con.execute(f'DROP VIEW "{table}"')
                con.execute(f'ALTER VIEW "_all_{table}" RENAME TO "{table}"')
            for dep, dep_path in done.items():
                con.execute(
                    f'CREATE OR REPLACE VIEW "{dep}" AS SELECT * FROM read_parquet({_q(dep_path)}, hive_partitioning = false)'
                )

    def follow_bounds(self, bounds: Path) -> bool:
        """Add the rooms whose failures the new clock bounds may order differently; False when
        that leaves too many rooms to compute alone.

        room_failures reads clock_bounds.ahead_s of each ordered pair of hosts among a room's own
        failures (no row: 0), so a room changes only if a pair of its failure hosts did.
        """
        con, base = self.con, _q(self.base / "clock_bounds.parquet")
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE _moved AS
            SELECT coalesce(n.host_a, b.host_a) AS host_a, coalesce(n.host_b, b.host_b) AS host_b
            FROM read_parquet({_q(bounds)}, hive_partitioning = false) n
            FULL JOIN read_parquet({base}, hive_partitioning = false) b ON n.host_a = b.host_a AND n.host_b = b.host_b
            WHERE coalesce(n.ahead_s, 0) IS DISTINCT FROM coalesce(b.ahead_s, 0)""")
        failures = f"read_parquet({_q(self.base / 'room_failures.parquet')}, hive_partitioning = false)"
        con.execute(f"""
            INSERT INTO _touched
            SELECT DISTINCT fa.bootstrap_room
            FROM {failures} fa JOIN {failures} fb USING (bootstrap_room)
            JOIN _moved m ON fa.host = m.host_a AND fb.host = m.host_b
            WHERE fa.bootstrap_room NOT IN (SELECT bootstrap_room FROM _touched)""")
        self.touched = con.execute("SELECT count(*) FROM _touched").fetchone()[0]
        return self.worth_it()
