"""The small interface every source-format parser implements."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Protocol

import polars as pl

from forensics.core.inputs import Context, Source

__all__ = ["Batch", "Context", "PassPool", "Parser", "Sample", "Source", "Written"]


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


@dataclasses.dataclass
class Written:
    """What a parser yields in place of a batch that a worker wrote to the store itself
    (`PassPool`): its rows never come back to this process."""

    part: int


class PassPool(Protocol):
    """Ingest's worker processes, lent to one input (`Context.pool`): a parser runs its passes
    there side by side, and each pass's tables are written where it ran."""

    workers: int

    def submit(self, part: int, fn: Callable, *args) -> Future:
        """`fn(*args)` in a worker; it returns (batch, info, write). With `write` the batch is
        written there as part `part` of its tables and the future gives (Written(part), info),
        else (batch, info), for this process to finish and `write`."""

    def write(self, part: int, batch: Batch) -> Written:
        """The batch written here as part `part` of its tables."""


class Parser(Protocol):
    name: str
    description: str
    samples: list[Sample]

    def sniff(self, head: bytes, path: str) -> float:
        """How sure (0..1) this parser is that the input starting with `head` is its format."""

    def parse(self, source: Source, ctx: Context) -> Iterator[Batch]:
        """Yield batches of rows; account every input record in `ctx` (parsed/continuation/unparsed)."""
