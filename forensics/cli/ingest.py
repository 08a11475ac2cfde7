"""`forensics ingest` and `forensics formats`: the inputs a store is made from."""

from __future__ import annotations

import sys

import click

from forensics.cli.common import EXIT_FAILED, handled, store_option
from forensics.core import runtime


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


def check_engine(engine: str, address: str | None) -> None:
    """An engine that is not installed, or an address without Ray, is refused before ingest creates anything."""
    from forensics.core.errors import UsageError
    from forensics.ingest.engine import engine_class

    if address is not None and engine != "ray":
        raise UsageError(
            "--address joins a Ray cluster", help=f"add --engine ray to ingest on the cluster at {address}"
        )
    engine_class(engine)


@click.command()
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
@click.option(
    "--jobs", "-j", type=int, help="Parallel workers (default: all cores; with --engine ray, the local cluster's CPUs)."
)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help='Where inputs are parsed: worker processes here, or Ray tasks (pip install "sglang-forensics[ray]").',
)
@click.option(
    "--address",
    metavar="ADDR",
    help="With --engine ray: join the Ray cluster there (its inputs and store on a file system every node sees).",
)
@click.option(
    "--clock-offset",
    multiple=True,
    metavar="HOST=SECONDS",
    help="Record that HOST's clock runs SECONDS ahead (repeatable).",
)
@handled
def ingest(**params):
    """Parse log files, folders and archives (.gz, .zst, .tar.gz) into the store."""
    from forensics.ingest import stop  # the standard library only: the handlers go in before the imports

    # one handling for the whole command: a signal raises stop.Interrupted while inputs are committed,
    # and once they all are ends the command at once (`_interrupted`), whatever step it is in
    try:
        with stop.handling(on_stop=_interrupted):
            _ingest(**params)
    except stop.Interrupted as e:
        _interrupted(e)


def _ingest(
    *,
    paths,
    store,
    host,
    role,
    tz,
    year,
    log_date,
    run_label,
    forced_format,
    deprecated_format,
    jobs,
    engine,
    address,
    clock_offset,
):
    runtime.configure_ingest()
    from forensics.cli.progress import IngestProgress
    from forensics.core.errors import UsageError
    from forensics.ingest import pipeline as ing
    from forensics.store import Store
    from forensics.store.clocks import offset_problem

    check_zone(tz)
    check_engine(engine, address)
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
    # the options given, not defaulted: an input the store holds, read with others, is read again
    source = click.get_current_context().get_parameter_source("tz")
    given = {"tz": source not in (None, click.core.ParameterSource.DEFAULT), "year": year is not None}
    given |= {"date": log_date is not None, "host": host is not None, "role": role is not None}
    given["format"] = forced_format is not None
    opts = ing.Options(
        explicit=tuple(k for k, v in given.items() if v),
        host=host,
        role=role,
        tz=tz,
        year=year,
        date=log_date,
        run=run_label,
        format=forced_format,
        jobs=jobs,
        engine=engine,
        address=address,
    )
    from forensics.analysis import after_ingest
    from forensics.cli.progress import computing

    with IngestProgress() as prog:
        results = ing.run(list(paths), store, opts, prog)
    # the derived views are computed by the summary, once, so the first report after an ingest
    # is quick; what was ingested is committed by then, so a failure there is said, and the
    # ingest's exit kept
    done = after_ingest.finish(Store(store), results, offsets, IngestProgress.summary, computing)
    if not done.read_any:
        from forensics.cli.progress import nothing_line

        click.echo(nothing_line(paths, results), err=True)
        sys.exit(EXIT_FAILED)
    if done.summary_error is not None:
        e = done.summary_error
        if click.get_current_context().find_root().params.get("debug"):
            raise e
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
        from forensics.reports.summary import lines

        click.echo("", err=True)
        for line in lines(done.summary):
            click.echo(line, err=True)
    if done.other_dump is not None:  # said last, where it is read: the ingest went on all the same
        from forensics.core.text import escape_control

        click.echo("", err=True)
        for line in done.other_dump.lines():
            click.echo(escape_control(line), err=True)
    if any(r.status == "failed" for r in results):
        sys.exit(EXIT_FAILED)


def _interrupted(e) -> None:
    """One line on a signal, then out at once: threads still winding down write nothing that counts.

    Also called from the signal watcher thread (forensics/ingest/stop.py) while the main thread may
    be anywhere: it writes to the stream's descriptor, and ends a line a table or spinner left open."""
    import os

    from forensics.core.text import escape_control
    from forensics.ingest import stop

    lead = "\r\x1b[2K\x1b[?25h" if sys.stderr.isatty() else ""  # a spinner's line cleared, its cursor back
    line = f"{lead}forensics: {escape_control(e.line())}\n"
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, RuntimeError):  # RuntimeError: a handler inside a write of its own
            pass
    try:
        os.write(sys.stderr.fileno(), line.encode("utf-8", "replace"))
    except (OSError, ValueError, AttributeError):  # a stderr with no descriptor (a test runner's)
        click.echo(line, err=True, nl=False)
    stop.end_fork_server()
    os._exit(e.exit_code)


@click.command()
def formats():
    """List the input formats ingest recognises."""
    from forensics.parsers import PARSERS

    for p in PARSERS:
        click.echo(f"{p.name:20} {p.description}")
