"""Renderers for the result models of the text reports, one module per report: terminal, Markdown,
CSV and JSON. They know the result model, not SQL."""

from forensics.reports.text.common import evidence_json, storm_table, wedge_incidents, wedge_table
from forensics.reports.text.compare import comparison_table, render_compare
from forensics.reports.text.evidence import render_evidence
from forensics.reports.text.replies import print_replies
from forensics.reports.text.timeline import TIMELINE_TABLE_COLUMNS, render_timeline, timeline_columns, timeline_json

__all__ = [
    "TIMELINE_TABLE_COLUMNS",
    "comparison_table",
    "evidence_json",
    "print_replies",
    "render_compare",
    "render_evidence",
    "render_timeline",
    "storm_table",
    "timeline_columns",
    "timeline_json",
    "wedge_incidents",
    "wedge_table",
]
