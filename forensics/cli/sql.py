"""`forensics sql`, `forensics query` and `forensics tables`: SQL over the store, named analyses, the schema."""

from __future__ import annotations

import sys

import click

from forensics.cli.common import Output, handled, session_command, store_option
from forensics.cli.output import (
    FORMAT,
    OUTPUT,
    REDACT,
    check_output,
    output_format,
    output_options,
    table_options,
)
from forensics.reports.formats import RESULT, SCHEMA


def param_option(f):
    return click.option(
        "-p",
        "--param",
        "params",
        multiple=True,
        metavar="NAME[:TYPE]=VALUE",
        help="Bind a parameter, $NAME in the SQL (repeatable); never pasted into the text. "
        "A whole number binds as an integer, a decimal as a double, anything else as "
        "text; NAME:str= (or :int, :float, :bool) says which.",
    )(f)


RESULT_OUTPUT_HELP = (
    "Write the result to this file (outside the store); its extension (.csv .tsv .json "
    ".jsonl .md .parquet) chooses the format; - is stdout."
)


class SqlCommand(click.Command):
    """A command whose argument is SQL: SQL that opens with a `--` comment is the argument, not an option."""

    def parse_args(self, ctx, args):
        import re

        valued = {o for p in self.params if isinstance(p, click.Option) and not p.is_flag for o in p.opts}
        out = []
        for i, a in enumerate(args):
            if a == "--":
                out.extend(args[i:])
                break
            # an option is `--name` or `--name=value`; a comment has a space or line after its `--`
            sql = a.startswith("--") and not re.fullmatch(r"--[A-Za-z0-9][\w-]*(=.*)?", a, re.S)
            if sql and not (out and out[-1] in valued) and "--" not in args[i + 1 :]:
                # the options after it are still read; the SQL goes after `--`, where nothing is an option
                out.extend([*args[i + 1 :], "--", a])
                break
            out.append(a)
        return super().parse_args(ctx, out)


@click.command(cls=SqlCommand)
@click.argument("query", required=False)
@click.option(
    "-f",
    "--file",
    "sql_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Read the SQL from this file (- is stdin).",
)
@store_option
@output_options(RESULT, FORMAT, param_option, OUTPUT, table_options, REDACT, output_help=RESULT_OUTPUT_HELP)
@handled
@session_command(materialize=False)
def sql(query, sql_file, session, fmt, params, output):
    """Run read-only SQL over the store; every table is a view of the same name.

    The SQL is QUERY, or the file -f FILE, or stdin (QUERY `-`, or nothing on a pipe). A documented
    header (as in queries/*.sql) gives its parameters' types and defaults.

    SELECT (WITH, PIVOT, DESCRIBE, ...), SET VARIABLE and CREATE TEMP TABLE|VIEW|MACRO run; statements
    that change the store or settings, COPY, ATTACH, LOAD and files outside the store are refused.
    """
    from forensics.catalog import named

    text, source = _sql_text(query, sql_file)
    fmt = output_format(fmt, output, RESULT, "sql")
    _outside_store(output, session.store.root)
    header = named.from_text(text)
    values = header.bind(_params(params, typed=False)) if header else _params(params)
    check_output(output)
    session.only = text  # the one query of the command: the views it does not read are not bound
    return _result(session.sql(text, values, source=source), fmt, output)


def _sql_text(query, sql_file) -> tuple[str, str | None]:
    """The SQL and the file it came from: QUERY, -f FILE, or stdin (`-`, or no QUERY on a pipe)."""
    from forensics.core.errors import UsageError

    if query is not None and sql_file is not None:
        raise UsageError("give the SQL once: as QUERY or as -f FILE", help="drop one of them")
    if sql_file is None and query is None and sys.stdin.isatty():
        raise UsageError(
            "no SQL given",
            help='forensics sql "SELECT ...", forensics sql -f FILE.sql, or pipe it into `forensics sql -`',
        )
    if sql_file is None and query not in (None, "-"):
        return query, None
    path = sql_file or "-"
    if path == "-":
        text, source = sys.stdin.read(), "stdin"
    else:
        try:
            with open(path, encoding="utf-8") as f:
                text, source = f.read(), path
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(
                f"cannot read -f {path}: {getattr(e, 'strerror', None) or e}", help="give a readable UTF-8 file of SQL"
            ) from None
    if not any(ln.strip() and not ln.strip().startswith("--") for ln in text.splitlines()):
        raise UsageError(f"no SQL in {source}", help="the file or stdin holds no statement")
    return text, source


