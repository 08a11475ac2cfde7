"""Where a command's result goes and in which format: `-o FILE` (its extension names the format),
`-o -` (stdout), `--format`; whether it is masked (`--redact`, applied by cli.common.session_command);
and how wide its tables are (`--max-width`, `--wide`). Which formats a report writes is said in forensics.reports.formats."""

from __future__ import annotations

import os
import sys

import click

from forensics.core.errors import UsageError
from forensics.reports.formats import EXTENSIONS, Writes

STDOUT = "-"


FORMAT, OUTPUT, REDACT = "--format", "-o", "--redact"


def output_options(
    writes: Writes,
    *layout,
    format_help: str | None = "Output format.",
    output_help: str | None = None,
    stdout_dash: bool = True,
):
    """The output options of a command that writes the report `writes`: --format (its choices and
    default are the report's), -o/--output and --redact, declared here once.

    `layout` is the order in which the command's help lists them: the markers FORMAT, OUTPUT and
    REDACT for the ones it takes, with the command's other option decorators that sit among them;
    the default is FORMAT alone. `stdout_dash=False` reads `-o -` as a file name for click.
    """

    def format_option(f):
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(writes.formats),
            default=writes.default,
            show_default=True,
            help=format_help,
        )(f)

    def output_option(f):
        return click.option(
            "-o", "--output", type=click.Path(dir_okay=False, allow_dash=stdout_dash), help=output_help
        )(f)

    def redact_option(f):
        return click.option(
            "--redact",
            is_flag=True,
            help="Mask secrets, addresses, e-mails, domain names, home paths and host names (the same "
            "name gets the same pseudonym); stderr says what was masked.",
        )(f)

    parts = {FORMAT: format_option, OUTPUT: output_option, REDACT: redact_option}
    decorators = [parts[d] if isinstance(d, str) else d for d in (layout or (FORMAT,))]

    def apply(f):
        # click lists options top down, in the reverse of the order they are applied
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def check_output(output) -> None:
    """A file to write needs an existing folder: said before any work, not as a traceback after it."""
    if not output or output == "-":
        return
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise UsageError(
            f"-o {output}: no folder {folder}", help=f"create it first (mkdir -p {folder}) or write elsewhere"
        )
    if os.path.isdir(output):
        raise UsageError(f"-o {output} is a folder", help="give a file name inside it")


def echo_head(line: str, fmt: str) -> None:
    """A line above a result: on stderr beside CSV and JSON, escaped as Markdown beside Markdown."""
    from forensics.reports.render import head_line

    click.echo(head_line(line, fmt), err=fmt in ("csv", "json"))


def table_options(f):
    """--max-width and --wide: how a table for a person is cut to the terminal (reports.render.TABLE)."""

    # set on every run, given or not: one process may run several commands (tests, a library caller)
    def set_width(ctx, param, value):
        from forensics.reports import render

        render.TABLE.max_width = value
        return value

    def set_wide(ctx, param, value):
        from forensics.reports import render

        render.TABLE.wide = bool(value)
        return value

    f = click.option(
        "--wide",
        is_flag=True,
        expose_value=False,
        callback=set_wide,
        help="Tables: every column and whole cells, however wide.",
    )(f)
    return click.option(
        "--max-width",
        type=click.IntRange(min=20),
        expose_value=False,
        callback=set_width,
        metavar="N",
        help="Tables: at most N characters wide (default: the terminal's width); "
        "cells are cut with … and columns that do not fit are counted.",
    )(f)


def output_format(fmt: str, output: str | None, writes: Writes, command: str) -> str:
    """The format to write: the one the extension of `output` names, unless --format was given; a
    --format that does not fit the extension, or an extension the command cannot write, is a usage error."""
    choices = writes.formats
    if not output or output == STDOUT:
        return fmt
    ext = os.path.splitext(output)[1].lower()
    fits = EXTENSIONS.get(ext)
    src = click.get_current_context().get_parameter_source("fmt")
    explicit = src is not None and src.name in ("COMMANDLINE", "ENVIRONMENT")
    if fits is None:
        # a name that says no format (x.pdf, a bare name) is written only as --format says, never
        # guessed as the terminal table
        if explicit:
            return fmt
        raise UsageError(
            f"`forensics {command}` writes no {ext} files" if ext else f"-o {output}: no extension says the format",
            help=_formats_help(choices),
        )
    writable = [f for f in fits if f in choices]
    if explicit:
        if fmt in fits:
            return fmt
        names = [e for e, fs in EXTENSIONS.items() if fmt in fs]
        raise UsageError(
            f"--format {fmt} does not fit -o {output}: a {ext} file holds {' or '.join(writable or fits)}",
            help=f"leave --format out (the extension chooses {writable[0]})"
            if writable
            else f"name the file with {' or '.join(names)}"
            if names
            else "write it to another extension",
        )
    if not writable:
        raise UsageError(f"`forensics {command}` writes no {ext} files", help=_formats_help(choices))
    return writable[0]


def _formats_help(formats) -> str:
    """The help of a refused -o: the formats a command writes, and the extensions that choose them."""
    inferred: dict[str, str] = {}
    for ext, fits in EXTENSIONS.items():
        writable = [f for f in fits if f in formats]
        if writable and writable[0] not in inferred.values():
            inferred[ext] = writable[0]
    return f"its formats: {', '.join(formats)}; pick one with --format or the extension of -o ({', '.join(inferred)})"


def binary_to_stdout(fmt: str, output: str | None) -> None:
    """Refuse binary bytes to a terminal, where they would only garble it: a file, or a pipe, takes them."""
    if output == STDOUT and sys.stdout.isatty():
        raise UsageError(
            f"--format {fmt} is binary: it is not written to a terminal",
            help="add -o FILE, or pipe `-o -` into the program that reads it",
        )


def write_text(output: str | None, fn) -> None:
    """Call `fn(stream)` on the file `output`, or stdout when it is None or `-`."""
    if output and output != STDOUT:
        with open(output, "w", encoding="utf-8") as f:
            fn(f)
        click.echo(f"wrote {output}", err=True)
    else:
        fn(sys.stdout)


def write_file(output: str, fn) -> None:
    """Call `fn(path)`, which writes a file at a path; `-o -` copies that file's bytes to stdout."""
    if output != STDOUT:
        fn(output)
        click.echo(f"wrote {output}", err=True)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out")
        fn(path)
        sys.stdout.flush()
        with open(path, "rb") as f:
            sys.stdout.buffer.write(f.read())
        sys.stdout.buffer.flush()
