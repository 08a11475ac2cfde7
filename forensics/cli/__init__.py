"""The `forensics` command line: parse options, call one library function, render.

Heavy libraries (polars, duckdb, rich) are imported inside the commands so `--help` stays fast.
"""

from __future__ import annotations

import functools
import sys

import click

from forensics.cli.output import output_format, table_options, write_file, write_text
from forensics.core import runtime

EXIT_FAILED = 1  # a failed run; usage errors exit 2 (ForensicsError.exit_code)


def store_option(f):
    from forensics.ingest.store import DEFAULT_STORE

    return click.option(
        "--store",
        "store",
        envvar="FORENSICS_STORE",
        default=DEFAULT_STORE,
        show_default=True,
        type=click.Path(file_okay=False),
        help="Store folder (or $FORENSICS_STORE).",
    )(f)


def format_option(choices=("table", "csv", "json", "markdown"), default="table"):
    return click.option(
        "--format", "fmt", type=click.Choice(choices), default=default, show_default=True, help="Output format."
    )


RESULT_FORMATS = ("table", "csv", "tsv", "json", "jsonl", "markdown", "parquet")


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


def redact_option(f):
    return click.option(
        "--redact",
        is_flag=True,
        help="Mask secrets, addresses, e-mails, domain names, home paths and host names (the same "
        "name gets the same pseudonym); stderr says what was masked.",
    )(f)


def _redactor(redact: bool, store):
    """The one Redactor an output's whole result model passes through, or None without --redact."""
    if not redact:
        return None
    from forensics.reports.redact import Redactor

    return Redactor.for_store(store)


def _say_redacted(redactor) -> None:
    if redactor is not None:
        click.echo(redactor.summary(), err=True)


def handled(f):
    """Render library errors in the one error shape; tracebacks only with --debug."""

    @functools.wraps(f)
    def wrapper(*a, **kw):
        from forensics.core.errors import ForensicsError
        from forensics.core.text import escape_control

        # the offending line or path of an error is input text: shown with its escapes visible
        try:
            out = f(*a, **kw)
            sys.stdout.flush()  # a reader that went away (`| head`) is seen here, not at exit
            return out
        except BrokenPipeError:
            _quiet_broken_pipe()
        except KeyboardInterrupt:
            # Ctrl-C in a report (or in the summary after an ingest committed): one line, the shell's code
            click.echo("forensics: interrupted (SIGINT)", err=True)
            sys.exit(130)
        except ForensicsError as e:
            if click.get_current_context().find_root().params.get("debug"):
                raise
            click.echo(escape_control(e.render()), err=True)
            sys.exit(e.exit_code)
        except Exception as e:  # a bug: still one error shape, the traceback behind --debug
            if click.get_current_context().find_root().params.get("debug"):
                raise
            damage = _store_damage(e, kw.get("store"))
            if damage is not None:
                click.echo(escape_control(damage.render()), err=True)
                sys.exit(damage.exit_code)
            click.echo(
                escape_control(
                    ForensicsError(
                        f"internal error: {type(e).__name__}: {e}",
                        help="rerun with `forensics --debug ...` and report the traceback",
                    ).render()
                ),
                err=True,
            )
            sys.exit(EXIT_FAILED)

    return wrapper


def _store_damage(e: Exception, store):
    """The StoreError behind a DuckDB failure, when a damaged store file is what failed."""
    if store is None or type(e).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
        return None
    from forensics.catalog.checks import explain_read_error
    from forensics.ingest.store import Store

    return explain_read_error(Store(store), e)


# `forensics ... | head`: stop quietly with 1, as Python's own recipe and rich's console do
EXIT_BROKEN_PIPE = 1


