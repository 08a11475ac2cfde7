"""`forensics timeline` as files: the format's module writes it.

reports.html (interactive page), reports.chart (PNG/SVG), reports.perfetto (trace); all three
draw the model of `forensics.analysis.timeline.build` plus the detail of reports.detail, gathered
here once so that `--redact` masks everything a file is drawn from in one pass.
"""

from __future__ import annotations

from forensics.core.errors import UsageError
from forensics.ingest.store import Store
from forensics.reports import chart, html, perfetto
from forensics.reports.detail import gather

FORMATS = ("html", "png", "svg", "perfetto")


def write(model: dict, fmt: str, output: str, store: Store, redactor=None) -> None:
    """Write the timeline `model` as `fmt` (html, png, svg or perfetto) to `output`, masked by `redactor`."""
    if fmt not in FORMATS:
        raise UsageError(f"no timeline export format {fmt!r}", help=f"use one of {', '.join(FORMATS)}")
    detail = {**gather(model, store, stats=fmt == "perfetto"), "store": str(store.root)}
    if redactor is not None:
        model, detail = redactor.value((model, detail))
    if fmt == "html":
        html.write(model, detail, output)
    elif fmt == "perfetto":
        perfetto.write(model, detail, output)
    else:
        chart.write(model, detail, output, fmt)
