"""The typed records of ingest: the options it parses with, what a parse reports, the `files` row,
and the result of one input.

The parsers keep the mutable `core.inputs.Context` (they count lines into it, note what they
saw and infer the host and role while they read, in this process and in the workers, whose
counts are merged back); ingest builds that context from frozen `Options` and reads it back once
as a frozen `ParseReport`, so nothing after the parse depends on the context.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

import polars as pl

from forensics.core import schema
from forensics.core.errors import UsageError
from forensics.core.inputs import Context, Scan


@dataclasses.dataclass(frozen=True)
class Options:
    """What the user told ingest, the same for every input; `scan` sizes the reads."""

    host: str | None = None
    role: str | None = None
    tz: str = "UTC"
    year: int | None = None
    date: str | None = None  # YYYY-MM-DD (or YYYY, as `year`) for lines with a time and no date
    run: str | None = None
    format: str | None = None
    jobs: int | None = None
    scan: Scan = Scan()
    engine: str = "local"  # where the task units run (ingest/engine.py)
    address: str | None = None  # the Ray cluster to join (--address); None starts one
    # (host, year, path): the year the dated lines of another input of the host give, for an input
    # whose lines print none; (path, year, other path, how) of an input whose host has none (ingest/years.py)
    host_years: tuple[tuple[str, int, str], ...] = ()
    input_years: tuple[tuple[str, int, str, str], ...] = ()
    # the options given on the command line (not defaults): an input the store holds read with
    # others is read again (ingest/reread.py)
    explicit: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.date is None:
            return
        d = self.date.strip()
        if len(d) == 4 and d.isdigit():  # a year alone says what --year says
            object.__setattr__(self, "date", None)
            object.__setattr__(self, "year", self.year or int(d))
            return
        try:
            iso = dt.date.fromisoformat(d).isoformat()
        except ValueError:
            raise UsageError(f"--date wants YYYY-MM-DD or YYYY, got {d!r}", help="e.g. --date 2024-11-29") from None
        object.__setattr__(self, "date", iso)
        if self.year is not None and self.year != int(iso[:4]):
            raise UsageError(f"--date {iso} and --year {self.year} disagree", help="pass one of them")

    def context(
        self, host: str, progress: Callable[[int], None] | None, resume: dict | None, path: str | None = None
    ) -> Context:
        """The parser's context for one input."""
        return Context(
            host=host,
            role=self.role,
            tz=self.tz,
            year=self.year,
            date=self.date,
            run=self.run,
            on_progress=progress,
            resume=resume,
            scan=self.scan,
            host_year=next(((y, p, "an input of the same host") for h, y, p in self.host_years if h == host), None)
            or next(((y, o, how) for p, y, o, how in self.input_years if p == path), None),
        )


@dataclasses.dataclass(frozen=True)
class ParseReport:
    """What one parse found, read off its context once the parser is done."""

    host: str | None
    role: str | None
    lines: int
    parsed: int
    continuation: int
    unparsed: int
    first_ts: object
    last_ts: object
    notes: tuple[str, ...]
    carry: dict | None
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, ctx: Context) -> "ParseReport":
        return cls(
            host=ctx.inferred_host or ctx.host,
            role=ctx.role or ctx.inferred_role,
            lines=ctx.lines,
            parsed=ctx.parsed_lines,
            continuation=ctx.continuation_lines,
            unparsed=ctx.unparsed_lines,
            first_ts=ctx.first_ts,
            last_ts=ctx.last_ts,
            notes=tuple(ctx.notes),
            carry=dict(ctx.carry) if ctx.carry else None,
            warnings=tuple(ctx.warnings),
        )


def _files_row_type():
    # one field per column of the schema's `files` table, so that a row names no column the table
    # lacks and a column added to the table is a field here
    fields = [(c.name, object, dataclasses.field(default=None)) for c in schema.FILES.stored]
    ns = {
        "__doc__": "One row of the `files` table: every field a column of schema.FILES, NULL unless given.",
        "frame": lambda self: pl.DataFrame([dataclasses.asdict(self)]),
    }
    return dataclasses.make_dataclass("FilesRow", fields, frozen=True, kw_only=True, namespace=ns)


FilesRow = _files_row_type()


@dataclasses.dataclass
class FileResult:
    path: str
    format: str | None = None
    host: str | None = None
    role: str | None = None
    lines: int = 0
    parsed: int = 0
    continuation: int = 0
    unparsed: int = 0
    status: str = "ingested"  # ingested | duplicate | failed | skipped (not a log: see skip_kind)
    error: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    skip_kind: str | None = None
    skip_reason: str | None = None
    key: str | None = None  # its store key (inputs/<key>.json): committed by this ingest or before it