def _quiet_broken_pipe() -> None:
    """Stop quietly when stdout's reader has gone, as `cat` does; nothing left to flush at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def check_output(output) -> None:
    """A file to write needs an existing folder: said before any work, not as a traceback after it."""
    import os

    from forensics.core.errors import UsageError

    if not output or output == "-":
        return
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise UsageError(
            f"-o {output}: no folder {folder}", help=f"create it first (mkdir -p {folder}) or write elsewhere"
        )
    if os.path.isdir(output):
        raise UsageError(f"-o {output} is a folder", help="give a file name inside it")


def check_zone(tz: str) -> None:
    """An unknown --tz is refused before ingest creates anything."""
    from forensics.core.errors import UsageError

    try:
        import zoneinfo

        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, IsADirectoryError):
        raise UsageError(
            f"--tz {tz}: no such time zone", help="give an IANA zone name, e.g. UTC, Asia/Shanghai, America/Los_Angeles"
        ) from None


class _Group(click.Group):
    """click's own usage errors (an unknown option or command, a bad choice) in the one error shape."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from forensics.core.errors import UsageError
        from forensics.core.text import escape_control

        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # `forensics` alone: the help, as click gives it
            e.show()
            sys.exit(2)
        except click.UsageError as e:
            cmd = e.ctx.command_path if e.ctx else "forensics"
            click.echo(
                escape_control(UsageError(e.format_message(), help=f"`{cmd} --help` lists what it takes").render()),
                err=True,
            )
            sys.exit(2)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("forensics: interrupted", err=True)
            sys.exit(130)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="forensics")
def main(debug: bool) -> None:
    """Post-mortems of LLM serving incidents: SGLang PD logs, NIXL transfers, agent transcripts.

    Start with `forensics ingest DUMP_DIR`, then `forensics sql "SELECT ..."`.
    """
    runtime.configure()


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@store_option
@click.option("--host", help="Host name for every input (default: the folder or file name).")
@click.option("--role", type=click.Choice(["prefill", "decode", "unified"]), help="Server role (default: inferred).")
@click.option("--tz", default="UTC", show_default=True, help="Zone of naive timestamps, e.g. Asia/Shanghai.")
@click.option("--year", type=int, help="Year for timestamps that print none (NIXL/glog, MM-DD).")
@click.option(
    "--date",
    "log_date",
    metavar="YYYY-MM-DD",
    help="Date for lines that print a time only (2024 builds: `[16:43:29 TP0]`); a year alone acts as --year.",
)
@click.option("--run", "run_label", help="Label the inputs as one run, for `forensics compare`.")
@click.option(
    "--parser",
    "forced_format",
    metavar="NAME",
    help="Skip detection and read every input with this parser, notes too (see `forensics formats`).",
)
# the option's name until --parser, kept for one release so that scripts keep working
@click.option("--format", "deprecated_format", hidden=True)
@click.option("--jobs", "-j", type=int, help="Parallel workers (default: all cores).")
@click.option(
    "--clock-offset",
    multiple=True,
    metavar="HOST=SECONDS",
    help="Record that HOST's clock runs SECONDS ahead (repeatable).",
)
@handled
def ingest(
    paths, store, host, role, tz, year, log_date, run_label, forced_format, deprecated_format, jobs, clock_offset
):
    """Parse log files, folders and archives (.gz, .zst, .tar.gz) into the store."""
    runtime.configure_ingest()
    from forensics.cli.progress import IngestProgress
    from forensics.core.errors import UsageError
    from forensics.ingest import pipeline as ing
    from forensics.ingest.store import Store, offset_problem

    check_zone(tz)
    import os

    # a mistyped path is refused before the store folder is made
    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"no such file or directory: {p}", help="check the path given to ingest")
    if deprecated_format:
        if forced_format and forced_format != deprecated_format:
            raise UsageError(
                f"--parser {forced_format} and --format {deprecated_format} disagree",
                help="--format is the old name of --parser: pass --parser alone",
            )
        click.echo("warning: `ingest --format` is deprecated, use --parser", err=True)
        forced_format = deprecated_format
    offsets = {}
    for item in clock_offset:
        h, sep, v = item.partition("=")
        try:
            offsets[h] = float(v)
        except ValueError:
            raise UsageError(f"--clock-offset wants HOST=SECONDS, got {item!r}") from None
        if not sep or not h:
            raise UsageError(f"--clock-offset wants HOST=SECONDS, got {item!r}")
        if why := offset_problem(offsets[h]):
            raise UsageError(
                f"--clock-offset {item}: {why}", help="an offset is a finite number of seconds within a day"
            )
    opts = ing.Options(
        host=host, role=role, tz=tz, year=year, date=log_date, run=run_label, format=forced_format, jobs=jobs
    )
    from forensics.ingest import stop

    with stop.handling():
        try:
            with IngestProgress() as prog:
                results = ing.run(list(paths), store, opts, prog)
            for h, v in offsets.items():
                Store(store).set_clock(h, v)
            from forensics.analysis import verdicts

            try:
                verdicts.ensure(Store(store))
            except stop.Interrupted as e:
                e.phase, e.total = "verdicts", len(results)
                raise
        except stop.Interrupted as e:
            _interrupted(e)
    IngestProgress.summary(results)
    if not any(r.status in ("ingested", "duplicate", "failed") for r in results):
        from forensics.cli.progress import nothing_line

        click.echo(nothing_line(paths, results), err=True)
        sys.exit(EXIT_FAILED)
    from forensics.analysis import summary as sm
    from forensics.cli.progress import computing
    from forensics.reports.summary import lines

    # the derived views are computed here, once, so the first report after an ingest is quick;
    # what was ingested is committed by now, so a failure here is said, and the ingest's exit kept
    try:
        with computing(Store(store)):
            model = sm.build(Store(store))
    except Exception as e:  # noqa: BLE001
        if click.get_current_context().find_root().params.get("debug"):
            raise
        from forensics.core.text import escape_control

        click.echo(
            escape_control(
                f"warning: ingest committed its inputs, but the store summary failed: {type(e).__name__}: {e}"
            ),
            err=True,
        )
        click.echo(
            "  = help: `forensics verify` checks the store; `forensics --debug summary` shows the traceback", err=True
        )
    else:
        click.echo("", err=True)
        for line in lines(model):
            click.echo(line, err=True)
    if any(r.status == "failed" for r in results):
        sys.exit(EXIT_FAILED)


