"""The report commands: timeline, evidence, compare, replies, room and summary."""

from __future__ import annotations

import click

from forensics.cli.common import Output, handled, session_command, store_option
from forensics.cli.output import (
    FORMAT,
    OUTPUT,
    REDACT,
    check_output,
    echo_head,
    output_format,
    output_options,
    table_options,
    write_text,
)
from forensics.reports.formats import COMPARE, EVIDENCE, SUMMARY, TABLE, TIMELINE

# the -o help of the Markdown/JSON reports
REPORT_OUTPUT_HELP = "Write to this file (.md, .json) instead of stdout; - is stdout."


@click.command()
@store_option
@click.option(
    "--bucket",
    default="auto",
    show_default=True,
    help="Bucket width: 10s, 500ms, 1m, 1h, 1d, ...; auto is 10s, wider when that gives over 500 buckets.",
)
@click.option(
    "--since",
    help="First instant: UTC ISO (2026-11-20T14:00:00), before the store's last event "
    "(-30m, 1h, 2h ago, yesterday 14:00), or a time of day on the day of the store's events nearest it (14:00).",
)
@click.option("--until", help="Last instant, written as for --since.")
@click.option("--host", help="Only this host: its load and events, its rooms' transfers (either side), its replies.")
@output_options(
    TIMELINE,
    FORMAT,
    OUTPUT,
    table_options,
    REDACT,
    format_help="Output format (the extension of -o chooses it when not given).",
    output_help="Write to this file (.html .png .svg .json .csv .md ...) instead of stdout; - is stdout.",
)
@handled
@session_command()
def timeline(session, bucket, since, until, host, fmt, output):
    """What happened when: load, transfers, failures and replies per time bucket."""
    from forensics.analysis import timeline as tl
    from forensics.core.errors import UsageError

    fmt = output_format(fmt, output, TIMELINE, "timeline")
    if fmt in TIMELINE.files and not output:
        raise UsageError(f"--format {fmt} writes a file", help="add -o FILE")
    check_output(output)
    # a chart draws every bucket: a longer window is narrowed (with a note), never refused
    model = tl.build(
        session,
        bucket,
        since,
        until,
        host,
        max_buckets=tl.MAX_CHART_BUCKETS if fmt in ("html", "png", "svg") else None,
    )
    if fmt in TIMELINE.files:
        from forensics.analysis import detail
        from forensics.reports import export as timeline_export

        return Output(
            detail.export(session, model, fmt),
            file=lambda export, path: timeline_export.write(export, fmt, path),
            fmt=fmt,
            binary=fmt in TIMELINE.binary,
            notes=model.notes,
        )
    from forensics.reports.text import render_timeline

    # a table or Markdown carries its notes itself; a program reads JSON and CSV, a person stderr
    own = fmt in ("table", "markdown")
    return Output(model, text=lambda m, out: render_timeline(m, fmt, out), notes=() if own else model.notes)


@click.command()
@store_option
@output_options(EVIDENCE, FORMAT, REDACT, OUTPUT, format_help=None, output_help=REPORT_OUTPUT_HELP)
@handled
@session_command()
def evidence(session, fmt, output):
    """The bug-report tables: corrupted vs clean by dimension, wedges, abort storms, checksums."""
    from forensics.analysis import evidence as ev
    from forensics.reports.text import render_evidence

    fmt = output_format(fmt, output, EVIDENCE, "evidence")
    check_output(output)
    return Output(ev.build(session), text=lambda m, out: render_evidence(m, fmt, out))


