"""DuckDB over the store: every table a view of the same name, plus the derived views.

Base tables are read from Parquet as written (`raw_<table>`). The public view `<table>` applies the
explicit clock offsets of the store (clocks.json) to `ts`, so raw rows are never rewritten and
every query reads corrected time; `clock_offset_s` says how much each row was moved.
Derived views and macros (forensics/catalog/views/<name>.sql) are created after the base views, in
the order their headers' inputs give (forensics.catalog.model).

Once the views are built the connection is locked (`_lock`): DuckDB may then read only the files
the views read, change no setting, and load no extension, whatever SQL runs on it next.

Columns an analysis step supplies (the verdicts of `turns`) are not in the raw Parquet: the public
view joins them from <store>/derived/verdicts/<version>/<input>.parquet, the version the caller
gives (`Verdicts`, what forensics.analysis.verdicts.ensure returns), else the one named in
<store>/derived/verdicts/CURRENT (which it writes too). Until then they are NULL.

`connect` keeps nothing between calls: the snapshot key of the store's state is computed once per
connection, and the caller is told the set its views read (`Opened`); forensics.analysis.session
holds one connection per command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl

from forensics.catalog import model, refresh
from forensics.core import schema
from forensics.core.text import EXCERPT_MARK
from forensics.store import Store, checks, hive, snapshots
from forensics.store.snapshots import VERDICTS, verdicts_dir

_DUCK_TYPES = {
    pl.Utf8: "VARCHAR",
    pl.Int64: "BIGINT",
    pl.Int32: "INTEGER",
    pl.Int16: "SMALLINT",
    pl.Int8: "TINYINT",
    pl.Int128: "HUGEINT",
    pl.UInt64: "UBIGINT",
    pl.UInt32: "UINTEGER",
    pl.Float64: "DOUBLE",
    pl.Float32: "FLOAT",
    pl.Boolean: "BOOLEAN",
    pl.Date: "DATE",
}


def duck_type(dtype) -> str:
    if isinstance(dtype, pl.Datetime):
        return "TIMESTAMPTZ" if dtype.time_zone else "TIMESTAMP"
    if isinstance(dtype, pl.List):
        inner = dtype.inner
        if isinstance(inner, pl.Struct) and [f.name for f in inner.fields] == ["key", "value"]:
            return "MAP(VARCHAR, VARCHAR)"
        return f"{duck_type(inner)}[]"
    if isinstance(dtype, pl.Decimal):
        return f"DECIMAL({dtype.precision},{dtype.scale})"
    if isinstance(dtype, pl.Struct):
        return "STRUCT(" + ", ".join(f'"{f.name}" {duck_type(f.dtype)}' for f in dtype.fields) + ")"
    for k, v in _DUCK_TYPES.items():
        if dtype == k:
            return v
    raise TypeError(f"no DuckDB type for {dtype}")


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _empty_select(t: schema.Table, columns: tuple[schema.Column, ...] | None = None) -> str:
    cols = ", ".join(f'CAST(NULL AS {duck_type(c.dtype)}) AS "{c.name}"' for c in columns or t.columns)
    return f"SELECT {cols} WHERE false"


@dataclasses.dataclass
class Verdicts:
    """The verdicts a connection joins into `turns`: their version, and the spare folder that holds
    them when the store cannot be written (its owner keeps it alive: forensics.analysis.verdicts)."""

    version: str | None
    spare: Path | None = None
    keep: object = None  # what keeps the spare folder alive (a TemporaryDirectory), for as long as this lives


def verdict_files(store: Store, verdicts: Verdicts | None = None) -> tuple[str | None, list[str]]:
    """The verdict version in force (`verdicts`', else CURRENT's) and its files, one per input."""
    version, spare = (verdicts.version, verdicts.spare) if verdicts is not None else (None, None)
    if version is None:
        try:
            version = (verdicts_dir(store) / "CURRENT").read_text().strip()
        except OSError:
            return None, []
    folders = [verdicts_dir(store) / version] + ([spare] if spare else [])
    files = []
    for key in sorted(store.committed()):
        path = next((p for p in (f / f"{key}.parquet" for f in folders) if p.exists()), None)
        if path is not None:
            files.append(str(path))
    return version or None, files


@dataclasses.dataclass
class Opened:
    """What one `connect` found: the snapshot set of the store's state (`key`, computed once per
    connection) and the set its views read (`snapshots`; None: they are computed from the tables)."""

    key: Path | None = None
    snapshots: Path | None = None
    # the derived objects the connection holds, when it was opened with `only` (None: all of them)
    created: set[str] | None = None


# the Hive partition columns as DuckDB reads them from a part's path (forensics/store/hive.py)
_HIVE = "hive_partitioning = true, hive_types = {'host': VARCHAR, 'date': DATE}"


def _read(files: list[str], filename: bool = False) -> str:
    """read_parquet of a table's parts, the partition values (host, date) read back from their paths."""
    return (
        f"read_parquet([{', '.join(_quote(f) for f in files)}], union_by_name = true, "
        f"{'filename = true, ' if filename else ''}{_HIVE})"
    )


