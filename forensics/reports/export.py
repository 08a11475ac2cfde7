"""`forensics timeline` as files: the format's module writes it.

reports.html (interactive page), reports.chart (PNG/SVG), reports.perfetto (trace); all three
draw the model of `forensics.analysis.timeline.build` plus the detail of reports.detail, gathered
here once so that `--redact` masks everything a file is drawn from in one pass.
"""

from __future__ import annotations

from forensics.core.errors import UsageError
from forensics.reports import chart, formats, html, perfetto
from forensics.reports.detail import gather
from forensics.store import Store

FORMATS = formats.TIMELINE.files


def write(model: dict, fmt: str, output: str, store: Store, redactor=None) -> list[str]:
    """Write the timeline `model` as `fmt` (html, png, svg or perfetto) to `output`, masked by `redactor`;
    return the notes to show (a Perfetto trace cut to a window that its UI can load, a page that
    draws only some of the window's rooms, lines or replies one by one)."""
    if fmt not in FORMATS:
        raise UsageError(f"no timeline export format {fmt!r}", help=f"use one of {', '.join(FORMATS)}")
    note = None
    if fmt == "perfetto":
        model, note = perfetto.fit(model, store)
    stored = model  # host names and clock offsets as the store has them, for the counters' own query
    detail = {**gather(model, store, fmt), "store": str(store.root)}
    if redactor is not None:
        model, detail = redactor.value((model, detail))
    if fmt == "html":
        html.write(model, detail, output)
    elif fmt == "perfetto":
        counters = perfetto.counter_rows(stored, store, host_name=redactor.text if redactor is not None else str)
        perfetto.write(model, detail, output, counters, note)
    else:
        chart.write(model, detail, output, fmt)
    return ([note] if note else []) + [f"{fmt}: {n}" for n in detail["notes"]]
