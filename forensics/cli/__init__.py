"""The `forensics` command line: parse options, call one library function, render.

One module per family of commands: ingest (ingest, formats), sql (sql, query, tables), reports
(timeline, evidence, compare, replies, room, summary), store (clocks, verify, compact); common holds the store
option and the one error shape, output the output options and the redaction of a result. Heavy
libraries (polars, duckdb, rich) are imported inside the commands so `--help` stays fast.
"""

from __future__ import annotations

import os
import signal
import sys
import threading


def _stopped_while_starting(signum, frame):
    # nothing is read or written before a command runs, so there is nothing to wind down
    sys.stderr.write(f"forensics: interrupted ({signal.Signals(signum).name}) while starting: nothing was changed\n")
    sys.stderr.flush()
    os._exit(130)


# a Ctrl-C during the imports below would otherwise end in a traceback or a death by SIGINT with no
# line; each command installs its own handling once it runs
_before = (
    signal.signal(signal.SIGINT, _stopped_while_starting)
    if threading.current_thread() is threading.main_thread()
    else None
)

import click  # noqa: E402

from forensics.cli import ingest, reports, sql, store  # noqa: E402
from forensics.core import runtime  # noqa: E402

if _before is not None:
    signal.signal(signal.SIGINT, _before)


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
@click.version_option(package_name="sglang-forensics")
def main(debug: bool) -> None:
    """Post-mortems of LLM serving incidents: SGLang PD logs, NIXL transfers, agent transcripts.

    Start with `forensics ingest DUMP_DIR`, then `forensics sql "SELECT ..."`.
    """
    runtime.configure()


for _command in (
    ingest.ingest,
    ingest.formats,
    sql.sql,
    sql.query,
    sql.tables,
    reports.timeline,
    reports.evidence,
    reports.compare,
    reports.replies,
    reports.room,
    reports.summary,
    store.clocks,
    store.verify,
    store.compact,
    store.remove,
):
    main.add_command(_command)


if __name__ == "__main__":
    main()