def _raw_select(t: schema.Table, files: list[str], have: set[str]) -> str:
    """The raw view of a table over its parts: the stored columns in the schema's order (host from
    the path; no date column, which is the path's alone). `have`: the columns the files hold."""
    have = have | {"host"}
    cols = ", ".join(
        f'"{c.name}"' if c.name in have else f'CAST(NULL AS {duck_type(c.dtype)}) AS "{c.name}"' for c in t.stored
    )
    return f"SELECT {cols} FROM {_read(files)}"


def _key_of(filename: str) -> str:
    """The store key of a part, from its file name part-<key>-<n>.parquet (forensics/store/hive.py)."""
    return f"split_part(parse_filename({filename}), '-', 2)"


def _with_analysis(t: schema.Table, files: list[str], verdicts: list[str]) -> str:
    """The public view of a table whose analysis columns come from verdict files: NULL until there are some."""
    raw = _read(files, filename=True)
    if not verdicts:
        cols = ", ".join(
            f'CAST(NULL AS {duck_type(c.dtype)}) AS "{c.name}"' if c.analysis else f'"{c.name}"' for c in t.columns
        )
        return f"SELECT {cols} FROM {raw}"
    # a verdict file is named after its input, and the key is unique within one input
    v = f"read_parquet([{', '.join(_quote(f) for f in verdicts)}], union_by_name = true, filename = true, hive_partitioning = false)"
    cols = ", ".join(f'{"v" if c.analysis else "r"}."{c.name}"' for c in t.columns)
    on = " AND ".join(
        [f"parse_filename(v.filename, true) = {_key_of('r.filename')}"]
        + [f'v."{k}" IS NOT DISTINCT FROM r."{k}"' for k in schema.VERDICT_KEY]
    )
    return f"SELECT {cols} FROM {raw} r LEFT JOIN {v} v ON {on}"


# a laptop runs this after an incident: spill big joins to disk rather than eat all memory
MEMORY_LIMIT = "4GB"
# computing the derived views is the one step whose joins and sorts outgrow 1 GiB of resident
# memory on a large store: it spills past this, leaving room for Python, polars and Arrow buffers.
# An operator that cannot spill (the wedges' windows over tens of millions of stats lines) gets
# MEMORY_LIMIT back for its view alone.
VIEWS_MEMORY_LIMIT = "700MB"


@dataclasses.dataclass(frozen=True)
class Memory:
    """The memory DuckDB may use: for queries (`query`), and while the derived views are computed (`views`)."""

    query: str = MEMORY_LIMIT
    views: str = VIEWS_MEMORY_LIMIT