def _result(df, fmt, output) -> Output:
    """A result frame written as `fmt` to `output` (stdout when None or -): Parquet only to a file or a pipe."""
    from forensics.core.errors import UsageError
    from forensics.reports.render import BINARY, render, write_parquet

    if fmt in BINARY:
        if not output:
            raise UsageError(f"--format {fmt} writes a file", help=f"add -o FILE.{fmt} (or -o - into a pipe)")
        return Output(df, file=lambda m, path: write_parquet(m, path), fmt=fmt, binary=True)
    return Output(df, text=lambda m, out: render(m, fmt, out))


def _outside_store(output, store) -> None:
    """A result written into the store folder would be read back as part of it, or break it."""
    import os

    from forensics.core.errors import UsageError

    if (
        output
        and output != "-"
        and os.path.commonpath([os.path.realpath(output), os.path.realpath(store)]) == os.path.realpath(store)
    ):
        raise UsageError(f"-o {output} is inside the store {store}", help="write the result outside the store folder")


_PARAM_TYPES = {
    "str": str,
    "text": str,
    "varchar": str,
    "int": int,
    "integer": int,
    "bigint": int,
    "float": float,
    "double": float,
    "bool": "bool",
    "boolean": "bool",
}


def _params(items, typed: bool = True) -> dict:
    """-p NAME[:TYPE]=VALUE as bound values. Untyped, a whole number is an int, a decimal a float and the
    rest text (as DuckDB's and sqlite's shells guess); `typed=False` keeps untyped values text, for
    queries whose header declares the types."""
    import re

    from forensics.core.errors import UsageError

    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        name, colon, kind = k.partition(":")
        if not sep or not name:
            raise UsageError(f"-p wants NAME=VALUE, got {item!r}", help="e.g. -p n=41, -p host:str=decode-0")
        if colon and kind.lower() not in _PARAM_TYPES:
            raise UsageError(f"-p {k}: no type {kind!r}", help="types: str, int, float, bool")
        conv = _PARAM_TYPES[kind.lower()] if colon else None
        if conv is None and typed:
            conv = (
                int
                if re.fullmatch(r"[+-]?\d+", v)
                else float
                if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", v)
                else str
            )
        try:
            if conv == "bool":
                if v.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError(v)
                out[name] = v.lower() in ("true", "1", "yes", "on")
            else:
                out[name] = conv(v) if conv else v
        except ValueError:
            raise UsageError(
                f"-p {k}={v}: {v!r} is not a {kind}", help=f"give a {kind}, or -p {name}:str=VALUE"
            ) from None
    return out