def _interrupted(e) -> None:
    """One line on a signal, then out at once: threads still winding down write nothing that counts."""
    import os

    from forensics.core.text import escape_control
    from forensics.ingest import stop

    click.echo("forensics: " + escape_control(e.line()), err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    stop.end_fork_server()
    os._exit(e.exit_code)


def result_output(f):
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Write the result to this file (outside the store); its extension (.csv .tsv .json "
        ".jsonl .md .parquet) chooses the format; - is stdout.",
    )(f)


@main.command(cls=SqlCommand)
@click.argument("query", required=False)
@click.option(
    "-f",
    "--file",
    "sql_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Read the SQL from this file (- is stdin).",
)
@store_option
@format_option(RESULT_FORMATS)
@param_option
@result_output
@table_options
@redact_option
@handled
def sql(query, sql_file, store, fmt, params, output, redact):
    """Run read-only SQL over the store; every table is a view of the same name.

    The SQL is QUERY, or the file -f FILE, or stdin (QUERY `-`, or nothing on a pipe). A documented
    header (as in queries/*.sql) gives its parameters' types and defaults.

    SELECT (WITH, PIVOT, DESCRIBE, ...), SET VARIABLE and CREATE TEMP TABLE|VIEW|MACRO run; statements
    that change the store or settings, COPY, ATTACH, LOAD and files outside the store are refused.
    """
    from forensics.analysis import verdicts
    from forensics.catalog import named
    from forensics.catalog.sql import run_sql
    from forensics.ingest.store import Store

    text, source = _sql_text(query, sql_file)
    fmt = output_format(fmt, output, RESULT_FORMATS, "sql")
    _outside_store(output, store)
    header = named.from_text(text)
    values = header.bind(_params(params, typed=False)) if header else _params(params)
    check_output(output)
    verdicts.ensure(Store(store))
    df = run_sql(Store(store), text, values, source=source)
    red = _redactor(redact, Store(store))
    if red:
        df = red.value(df)
    _write_result(df, fmt, output)
    _say_redacted(red)


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


def _write_result(df, fmt, output) -> None:
    """A result frame written as `fmt` to `output` (stdout when None or -): Parquet only to a file or a pipe."""
    from forensics.core.errors import UsageError
    from forensics.reports.render import BINARY, render, write_parquet

    if fmt in BINARY:
        if not output:
            raise UsageError(f"--format {fmt} writes a file", help=f"add -o FILE.{fmt} (or -o - into a pipe)")
        from forensics.cli.output import binary_to_stdout

        binary_to_stdout(fmt, output)
        write_file(output, lambda path: write_parquet(df, path))
        return
    write_text(output, lambda out: render(df, fmt, out))


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


def _echo_clock_warnings(warnings: list[str], fmt: str) -> None:
    """The unset-offset warnings of the header, for a command whose result is a bare table."""
    for w in warnings:
        _echo_head(w, fmt)


def _echo_head(line: str, fmt: str) -> None:
    """A line above a result: on stderr beside CSV and JSON, escaped as Markdown beside Markdown."""
    from forensics.reports.render import head_line

    click.echo(head_line(line, fmt), err=fmt in ("csv", "json"))


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


@main.command()
@click.argument("table", required=False)
@format_option(("table", "markdown", "json"))
@table_options
@click.option(
    "--store",
    "store",
    envvar="FORENSICS_STORE",
    type=click.Path(file_okay=False),
    help="Show this store's row counts too (default: ./forensics-store when it exists, or $FORENSICS_STORE).",
)
@handled
def tables(table, fmt, store):
    """Print the schema reference: every table and column with its meaning (and a store's row counts)."""
    import polars as pl

    from forensics.catalog import duck_type
    from forensics.core import schema
    from forensics.core.errors import UsageError
    from forensics.reports.render import render

    names = [table] if table else list(schema.TABLES)
    if table and table not in schema.TABLES:
        raise UsageError(f"no table {table!r}", help="known tables: " + ", ".join(schema.TABLES))
    counts = _row_counts(store)
    if fmt == "json":
        from forensics.reports.render import dumps_json

        # one document: a reader parses it at once (several arrays back to back are not JSON)
        click.echo(
            dumps_json(
                {
                    "kind": "forensics.tables",
                    "version": 1,
                    "tables": [
                        {
                            "name": n,
                            "view": schema.TABLES[n].view,
                            "doc": schema.TABLES[n].doc,
                            "rows": (counts or {}).get(n),
                            "columns": [
                                {"column": c.name, "type": duck_type(c.dtype), "meaning": c.doc}
                                for c in schema.TABLES[n].columns
                            ],
                        }
                        for n in names
                    ],
                }
            )
        )
        return
    for n in names:
        t = schema.TABLES[n]
        df = pl.DataFrame(
            {
                "column": [c.name for c in t.columns],
                "type": [duck_type(c.dtype) for c in t.columns],
                "meaning": [c.doc for c in t.columns],
            }
        )
        rows = _rows_phrase(counts, n)
        if fmt == "table":
            click.echo(f"\n{n}{' (view)' if t.view else ''}{rows}: {t.doc}")
        elif fmt == "markdown":
            click.echo(f"\n### `{n}`{rows}\n\n{t.doc}\n")
        render(df, fmt, wrap=frozenset({"meaning"}))


@main.command()
def formats():
    """List the input formats ingest recognises."""
    from forensics.parsers import PARSERS

    for p in PARSERS:
        click.echo(f"{p.name:20} {p.description}")


@main.command()
@click.option("--corrupted", is_flag=True, help="Only corrupted replies (parse_leak, incoherent, empty).")
@click.option(
    "--class",
    "cls",
    metavar="CLASS",
    help="Only this class: clean, parse_leak, incoherent, empty, config, transfer_error.",
)
@click.option("--session", help="Only this session id.")
@store_option
@format_option()
@table_options
@redact_option
@handled
def replies(corrupted, cls, session, store, fmt, redact):
    """List assistant turns of agent transcripts with their corruption evidence."""
    from forensics.analysis.clocks import clock_warnings
    from forensics.analysis.replies import list_replies
    from forensics.cli.progress import computing
    from forensics.ingest.store import Store
    from forensics.reports.render import render
    from forensics.reports.text import print_replies

    with computing(Store(store)):
        df = list_replies(Store(store), corrupted=corrupted, cls=cls, session=session)
        warnings = clock_warnings(Store(store))
    red = _redactor(redact, Store(store))
    if red:
        df, warnings = red.value((df, warnings))
    _echo_clock_warnings(warnings, fmt)
    if fmt == "table":
        print_replies(df)
    else:
        render(df, fmt)
    _say_redacted(red)


@main.group(invoke_without_command=True)
@store_option
@format_option()
@table_options
@click.pass_context
@handled
def clocks(ctx, store, fmt):
    """Estimate each host pair's clock offset from paired events of the same room.

    Prints the estimate (how far host_b's clock runs ahead of host_a's), its bounds, how many
    pairs support them, and the offsets in force. `forensics clocks set HOST SECONDS` records one.
    """
    if ctx.invoked_subcommand:
        return
    from forensics.analysis.clocks import describe_offsets, estimate
    from forensics.ingest.store import Store
    from forensics.reports.render import render

    report = estimate(Store(store))
    _echo_head(describe_offsets(report.offsets), fmt)
    frame = report.frame()
    if frame.height or not report.unbounded or fmt in ("csv", "json"):
        render(frame, fmt)
    # an empty table says nothing: the reason goes where the table would be (stderr beside CSV and JSON)
    for why in report.unbounded:
        _echo_head(f"no clock bound: {why}", fmt)


@clocks.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("host")
@click.argument("seconds", type=float)
@store_option
@click.option("--force", is_flag=True, help="Record it even for a host the store holds no rows of (yet).")
@handled
def clocks_set(host, seconds, store, force):
    """Record that HOST's clock runs SECONDS ahead (negative: behind); views subtract it."""
    from forensics.analysis.clocks import describe_offsets, set_offset
    from forensics.ingest.store import Store

    if not force:
        _check_host(Store(store), host, "clocks set", "add --force to record it for a host not ingested yet")
    click.echo(describe_offsets(set_offset(Store(store), host, seconds)))


@clocks.command("unset")
@click.argument("host")
@store_option
@handled
def clocks_unset(host, store):
    """Remove the offset recorded for HOST; its times are read as logged again."""
    from forensics.analysis.clocks import describe_offsets, unset_offset
    from forensics.ingest.store import Store

    click.echo(describe_offsets(unset_offset(Store(store), host)))


def _check_host(store, host: str, what: str, force_hint: str) -> None:
    from forensics.analysis import names
    from forensics.catalog import connect
    from forensics.core.errors import UsageError

    con = connect(store.require(), {})
    try:
        hosts = names.known_hosts(con)
    finally:
        con.close()
    if host not in hosts:
        raise UsageError(
            f"{what} {host}: no such host in the store", help=f"known hosts: {names.listing(hosts)}; {force_hint}"
        )


def _row_counts(store) -> dict | None:
    """Row counts of the store given, or of the default one when it exists; None without a store."""
    import os

    from forensics.analysis.summary import row_counts
    from forensics.ingest.store import DEFAULT_STORE, Store

    path = store or DEFAULT_STORE
    if not os.path.isdir(path) or not Store(path).exists():
        if store:
            Store(store).require()
        return None
    return row_counts(Store(path))


def _rows_phrase(counts: dict | None, name: str) -> str:
    if counts is None:
        return ""
    n = counts.get(name)
    return " — not computed yet (a report computes it)" if n is None else f" — {n:,} row{'' if n == 1 else 's'}"


@main.command()
@store_option
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@handled
def summary(store, fmt, output):
    """What the store holds, in one screen: hosts, roles, time spans, rows per table, unparsed share, clocks, warnings."""
    from forensics.analysis import summary as sm
    from forensics.cli.progress import computing
    from forensics.ingest.store import Store
    from forensics.reports.summary import render_summary

    check_output(output)
    with computing(Store(store)):
        model = sm.build(Store(store))
    _write(output, lambda out: render_summary(model, fmt, out))


@main.command()
@store_option
@click.option(
    "--repair",
    is_flag=True,
    help="Drop unreadable inputs (listed: ingest the same dump to read them again), remove damaged "
    "derived views and verdicts (the next report computes them), keep clocks.json's valid entries.",
)
@handled
def verify(store, repair):
    """Check the whole store: every data file, the inputs, derived views, verdicts and clocks.json.

    Exits 1 when something is broken (after --repair: when something could not be repaired).
    """
    from forensics.catalog.checks import verify as check_store
    from forensics.core.text import escape_control
    from forensics.ingest.store import Store

    rep = check_store(Store(store), repair=repair)
    for f in rep.findings:
        line = f"{'repaired' if f.repaired else 'broken'}: {f.path}: {f.what}"
        click.echo(escape_control(line + (f" -> {f.repaired}" if f.repaired else "")))
    if rep.dropped:
        click.echo(
            f"dropped {len(rep.dropped)} input{'s' * (len(rep.dropped) != 1)}; "
            "`forensics ingest` of the same dump reads them again:"
        )
        for p in rep.dropped:
            click.echo(escape_control(f"  {p}"))
    checked = ", ".join(f"{n} {what}" for what, n in rep.checked.items())
    click.echo(
        f"checked {checked} in {rep.seconds:.1f} s: "
        + (f"{len(rep.broken)} broken" if rep.broken else "nothing broken")
    )
    if rep.broken:
        if not repair:
            click.echo("  = help: `forensics verify --repair` fixes what can be fixed", err=True)
        sys.exit(EXIT_FAILED)


@main.command()
@click.argument("room")
@store_option
@format_option()
@table_options
@redact_option
@handled
def room(room, store, fmt, redact):
    """Print one bootstrap room's story across hosts and sources, in corrected time order."""
    from forensics.analysis.clocks import describe_offsets
    from forensics.analysis.room import parse_room, room_story
    from forensics.cli.progress import computing
    from forensics.ingest.store import Store
    from forensics.reports.render import render
    from forensics.reports.room import summary_lines

    with computing(Store(store)):
        story = room_story(Store(store), parse_room(room))
    red = _redactor(redact, Store(store))
    if red:
        story = red.value(story)
    _echo_head(describe_offsets(story.offsets) + " (clock_correction marks the rows moved)", fmt)
    for line in [*story.clock_warnings, *summary_lines(story)]:
        _echo_head(line, fmt)
    render(story.timeline, fmt, first=("ts", "host", "what", "failure", "detail"))
    _say_redacted(red)


@main.group()
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
@format_option(RESULT_FORMATS)
@param_option
@result_output
@table_options
@redact_option
@handled
def query_run(name, store, fmt, params, output, redact):
    """Run a named query; parameters are bound, never pasted into the SQL; their header declares the types."""
    from forensics.analysis import verdicts
    from forensics.catalog import named as queries
    from forensics.ingest.store import Store

    fmt = output_format(fmt, output, RESULT_FORMATS, "query run")
    _outside_store(output, store)
    check_output(output)
    verdicts.ensure(Store(store))
    df = queries.run(Store(store), name, _params(params, typed=False))
    red = _redactor(redact, Store(store))
    if red:
        df = red.value(df)
    _write_result(df, fmt, output)
    _say_redacted(red)


TIMELINE_FORMATS = ("table", "markdown", "csv", "json", "html", "png", "svg", "perfetto")


@main.command()
@store_option
@click.option(
    "--bucket",
    default="auto",
    show_default=True,
    help="Bucket width: 10s, 500ms, 1m, ...; auto is 10s, wider when that gives over 500 buckets.",
)
@click.option(
    "--since",
    help="First instant: UTC ISO (2026-11-20T14:00:00), or before the store's last event "
    "(-30m, 1h, 2h ago, yesterday 14:00, 14:00).",
)
@click.option("--until", help="Last instant, written as for --since.")
@click.option("--host", help="Only this host: its load and events, its rooms' transfers (either side), its replies.")
@click.option(
    "--format",
    "fmt",
    default="table",
    show_default=True,
    type=click.Choice(TIMELINE_FORMATS),
    help="Output format (the extension of -o chooses it when not given).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to this file (.html .png .svg .json .csv .md ...) instead of stdout; - is stdout.",
)
@table_options
@redact_option
@handled
def timeline(store, bucket, since, until, host, fmt, output, redact):
    """What happened when: load, transfers, failures and replies per time bucket."""
    from forensics.analysis import timeline as tl
    from forensics.cli.progress import computing
    from forensics.core.errors import UsageError
    from forensics.ingest.store import Store

    fmt = output_format(fmt, output, TIMELINE_FORMATS, "timeline")
    if fmt in ("html", "png", "svg", "perfetto") and not output:
        raise UsageError(f"--format {fmt} writes a file", help="add -o FILE")
    check_output(output)
    with computing(Store(store)):
        # a chart draws every bucket: a longer window is narrowed (with a note), never refused
        model = tl.build(
            Store(store),
            bucket,
            since,
            until,
            host,
            max_buckets=tl.MAX_CHART_BUCKETS if fmt in ("html", "png", "svg") else None,
        )
    red = _redactor(redact, Store(store))
    for note in model["notes"]:
        click.echo(f"note: {red.text(note) if red else note}", err=True)
    if fmt in ("html", "png", "svg", "perfetto"):
        from forensics.reports import export as timeline_export

        if fmt == "png":
            from forensics.cli.output import binary_to_stdout

            binary_to_stdout(fmt, output)
        # the export reads more from the store than the model holds: it masks the two together
        notes: list[str] = []
        write_file(
            output, lambda path: notes.extend(timeline_export.write(model, fmt, path, Store(store), redactor=red))
        )
        for note in notes:
            click.echo(note, err=True)
        _say_redacted(red)
        return
    from forensics.reports.text import render_timeline

    if red:
        model = red.value(model)
    _write(output, lambda out: render_timeline(model, fmt, out))
    _say_redacted(red)


@main.command()
@store_option
@click.option("--format", "fmt", default="markdown", show_default=True, type=click.Choice(["markdown", "json"]))
@redact_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to this file (.md, .json) instead of stdout; - is stdout.",
)
@handled
def evidence(store, fmt, redact, output):
    """The bug-report tables: corrupted vs clean by dimension, wedges, abort storms, checksums."""
    from forensics.analysis import evidence as ev
    from forensics.cli.progress import computing
    from forensics.ingest.store import Store
    from forensics.reports.text import render_evidence

    fmt = output_format(fmt, output, ("markdown", "json"), "evidence")
    check_output(output)
    with computing(Store(store)):
        report = ev.build(Store(store))
    red = _redactor(redact, Store(store))
    if red:
        report = red.value(report)
    _write(output, lambda out: render_evidence(report, fmt, out))
    _say_redacted(red)


