"""One error shape for the whole toolkit (lnav style).

error: <what>
  --> file:line
  | <the offending line>
  = help: <the fix>
"""

from __future__ import annotations


class ForensicsError(Exception):
    """A failure the user can act on; the CLI renders it and exits 1."""

    exit_code = 1

    def __init__(
        self,
        what: str,
        *,
        file: str | None = None,
        line: int | None = None,
        text: str | None = None,
        help: str | None = None,
    ):
        super().__init__(what)
        self.what, self.file, self.line, self.text, self.help = what, file, line, text, help

    def render(self) -> str:
        out = [f"error: {self.what}"]
        if self.file:
            out.append(f"  --> {self.file}" + (f":{self.line}" if self.line else ""))
        if self.text is not None:
            out.append(f"  | {self.text[:200]}")
        if self.help:
            out.append(f"  = help: {self.help}")
        return "\n".join(out)


class UsageError(ForensicsError):
    """Bad arguments: exit code 2."""

    exit_code = 2


class InputError(ForensicsError):
    """An input file cannot be read at all."""


class QueryError(ForensicsError):
    """SQL that DuckDB rejected."""


class StoreError(ForensicsError):
    """A file of the store is damaged: the message names it, the help the repair."""
