"""The canonical turn record every transcript parser produces, and its rows.

The record is described in docs/formats/TRANSCRIPTS.md, "The canonical turn".

A parser builds one `Turn` per assistant reply, then hands all turns of an input to `frame()`,
which orders each session by time and returns rows in the stored columns of the `turns` table:
everything the corruption detectors read, and no verdict. The verdicts are an analysis step over
the stored rows (forensics.analysis.verdicts), so a new threshold needs no re-ingest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re

import polars as pl

from forensics.core import schema

# AI-SDK (opencode), Anthropic (Claude Code) and OpenAI finish reasons onto sglang's vocabulary.
_FINISH = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "tool_calls": "tool_calls",
    "tool-calls": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "content_filter": "content_filter",
    "content-filter": "content_filter",
    "refusal": "content_filter",
    "abort": "abort",
    "error": "error",
    "other": "other",
    "unknown": "unknown",
    "pause_turn": "other",
}


def normalise_finish(reason) -> str | None:
    """`finish_reason` in sglang's words; unknown values are kept lower-cased rather than lost."""
    if reason is None or reason == "":
        return None
    if isinstance(reason, dict):  # sglang meta_info style {'type': 'stop', ...}
        reason = reason.get("type")
        if reason is None:
            return None
    r = str(reason).strip()
    return _FINISH.get(r, _FINISH.get(r.lower(), r.lower()))


@dataclasses.dataclass
class Turn:
    """One assistant reply, whatever the source."""

    source: str  # 'opencode' | 'openai_proxy' | 'claude_code' | 'outputs_dir'
    session_id: str
    turn_id: str
    source_file: str
    line_no: int | None = None  # line (JSONL) or row / message ordinal (db, tree, export)
    parent_id: str | None = None
    t_start: dt.datetime | None = None
    t_end: dt.datetime | None = None
    model: str | None = None
    content: str = ""
    reasoning: str = ""
    # [{"id", "name", "arguments"}]; arguments as sent (a JSON string) or an already parsed object
    tool_calls: list[dict] = dataclasses.field(default_factory=list)
    finish_reason: str | None = None
    http_status: int | None = None
    error_text: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    response_id: str | None = None
    rid: str | None = None
    bootstrap_room: int | None = None
    # what an error body names (the failing request's rid and room); frame() reads them from
    # error_text when the parser did not set them
    error_rid: str | None = None
    error_bootstrap_room: int | None = None
    # [{"name", "required": [...]}] when the request's tools are known; None when they are not
    offered_tools: list[dict] | None = None
    tools_offered: bool | None = None  # an agent offers tools even when the transcript does not list them
    user_text: str | None = None  # the user turn this replies to (S13 compares scripts)
    truncated: bool = False  # a stream without [DONE], a reply cut short in the record


def frame(turns: list[Turn]) -> pl.DataFrame:
    """Stored rows of the `turns` table; `seq` numbers each session's turns in time order."""
    by_session: dict[tuple[str, str], list[Turn]] = {}
    for t in turns:
        by_session.setdefault((t.source, t.session_id), []).append(t)
    rows = []
    for session in by_session.values():
        session.sort(key=lambda t: (t.t_start or t.t_end or _EPOCH, t.line_no or 0))
        for seq, t in enumerate(session):
            rows.append(
                {
                    **{
                        f.name: getattr(t, f.name)
                        for f in dataclasses.fields(Turn)
                        if f.name not in ("tool_calls", "offered_tools")
                    },
                    "error_rid": t.error_rid if t.error_rid is not None else rid_in_error(t.error_text),
                    "error_bootstrap_room": (
                        t.error_bootstrap_room if t.error_bootstrap_room is not None else room_in_error(t.error_text)
                    ),
                    "seq": seq,
                    "tool_calls": json.dumps(t.tool_calls, ensure_ascii=False) if t.tool_calls else None,
                    "offered_tools": json.dumps([o["name"] for o in t.offered_tools]) if t.offered_tools else None,
                    "offered_tool_params": json.dumps(t.offered_tools, ensure_ascii=False) if t.offered_tools else None,
                    "n_tool_calls": len(t.tool_calls),
                    "content_chars": len(t.content or ""),
                    "reasoning_chars": len(t.reasoning or ""),
                }
            )
    if not rows:
        return schema.conform("turns", pl.DataFrame())
    return schema.conform("turns", pl.DataFrame(rows, schema_overrides=_OVERRIDES, infer_schema_length=None))


# sglang names the failing request in its transfer failures, and the HTTP 500 it sends the client
# quotes that line (docs/formats/SGLANG.md, "PD transfer and bootstrap failures"):
# `decode_req.req.rid='…' decode_req.req.bootstrap_room=N … KVTransferError(bootstrap_room=N)`, `Request N timed out`, `(bootstrap_room: N)`, and an echoed
# request body's `"bootstrap_room": N`. The first one named is the failing request's own: a context
# corruption line names the victim's room before the room its metadata came from.
_ROOM_IN_ERROR = re.compile(
    r"bootstrap_room\\?['\"]?\s*[=:]\s*\\?['\"]?(\d{1,19})\b"
    r"|\bRequest (\d{1,19}) (?:timed out|waiting_timeout)"
    r"|\broom[= ](\d{1,19})\b"
)
# `req.rid='…'`, `rid=…`, `rid: …`, `"rid": "…"` (docs/formats/SGLANG.md,
# "Identifiers: rid and bootstrap room"), and the two messages that name a rid bare
_RID_IN_ERROR = re.compile(
    r"\brid\\?['\"]?\s*[=:]\s*\\?['\"]?(?!None\b)([0-9A-Za-z][\w.:-]{2,127})"
    r"|\bRequest (\S{3,128}) (?:\(bootstrap_room|exceeds the maximum)"
)
_INT64_MAX = (1 << 63) - 1


def room_in_error(text: str | None) -> int | None:
    """The bootstrap room an sglang error message names, if any (an int64: rooms are 63-bit)."""
    for m in _ROOM_IN_ERROR.finditer(text or ""):
        room = int(next(g for g in m.groups() if g is not None))
        if room <= _INT64_MAX:
            return room
    return None


def rid_in_error(text: str | None) -> str | None:
    """The rid an sglang error message names, if any."""
    m = _RID_IN_ERROR.search(text or "")
    return (m.group(1) or m.group(2)).rstrip(".:") if m else None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_OVERRIDES = {"t_start": schema.TS, "t_end": schema.TS, "bootstrap_room": pl.Int64, "error_bootstrap_room": pl.Int64}


def parse_time(v) -> dt.datetime | None:
    """ISO-8601 (offset or Z) or epoch seconds / milliseconds, as an aware UTC datetime."""
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        secs = v / 1000.0 if v > 1e11 else float(v)  # epoch ms from opencode, seconds elsewhere
        return dt.datetime.fromtimestamp(secs, dt.timezone.utc)
    s = str(v).strip()
    try:
        if s.replace(".", "", 1).isdigit():
            return parse_time(float(s))
        d = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    if d.tzinfo is None:
        # transcript times are UTC (docs/formats/TRANSCRIPTS.md, "The canonical turn")
        d = d.replace(tzinfo=dt.timezone.utc)
    return d.astimezone(dt.timezone.utc)


def as_int(v) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
