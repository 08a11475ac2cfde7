"""Named queries: queries/<name>.sql, each with a documented header (the grammar of forensics.catalog.headers).

Parameters are bound by DuckDB (`$name`), never pasted into the SQL text.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from importlib import resources

import polars as pl

from forensics.catalog import headers
from forensics.core.errors import ForensicsError, UsageError
from forensics.store import Store

_CASTS = {"DOUBLE": float, "INTEGER": int, "BIGINT": int, "VARCHAR": str, "TIMESTAMP": str, "BOOLEAN": None}


@dataclasses.dataclass
class Param:
    name: str
    type: str
    default: str  # as written; NULL for none
    doc: str

    def convert(self, value):
        if value is None or (isinstance(value, str) and value.upper() == "NULL"):
            return None
        if self.type == "BOOLEAN":
            return str(value).lower() in ("1", "true", "yes", "on")
        try:
            return _CASTS.get(self.type, str)(value)
        except ValueError:
            raise UsageError(f"parameter {self.name} wants a {self.type}, got {value!r}") from None


@dataclasses.dataclass
class Query:
    name: str
    description: str
    inputs: list[str]
    params: list[Param]
    columns: dict[str, str]
    sql: str
    over: str | None = None  # the query whose rows this one reads as `q` (internal queries)

    def bind(self, given: dict | None = None) -> dict:
        given = dict(given or {})
        unknown = set(given) - {p.name for p in self.params}
        if unknown:
            raise UsageError(
                f"query {self.name} has no parameter {sorted(unknown)[0]!r}",
                help=f"its parameters: {', '.join(p.name for p in self.params) or 'none'}",
            )
        out = {}
        for p in self.params:
            if f"${p.name}" in self.sql:
                out[p.name] = p.convert(given.get(p.name, p.default))
        return out


def parse_header(name: str, text: str) -> Query:
    h = headers.parse(name, text, f"queries/{name}.sql")
    for p in h.params:
        if p.default is None:
            raise ForensicsError(
                f"query {name}: parameter {p.name} has no default",
                file=f"queries/{name}.sql",
                help="write `<name> <TYPE> = <default>: <meaning>` (NULL for none)",
            )
    return Query(
        name=name,
        description=h.description,
        inputs=h.inputs,
        params=[Param(p.name, p.type, p.default, p.doc) for p in h.params],
        columns={c.name: c.doc for c in h.columns},
        sql=text,
        over=h.over,
    )


def from_text(text: str) -> Query | None:
    """The documented header of SQL text that opens with one (`-- name: ...`, as queries/*.sql), else None."""
    m = re.match(r"\s*-- name:\s*(\w+)\s*$", text.lstrip().split("\n", 1)[0])
    return parse_header(m.group(1), text.lstrip()) if m else None


@functools.cache
def _all() -> dict[str, Query]:
    """Every file of queries/, read once: package data does not change while the process runs."""
    pkg = resources.files("forensics.queries")
    out = {}
    for entry in sorted(pkg.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            stem = entry.name[:-4]
            out[stem] = parse_header(stem, entry.read_text())
    return out


def all_queries() -> dict[str, Query]:
    """The named queries `forensics query` lists and runs."""
    return {k: v for k, v in _all().items() if not k.startswith("_")}


def internal_queries() -> dict[str, Query]:
    """The toolkit's own queries (queries/_<name>.sql): the SQL of reports and analyses, not listed."""
    return {k: v for k, v in _all().items() if k.startswith("_")}


def internal(name: str) -> Query:
    return internal_queries()[name]


def composed(q: Query) -> tuple[str, list[Query]]:
    """The SQL that runs `q`, and the queries whose parameters it takes: with the one it reads as `q`."""
    if q.over is None:
        return q.sql, [q]
    base = get(q.over)
    return f"WITH q AS (\n{base.sql}\n)\n{q.sql}", [base, q]


def run_internal(store: Store, name: str, params: dict | None = None, con=None, **kw) -> pl.DataFrame:
    """Run an internal query; `params` may hold those of the query it reads as well as its own."""
    from forensics.catalog.sql import run_sql

    sql, parts = composed(internal(name))
    given = dict(params or {})
    bound = {}
    for part in parts:
        mine = {p.name for p in part.params}
        bound.update(part.bind({k: v for k, v in given.items() if k in mine}))
    unknown = set(given) - {p.name for part in parts for p in part.params}
    if unknown:
        raise UsageError(f"query {name} has no parameter {sorted(unknown)[0]!r}")
    return run_sql(store, sql, bound, con=con, **kw)


def get(name: str) -> Query:
    qs = all_queries()
    if name not in qs:
        raise UsageError(f"no query named {name!r}", help="`forensics query list` shows them")
    return qs[name]


def run(store: Store, name: str, params: dict | None = None, offsets: dict | None = None, con=None) -> pl.DataFrame:
    """Run a named query with its parameters bound; reuse `con` when given."""
    from forensics.catalog.sql import run_sql

    q = get(name)
    return run_sql(store, q.sql, q.bind(params), offsets=offsets, con=con, materialize=True)
