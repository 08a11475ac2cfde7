"""`forensics timeline` as files: the format's module writes it.

reports.html (interactive page), reports.chart (PNG/SVG), reports.perfetto (trace); all three
draw an export model (forensics.analysis.detail.export: the timeline model, its detail and a
trace's counters), which `--redact` masks whole before it gets here.
"""

from __future__ import annotations

from forensics.analysis.models import Export
from forensics.core.errors import UsageError
from forensics.reports import chart, formats, html, perfetto

FORMATS = formats.TIMELINE.files


def write(export: Export, fmt: str, output: str) -> list[str]:
    """Write the export as `fmt` (html, png, svg or perfetto) to `output`; return the notes to show
    (a Perfetto trace cut to a window that its UI can load, a page that draws only some of the
    window's rooms, lines or replies one by one)."""
    if fmt not in FORMATS:
        raise UsageError(f"no timeline export format {fmt!r}", help=f"use one of {', '.join(FORMATS)}")
    model, detail = export.model, export.detail
    if fmt == "html":
        html.write(model, detail, output)
    elif fmt == "perfetto":
        perfetto.write(model, detail, output, export.counters if export.counters is not None else (), export.note)
    else:
        chart.write(model, detail, output, fmt)
    return ([export.note] if export.note else []) + [f"{fmt}: {n}" for n in detail["notes"]]