def connect(
    store: Store,
    offsets: dict[str, float] | None = None,
    materialize: bool = False,
    verdicts: Verdicts | None = None,
    opened: Opened | None = None,
    computing: Callable[[], contextlib.AbstractContextManager] | None = None,
    whole_excerpts: bool = False,
    memory: Memory | None = None,
    only: str | None = None,
    lazy: bool = False,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the store's tables and views.

    `offsets` overrides the store's clocks.json (host -> seconds the host's clock is ahead);
    `verdicts` names the verdicts `turns` joins (by default CURRENT's). Derived views already
    materialized for this exact store state are read from their snapshot set; `materialize`
    computes and keeps the missing ones (reports do, ad-hoc SQL does not), inside `computing()`.
    `opened`, when given, is told which set that is. `whole_excerpts` makes excerpt() keep its text
    whole, marked with its cut, for a masking that cuts after it masks (forensics.reports.redact).
    `memory` bounds DuckDB's memory (by default MEMORY_LIMIT, VIEWS_MEMORY_LIMIT while computing).
    `only`, the SQL the connection is opened for when that is all it runs: of the derived views and
    macros created from their SQL, only the ones it names and what they read (`needed`), since DuckDB
    binds a view's whole tree of views when it is created. `lazy`: the views read their snapshots, and
    the table macros whose defaults a view snapshots (LAZY_MACROS) are left for `provide` to create
    when a query names them (the caller goes through `provide`, as a Session does).
    """
    opened = Opened() if opened is None else opened
    memory = Memory() if memory is None else memory
    if store.exists():
        store.upgrade()
        _require_plain_path(store)
    con = duckdb.connect(":memory:")
    try:
        checks.require_complete(store, con=con)
    except BaseException:
        con.close()
        raise
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"SET memory_limit = '{memory.query}'")
    with contextlib.suppress(duckdb.Error):  # a setting of DuckDB 1.3 and later
        # a few probes ASOF-joined to every stats line are a sort-merge, not a loop over each line
        con.execute("SET asof_loop_join_threshold = 0")
    with contextlib.suppress(duckdb.Error):  # an optimizer of DuckDB 2
        # on the long plans of the derived views (wedge_intervals: seventy CTEs) this optimizer is
        # the largest part of planning, on a small store most of a query's time, and it saved
        # nothing when they ran
        con.execute("SET disabled_optimizers = 'projection_pullup'")
    if store.exists():
        con.execute(f"SET temp_directory = {_quote(str(store.root / '.tmp' / 'duckdb'))}")
    offsets = store.clocks() if offsets is None else offsets
    con.execute("CREATE TABLE clock_offsets (host VARCHAR PRIMARY KEY, offset_s DOUBLE)")
    if offsets:
        con.executemany("INSERT INTO clock_offsets VALUES (?, ?)", sorted(offsets.items()))
    _unsummarised(con, store)
    version, verdict_paths = verdict_files(store, verdicts)
    readable = list(verdict_paths)
    for t in schema.TABLES.values():
        if t.view:
            continue
        files = store.table_files(t.name)
        readable += files
        try:
            if files:
                checks.require_readable(store, files)
                src = _raw_select(t, files, _require_own_columns(con, store, t, files))
            else:
                src = _empty_select(t, t.stored)
            con.execute(f'CREATE VIEW "raw_{t.name}" AS {src}')
        except duckdb.Error:
            err = checks.unreadable(store, files)
            if err is None:
                raise
            raise err from None
        names = {c.name for c in t.columns}
        if any(c.analysis for c in t.columns):
            public = _with_analysis(t, files, verdict_paths) if files else _empty_select(t)
            con.execute(f'CREATE VIEW "{t.name}" AS {public}')
        elif {"ts", "host"} <= names:
            con.execute(
                f'CREATE VIEW "{t.name}" AS SELECT r.* REPLACE ('
                "r.ts - to_microseconds(CAST(round(COALESCE(o.offset_s, 0) * 1e6) AS BIGINT)) AS ts), "
                "COALESCE(o.offset_s, 0) AS clock_offset_s "
                f'FROM "raw_{t.name}" r LEFT JOIN clock_offsets o USING (host)'
            )
        else:
            con.execute(f'CREATE VIEW "{t.name}" AS SELECT * FROM "raw_{t.name}"')
    if store.exists():
        # the one computation of the key per connection: every input, offset, verdict file and view
        opened.key = snapshot_key(store, offsets, (version, [Path(f).name for f in verdict_paths]))
    cached = _cached(con, opened.key, materialize)
    if cached:
        # binding the views' own SQL takes seconds on a large store, and the snapshots replace them:
        # only the table macros are created, after the views they read
        opened.snapshots = opened.key
        readable += cached
        made = set()
        for name, sql in _macros():
            if (only is None or name[:-4] in needed(only)) and not (lazy and name[:-4] in LAZY_MACROS):
                _create(con, name, sql)
                made.add(name[:-4])
        opened.created = set(_views()) | made if lazy else None if only is None else set(_views()) | needed(only)
    else:
        # computing the snapshots binds each view once, as it is computed: binding them all here
        # too would double what a small store's ingest spends in DuckDB
        compute = materialize and opened.key is not None
        own_sql = derived_views() if only is None else [(f, q) for f, q in derived_views() if f[:-4] in needed(only)]
        with computing() if computing is not None and compute else contextlib.nullcontext():
            for name, sql in [] if compute else own_sql:
                _create(con, name, sql)
            folder, paths = _use_cache(con, store, opened.key, offsets, materialize, memory)
            if compute and folder is None:  # the snapshots could not be written: the views' own SQL
                for name, sql in own_sql:
                    _create(con, name, sql)
        opened.snapshots = folder
        readable += paths
        opened.created = None if only is None or (compute and folder is not None) else set(needed(only))
    if whole_excerpts:
        if opened.created is not None:
            opened.created.add("excerpt")
        mark = f"chr({ord(EXCERPT_MARK)})"
        con.execute(
            "CREATE OR REPLACE MACRO excerpt(s, n) AS "
            f"CASE WHEN s IS NULL THEN NULL ELSE s || {mark} || CAST(n AS VARCHAR) || {mark} END"
        )
    _lock(con, readable)
    return con


# Table macros that a derived view snapshots at their defaults (incident_wedges, incident_abort_storms):
# reports read the views, and only SQL asking other thresholds calls the macros. Creating one binds it:
# wedge_intervals' seventy CTEs cost a small store's report a fifth of its time.
LAZY_MACROS = frozenset({"wedge_intervals", "abort_storm_intervals"})


def _unsummarised(con, store: Store) -> None:
    """`wedge_unsummarised`: the hosts with lines of an input that ingest did not summarise
    (forensics.ingest.derive: a store ingested before it), whose wedges the tables answer."""
    hosts = set()
    if store.exists():
        summarised = {hive.key_of(f) for f in store.table_files("wedge_streams")} & {
            hive.key_of(f) for f in store.table_files("wedge_signals")
        }
        for table in ("batches", "events"):
            hosts |= {
                hive.values_of(f).get("host") for f in store.table_files(table) if hive.key_of(f) not in summarised
            }
    con.execute("CREATE TABLE wedge_unsummarised (host VARCHAR)")
    if hosts:
        con.executemany("INSERT INTO wedge_unsummarised VALUES (?)", [(h,) for h in sorted(hosts, key=str)])


def _require_plain_path(store: Store) -> None:
    """DuckDB reads a partition value from every folder of a part's path: a folder above the store
    named host=... or date=... would be read as the rows' host or date."""
    from forensics.core.errors import StoreError

    for seg in store.tables.resolve().parts:
        if seg.partition("=")[0] in hive.KEYS and "=" in seg:
            raise StoreError(
                f"the store's path has a folder named {seg}, which Hive readers take for a partition",
                file=str(store.root),
                help="move or link the store to a path without host=... or date=... folders",
            )


def _create(con, name: str, sql: str) -> None:
    try:
        con.execute(sql)
    except duckdb.Error as e:
        from forensics.core.errors import ForensicsError

        raise ForensicsError(
            f"derived view {name} does not build: {str(e).splitlines()[0]}",
            file=f"forensics/catalog/views/{name}",
            help="a bug in the toolkit, not in your data: report it with this line",
        ) from None


_WORD = re.compile(r"\w+")
_COMMENT = re.compile(r"--[^\n]*")


def needed(sql: str) -> frozenset[str]:
    """The derived views and macros `sql` names (as a word, in any case), and every one they read."""
    reads = _reads()
    want = set(reads) & {w.lower() for w in _WORD.findall(sql)}
    todo = list(want)
    while todo:
        for d in reads[todo.pop()] - want:
            want.add(d)
            todo.append(d)
    return frozenset(want)


def provide(con: duckdb.DuckDBPyConnection, opened: Opened, sql: str) -> None:
    """Create on `con` the derived views and macros `sql` needs that its `connect(only=...)` left out.

    Creating a view or macro is neither a setting nor a file access, so the lock allows it."""
    if opened.created is None:
        return
    missing = needed(sql) - opened.created
    for d in model.derived().values():  # in build order: each after what it reads
        if d.name in missing:
            _create(con, d.file, d.sql)
            opened.created.add(d.name)


@functools.cache
def _reads() -> dict[str, frozenset[str]]:
    """The other derived objects each one reads: those its header's inputs declare, and any its SQL
    names outside a comment (a word, in any case, may name more than it reads, never fewer)."""
    from forensics.catalog import headers

    objs = model.derived()
    return {
        n: (set(d.header.inputs) | {w.lower() for w in _WORD.findall(_COMMENT.sub("", headers.body(d.sql)))})
        & objs.keys() - {n}
        for n, d in objs.items()
    }


def _macros() -> list[tuple[str, str]]:
    """(file name, statement) of every macro of the derived SQL, in build order."""
    return [(d.file, d.sql) for d in model.macros().values()]


def _require_own_columns(con, store: Store, t: schema.Table, files: list[str]) -> set[str]:
    """The columns `t`'s files hold; a file of another table among them (copied over one of its
    parts) would be counted as `t`'s rows, and is refused."""
    known = {c.name for c in t.columns + t.stored_only}
    cols = [
        r[0]
        for r in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet([{', '.join(_quote(f) for f in files)}], union_by_name = true, hive_partitioning = false)"
        ).fetchall()
    ]
    if all(c in known for c in cols):
        return set(cols)
    found = checks.foreign_columns(t, files)
    path, extra = found if found else (files[0], [c for c in cols if c not in known])
    raise checks.damaged(store, path, f"holds columns that table {t.name} does not have ({', '.join(extra[:3])})")


