"""The result models the analyses return and the reports render: dataclasses of frames and figures.

Each is what one report shows and nothing a renderer has to query for: the text renderers
(forensics.reports.text) take the type and read its fields. `items()` gives the fields in
declaration order, which is the JSON shapes' order; the dict-style reading (`model["rows"]`) is
what the exports (chart, HTML, Perfetto) still use. `--redact` masks a whole model
(forensics.reports.redact.mask), field by field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import polars as pl


class Model:
    """Dict-style reading of a dataclass's fields, in declaration order."""

    def __getitem__(self, key: str):
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default=None):
        return getattr(self, key) if key in self.keys() else default

    def __contains__(self, key: str) -> bool:
        return key in self.keys()

    def keys(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if not f.metadata.get("internal")]

    def items(self) -> list[tuple[str, object]]:
        return [(k, getattr(self, k)) for k in self.keys()]

    def to_dict(self) -> dict:
        return dict(self.items())


def _internal(**kw):
    """A field a renderer does not show: it travels with the model for the masking (whole values)."""
    return dataclasses.field(metadata={"internal": True}, **kw)


@dataclasses.dataclass
class Timeline(Model):
    """`forensics timeline`: one row per bucket, and the wedge and abort-storm intervals."""

    bucket_s: float
    since: str | None
    until: str | None
    host: str | None
    clock_offsets: dict[str, float]
    clock_warnings: list[str]
    notes: list[str]
    rows: pl.DataFrame
    wedges: pl.DataFrame
    abort_storms: pl.DataFrame
    # the unparsed share of the inputs it covers, and whether its counts are lower bounds (analysis.coverage)
    coverage: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Evidence(Model):
    """`forensics evidence`: corrupted against clean replies, and the server side of the incident."""

    clock_offsets: dict[str, float]
    clock_warnings: list[str]
    summary: dict
    comparisons: pl.DataFrame
    corrupted_replies: pl.DataFrame
    wedges: pl.DataFrame
    abort_storms: pl.DataFrame
    checksum_mismatches: pl.DataFrame
    # the server logs' side of the incident (analysis.failures); None: not asked for
    servers: dict | None
    # the unparsed share of the inputs it covers, and whether its counts are lower bounds (analysis.coverage)
    coverage: dict = dataclasses.field(default_factory=dict)
    # what the replies' evidence was cut from, under --redact (forensics.analysis.session.excerpts)
    excerpts: list = _internal(default_factory=list)


@dataclasses.dataclass
class Comparison(Model):
    """`forensics compare`: corruption per run against the baseline, throughput by concurrency band."""

    clock_offsets: dict[str, dict[str, float]]
    clock_warnings: list[str]
    without_replies: list[str]
    baseline: dict | None
    corruption: pl.DataFrame
    throughput: pl.DataFrame


@dataclasses.dataclass
class Summary(Model):
    """`forensics summary`: what a store holds, in plain values (the JSON document as it is written)."""

    kind: str
    version: int
    store: str
    inputs: dict
    hosts: list[dict]
    tables: list[dict]
    failures: dict
    clock_offsets: dict[str, float]
    clock_estimates: list[dict]
    clock_unbounded: list[str]
    warnings: list[str]


@dataclasses.dataclass
class Replies(Model):
    """`forensics replies`: the turns asked for, and the clock warnings of the header."""

    rows: pl.DataFrame
    clock_warnings: list[str]
    excerpts: list = _internal(default_factory=list)


@dataclasses.dataclass
class Counters:
    """Each rank's stats per bucket of an export's window, read from the store as they are written.

    `rows` is consumed once; `host` maps each stored host to the name shown (the masking's pseudonym
    under --redact), applied as the rows stream by."""

    rows: Iterable[dict]
    host: object = None

    def __iter__(self) -> Iterator[dict]:
        names: dict = {}
        for r in self.rows:
            h = r["host"]
            if self.host is not None and h is not None:
                if h not in names:
                    names[h] = self.host(h)
                r["host"] = names[h]
            yield r


@dataclasses.dataclass
class Export(Model):
    """A timeline export (HTML, PNG, SVG, Perfetto): the model drawn, its detail, its counters, its notes."""

    model: Timeline
    detail: dict
    counters: Counters | None = None
    # a Perfetto trace cut to a window its UI loads
    note: str | None = None
    excerpts: list = _internal(default_factory=list)
