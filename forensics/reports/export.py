"""`forensics timeline` as files: the format's module writes it.

reports.html (interactive page), reports.chart (PNG/SVG), reports.perfetto (trace); all three
draw the model of `forensics.analysis.timeline.build` plus the detail of reports.detail.
"""

from __future__ import annotations

from forensics.core.errors import UsageError
from forensics.ingest.store import Store
from forensics.reports import chart, html, perfetto

FORMATS = ("html", "png", "svg", "perfetto")


def write(model: dict, fmt: str, output: str, store: Store) -> None:
    """Write the timeline `model` as `fmt` (html, png, svg or perfetto) to `output`."""
    if fmt == "html":
        html.write(model, output, store)
    elif fmt == "perfetto":
        perfetto.write(model, output, store)
    elif fmt in ("png", "svg"):
        chart.write(model, output, store, fmt)
    else:
        raise UsageError(f"no timeline export format {fmt!r}", help=f"use one of {', '.join(FORMATS)}")
