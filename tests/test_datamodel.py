"""The derived data model against its headers: every view's and table macro's columns against
DESCRIBE on the sample store, every macro's parameters against its signature, every input read
declared, and named queries' defaults against the macros they call."""

import re

import duckdb
import pytest

from forensics.catalog import connect, derived_views, model
from forensics.catalog import named as queries
from forensics.core import schema
from forensics.store import Store

DERIVED = model.derived()
RELATIONS = sorted(n for n, d in DERIVED.items() if d.kind in ("view", "table macro"))
MACROS = sorted(model.macros())


def _canonical(con, duck_type: str) -> str:
    """The type as DESCRIBE writes it (TIMESTAMPTZ is TIMESTAMP WITH TIME ZONE, struct fields unquoted)."""
    return con.execute(f"DESCRIBE SELECT CAST(NULL AS {duck_type}) AS x").fetchall()[0][1]


@pytest.fixture(scope="module")
def con(sample_store):
    """The views as their SQL computes them: snapshots, when a report left some, store HUGEINT as DOUBLE."""
    c = connect(Store(sample_store))
    for _, sql in derived_views():
        c.execute(sql)
    yield c
    c.close()


@pytest.mark.parametrize("name", RELATIONS)
def test_header_columns_are_describes(con, name):
    d = DERIVED[name]
    rel = name if d.kind == "view" else f"SELECT * FROM {name}()"
    got = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {rel}").fetchall()]
    declared = [(c.name, _canonical(con, c.type)) for c in d.header.columns]
    assert declared == got, f"forensics/catalog/views/{d.file}: the `-- columns:` lines differ from DESCRIBE"
    for c in d.header.columns:
        assert c.doc, f"forensics/catalog/views/{d.file}: column {c.name} needs a meaning"
    assert d.header.description, f"forensics/catalog/views/{d.file}: add `-- description:`"


@pytest.mark.parametrize("name", MACROS)
def test_macro_header_is_its_signature(name):
    d = DERIVED[name]
    declared = [(p.name, p.default) for p in d.header.params]
    assert declared == d.signature(), f"forensics/catalog/views/{d.file}: `-- parameters:` differ from the signature"
    for p in d.header.params:
        assert p.doc and p.type, f"forensics/catalog/views/{d.file}: parameter {p.name} needs a type and a meaning"
    if d.kind == "macro":
        assert d.header.returns is not None, f"forensics/catalog/views/{d.file}: a scalar macro says `-- returns:`"


def _code(sql: str) -> str:
    """SQL without comments and string literals: what it reads."""
    return "".join(m.group(1) or " " for m in re.finditer(r"([^'-]+|-(?!-))|'(?:[^']|'')*'|--[^\n]*", sql))


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_inputs_are_what_it_reads(name):
    d = DERIVED[name]
    known = set(schema.TABLES) | {f"raw_{t}" for t in schema.TABLES} | set(DERIVED)
    unknown = [i for i in d.header.inputs if i not in known]
    assert not unknown, f"forensics/catalog/views/{d.file}: inputs {unknown} are no table, view or macro"
    words = set(re.findall(r"\b\w+\b", _code(d.sql))) - {name}
    read = sorted(n for n in DERIVED if n in words)
    missing = [n for n in read if n not in d.header.inputs]
    assert not missing, f"forensics/catalog/views/{d.file}: reads {missing} without naming them in `-- inputs:`"


def test_build_order_follows_inputs():
    order = list(DERIVED)
    for n, d in DERIVED.items():
        for i in d.header.inputs:
            if i in DERIVED:
                assert order.index(i) < order.index(n), f"{n} is built before its input {i}"


@pytest.mark.parametrize("name", sorted(queries.all_queries()))
def test_query_defaults_are_the_macros(name):
    """A named query that passes its parameters on to a macro declares the macro's defaults."""
    q = queries.get(name)
    params = {p.name: p for p in q.params}
    for macro in re.findall(r"\b(\w+)\s*\(", _code(q.sql)):
        if macro not in model.macros():
            continue
        for arg, default in model.macros()[macro].signature():
            if arg in params and re.search(rf"\b{arg}\s*:=\s*CAST\(\${arg}\b", q.sql):
                assert float(params[arg].default) == float(default), (
                    f"queries/{name}.sql: {arg} defaults to {params[arg].default}, {macro}() to {default}"
                )


def test_every_object_is_listed_with_its_columns():
    """`forensics tables NAME` knows every view and macro, with types for each column."""
    from click.testing import CliRunner

    from forensics.cli import main

    for name, d in DERIVED.items():
        res = CliRunner().invoke(main, ["tables", name, "--format", "json"])
        assert res.exit_code == 0, res.output
        import json

        (doc,) = json.loads(res.stdout)["tables"]
        assert doc["kind"] == d.kind and all(c["type"] for c in doc["columns"]), name
        if d.kind != "view":
            assert [(p["parameter"], p["default"]) for p in doc["parameters"]] == d.signature(), name


def test_types_round_trip():
    """A header's type, read as polars, is written back as DuckDB spells it (the listing shows it)."""
    from forensics.catalog import duck_type

    c = duckdb.connect()
    for d in DERIVED.values():
        for col in d.header.columns:
            assert _canonical(c, duck_type(model.polars_type(col.type))) == _canonical(c, col.type), (d.name, col)


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_one_object_a_file(name):
    """File name = object name: a file that created two objects would hide the second from the listing."""
    d = DERIVED[name]
    created = re.findall(r"CREATE\s+OR\s+REPLACE\s+(?:VIEW|MACRO)\s+(\w+)", _code(d.sql), re.I)
    assert created == [name], f"forensics/catalog/views/{d.file} creates {created}"
