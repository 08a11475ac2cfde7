"""The header grammar of every SQL file of the toolkit: named queries, derived views and macros.

A file opens with `--` comment lines that document the one object it defines; the first line
that is not a comment ends the header.

    -- name: <object name, the file stem>
    -- kind: view | table macro | macro            (derived objects; what their SQL creates, checked)
    -- description: <one sentence>
    -- inputs: <name> [(<note>)], <name> [(<note>)], ...   (or none)
    -- over: <query>                               (an internal query that reads another's rows as `q`)
    -- parameters: none                            (or the header line alone, then one line each:)
    --   <name> <TYPE> = <default>: <meaning>
    --   <name> <TYPE>: <meaning>                  (a macro parameter without a default)
    -- returns: <TYPE>: <meaning>                  (a scalar macro only)
    -- grain: room                                 (a view whose rows of a bootstrap room come from its rows alone)
    -- order: <ORDER BY of the view> | none         (a room-grain view: the order its rows are written in)
    --   (description, inputs and returns go on on lines indented by three spaces)
    -- columns:
    --   <name> <TYPE>: <meaning>
    --   <name>: <meaning>                         (untyped: named queries may leave types to DuckDB)
    --     <a longer meaning goes on, on lines indented by five spaces or more>

- `inputs` names the tables, views and macros the object reads, comma-separated; a note in
  parentheses says what of it is read. The derived objects named there order their build (a
  topological sort, forensics.catalog.model), so every derived object a file reads must be named.
- `over` names the query whose rows an internal query (queries/_<name>.sql) reads as `q`: the
  toolkit runs it as `WITH q AS (<that query>) <this one>`, and so does its golden.
- `parameters` gives each one's DuckDB type and default as written (`NULL` for none). A macro's
  defaults are those of its signature (`:= default`); tests/test_datamodel.py holds the header to
  it, and a named query calling the macro to both.
- `grain: room` says each of the view's rows belongs to one bootstrap room and is computed from that
  room's rows alone: a new input's rooms are computed again and the others copied
  (forensics.catalog.refresh). Such a view declares its `order`, its final ORDER BY as written in
  its own columns (table prefixes dropped), or `none`; forensics.catalog.model holds it to the SQL.
- `columns` lists the result in order, each with a type as DuckDB names it (`BIGINT`,
  `TIMESTAMPTZ`, `STRUCT(...)[]`, `MAP(VARCHAR, VARCHAR)`) and its meaning. Derived objects
  declare types, which tests/test_datamodel.py holds to `DESCRIBE` on the sample store.
"""

from __future__ import annotations

import dataclasses
import re

from forensics.core.errors import ForensicsError

KINDS = ("view", "table macro", "macro")
_SECTION = re.compile(r"^ (name|kind|description|inputs|over|grain|order|parameters|returns|columns):\s*(.*)$")
_PARAM = re.compile(r"^(\w+)\s+([A-Z][A-Z0-9_ ()\[\],]*?)\s*(?:=\s*([^:]*?)\s*)?:\s*(.+)$")
_COLUMN = re.compile(r"^(\w+)(?:\s+([^:]+?))?\s*:\s*(.*)$")
_TYPED = re.compile(r"^([^:]+?)\s*:\s*(.+)$")


@dataclasses.dataclass
class Param:
    name: str
    type: str
    default: str | None  # as written; None: the parameter has no default (a scalar macro's argument)
    doc: str


@dataclasses.dataclass
class Column:
    name: str
    type: str | None  # as DuckDB names it; None where the header leaves it to DuckDB
    doc: str


@dataclasses.dataclass
class Header:
    name: str
    kind: str | None
    description: str
    inputs: list[str]
    params: list[Param]
    columns: list[Column]
    returns: Column | None = None
    over: str | None = None
    grain: str | None = None  # 'room': its rows of a room come from that room's rows alone
    order: str | None = None  # a room-grain view's ORDER BY, as its header writes it ('none': it has none)


def _inputs(text: str) -> list[str]:
    """The names of `a (note, with commas), b, c (note)`: the notes dropped."""
    depth, cut, out = 0, 0, []
    for i, ch in enumerate(text + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            item = text[cut:i].strip()
            cut = i + 1
            m = re.match(r"\w+", item)
            if m and m.group(0) != "none":
                out.append(m.group(0))
    return out


def parse(name: str, text: str, file: str) -> Header:
    """The header of `text` (the SQL of `file`), which must document an object called `name`."""

    def bad(what: str, help: str) -> ForensicsError:
        return ForensicsError(f"{file}: {what}", file=file, help=help)

    head: dict[str, str] = {}
    section = None
    params: list[Param] = []
    columns: list[Column] = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        body = line[2:].rstrip()
        m = _SECTION.match(body)
        if m:
            section = m.group(1)
            head[section] = m.group(2).strip()
            continue
        item = body.strip()
        if not item:
            continue
        if section in ("description", "inputs", "returns"):
            head[section] += " " + item
        elif section in ("parameters", "columns") and body.startswith("     "):
            last = params[-1] if section == "parameters" and params else columns[-1] if columns else None
            if last is None:
                raise bad(f"a continued line with nothing above it: {item!r}", "indent a new item by three spaces")
            last.doc = f"{last.doc} {item}".strip()
        elif section == "parameters" and item != "none":
            pm = _PARAM.match(item)
            if not pm:
                raise bad(f"cannot read parameter line {item!r}", "write `<name> <TYPE> = <default>: <meaning>`")
            params.append(Param(*pm.groups()))
        elif section == "columns":
            cm = _COLUMN.match(item)
            if not cm:
                raise bad(f"cannot read column line {item!r}", "write `<name> <TYPE>: <meaning>`")
            columns.append(Column(cm.group(1), cm.group(2), cm.group(3).strip()))
    if head.get("name") != name:
        raise bad(f"header name is {head.get('name')!r}", "the `-- name:` line must equal the file stem")
    kind = head.get("kind") or None
    if kind is not None and kind not in KINDS:
        raise bad(f"kind {kind!r}", "the `-- kind:` line says " + " | ".join(KINDS))
    returns = None
    if head.get("returns"):
        rm = _TYPED.match(head["returns"])
        if not rm:
            raise bad(f"cannot read `returns: {head['returns']}`", "write `-- returns: <TYPE>: <meaning>`")
        returns = Column(name, rm.group(1), rm.group(2))
    return Header(
        name=name,
        kind=kind,
        description=head.get("description", "").strip(),
        inputs=_inputs(head.get("inputs", "")),
        params=params,
        columns=columns,
        returns=returns,
        over=head.get("over") or None,
        grain=head.get("grain") or None,
        order=head.get("order") or None,
    )


def body(text: str) -> str:
    """The SQL after the header."""
    lines = text.splitlines(keepends=True)
    n = next((i for i, line in enumerate(lines) if not line.startswith("--")), len(lines))
    return "".join(lines[n:])
