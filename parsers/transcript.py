"""What the transcript parsers share: reading JSON records, and the batch they yield."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import polars as pl

from forensics.core import schema
from forensics.core.turns import Turn, frame
from forensics.parsers.base import Batch, Source
from forensics.parsers.lines import MAX_LINE_CHARS, cut_length

# How deep a JSON value may nest. Transcripts nest a few levels (a message, its parts, a tool call's
# arguments); a value nested deeper is refused with reason 'too_deep' before the decoder sees it, so
# the decoder's own recursion (Python's stack) is never what decides.
MAX_DEPTH = 512
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')


class TooDeep(ValueError):
    """A JSON value nested deeper than MAX_DEPTH."""

    def __init__(self):
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels")


def loads(text: str | bytes):
    """json.loads, refusing a value nested deeper than MAX_DEPTH (TooDeep, a ValueError)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    if text.count("[") + text.count("{") > MAX_DEPTH and _deepest(text) > MAX_DEPTH:
        raise TooDeep()
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep() from None


def _deepest(text: str) -> int:
    depth = deepest = 0
    for m in _TOKEN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(depth - 1, 0)
    return deepest


def documents(text: str, skip: tuple[str, ...] = ()) -> Iterator[tuple[int, str, object, str | None]]:
    """(line number, text, value or None, why it is unreadable) of each top-level JSON value in `text`,
    one after another (concatenated documents, as several exports written to one file are).

    A value nested deeper than MAX_DEPTH comes back unreadable with 'too_deep' and the values beside it
    are read as usual; text between values (lines starting with one of `skip` aside) is 'invalid_json',
    a value cut by the end of the file 'truncated'. Found without recursion, by brackets outside strings.
    """
    line, pos, depth, start, deepest = 1, 0, 0, None, 0

    def gap(a: int, b: int):
        body = "\n".join(ln for ln in text[a:b].split("\n") if not ln.lstrip().startswith(skip or ("\0",)))
        return body.strip()

    for m in _TOKEN.finditer(text):
        c = m.group()
        if depth == 0:
            if c not in "[{":
                continue  # a string or a closer outside any value: part of the text between values
            if body := gap(pos, m.start()):
                yield line + text.count("\n", pos, m.start()) - body.count("\n") - 1, body, None, "invalid_json"
            line += text.count("\n", pos, m.start())
            start, pos, deepest = m.start(), m.start(), 0
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
            if depth == 0:
                doc = text[start : m.end()]
                yield line, doc, *_value(doc, deepest)
                line += doc.count("\n")
                pos, start = m.end(), None
    if start is not None:
        yield line, text[start:], None, "truncated"
    elif body := gap(pos, len(text)):
        yield line + text.count("\n", pos, len(text)) - body.count("\n"), body, None, "invalid_json"


def _value(doc: str, deepest: int) -> tuple[object, str | None]:
    if deepest > MAX_DEPTH:
        return None, "too_deep"
    try:
        return json.loads(doc), None
    except RecursionError:
        return None, "too_deep"
    except ValueError:
        return None, "invalid_json"


def json_lines(source: Source) -> Iterator[tuple[int, str, object, str | None]]:
    """(line_no, raw line, parsed object or None, why it is unreadable) for every line.

    Blank lines come back unreadable with reason 'blank', as in the server-log parser; a line
    nested deeper than MAX_DEPTH with 'too_deep'; a line cut at MAX_LINE_BYTES by
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
            obj = loads(line)
        except TooDeep:
            yield i, line, None, "too_deep"
            continue
        except ValueError:
            yield i, line, None, "invalid_json"
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
