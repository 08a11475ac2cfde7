"""The small interface every source-format parser implements."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import IO, Protocol

import polars as pl


@dataclasses.dataclass
class Source:
    """One input as the parser sees it: a display path and its decompressed bytes on demand.

    Picklable, so that ingest can hand it to a worker process.
    """

    path: str  # as reported in source_file (archive members read "archive.tar.gz!member")
    fs_path: str  # the file on disk (the archive, for a member)
    member: str | None = None  # name inside a tar archive
    size: int | None = None  # size on disk, for progress
    mtime: float | None = None  # seconds since the epoch, for sources timed by file date

    def open(self) -> IO[bytes]:
        """A fresh binary stream of the decompressed content."""
        from forensics.sources import open_source

        return open_source(self)


@dataclasses.dataclass
class Context:
    """What the user told ingest about a file, plus what the parser learns while reading it."""

    host: str | None = None
    role: str | None = None  # 'prefill' | 'decode' | None (infer)
    tz: str = "UTC"
    year: int | None = None
    run: str | None = None
    # Filled by the parser:
    lines: int = 0
    parsed_lines: int = 0
    continuation_lines: int = 0
    unparsed_lines: int = 0
    inferred_role: str | None = None
    inferred_host: str | None = None
    outer_offset_s: float | None = None  # inner clock minus a shipper's viewer clock (Kibana)
    first_ts: object = None  # datetime, UTC
    last_ts: object = None
    notes: list[str] = dataclasses.field(default_factory=list)
    on_progress: Callable[[int], None] | None = None  # called with decompressed bytes consumed

    def account(self, parsed: int = 0, continuation: int = 0, unparsed: int = 0) -> None:
        self.parsed_lines += parsed
        self.continuation_lines += continuation
        self.unparsed_lines += unparsed
        self.lines += parsed + continuation + unparsed


@dataclasses.dataclass
class Sample:
    """A sample input that doubles as a test: the parser must turn `text` into `expect`.

    `expect` maps a table name to the rows (partial dicts: only the listed keys are checked)
    that the sample must produce, in order.
    """

    name: str
    text: str
    expect: dict[str, list[dict]]


Batch = dict[str, pl.DataFrame]  # table name -> rows, in the columns of forensics.schema


class Parser(Protocol):
    name: str
    description: str
    samples: list[Sample]

    def sniff(self, head: bytes, path: str) -> float:
        """How sure (0..1) this parser is that the input starting with `head` is its format."""

    def parse(self, source: Source, ctx: Context) -> Iterator[Batch]:
        """Yield batches of rows; account every input record in `ctx` (parsed/continuation/unparsed)."""
