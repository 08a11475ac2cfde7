"""Named queries: queries/<name>.sql, each with a documented header.

    -- name: <file stem>
    -- description: <one line>
    -- inputs: <tables and views it reads>
    -- parameters:
    --   <name> <TYPE> = <default>: <meaning>      (or `none`)
    -- columns:
    --   <column>: <meaning>

Parameters are bound by DuckDB (`$name`), never pasted into the SQL text.
"""

from __future__ import annotations

import dataclasses
import re
from importlib import resources

import polars as pl

from forensics.core.errors import ForensicsError, UsageError
from forensics.store import Store

_PARAM = re.compile(r"^(\w+)\s+([A-Z]+)\s*=\s*([^:]*?)\s*:\s*(.+)$")
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
    head, section = {}, None
    params: list[Param] = []
    columns: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        body = line[2:].rstrip()
        m = re.match(r"^ (name|description|inputs|parameters|columns):\s*(.*)$", body)
        if m:
            section = m.group(1)
            head[section] = m.group(2).strip()
            continue
        item = body.strip()
        if not item:
            continue
        if section == "parameters" and item != "none":
            pm = _PARAM.match(item)
            if not pm:
                raise ForensicsError(
                    f"query {name}: cannot read parameter line {item!r}",
                    file=f"queries/{name}.sql",
                    help="write `<name> <TYPE> = <default>: <meaning>`",
                )
            params.append(Param(*pm.groups()))
        elif section == "columns":
            col, _, doc = item.partition(":")
            columns[col.strip()] = doc.strip()
        elif section == "description":
            head["description"] += " " + item
    if head.get("name") != name:
        raise ForensicsError(
            f"query {name}: header name is {head.get('name')!r}",
            file=f"queries/{name}.sql",
            help="the `-- name:` line must equal the file stem",
        )
    return Query(
        name=name,
        description=head.get("description", ""),
        inputs=[s.strip() for s in head.get("inputs", "").split(",") if s.strip()],
        params=params,
        columns=columns,
        sql=text,
    )


def from_text(text: str) -> Query | None:
    """The documented header of SQL text that opens with one (`-- name: ...`, as queries/*.sql), else None."""
    m = re.match(r"\s*-- name:\s*(\w+)\s*$", text.lstrip().split("\n", 1)[0])
    return parse_header(m.group(1), text.lstrip()) if m else None


def all_queries() -> dict[str, Query]:
    pkg = resources.files("forensics.queries")
    out = {}
    for entry in sorted(pkg.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            stem = entry.name[:-4]
            out[stem] = parse_header(stem, entry.read_text())
    return out


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
