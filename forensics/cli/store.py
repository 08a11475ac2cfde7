"""`forensics clocks`, `forensics verify` and `forensics compact`: the clock offsets a store applies, its health, its part sizes."""

from __future__ import annotations

import sys

import click

from forensics.cli.common import EXIT_FAILED, Output, handled, session_command, store_option
from forensics.cli.output import FORMAT, echo_head, output_options, table_options
from forensics.reports.formats import TABLE


@click.group(invoke_without_command=True)
@store_option
@output_options(TABLE, FORMAT, table_options)
@click.pass_context
@handled
@session_command(materialize=False)
def clocks(ctx, session, fmt):
    """Estimate each host pair's clock offset from paired events of the same room.

    Prints the estimate (how far host_b's clock runs ahead of host_a's), its bounds, how many
    pairs support them, and the offsets in force. `forensics clocks set HOST SECONDS` records one.
    """
    if ctx.invoked_subcommand:
        return None
    from forensics.analysis.clocks import describe_offsets, estimate
    from forensics.reports.render import render

    def write(report, out):
        echo_head(describe_offsets(report.offsets), fmt)
        frame = report.frame()
        if frame.height or not report.unbounded or fmt in ("csv", "json"):
            render(frame, fmt)
        # an empty table says nothing: the reason goes where the table would be (stderr beside CSV and JSON)
        for why in report.unbounded:
            echo_head(f"no clock bound: {why}", fmt)

    return Output(estimate(session), text=write)


@clocks.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("host")
@click.argument("seconds", type=float)
@store_option
@click.option("--force", is_flag=True, help="Record it even for a host the store holds no rows of (yet).")
@handled
@session_command(materialize=False, offsets={})
def clocks_set(host, seconds, session, force):
    """Record that HOST's clock runs SECONDS ahead (negative: behind); views subtract it."""
    from forensics.analysis.clocks import describe_offsets, set_offset

    if not force:
        _check_host(session, host, "clocks set", "add --force to record it for a host not ingested yet")
    click.echo(describe_offsets(set_offset(session.store, host, seconds)))


@clocks.command("unset")
@click.argument("host")
@store_option
@handled
@session_command(materialize=False)
def clocks_unset(host, session):
    """Remove the offset recorded for HOST; its times are read as logged again."""
    from forensics.analysis.clocks import describe_offsets, unset_offset

    click.echo(describe_offsets(unset_offset(session.store, host)))


def _check_host(session, host: str, what: str, force_hint: str) -> None:
    from forensics.analysis import names
    from forensics.core.errors import UsageError

    hosts = names.known_hosts(session.con)
    if host not in hosts:
        raise UsageError(
            f"{what} {host}: no such host in the store", help=f"known hosts: {names.listing(hosts)}; {force_hint}"
        )


@click.command()
@store_option
@click.option(
    "--repair",
    is_flag=True,
    help="Drop unreadable inputs (listed: ingest the same dump to read them again), remove damaged "
    "derived views and verdicts (the next report computes them), keep clocks.json's valid entries.",
)
@handled
@session_command(materialize=False)
def verify(session, repair):
    """Check the whole store: every data file, the inputs, derived views, verdicts and clocks.json.

    Exits 1 when something is broken (after --repair: when something could not be repaired).
    """
    from forensics.catalog import verify as check_store
    from forensics.core.text import escape_control

    rep = check_store(session.store, repair=repair)
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


@click.command()
@store_option
@click.option(
    "--target-mb",
    type=click.IntRange(1, 4096),
    default=64,
    show_default=True,
    help="Merge an input's small parts of one partition into parts of about this size.",
)
@handled
def compact(store, target_mb):
    """Merge each input's small Parquet parts of one partition; no row changes.

    Readers that open every file (Spark, Trino) read fewer, larger ones. Takes the store's lock:
    it waits for no ingest, and refuses while one runs.
    """
    from forensics.store import Store
    from forensics.store.compact import compact as run

    rep = run(Store(store).require(), target_mb << 20)
    click.echo(
        f"compacted {rep.inputs} input{'s' * (rep.inputs != 1)}: {rep.parts_before} parts -> "
        f"{rep.parts_after} ({rep.bytes_merged / 1e6:.1f} MB merged)"
    )


@click.command()
@click.argument("inputs", nargs=-1, required=True)
@store_option
@handled
def remove(inputs, store):
    """Remove INPUTS from the store: files, folders or archives, as ingest was given them.

    Every row an input brought goes with it, and the derived views are computed again from the
    inputs left; no other input's rows change. `forensics ingest` of the same files reads them again.
    """
    from forensics.catalog import connect
    from forensics.cli.progress import computing
    from forensics.core.text import escape_control
    from forensics.store import Store
    from forensics.store.remove import remove as run

    s = Store(store)
    rep = run(s, list(inputs))
    for path, status in rep.inputs:
        click.echo(escape_control(f"removed {path}" + ("" if status == "ingested" else f" ({status})")))
    for name in rep.unmatched:
        click.echo(escape_control(f"note: no input of the store is named {name}"), err=True)
    with computing(s):
        connect(s, materialize=True).close()
    n = len(rep.inputs)
    click.echo(f"store {s.root}: {n} input{'s' * (n != 1)} removed, {len(s.committed())} left")
