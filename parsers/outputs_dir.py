"""A folder of generated outputs (an article writer's `*.md` / `*.txt` files): one turn per file.

There is no metadata beyond the text: the folder is the session, the file name the turn, and the
time is the file's mtime unless the text says otherwise (front matter `date:` / `generated_at:`,
or a leading `Generated: <time>` line). Front matter is metadata, not output, and is left out of
the content. The folder is claimed only when every file in it is such an output: a folder of
`.txt` server logs, JSON or anything else is left to the other parsers.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator

from forensics.core.turns import Turn, parse_time
from forensics.parsers.base import Batch, Context, Sample, Source
from forensics.parsers.transcript import batch

name = "outputs_dir"
description = "folder of generated outputs (*.md, *.txt), one turn per file, timed by content or mtime"

EXTENSIONS = (".md", ".markdown", ".txt")
_FRONT = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.S)
_TIME_KEYS = ("generated_at", "generated", "created_at", "created", "date", "timestamp", "time")
_LEAD_TIME = re.compile(
    r"\A\s*(?:\*\*)?(?:Generated|Created|Date|Timestamp)(?:\*\*)?\s*(?:at)?\s*:\s*(?:\*\*)?\s*"
    r"(\d{4}-\d{2}-\d{2}[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)",
    re.I,
)
# a line that starts with a date-time is a log line, not prose
_LOG_LINE = re.compile(
    r"^\s*(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[\d{2}-\d{2} \d{2}:|[IWEF]\d{4} \d{2}:|\{\")", re.M
)


def sniff(head: bytes, path: str) -> float:
    # single files are never claimed: a stray README.md in a dump is not a model output
    return 0.0


def _looks_like_output(head: str) -> bool:
    lines = [ln for ln in head.split("\n") if ln.strip()]
    if not lines:
        return True  # an empty output is still an output (an empty turn)
    if lines[0].lstrip().startswith(("{", "[{")):
        return False
    return sum(1 for ln in lines if _LOG_LINE.match(ln)) <= 0.2 * len(lines)


def sniff_dir(path: str) -> float:
    """0.8 for a flat folder of two or more .md/.txt files that read as prose, else 0."""
    try:
        entries = [e for e in os.scandir(path) if not e.name.startswith(".")]
    except OSError:
        return 0.0
    files = [e for e in entries if e.is_file(follow_symlinks=False)]
    if len(files) < 2 or len(files) != len(entries):
        return 0.0
    if not all(e.name.lower().endswith(EXTENSIONS) for e in files):
        return 0.0
    from forensics.parsers import server_log

    for e in files[:50]:
        with open(e.path, "rb") as fh:
            head = fh.read(16 << 10)
        if server_log.sniff(head, e.path) >= 0.5 or not _looks_like_output(head.decode("utf-8", "replace")):
            return 0.0
    return 0.8


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    m = _FRONT.match(text)
    if not m:
        return {}, text
    meta = {}
    for line in m.group(1).split("\n"):
        k, sep, v = line.partition(":")
        if sep and k.strip() and not k.startswith((" ", "\t")):
            meta[k.strip().lower()] = v.strip().strip("\"'")
    return meta, text[m.end() :]


def output_turn(path: str, session: str, data: bytes, mtime: float | None, ordinal: int) -> Turn:
    """One output file as a turn."""
    # invalid bytes become U+FFFD: mojibake in a generated text is itself evidence (S14)
    text = data.decode("utf-8", "replace")
    meta, body = _front_matter(text)
    when = next((parse_time(meta[k]) for k in _TIME_KEYS if k in meta and parse_time(meta[k])), None)
    if when is None:
        m = _LEAD_TIME.match(body)
        when = parse_time(m.group(1)) if m else None
    if when is None and mtime is not None:
        when = dt.datetime.fromtimestamp(mtime, dt.timezone.utc)
    return Turn(
        source=name,
        session_id=session,
        turn_id=os.path.basename(path),
        source_file=path,
        line_no=ordinal,
        t_end=when,
        model=meta.get("model"),
        content=body,
        tools_offered=False,
    )


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
    turns = []
    if os.path.isdir(source.fs_path) and source.member is None:
        session = os.path.basename(os.path.normpath(source.path))
        names = sorted(n for n in os.listdir(source.fs_path) if not n.startswith("."))
        for i, n in enumerate(names, 1):
            full = os.path.join(source.fs_path, n)
            with open(full, "rb") as fh:
                data = fh.read()
            turns.append(output_turn(full, session, data, os.stat(full).st_mtime, i))
    else:
        with source.open() as fh:
            data = fh.read()
        session = os.path.basename(os.path.dirname(source.path.split("!")[-1])) or "outputs"
        turns.append(output_turn(source.path, session, data, source.mtime, 1))
    ctx.account(parsed=len(turns))
    stamps = [t.t_end for t in turns if t.t_end]
    ctx.first_ts, ctx.last_ts = (min(stamps), max(stamps)) if stamps else (None, None)
    yield batch(turns, [], name)


samples = [
    Sample(
        "front_matter_time",
        "---\ntitle: KV caches explained\ndate: 2026-10-30T09:12:00Z\nmodel: deepseek-v3.2\n---\n"
        "# KV caches explained\n\nA KV cache keeps the keys and values of past tokens so decode does not recompute them.\n",
        {
            "turns": [
                {
                    "t_end": parse_time("2026-10-30T09:12:00Z"),
                    "model": "deepseek-v3.2",
                    "corruption_class": "clean",
                    "content": "# KV caches explained\n\nA KV cache keeps the keys and values of past tokens so decode "
                    "does not recompute them.\n",
                }
            ]
        },
    ),
    Sample(
        "leaked_markup_in_article",
        "Generated: 2026-10-30 09:40:00+00:00\n\nThe benchmark numbers follow.\n\n<｜DSML｜function_calls>\n"
        '<｜DSML｜invoke name="web_search">\n<｜DSML｜parameter name="query" string="true">H100 KV bandwidth'
        "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>\n",
        {
            "turns": [
                {"t_end": parse_time("2026-10-30T09:40:00Z"), "signatures": ["S1"], "corruption_class": "parse_leak"}
            ]
        },
    ),
    Sample(
        "empty_output",
        "\n",
        {"turns": [{"signatures": ["S15"], "corruption_class": "empty", "corrupted": True}]},
    ),
]