def _lock(con: duckdb.DuckDBPyConnection, readable: list[str]) -> None:
    """From here on DuckDB reads only `readable`, writes no file and changes no setting.

    allowed_paths is DuckDB's only exception to enable_external_access = false, and it admits
    writes as well as reads: forensics.catalog.sql refuses every statement that writes, so the
    store's own files are readable and nothing else is reachable at all. Spilling to temp_directory
    is the buffer manager's and keeps working.
    """
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    # a frame of the calling Python code is not part of the store
    con.execute("SET python_enable_replacements = false")
    con.execute("SET allowed_paths = $paths", {"paths": sorted({os.path.abspath(p) for p in readable})})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


_VIEW_NAME = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)", re.I)


def snapshot_key(store: Store, offsets: dict, verdicts: tuple[str | None, list[str]]) -> Path:
    """The snapshot set of a store state: a folder named after everything the derived views depend on: inputs, offsets, verdicts and view SQL."""
    from forensics import __version__

    h = hashlib.sha256()
    h.update(__version__.encode())
    h.update(json.dumps(sorted(store.committed())).encode())
    h.update(json.dumps(sorted(offsets.items())).encode())
    # the verdict version, and which inputs have verdicts yet: replies read them
    h.update(json.dumps([verdicts[0], sorted(verdicts[1])]).encode())
    for name, sql in derived_views():
        h.update(name.encode() + sql.encode())
    return store.root / "derived" / h.hexdigest()[:24]


