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


# -- one session per command ----------------------------------------------------------------------


# A command opens one session (`session_command`); what it returns is masked whole under --redact and
# written to -o or stdout here, once for every command.


class Output:
    """What a session command returns: its result model and how it is written. `text(model, stream)`
    writes a text format (to -o FILE or stdout); `file(model, path)` writes a file format and returns
    the notes to show after it (`binary`: never to a terminal). The model they get is masked under
    --redact, and so are the `notes` shown on stderr before the output."""

    def __init__(self, model, text=None, file=None, fmt: str | None = None, binary: bool = False, notes=()):
        self.model, self.text, self.file, self.fmt, self.binary = model, text, file, fmt, binary
        self.notes = list(notes)


def session_command(materialize: bool = True, offsets: dict[str, float] | None = None):
    """The command's one session: opened from its --store (passed as `session`), closed when it is
    done; what it returns (an Output) is masked whole under --redact (forensics.reports.redact.mask)
    and written to -o or stdout. Stack it under @handled."""

    def deco(f):
        @functools.wraps(f)
        def wrapper(*a, **kw):
            from forensics.analysis.session import Session
            from forensics.cli.progress import computing

            store = kw.pop("store")
            redact = bool(kw.pop("redact", False))
            output = kw.get("output")
            s = Session.open(store, offsets=offsets, materialize=materialize, redact=redact)
            s.computing = lambda: computing(s.store)
            with s:
                out = f(*a, session=s, **kw)
                if out is not None:
                    emit(out, s, redact, output)
            return None

        return wrapper

    return deco


def emit(out: Output, session, redact: bool, output: str | None) -> None:
    """Write `out`: its model masked (under `redact`), its notes on stderr, then the model to `output`."""
    from forensics.cli.output import binary_to_stdout, write_file, write_text

    red = None
    model = out.model
    if redact:
        from forensics.reports.redact import Redactor, mask

        red = Redactor.for_store(session.redaction_names(), session.store.root)
        model = mask(model, red)
    for note in out.notes:
        click.echo(f"note: {red.text(note) if red else note}", err=True)
    if out.file is not None:
        if out.binary:
            binary_to_stdout(out.fmt, output)
        notes: list[str] = []
        write_file(output, lambda path: notes.extend(out.file(model, path) or []))
        for note in notes:
            click.echo(note, err=True)
    elif out.text is not None:
        write_text(output, lambda stream: out.text(model, stream))
    if red is not None:
        click.echo(red.summary(), err=True)
