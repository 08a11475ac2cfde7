"""The `forensics` command line: parse options, call one library function, render.

Heavy libraries (polars, duckdb, rich) are imported inside the commands so `--help` stays fast.
"""

from __future__ import annotations

import functools
import sys

import click

from forensics.core import runtime

EXIT_FAILED = 1  # a failed run; usage errors exit 2 (ForensicsError.exit_code)


def store_option(f):
    from forensics.ingest.store import DEFAULT_STORE

    return click.option("--store", "store", envvar="FORENSICS_STORE", default=DEFAULT_STORE, show_default=True,
                        type=click.Path(file_okay=False), help="Store folder (or $FORENSICS_STORE).")(f)


def format_option(choices=("table", "csv", "json", "markdown"), default="table"):
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help="Output format.")


def param_option(f):
    return click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
                        help="Bind a parameter, $NAME in the SQL (repeatable); never pasted into the text.")(f)


def redact_option(f):
    return click.option("--redact", is_flag=True,
                        help="Mask secrets, addresses, e-mails, domain names, home paths and host names (the same "
                             "name gets the same pseudonym); stderr says what was masked.")(f)


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
            return f(*a, **kw)
        except ForensicsError as e:
            if click.get_current_context().find_root().params.get("debug"):
                raise
            click.echo(escape_control(e.render()), err=True)
            sys.exit(e.exit_code)
        except Exception as e:  # a bug: still one error shape, the traceback behind --debug
            if click.get_current_context().find_root().params.get("debug"):
                raise
            click.echo(escape_control(ForensicsError(
                f"internal error: {type(e).__name__}: {e}",
                help="rerun with `forensics --debug ...` and report the traceback").render()), err=True)
            sys.exit(EXIT_FAILED)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
@click.option("--date", "log_date", metavar="YYYY-MM-DD",
              help="Date for lines that print a time only (2024 builds: `[16:43:29 TP0]`); a year alone acts as --year.")
@click.option("--run", "run_label", help="Label the inputs as one run, for `forensics compare`.")
@click.option("--parser", "forced_format", metavar="NAME",
              help="Skip detection and read every input with this parser, notes too (see `forensics formats`).")
# the option's name until --parser, kept for one release so that scripts keep working
@click.option("--format", "deprecated_format", hidden=True)
@click.option("--jobs", "-j", type=int, help="Parallel workers (default: all cores).")
@click.option("--clock-offset", multiple=True, metavar="HOST=SECONDS",
              help="Record that HOST's clock runs SECONDS ahead (repeatable).")
@handled
def ingest(paths, store, host, role, tz, year, log_date, run_label, forced_format, deprecated_format, jobs, clock_offset):
    """Parse log files, folders and archives (.gz, .zst, .tar.gz) into the store."""
    runtime.configure_ingest()
    from forensics.cli.progress import IngestProgress
    from forensics.core.errors import UsageError
    from forensics.ingest import pipeline as ing
    from forensics.ingest.store import Store

    if deprecated_format:
        if forced_format and forced_format != deprecated_format:
            raise UsageError(f"--parser {forced_format} and --format {deprecated_format} disagree",
                             help="--format is the old name of --parser: pass --parser alone")
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
    opts = ing.Options(host=host, role=role, tz=tz, year=year, date=log_date, run=run_label, format=forced_format,
                       jobs=jobs)
    with IngestProgress() as prog:
        results = ing.run(list(paths), store, opts, prog)
    for h, v in offsets.items():
        Store(store).set_clock(h, v)
    from forensics.analysis import verdicts

    verdicts.ensure(Store(store))
    IngestProgress.summary(results)
    if any(r.status == "failed" for r in results):
        sys.exit(EXIT_FAILED)


def result_output(f):
    return click.option("-o", "--output", type=click.Path(dir_okay=False),
                        help="Write the result to this file (outside the store) instead of stdout.")(f)


