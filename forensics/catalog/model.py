"""The derived data model: every view and macro of forensics/catalog/views/, read from its header.

One file per object, named after it (`rooms.sql` defines the view `rooms`), documented in the
grammar of forensics.catalog.headers. The headers are the one source: the build order (a
topological sort over their `inputs`), `forensics tables` and the views' entries in the listing
of every table all come from them. Base tables, the ones parsers write, stay declared in
forensics.core.schema; `tables()` lists both.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import re
from importlib import resources

import polars as pl

from forensics.catalog import headers
from forensics.core import schema
from forensics.core.errors import ForensicsError

_SCALARS = {
    "VARCHAR": pl.Utf8,
    "BIGINT": pl.Int64,
    "INTEGER": pl.Int32,
    "SMALLINT": pl.Int16,
    "TINYINT": pl.Int8,
    "HUGEINT": pl.Int128,
    "UBIGINT": pl.UInt64,
    "UINTEGER": pl.UInt32,
    "DOUBLE": pl.Float64,
    "FLOAT": pl.Float32,
    "BOOLEAN": pl.Boolean,
    "DATE": pl.Date,
    "TIMESTAMPTZ": schema.TS,
    "TIMESTAMP WITH TIME ZONE": schema.TS,
    "TIMESTAMP": pl.Datetime("us"),
}


def _split_top(text: str) -> list[str]:
    """`a, b(c, d), e` -> ['a', 'b(c, d)', 'e']."""
    depth, cut, out = 0, 0, []
    for i, ch in enumerate(text + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[cut:i].strip())
            cut = i + 1
    return [s for s in out if s]


def polars_type(duck: str):
    """The polars type of a DuckDB type as headers write it (as catalog.duck_type writes it back)."""
    t = duck.strip()
    if t.endswith("[]"):
        return pl.List(polars_type(t[:-2]))
    m = re.fullmatch(r"(STRUCT|MAP)\s*\((.*)\)", t, re.S | re.I)
    if m and m.group(1).upper() == "MAP":
        k, v = _split_top(m.group(2))
        return pl.List(pl.Struct({"key": polars_type(k), "value": polars_type(v)}))
    if m:
        fields = {}
        for f in _split_top(m.group(2)):
            fm = re.fullmatch(r'"?(\w+)"?\s+(.+)', f, re.S)
            if not fm:
                raise ValueError(f"cannot read struct field {f!r} of {duck!r}")
            fields[fm.group(1)] = polars_type(fm.group(2))
        return pl.Struct(fields)
    dm = re.fullmatch(r"DECIMAL\s*\((\d+)\s*,\s*(\d+)\)", t, re.I)
    if dm:
        return pl.Decimal(int(dm.group(1)), int(dm.group(2)))
    if t.upper() not in _SCALARS:
        raise ValueError(f"no polars type for DuckDB type {duck!r}")
    return _SCALARS[t.upper()]


@dataclasses.dataclass(frozen=True)
class Derived:
    """One object of the derived model: its header, the file that defines it and that file's SQL."""

    header: headers.Header
    file: str
    sql: str

    @property
    def name(self) -> str:
        return self.header.name

    @property
    def kind(self) -> str:
        return self.header.kind

    def signature(self) -> list[tuple[str, str | None]]:
        """A macro's parameters as its SQL declares them: (name, default as written, None without one)."""
        m = re.search(rf"CREATE\s+OR\s+REPLACE\s+MACRO\s+{self.name}\s*\(", self.sql, re.I)
        if m is None:
            return []
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(self.sql[i], 0)
            i += 1
        out = []
        for arg in _split_top(self.sql[m.end() : i - 1]):
            name, _, default = arg.partition(":=")
            out.append((name.strip(), default.strip() or None))
        return out

    def table(self) -> schema.Table:
        """The object as the schema reference documents it: a view's columns, a table macro's result."""
        return schema.Table(
            self.name,
            self.header.description,
            tuple(schema.Column(c.name, polars_type(c.type), c.doc) for c in self.header.columns),
            view=True,
        )