@click.command()
@click.argument("stores", nargs=-1, required=True, type=click.Path(file_okay=False))
@output_options(
    COMPARE,
    FORMAT,
    click.option(
        "--baseline",
        metavar="STORE|RUN",
        help="The run the others are tested against: a store (its first run) or a --run label. "
        "Default: the first store given.",
    ),
    OUTPUT,
    format_help=None,
    output_help=REPORT_OUTPUT_HELP,
)
@handled
def compare(stores, fmt, baseline, output):
    """Compare runs (stores, or --run labels within one) against a baseline: corruption rate and throughput."""
    import contextlib

    from forensics.analysis import compare as cmp
    from forensics.analysis.session import Session
    from forensics.core.errors import UsageError
    from forensics.reports.text import render_compare

    fmt = output_format(fmt, output, COMPARE, "compare")
    check_output(output)
    # one session per store compared
    with contextlib.ExitStack() as opened:
        sessions = [opened.enter_context(Session.open(p)) for p in cmp.runs(list(stores), baseline)]
        result = cmp.build(sessions, baseline=baseline)
    if len(stores) == 1 and result["corruption"].height < 2:
        runs = ", ".join(result["corruption"]["run"].to_list()) or "none with replies"
        raise UsageError(
            f"compare needs two runs, and {stores[0]} holds one ({runs})",
            help="give a second store (`forensics compare BASELINE_STORE OTHER_STORE`), or ingest "
            "each run into one store with `ingest --run LABEL`",
        )
    write_text(output, lambda out: render_compare(result, fmt, out))


@click.command()
@click.option("--corrupted", is_flag=True, help="Only corrupted replies (parse_leak, incoherent, empty).")
@click.option(
    "--class",
    "cls",
    metavar="CLASS",
    help="Only this class: clean, parse_leak, incoherent, empty, config, transfer_error.",
)
@click.option("--session", "session_id", help="Only this session id.")
@store_option
@output_options(TABLE, FORMAT, table_options, REDACT)
@handled
@session_command()
def replies(corrupted, cls, session_id, session, fmt):
    """List assistant turns of agent transcripts with their corruption evidence."""
    from forensics.analysis import replies as rp
    from forensics.reports.render import render
    from forensics.reports.text import print_replies

    def write(model, out):
        _echo_clock_warnings(model.clock_warnings, fmt)
        if fmt == "table":
            print_replies(model.rows)
        else:
            render(model.rows, fmt)

    return Output(rp.build(session, corrupted=corrupted, cls=cls, session_id=session_id), text=write)


def _echo_clock_warnings(warnings: list[str], fmt: str) -> None:
    """The unset-offset warnings of the header, for a command whose result is a bare table."""
    for w in warnings:
        echo_head(w, fmt)


@click.command()
@click.argument("room")
@store_option
@output_options(TABLE, FORMAT, table_options, REDACT)
@handled
@session_command()
def room(room, session, fmt):
    """Print one bootstrap room's story across hosts and sources, in corrected time order."""
    from forensics.analysis.clocks import describe_offsets
    from forensics.analysis.room import parse_room, room_story
    from forensics.reports.render import render
    from forensics.reports.room import summary_lines

    def write(story, out):
        echo_head(describe_offsets(story.offsets) + " (clock_correction marks the rows moved)", fmt)
        for line in [*story.clock_warnings, *summary_lines(story)]:
            echo_head(line, fmt)
        # the detail is what the line said: it folds onto more lines rather than going in a narrow terminal
        render(
            story.timeline,
            fmt,
            first=("ts", "host", "detail", "what", "failure"),
            wrap=frozenset({"detail", "failure"}),
        )

    return Output(room_story(session, parse_room(room)), text=write)


@click.command()
@store_option
@output_options(
    SUMMARY, FORMAT, OUTPUT, format_help=None, output_help="Write to this file instead of stdout.", stdout_dash=False
)
@handled
@session_command()
def summary(session, fmt, output):
    """What the store holds, in one screen: hosts, roles, time spans, rows per table, unparsed share, clocks, warnings."""
    from forensics.analysis import summary as sm
    from forensics.reports.summary import render_summary

    fmt = output_format(fmt, output, SUMMARY, "summary")
    check_output(output)
    return Output(sm.build(session), text=lambda m, out: render_summary(m, fmt, out))
