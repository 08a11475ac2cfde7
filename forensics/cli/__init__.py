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
            out = f(*a, **kw)
            sys.stdout.flush()  # a reader that went away (`| head`) is seen here, not at exit
            return out
        except BrokenPipeError:
            _quiet_broken_pipe()
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
        raise UsageError(f"-o {output}: no folder {folder}", help=f"create it first (mkdir -p {folder}) or write elsewhere")
    if os.path.isdir(output):
        raise UsageError(f"-o {output} is a folder", help="give a file name inside it")


def check_zone(tz: str) -> None:
    """An unknown --tz is refused before ingest creates anything."""
    from forensics.core.errors import UsageError

    try:
        import zoneinfo

        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, IsADirectoryError):
        raise UsageError(f"--tz {tz}: no such time zone",
                         help="give an IANA zone name, e.g. UTC, Asia/Shanghai, America/Los_Angeles") from None


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

    check_zone(tz)
    import os

    # a mistyped path is refused before the store folder is made
    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"no such file or directory: {p}", help="check the path given to ingest")
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
    if not any(r.status in ("ingested", "duplicate", "failed") for r in results):
        from forensics.cli.progress import nothing_line

        click.echo(nothing_line(paths, results), err=True)
        sys.exit(EXIT_FAILED)
    for w in merged_names(results, host):
        click.echo(w, err=True)
    from forensics.analysis import summary as sm
    from forensics.cli.progress import computing
    from forensics.reports.summary import lines

    # the derived views are computed here, once, so the first report after an ingest is quick
    with computing(Store(store)):
        model = sm.build(Store(store))
    click.echo("", err=True)
    for line in lines(model):
        click.echo(line, err=True)
    if any(r.status == "failed" for r in results):
        sys.exit(EXIT_FAILED)


def merged_names(results, host: str | None) -> list[str]:
    """Warnings for inputs of this ingest that one host name would merge though they look like two machines."""
    import os

    if host:
        return []
    by_host: dict[str, list] = {}
    for r in results:
        if r.status == "ingested" and r.host:
            by_host.setdefault(r.host, []).append(r)
    out = []
    for h, rs in sorted(by_host.items()):
        roles = sorted({r.role for r in rs if r.role and r.role != "unknown"})
        folders = sorted({os.path.dirname(r.path.split("!")[0]) for r in rs
                          if os.path.basename(os.path.dirname(r.path.split("!")[0])) != h})
        if len(roles) > 1:
            why = f"inputs of {len(roles)} roles ({', '.join(roles)})"
        elif len(folders) > 1:
            why = f"files from {len(folders)} folders ({', '.join(folders[:3])})"
        else:
            continue
        paths = ", ".join(r.path for r in rs[:3]) + (f" and {len(rs) - 3} more" if len(rs) > 3 else "")
        out.append(f"warning: {len(rs)} inputs all became host {h!r}: {why}: {paths}\n"
                   f"  = help: if they are different machines, ingest each one with `--host NAME` "
                   f"(e.g. `forensics ingest {rs[0].path} --host NAME`)")
    return out


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
    check_output(output)
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
@click.option("--store", "store", envvar="FORENSICS_STORE", type=click.Path(file_okay=False),
              help="Show this store's row counts too (default: ./forensics-store when it exists, or $FORENSICS_STORE).")
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
    for n in names:
        t = schema.TABLES[n]
        df = pl.DataFrame({"column": [c.name for c in t.columns], "type": [duck_type(c.dtype) for c in t.columns],
                           "meaning": [c.doc for c in t.columns]})
        rows = _rows_phrase(counts, n)
        if fmt == "table":
            click.echo(f"\n{n}{' (view)' if t.view else ''}{rows}: {t.doc}")
        elif fmt == "markdown":
            click.echo(f"\n### `{n}`{rows}\n\n{t.doc}\n")
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
        raise UsageError(f"{what} {host}: no such host in the store",
                         help=f"known hosts: {names.listing(hosts)}; {force_hint}")


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
@click.argument("room")
@store_option
@format_option()
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
    check_output(output)
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
@click.option("--since", help="First instant: UTC ISO (2026-11-20T14:00:00), or before the store's last event "
                               "(-30m, 1h, 2h ago, yesterday 14:00, 14:00).")
@click.option("--until", help="Last instant, written as for --since.")
@click.option("--host", help="Only this host: its load and events, its rooms' transfers (either side), its replies.")
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "markdown", "csv", "json", "html", "png", "svg", "perfetto"]))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@redact_option
@handled
def timeline(store, bucket, since, until, host, fmt, output, redact):
    """What happened when: load, transfers, failures and replies per time bucket."""
    from forensics.analysis import timeline as tl
    from forensics.cli.progress import computing
    from forensics.core.errors import UsageError
    from forensics.ingest.store import Store

    if fmt in ("html", "png", "svg", "perfetto") and not output:
        raise UsageError(f"--format {fmt} writes a file", help="add -o FILE")
    check_output(output)
    with computing(Store(store)):
        # a chart draws every bucket: a longer window is narrowed (with a note), never refused
        model = tl.build(Store(store), bucket, since, until, host,
                         max_buckets=tl.MAX_CHART_BUCKETS if fmt in ("html", "png", "svg") else None)
    red = _redactor(redact, Store(store))
    for note in model["notes"]:
        click.echo(f"note: {red.text(note) if red else note}", err=True)
    if fmt in ("html", "png", "svg", "perfetto"):
        from forensics.reports import export as timeline_export

        # the export reads more from the store than the model holds: it masks the two together
        timeline_export.write(model, fmt, output, Store(store), redactor=red)
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
    from forensics.cli.progress import computing
    from forensics.ingest.store import Store
    from forensics.reports.text import render_evidence

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
@click.option("--baseline", metavar="STORE|RUN",
              help="The run the others are tested against: a store (its first run) or a --run label. "
                   "Default: the first store given.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@handled
def compare(stores, fmt, baseline, output):
    """Compare runs (stores, or --run labels within one) against a baseline: corruption rate and throughput."""
    from forensics.analysis import compare as cmp
    from forensics.core.errors import UsageError
    from forensics.reports.text import render_compare

    check_output(output)
    result = cmp.build(list(stores), baseline=baseline)
    if len(stores) == 1 and result["corruption"].height < 2:
        runs = ", ".join(result["corruption"]["run"].to_list()) or "none with replies"
        raise UsageError(f"compare needs two runs, and {stores[0]} holds one ({runs})",
                         help="give a second store (`forensics compare BASELINE_STORE OTHER_STORE`), or ingest "
                              "each run into one store with `ingest --run LABEL`")
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