def _order(objects: dict[str, Derived]) -> list[str]:
    """A topological order over the declared inputs; among the objects ready at once, by name."""
    deps = {n: {i for i in d.header.inputs if i in objects and i != n} for n, d in objects.items()}
    users: dict[str, set[str]] = {n: set() for n in objects}
    for n, ds in deps.items():
        for d in ds:
            users[d].add(n)
    ready = [n for n, ds in deps.items() if not ds]
    heapq.heapify(ready)
    out = []
    while ready:
        n = heapq.heappop(ready)
        out.append(n)
        for u in users[n]:
            deps[u].discard(n)
            if not deps[u]:
                heapq.heappush(ready, u)
    if len(out) < len(objects):
        left = sorted(set(objects) - set(out))
        raise ForensicsError(
            f"derived views read each other in a cycle: {', '.join(left)}",
            file="forensics/catalog/views",
            help="a bug in the toolkit: their `-- inputs:` lines name one another",
        )
    return out


def _created(name: str, sql: str) -> str | None:
    """What the SQL creates under `name`: a view, a table macro or a (scalar) macro."""
    m = re.search(rf"CREATE\s+OR\s+REPLACE\s+(VIEW|MACRO)\s+{name}\b(.*)", sql, re.I | re.S)
    if m is None:
        return None
    if m.group(1).upper() == "VIEW":
        return "view"
    return "table macro" if re.match(r"\s*\([^)]*\)\s*AS\s+TABLE\b", m.group(2), re.I) else "macro"


@functools.cache
def derived() -> dict[str, Derived]:
    """Every view and macro of forensics/catalog/views/, in build order."""
    pkg = resources.files("forensics.catalog.views")
    objects = {}
    for entry in pkg.iterdir():
        if not entry.name.endswith(".sql") or entry.name.startswith("_"):
            continue
        stem = entry.name[:-4]
        text = entry.read_text()
        file = f"forensics/catalog/views/{entry.name}"
        h = headers.parse(stem, text, file)
        created = _created(stem, headers.body(text))
        if created is None:
            raise ForensicsError(
                f"{file} creates no view or macro named {stem}",
                file=file,
                help=f"the file defines one object, named after it: CREATE OR REPLACE VIEW {stem} AS ...",
            )
        if h.kind is not None and h.kind != created:
            raise ForensicsError(
                f"{file}: the header says kind {h.kind!r}, the SQL creates a {created}",
                file=file,
                help="make them agree",
            )
        h.kind = created
        untyped = [c.name for c in h.columns if not c.type]
        if untyped:
            raise ForensicsError(
                f"{file}: columns without a type: {', '.join(untyped)}",
                file=file,
                help="declare each column as `--   <name> <TYPE>: <meaning>`, the type as DESCRIBE gives it",
            )
        _check_grain(h, headers.body(text), file)
        objects[stem] = Derived(h, entry.name, text)
    return {n: objects[n] for n in _order(objects)}


GRAINS = ("room",)


def _check_grain(h: headers.Header, body: str, file: str) -> None:
    """A room-grain view declares the order its rows are written in, and it is its SQL's: a merged
    snapshot (forensics.catalog.refresh) is sorted by the header's."""
    if h.grain is None:
        if h.order is not None:
            raise ForensicsError(f"{file}: an `-- order:` without a grain", file=file, help="add `-- grain: room`")
        return
    if h.grain not in GRAINS or h.kind != "view":
        raise ForensicsError(
            f"{file}: grain {h.grain!r} on a {h.kind}", file=file, help="`-- grain: room`, on a view only"
        )
    # the view's own ORDER BY starts a line after its last SELECT
    final = re.findall(r"^ORDER BY (.+?);?\s*$", body, re.M)
    written = [c.strip().split(".", 1)[-1] for c in final[-1].split(",")] if final else []
    declared = [] if h.order in (None, "none") else [c.strip() for c in h.order.split(",")]
    if h.order is None or written != declared:
        raise ForensicsError(
            f"{file}: the header's order ({h.order}) is not the view's ORDER BY ({', '.join(written) or 'none'})",
            file=file,
            help="write its final ORDER BY in `-- order:` (table prefixes dropped), or `none`",
        )


def room_grain() -> dict[str, str | None]:
    """The room-grain views, in build order: each one's ORDER BY (None: it has none)."""
    return {
        n: None if d.header.order == "none" else d.header.order
        for n, d in derived().items()
        if d.header.grain == "room"
    }


def views() -> dict[str, schema.Table]:
    """The derived views, in build order, as the schema reference documents tables."""
    return {n: d.table() for n, d in derived().items() if d.kind == "view"}


def macros() -> dict[str, Derived]:
    """The macros (table and scalar), in build order."""
    return {n: d for n, d in derived().items() if d.kind != "view"}


def tables() -> dict[str, schema.Table]:
    """Every table a connection holds: the stored ones (forensics.core.schema), then the derived views."""
    return {**schema.TABLES, **views()}
