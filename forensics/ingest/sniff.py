"""Sniffing: which parser reads an input, or why none should (`NotALog`: binary, a document, text
without log markers). The most confident parser wins; a parser of structure wins a tie with the
server log, which counts markers in text.
"""

from __future__ import annotations

import os

from forensics.core.errors import UsageError
from forensics.core.inputs import Scan
from forensics.ingest.sources import document_by_content, names_a_log, not_a_log
from forensics.parsers import PARSERS, by_name, server_log
from forensics.parsers.base import Source


class NotALog(Exception):
    """An input no parser should read: ingest lists it in `files` as skipped, with its kind and why."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def choose_parser(src: Source, forced: str | None, sniff_bytes: int = Scan.sniff_bytes):
    """The parser forced, else the most confident one; NotALog when the input is not a log.

    `sniff_bytes`: how much of the input's head the parsers' sniffs see."""
    if forced:
        try:
            return by_name(forced)
        except KeyError:
            raise UsageError(f"unknown parser {forced!r}", help="see `forensics formats` for the names") from None
    if os.path.isdir(src.fs_path) and src.member is None:
        best = max(PARSERS, key=lambda p: getattr(p, "sniff_dir", lambda _: 0.0)(src.fs_path))
        return best
    from forensics.parsers.lines import NUL_RUN, TextStream, read_upto

    with src.open() as f:
        raw = head = read_upto(f, sniff_bytes)
    if b"\0" * NUL_RUN in raw or (b"\r" in raw and b"\n" not in raw):
        # a copytruncate hole before the first line, or CR line ends: text parsers read the file as
        # TextStream gives it (`parse.Input.open_through_hash`), so they sniff it that way too
        with src.open() as f:
            head = read_upto(TextStream(f), sniff_bytes)
    if not head and src.size:
        # compressed bytes that decompress to nothing (a stream cut before its first block) are no
        # empty file: the server log's read keeps what there is and notes a cut, as for any cut log;
        # so is a file of NULs alone (truncated by copytruncate, nothing written since)
        return server_log
    scores = {p.name: _sniff(p, raw, head, src.path) for p in PARSERS}
    # On a tie a parser that reads structure (JSON objects, a binary header) wins over the server
    # log, which counts markers in text: a transcript whose replies quote log lines has them too.
    # Otherwise the first listed wins (a stable sort).
    ranked = sorted(PARSERS, key=lambda p: (scores[p.name], p is not server_log), reverse=True)
    doc = not_a_log(head, src.path)
    if doc is not None and doc[0] == "json" and names_a_log(src.path) and _read_as_log(head, scores[server_log.name]):
        doc = None  # a log's name and log lines (or JSON Lines): read line by line, not a JSON document
    if doc is not None:
        # notes and summaries quote log lines: a document kind outranks the server-log sniff, not a
        # parser of structure that claims the input (an opencode session is a .json file)
        best = next((p for p in ranked if p is not server_log), None)
        if best is None or scores[best.name] < 0.5:
            raise NotALog(*doc)
        return best
    best = ranked[0]
    if scores[best.name] >= 0.5:
        return best
    if _looks_binary(head):
        raise NotALog("binary", "binary content that no parser reads (pass --parser to force one)")
    doc = document_by_content(head)
    if doc is not None:
        raise NotALog(*doc)
    markers = f"no server-log, transcript or trace markers in its first {sniff_bytes >> 10} KiB"
    if names_a_log(src.path):
        return ByName(f"{markers}: read as a log because its name says so; what is not recognised is in `unparsed`")
    raise NotALog("text", markers)


class ByName:
    """The server-log parser for a file that names itself a log and whose head no parser recognises
    (an unknown build, a crash dump): every line is read, and the note says why."""

    def __init__(self, note: str):
        self.note = note

    def __getattr__(self, attr):
        return getattr(server_log, attr)

    def parse(self, src: Source, ctx):
        ctx.notes.append(self.note)
        return server_log.parse(src, ctx)


# Parsers that read binary records: they get the input's bytes as they are, never a TextStream.
BINARY_FORMATS = {"nixl_telemetry", "opencode"}


def _sniff(parser, raw: bytes, text: bytes, path: str) -> float:
    if parser.name in BINARY_FORMATS or text is raw:
        return parser.sniff(raw, path)
    return max(parser.sniff(raw, path), parser.sniff(text, path))


def _json_lines(head: bytes) -> bool:
    """Whether the first line is a JSON object by itself (JSON Lines), not the start of a document."""
    import json

    first = next((ln for ln in head.split(b"\n") if ln.strip()), b"")
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):
        return False


def _read_as_log(head: bytes, log_score: float) -> bool:
    """Whether a head that starts like JSON, under a log's name, is a log all the same: JSON Lines,
    or log lines after a response body pasted (or glued) in front of them. A head that parses whole
    as JSON is a document even when its strings quote log lines."""
    if _json_lines(head):
        return True
    if log_score < 0.5:
        return False
    import json

    try:
        json.loads(head)
    except (ValueError, RecursionError):
        return True
    return False


def _looks_binary(head: bytes) -> bool:
    """More than 10% bytes that no text log contains (NULs and C0 controls other than tab/newlines)."""
    if not head:
        return False
    odd = sum(1 for b in head[:8192] if b < 9 or 13 < b < 32 or b == 127)
    return odd > len(head[:8192]) * 0.10
