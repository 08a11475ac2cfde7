"""What the transcript parsers share: reading JSON records, and the batch they yield."""

from __future__ import annotations

import json
from collections.abc import Iterator

import polars as pl

from forensics.core import schema
from forensics.core.turns import Turn, frame
from forensics.parsers.base import Batch, Source
from forensics.parsers.lines import MAX_LINE_CHARS, cut_length


def json_lines(source: Source) -> Iterator[tuple[int, str, object, str | None]]:
    """(line_no, raw line, parsed object or None, why it is unreadable) for every line.

    Blank lines come back unreadable with reason 'blank', as in the server-log parser; a line
    nested deeper than the decoder recurses with 'too_deep'; a line cut at MAX_LINE_BYTES by
    ingest's TextStream with 'line_too_long' (its head and length are in the line).
    """
    with source.open() as f:
        data = f.read()
    lines = data.decode("utf-8", "backslashreplace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    for i, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            yield i, line, None, "blank"
            continue
        if cut_length(line) is not None:
            yield i, line, None, "line_too_long"
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            yield i, line, None, "invalid_json"
            continue
        except RecursionError:
            yield i, line, None, "too_deep"
            continue
        yield i, line, obj, None if isinstance(obj, dict) else "schema:not_an_object"


def sniff_jsonl(head: bytes, keys: set[str], test) -> float:
    """0.95 when the first objects of `head` have `keys` and pass `test`, 0 otherwise."""
    text = head.decode("utf-8", "replace")
    lines = [ln for ln in text.split("\n") if ln.strip()][:8]
    if len(head) >= 64 << 10 and len(lines) > 1:
        lines = lines[:-1]  # the head may cut the last line
    good = 0
    for ln in lines:
        try:
            obj = json.loads(ln)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and keys <= obj.keys() and test(obj):
            good += 1
    return 0.95 if good and good >= len(lines) / 2 else 0.0


def batch(turns: list[Turn], unparsed: list[tuple[str, int | None, str, str]], fmt: str) -> Batch:
    """The rows of one input: its turns (verdicts are an analysis step), and the records nobody could read."""
    un = pl.DataFrame(
        [
            {"source_file": f, "line_no": n, "line": line[:MAX_LINE_CHARS], "reason": r, "format": fmt}
            for f, n, line, r in unparsed
        ],
        schema=schema.UNPARSED.polars_schema,
    )
    return {"turns": frame(turns), "unparsed": un}


def text_of(content) -> str:
    """Text of an OpenAI / Anthropic message `content`: a string, or the text of its parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") in ("text", None)
        )
    return str(content)