def _views() -> list[str]:
    """The derived views that get snapshots, in the order they are built."""
    return [n for n, d in model.derived().items() if d.kind == "view"]


def verify(store: Store, repair: bool = False) -> checks.Report:
    """`forensics verify`: the store's checks, its snapshot sets checked against the views defined here."""
    return checks.verify(store, repair, views=_views())


def _point_at(con, views: list[str], folder: Path) -> list[str]:
    paths = []
    for name in views:
        path = folder / f"{name}.parquet"
        con.execute(
            f'CREATE OR REPLACE VIEW "{name}" AS SELECT * FROM read_parquet({_quote(str(path))}, hive_partitioning = false)'
        )
        paths.append(str(path))
    return paths


def _cached(con, cache: Path | None, materialize: bool) -> list[str]:
    """The derived views read from the snapshot set `cache` of this exact store state, when it is sound.

    The joins behind them take minutes on a large incident; their result only changes when an
    input, a clock offset, the verdicts or the view SQL does, and all are in the set's folder name.
    A set that fails its check is removed to be recomputed (`materialize`) or left alone, with a note.
    Returns the snapshots the views now read (none: the views are still to be created).
    """
    if cache is None:
        return []
    views = _views()
    fd = snapshots.hold(cache)
    if fd is None:
        return []
    problem = snapshots.check(cache, views)
    if problem is None:
        snapshots.keep_while(con, fd)
        snapshots.sweep(cache.parent, {cache.name, VERDICTS})
        return _point_at(con, views, cache)
    os.close(fd)
    snapshots.note(
        f"derived-view cache {cache} {problem}: "
        + ("recomputed" if materialize else "not used (the views are computed from the tables)")
    )
    if materialize:
        snapshots.remove(cache)
    return []


