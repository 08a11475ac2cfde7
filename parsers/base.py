"""The small interface every source-format parser implements."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Protocol

import polars as pl

from forensics.core.inputs import Context, Source

__all__ = ["Batch", "Context", "Parser", "Sample", "Source"]


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
