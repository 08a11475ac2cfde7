"""Ingest progress (bytes read) and the per-file summary table, on stderr."""

from __future__ import annotations

import sys


class IngestProgress:
    def __init__(self):
        from rich.console import Console

        self.console = Console(stderr=True)
        self.progress = None
        self.task = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.progress:
            self.progress.stop()

    def start(self, total_bytes: int, n_files: int) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self.progress = Progress(TextColumn("ingest {task.fields[files]}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), console=self.console, transient=True,
                                 disable=not sys.stderr.isatty())
        self.progress.start()
        self.task = self.progress.add_task("ingest", total=total_bytes or None, files=f"0/{n_files}")
        self.n_files, self.n_done = n_files, 0

    def advance(self, n: int) -> None:
        if self.progress:
            self.progress.advance(self.task, n)

    def done_file(self, result) -> None:
        self.n_done += 1
        if self.progress:
            self.progress.update(self.task, files=f"{self.n_done}/{self.n_files}")

    @staticmethod
    def summary(results) -> None:
        from rich.console import Console
        from rich.table import Table

        from forensics.core.text import escape_control

        # a pipe or CI log gets 80 columns by default, which truncates every path
        con = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)
        t = Table(header_style="bold")
        for c in ("file", "format", "host", "role", "lines", "parsed", "cont.", "unparsed", "status"):
            t.add_column(c, justify="right" if c in ("lines", "parsed", "cont.", "unparsed") else "left")
        for r in results:
            t.add_row(escape_control(_short(r.path)), r.format or "", r.host or "", r.role or "", str(r.lines),
                      str(r.parsed), str(r.continuation), str(r.unparsed), r.status)
        con.print(t)
        for r in results:
            if r.error:
                con.print(escape_control(r.error), markup=False)
            for n in r.notes:
                con.print(f"note: {escape_control(r.path)}: {escape_control(n)}", markup=False)


def _short(path: str) -> str:
    import os

    rel = os.path.relpath(path) if not path.startswith("..") and os.path.isabs(path) else path
    return rel if len(rel) < len(path) else path
