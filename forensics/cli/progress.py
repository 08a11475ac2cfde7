"""Ingest progress (bytes read) and the per-file summary table, on stderr."""

from __future__ import annotations

import sys


class IngestProgress:
    def __init__(self):
        from rich.console import Console

        self.console = Console(stderr=True, emoji=False, highlight=False)
        self.progress = None
        self.task = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.progress:
            self.progress.stop()

    def start(self, total_bytes: int, n_files: int) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self.progress = Progress(
            TextColumn("ingest {task.fields[files]}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=self.console,
            transient=True,
            disable=not sys.stderr.isatty(),
        )
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
        con = Console(
            stderr=True, markup=False, emoji=False, highlight=False, width=None if sys.stderr.isatty() else 160
        )
        t = Table(header_style="bold")
        for c in ("file", "format", "host", "role", "lines", "parsed", "cont.", "unparsed", "status"):
            t.add_column(c, justify="right" if c in ("lines", "parsed", "cont.", "unparsed") else "left")
        read = [r for r in results if r.status != "skipped"]
        for r in read:
            t.add_row(
                escape_control(_short(r.path)),
                r.format or "",
                escape_control(r.host or ""),
                r.role or "",
                str(r.lines),
                str(r.parsed),
                str(r.continuation),
                str(r.unparsed),
                r.status,
            )
        if read:
            con.print(t)
        if line := skipped_line(results):
            con.print(line, markup=False)
        for r in results:
            if r.error:
                con.print(escape_control(r.error), markup=False)
            for n in r.notes:
                con.print(f"note: {escape_control(r.path)}: {escape_control(n)}", markup=False)
            for w in r.warnings:
                con.print(f"warning: {escape_control(r.path)}: {escape_control(w)}", markup=False)
        if line := failed_line(results):
            con.print(escape_control(line), markup=False)


def failed_line(results) -> str | None:
    """'error: 2 of 5 inputs failed: a.log, b.jsonl (the others are ingested)', or None."""
    failed = [r.path for r in results if r.status == "failed"]
    if not failed:
        return None
    names = ", ".join(failed[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
    return (
        f"error: {len(failed)} of {len(results)} input{'s' if len(results) != 1 else ''} failed: {names} "
        "(the others are ingested; a failed parse leaves its lines in `unparsed`)"
    )


def skipped_line(results) -> str | None:
    """'skipped 3 files that are not logs: 2 markdown, 1 json (see `files`)', or None."""
    from collections import Counter

    kinds = Counter(r.skip_kind or "unknown" for r in results if r.status == "skipped")
    if not kinds:
        return None
    n = sum(kinds.values())
    by_kind = ", ".join(f"{c} {k}" for k, c in sorted(kinds.items(), key=lambda kc: (-kc[1], kc[0])))
    what = "1 file that is not a log" if n == 1 else f"{n} files that are not logs"
    return f"skipped {what}: {by_kind} (see `files`, status 'skipped', for each one's skip_reason)"


def _short(path: str) -> str:
    import os

    rel = os.path.relpath(path) if not path.startswith("..") and os.path.isabs(path) else path
    return rel if len(rel) < len(path) else path


def nothing_line(paths, results) -> str:
    """The error of an ingest that recognised no input at all, saying what it saw."""
    from forensics.core.errors import ForensicsError

    what = skipped_line(results) or f"no files found under {', '.join(paths)}"
    return ForensicsError(
        f"nothing recognised as a log or transcript in {', '.join(paths)}: "
        + (what.replace("skipped ", "saw ", 1) if results else what),
        help="point ingest at the dump's folder, or read the inputs with `--parser NAME` (see `forensics formats`)",
    ).render()


class computing:
    """'computing rooms, transfers, replies …' on stderr while a store's derived views are built (they are
    then cached for that store state); quiet when stderr is not a terminal. The catalog enters it only
    when there is something to compute (forensics.catalog.connect, `computing`)."""

    def __init__(self, store, what: str = "derived views (rooms, transfers, replies, ...)"):
        self.store, self.what, self.status = store, what, None

    def __enter__(self):
        if sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status(
                f"computing {self.what}: once per store state, then cached", spinner="dots"
            )
            self.status.start()
        return self

    def __exit__(self, *exc):
        if self.status:
            self.status.stop()
