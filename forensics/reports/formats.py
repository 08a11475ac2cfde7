"""Which formats each report writes, and which format a file extension holds.

The command line reads these and nothing else: a command's `--format` choices and default, the
format that the extension of `-o FILE` names, and which formats need `-o`. Standard library only,
so that `forensics --help` imports nothing heavy.
"""

from __future__ import annotations

import dataclasses

# what each extension holds; where several formats write one extension (a Perfetto trace is JSON
# too) the first is the one inferred
EXTENSIONS = {
    ".csv": ("csv",),
    ".tsv": ("tsv",),
    ".tab": ("tsv",),
    ".json": ("json", "perfetto"),
    ".jsonl": ("jsonl",),
    ".ndjson": ("jsonl",),
    ".md": ("markdown",),
    ".markdown": ("markdown",),
    ".parquet": ("parquet",),
    ".html": ("html",),
    ".htm": ("html",),
    ".png": ("png",),
    ".svg": ("svg",),
    # plain text: the table a terminal shows, or a Markdown report
    ".txt": ("table", "markdown"),
}


@dataclasses.dataclass(frozen=True)
class Writes:
    """The formats one report writes, in the order `--help` lists them, and the one it writes unasked."""

    formats: tuple[str, ...]
    default: str
    # written to a file (or `-o -`), never straight to the terminal as text
    files: tuple[str, ...] = ()
    # bytes that are not text: refused to a terminal, `-o -` only into a pipe
    binary: tuple[str, ...] = ()

    def __post_init__(self):
        assert self.default in self.formats
        assert set(self.files) <= set(self.formats) and set(self.binary) <= set(self.files)


# a query result (`sql`, `query run`): reports.render, Parquet through render.write_parquet
RESULT = Writes(("table", "csv", "tsv", "json", "jsonl", "markdown", "parquet"), "table", ("parquet",), ("parquet",))
# a bare result table (`replies`, `room`, `clocks`)
TABLE = Writes(("table", "csv", "json", "markdown"), "table")
# the schema reference (`tables`)
SCHEMA = Writes(("table", "markdown", "json"), "table")
# reports.text.render_timeline, and the files of reports.export
TIMELINE = Writes(
    ("table", "markdown", "csv", "json", "html", "png", "svg", "perfetto"),
    "table",
    ("html", "png", "svg", "perfetto"),
    ("png",),
)
# reports.text.render_evidence and render_compare
EVIDENCE = Writes(("markdown", "json"), "markdown")
COMPARE = Writes(("markdown", "json"), "markdown")
# reports.summary.render_summary
SUMMARY = Writes(("table", "json"), "table")