@click.command()
@click.argument("table", required=False)
@output_options(SCHEMA, FORMAT, table_options)
@click.option(
    "--store",
    "store",
    envvar="FORENSICS_STORE",
    type=click.Path(file_okay=False),
    help="Show this store's row counts too (default: ./forensics-store when it exists, or $FORENSICS_STORE).",
)
@handled
def tables(table, fmt, store):
    """Print the schema reference: every table, view and macro with its columns (and a store's row counts)."""
    import polars as pl

    from forensics.catalog import duck_type, model
    from forensics.core.errors import UsageError
    from forensics.reports.render import render

    # every name `forensics sql` reads: the stored tables, clock_offsets, the raw_<table> views
    # (forensics.catalog.connect), the derived views and the macros
    everything = model.tables()
    stored = {n: t for n, t in everything.items() if not t.view}
    everything = {**stored, "clock_offsets": _clock_offsets_table(), **{n: t for n, t in everything.items() if t.view}}
    raws = {f"raw_{n}": t for n, t in stored.items()}
    macros = model.macros()
    known = list(stored) + ["clock_offsets"] + list(raws) + [n for n in everything if everything[n].view]
    known += list(macros)
    names = [table] if table else known
    if table and table not in known:
        raise UsageError(f"no table {table!r}", help="known tables: " + ", ".join(known))
    counts = _row_counts(store)
    if counts is not None:
        counts = counts | {r: counts.get(t.name) for r, t in raws.items()}

    def kind(n: str) -> str:
        return macros[n].kind if n in macros else "view" if n in raws or everything[n].view else "table"

    def columns(n: str) -> list[tuple[str, str, str]]:
        if n in macros:
            h = macros[n].header
            return [(c.name, c.type, c.doc) for c in h.columns] or [("(returns)", h.returns.type, h.returns.doc)]
        cols = raws[n].stored if n in raws else everything[n].columns
        return [(c.name, duck_type(c.dtype), c.doc) for c in cols]

    def params(n: str) -> list:
        return macros[n].header.params if n in macros else []

    def doc(n: str) -> str:
        if n in raws:
            return f"`{raws[n].name}` as stored, before clock offsets (its `ts` as the host wrote it, where it has one)"
        return macros[n].header.description if n in macros else everything[n].doc

    if fmt == "json":
        from forensics.reports.serialize import dumps_json

        # one document: a reader parses it at once (several arrays back to back are not JSON)
        click.echo(
            dumps_json(
                {
                    "kind": "forensics.tables",
                    "version": 1,
                    "tables": [
                        {
                            "name": n,
                            "kind": kind(n),
                            "view": kind(n) == "view",
                            "doc": doc(n),
                            "rows": None if n in macros else (counts or {}).get(n),
                            "columns": [{"column": c, "type": t, "meaning": m} for c, t, m in columns(n)],
                        }
                        | (
                            {
                                "parameters": [
                                    {"parameter": p.name, "type": p.type, "default": p.default, "meaning": p.doc}
                                    for p in params(n)
                                ]
                            }
                            if n in macros
                            else {}
                        )
                        for n in names
                    ],
                }
            )
        )
        return
    for n in names:
        if n in raws and not table:
            if n == next(iter(raws)):  # all of them in one line
                line = f"{RAW_VIEWS}: {', '.join(raws)}"
                click.echo(f"\n{line}" if fmt == "table" else f"\n### `raw_<table>` (views)\n\n{line}\n")
            continue
        cols = columns(n)
        df = pl.DataFrame(
            {"column": [c for c, _, _ in cols], "type": [t for _, t, _ in cols], "meaning": [m for _, _, m in cols]}
        )
        rows = "" if n in macros else _rows_phrase(counts, n)
        label = "" if kind(n) == "table" else f" ({kind(n)})"
        if fmt == "table":
            click.echo(f"\n{n}{label}{rows}: {doc(n)}")
        elif fmt == "markdown":
            click.echo(f"\n### `{n}`{label}{rows}\n\n{doc(n)}\n")
        if params(n):
            render(
                pl.DataFrame(
                    {
                        "parameter": [p.name for p in params(n)],
                        "type": [p.type for p in params(n)],
                        "default": [p.default or "" for p in params(n)],
                        "meaning": [p.doc for p in params(n)],
                    }
                ),
                fmt,
                wrap=frozenset({"meaning"}),
            )
            if fmt == "markdown":
                click.echo()
        render(df, fmt, wrap=frozenset({"meaning"}))


RAW_VIEWS = (
    "raw_<table> (views): the stored rows before clock offsets, same columns as their table "
    "(raw_turns: the stored ones, before the verdicts); `forensics tables raw_<table>` lists them"
)


def _clock_offsets_table():
    import polars as pl

    from forensics.core import schema

    return schema.Table(
        "clock_offsets",
        "the clock offsets the views apply, one row per host set (`forensics clocks set`)",
        (
            schema.Column("host", pl.Utf8, "the host whose clock is offset"),
            schema.Column("offset_s", pl.Float64, "seconds its clock runs ahead: subtracted from its `ts`"),
        ),
    )


def _row_counts(store) -> dict | None:
    """Row counts of the store given, or of the default one when it exists; None without a store."""
    from forensics.analysis.session import Session
    from forensics.analysis.summary import row_counts
    from forensics.store import DEFAULT_STORE

    with Session.open(store or DEFAULT_STORE, materialize=False) as session:
        if not session.store.exists() and not store:
            return None
        return row_counts(session)


def _rows_phrase(counts: dict | None, name: str) -> str:
    if counts is None:
        return ""
    n = counts.get(name)
    return " — not computed yet (a report computes it)" if n is None else f" — {n:,} row{'' if n == 1 else 's'}"


@click.group()
def query():
    """Named analyses in queries/: list them, show one, run one with parameters."""


@query.command("list")
def query_list():
    """List the named queries with their descriptions."""
    from forensics.catalog import named as queries

    for q in queries.all_queries().values():
        click.echo(f"{q.name:26} {q.description}")


@query.command("show")
@click.argument("name")
@handled
def query_show(name):
    """Print a query's SQL with its documented header."""
    from forensics.catalog import named as queries

    click.echo(queries.get(name).sql)


@query.command("run")
@click.argument("name")
@store_option
@output_options(RESULT, FORMAT, param_option, OUTPUT, table_options, REDACT, output_help=RESULT_OUTPUT_HELP)
@handled
@session_command()
def query_run(name, session, fmt, params, output):
    """Run a named query; parameters are bound, never pasted into the SQL; their header declares the types."""
    from forensics.analysis import names

    fmt = output_format(fmt, output, RESULT, "query run")
    _outside_store(output, session.store.root)
    check_output(output)
    return _result(names.run_query(session, name, _params(params, typed=False)), fmt, output)