def _use_cache(
    con, store: Store, cache: Path | None, offsets: dict, materialize: bool, memory: Memory
) -> tuple[Path | None, list[str]]:
    """Compute the snapshot set `cache` of this store state (`materialize`) and swap the views for it.

    Views are done in build order, so each one is computed from its already cached inputs.
    Returns the set and the snapshots the views now read (None and none: the views stay SQL).
    """
    if cache is None or not materialize:
        return None, []
    views = _views()
    committed = store.committed()
    basis = refresh.basis(_version(), offsets, derived_views())
    try:
        build = snapshots.Build(cache.parent, cache.name, {"basis": basis, "inputs": sorted(committed)})
    except OSError:
        return None, []  # a read-only store still answers, just without the cache
    base = refresh.find_base(cache.parent, basis, committed, views)
    con.execute(f"SET memory_limit = '{memory.views}'")
    try:
        try:
            _compute(con, store, views, build, base, committed, memory)
        except duckdb.Error as e:
            if base is None:
                raise
            snapshots.note(
                f"extending the derived-view snapshots of {base[0].name} failed "
                f"({str(e).splitlines()[0]}): computing them for the whole store"
            )
            for _, sql in derived_views():
                con.execute(sql)
            build.restart()
            build.about = {"basis": basis, "inputs": sorted(committed)}
            _compute(con, store, views, build, None, committed, memory)
        folder = build.publish()
    except (OSError, duckdb.Error) as e:
        # back to the views' own SQL: the half-written snapshots go
        for _, sql in derived_views():
            con.execute(sql)
        build.abandon()
        snapshots.note(
            f"the derived-view snapshots could not be written ({str(e).splitlines()[0]}): "
            "the views are computed from the tables by every query"
        )
        return None, []
    finally:
        con.execute(f"SET memory_limit = '{memory.query}'")
        if base is not None:
            os.close(base[1])
    snapshots.keep_while(con, build.fd)
    # snapshots of an older state of the store are never read again
    snapshots.sweep(cache.parent, {cache.name, folder.name, VERDICTS})
    return folder, _point_at(con, views, folder)


def _compute(
    con,
    store: Store,
    views: list[str],
    build: snapshots.Build,
    base: tuple[Path, int, set[str]] | None,
    committed: set[str],
    memory: Memory,
) -> None:
    """Write every derived view's snapshot into `build`, each view then reading its own.

    From `base`, a set of an earlier state of the store, only the rooms that the inputs committed
    since name are computed again (forensics.catalog.refresh); without one, everything is.
    """
    inc = None
    if base is not None:
        new_files = [
            f for table in refresh.ROOM_TABLES for f in store.table_files(table) if hive.key_of(f) not in base[2]
        ]
        try:
            inc = refresh.Incremental(con, base[0], new_files)
        except duckdb.Error:
            inc = None  # new inputs without a bootstrap_room column: nothing to go by
        if inc is not None and not inc.worth_it():
            inc = None
        if inc is not None:
            build.about["extends"] = base[0].name
    bounds_followed = False
    done: dict[str, Path] = {}
    # the macros are bound when created: each after the views it reads, as the build order has it
    for d in model.derived().values():
        if d.kind != "view":
            _create(con, d.file, d.sql)
            continue
        name, path = d.name, build.path(d.name)
        if inc is not None and name in refresh.ROOM_LOCAL and (bounds_followed or name not in refresh.NEEDS_BOUNDS):
            _create(con, d.file, d.sql)
            inc.write(name, path, done)
        else:
            _copy_view(con, name, path, memory, _view_query(d.sql))
        con.execute(
            f'CREATE OR REPLACE VIEW "{name}" AS SELECT * FROM read_parquet({_quote(str(path))}, hive_partitioning = false)'
        )
        build.add(name)
        if name in refresh.ROOM_LOCAL:
            done[name] = path
        if inc is not None and name == "clock_bounds":
            bounds_followed = inc.follow_bounds(path)
    if inc is not None:
        build.about["rooms_recomputed"] = inc.touched


_VIEW_QUERY = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+\w+\s+AS\s+(.*?);?\s*$", re.I | re.S)


def _view_query(sql: str) -> str:
    """The query of a view's file (one object a file, comments before it)."""
    return _VIEW_QUERY.search(sql).group(1)


def _copy_view(con, name: str, path: Path, memory: Memory, query: str | None = None) -> None:
    select = query or f'SELECT * FROM "{name}"'
    sql = f"COPY ({select}) TO {_quote(str(path))} (FORMAT parquet)"
    try:
        con.execute(sql)
    except duckdb.OutOfMemoryException as e:
        snapshots.note(
            f"derived view {name} did not fit in {memory.views} ({str(e).splitlines()[0]}): "
            f"computed again within {memory.query}"
        )
        con.execute(f"SET memory_limit = '{memory.query}'")
        try:
            con.execute(sql)
        finally:
            con.execute(f"SET memory_limit = '{memory.views}'")


def _version() -> str:
    from forensics import __version__

    return __version__


def derived_views() -> list[tuple[str, str]]:
    """(file name, SQL) of forensics/catalog/views/*.sql, in build order (forensics.catalog.model)."""
    return [(d.file, d.sql) for d in model.derived().values()]