@main.command()
@click.argument("stores", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--format", "fmt", default="markdown", show_default=True, type=click.Choice(["markdown", "json"]))
@click.option(
    "--baseline",
    metavar="STORE|RUN",
    help="The run the others are tested against: a store (its first run) or a --run label. "
    "Default: the first store given.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to this file (.md, .json) instead of stdout; - is stdout.",
)
@handled
def compare(stores, fmt, baseline, output):
    """Compare runs (stores, or --run labels within one) against a baseline: corruption rate and throughput."""
    from forensics.analysis import compare as cmp
    from forensics.core.errors import UsageError
    from forensics.reports.text import render_compare

    fmt = output_format(fmt, output, ("markdown", "json"), "compare")
    check_output(output)
    result = cmp.build(list(stores), baseline=baseline)
    if len(stores) == 1 and result["corruption"].height < 2:
        runs = ", ".join(result["corruption"]["run"].to_list()) or "none with replies"
        raise UsageError(
            f"compare needs two runs, and {stores[0]} holds one ({runs})",
            help="give a second store (`forensics compare BASELINE_STORE OTHER_STORE`), or ingest "
            "each run into one store with `ingest --run LABEL`",
        )
    _write(output, lambda out: render_compare(result, fmt, out))


def _write(output, fn) -> None:
    write_text(output, fn)


if __name__ == "__main__":
    main()
