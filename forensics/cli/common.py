"""What every command shares: the store option, the one error shape and the exit codes."""

from __future__ import annotations

import functools
import sys

import click

EXIT_FAILED = 1  # a failed run; usage errors exit 2 (ForensicsError.exit_code)


def store_option(f):
    from forensics.store import DEFAULT_STORE

    return click.option(
        "--store",
        "store",
        envvar="FORENSICS_STORE",
        default=DEFAULT_STORE,
        show_default=True,
        type=click.Path(file_okay=False),
        help="Store folder (or $FORENSICS_STORE).",
    )(f)


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
    from forensics.store import Store
    from forensics.store.checks import explain_read_error

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