@main.command()
@click.argument("query")
@store_option
@format_option()
@param_option
@result_output
@redact_option
@handled
def sql(query, store, fmt, params, output, redact):
    """Run read-only SQL over the store; every table is a view of the same name.

    SELECT (WITH, PIVOT, DESCRIBE, ...), SET VARIABLE and CREATE TEMP TABLE|VIEW|MACRO run; statements
    that change the store or settings, COPY, ATTACH, LOAD and files outside the store are refused.
    """
    from forensics.analysis import verdicts
    from forensics.catalog.sql import run_sql
    from forensics.ingest.store import Store
    from forensics.reports.render import render

    _outside_store(output, store)
    verdicts.ensure(Store(store))
    df = run_sql(Store(store), query, _params(params))
    red = _redactor(redact, Store(store))
    if red:
        df = red.value(df)
    _write(output, lambda out: render(df, fmt, out))
    _say_redacted(red)


def _outside_store(output, store) -> None:
    """A result written into the store folder would be read back as part of it, or break it."""
    import os

    from forensics.core.errors import UsageError

    if output and os.path.commonpath([os.path.realpath(output), os.path.realpath(store)]) == os.path.realpath(store):
        raise UsageError(f"-o {output} is inside the store {store}", help="write the result outside the store folder")


def _echo_clock_warnings(warnings: list[str], fmt: str) -> None:
    """The unset-offset warnings of the header, for a command whose result is a bare table."""
    for w in warnings:
        _echo_head(w, fmt)


def _echo_head(line: str, fmt: str) -> None:
    """A line above a result: on stderr beside CSV and JSON, escaped as Markdown beside Markdown."""
    from forensics.reports.render import head_line

    click.echo(head_line(line, fmt), err=fmt in ("csv", "json"))


def _params(items) -> dict:
    from forensics.core.errors import UsageError

    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise UsageError(f"-p wants NAME=VALUE, got {item!r}")
        out[k] = v
    return out


@main.command()
@click.argument("table", required=False)
@format_option(("table", "markdown", "json"))
@handled
def tables(table, fmt):
    """Print the schema reference: every table and column with its meaning."""
    import polars as pl

    from forensics.catalog import duck_type
    from forensics.core import schema
    from forensics.core.errors import UsageError
    from forensics.reports.render import render

    names = [table] if table else list(schema.TABLES)
    if table and table not in schema.TABLES:
        raise UsageError(f"no table {table!r}", help="known tables: " + ", ".join(schema.TABLES))
    for n in names:
        t = schema.TABLES[n]
        df = pl.DataFrame({"column": [c.name for c in t.columns], "type": [duck_type(c.dtype) for c in t.columns],
                           "meaning": [c.doc for c in t.columns]})
        if fmt == "table":
            click.echo(f"\n{n}{' (view)' if t.view else ''}: {t.doc}")
        elif fmt == "markdown":
            click.echo(f"\n### `{n}`\n\n{t.doc}\n")
        render(df, fmt)


@main.command()
def formats():
    """List the input formats ingest recognises."""
    from forensics.parsers import PARSERS

    for p in PARSERS:
        click.echo(f"{p.name:20} {p.description}")


@main.command()
@click.option("--corrupted", is_flag=True, help="Only corrupted replies (parse_leak, incoherent, empty).")
@click.option("--class", "cls", metavar="CLASS",
              help="Only this class: clean, parse_leak, incoherent, empty, config, transfer_error.")
@click.option("--session", help="Only this session id.")
@store_option
@format_option()
@redact_option
@handled
def replies(corrupted, cls, session, store, fmt, redact):
    """List assistant turns of agent transcripts with their corruption evidence."""
    from forensics.analysis.clocks import clock_warnings
    from forensics.analysis.replies import list_replies
    from forensics.ingest.store import Store
    from forensics.reports.render import render
    from forensics.reports.text import print_replies

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
    render(report.frame(), fmt)


@clocks.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("host")
@click.argument("seconds", type=float)
@store_option
@handled
def clocks_set(host, seconds, store):
    """Record that HOST's clock runs SECONDS ahead (negative: behind); views subtract it."""
    from forensics.analysis.clocks import describe_offsets, set_offset
    from forensics.ingest.store import Store

    click.echo(describe_offsets(set_offset(Store(store), host, seconds)))


@main.command()
@click.argument("room")
@store_option
@format_option()
@redact_option
@handled
def room(room, store, fmt, redact):
    """Print one bootstrap room's story across hosts and sources, in corrected time order."""
    from forensics.analysis.clocks import describe_offsets
    from forensics.analysis.room import parse_room, room_story
    from forensics.ingest.store import Store
    from forensics.reports.render import render
    from forensics.reports.room import summary_lines

    story = room_story(Store(store), parse_room(room))
    red = _redactor(redact, Store(store))
    if red:
        story = red.value(story)
    _echo_head(describe_offsets(story.offsets) + " (clock_correction marks the rows moved)", fmt)
    for line in [*story.clock_warnings, *summary_lines(story)]:
        _echo_head(line, fmt)
    render(story.timeline, fmt)
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
@format_option()
@param_option
@result_output
@redact_option
@handled
def query_run(name, store, fmt, params, output, redact):
    """Run a named query; parameters are bound, never pasted into the SQL."""
    from forensics.analysis import verdicts
    from forensics.catalog import named as queries
    from forensics.ingest.store import Store
    from forensics.reports.render import render

    _outside_store(output, store)
    verdicts.ensure(Store(store))
    df = queries.run(Store(store), name, _params(params))
    red = _redactor(redact, Store(store))
    if red:
        df = red.value(df)
    _write(output, lambda out: render(df, fmt, out))
    _say_redacted(red)


@main.command()
@store_option
@click.option("--bucket", default="auto", show_default=True,
              help="Bucket width: 10s, 500ms, 1m, ...; auto is 10s, wider when that gives over 500 buckets.")
@click.option("--since", help="First instant, UTC (e.g. 2026-11-20T14:00:00).")
@click.option("--until", help="Last instant, UTC.")
@click.option("--host", help="Only this host's load, transfers and events.")
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "markdown", "csv", "json", "html", "png", "svg", "perfetto"]))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@redact_option
@handled
def timeline(store, bucket, since, until, host, fmt, output, redact):
    """What happened when: load, transfers, failures and replies per time bucket."""
    from forensics.analysis import timeline as tl
    from forensics.core.errors import UsageError
    from forensics.ingest.store import Store

    model = tl.build(Store(store), bucket, since, until, host)
    red = _redactor(redact, Store(store))
    if fmt in ("html", "png", "svg", "perfetto"):
        from forensics.reports import export as timeline_export

        if not output:
            raise UsageError(f"--format {fmt} writes a file", help="add -o FILE")
        # the export reads more from the store than the model holds: it masks the two together
        for note in timeline_export.write(model, fmt, output, Store(store), redactor=red):
            click.echo(note, err=True)
        click.echo(f"wrote {output}", err=True)
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
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@handled
def evidence(store, fmt, redact, output):
    """The bug-report tables: corrupted vs clean by dimension, wedges, abort storms, checksums."""
    from forensics.analysis import evidence as ev
    from forensics.ingest.store import Store
    from forensics.reports.text import render_evidence

    report = ev.build(Store(store))
    red = _redactor(redact, Store(store))
    if red:
        report = red.value(report)
    _write(output, lambda out: render_evidence(report, fmt, out))
    _say_redacted(red)


@main.command()
@click.argument("stores", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--format", "fmt", default="markdown", show_default=True, type=click.Choice(["markdown", "json"]))
@click.option("--baseline", metavar="STORE|RUN",
              help="The run the others are tested against: a store (its first run) or a --run label. "
                   "Default: the first store given.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@handled
def compare(stores, fmt, baseline, output):
    """Compare runs (stores, or --run labels within one) against a baseline: corruption rate and throughput."""
    from forensics.analysis import compare as cmp
    from forensics.reports.text import render_compare

    result = cmp.build(list(stores), baseline=baseline)
    _write(output, lambda out: render_compare(result, fmt, out))


def _write(output, fn) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as f:
            fn(f)
        click.echo(f"wrote {output}", err=True)
    else:
        fn(sys.stdout)


if __name__ == "__main__":
    main()
