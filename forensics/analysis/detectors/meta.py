"""What the reply's metadata says: finish reasons, tool calls, HTTP status (S9-S11, S15, S16)."""

from __future__ import annotations

import dataclasses
import json
import re

from forensics.analysis.detectors.base import DEFAULT, Hit, Thresholds
from forensics.analysis.detectors.markup import s1_dsml_in_content, s3_unbalanced_dsml, s4_bare_invoke

ERROR_BODY = re.compile(
    r"KVTransferError|Decode transfer failed|Prefill transfer failed|bootstrap_room mismatch"
    r"|KVPoll\.WaitingForInput"
)


def _has_tools(turn) -> bool:
    return bool(turn.offered_tools) or bool(turn.tools_offered)


def s9_all_reasoning(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S9 ALL_REASONING: tools offered, finish `stop`, nothing visible and no call, everything in `reasoning`."""
    if (
        _has_tools(turn)
        and not (turn.content or "").strip()
        and not turn.tool_calls
        and (turn.reasoning or "").strip()
        and turn.finish_reason == "stop"
    ):
        return Hit("S9", "reasoning", 0, min(len(turn.reasoning), 80), "content empty, reasoning only")
    return None


def s10_finish_mismatch(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S10 FINISH_MISMATCH: `tool_calls` finish with no call, or `stop` while S1, S3 or S4 fires."""
    if turn.finish_reason == "tool_calls" and not turn.tool_calls:
        return Hit("S10", "meta", note="finish_reason tool_calls, no tool call")
    if turn.finish_reason == "stop":
        inner = s1_dsml_in_content(turn, th) or s3_unbalanced_dsml(turn, th) or s4_bare_invoke(turn, th)
        if inner:
            return dataclasses.replace(inner, sig="S10", note=f"finish_reason stop while {inner.sig} fires")
    return None


def _loads(args) -> tuple[object, str | None]:
    if isinstance(args, (dict, list)):
        return args, None
    if args is None or args == "":
        return {}, None
    try:
        return json.loads(args), None
    except (TypeError, ValueError) as e:
        return None, str(e)


def s11_bad_tool_args(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S11 BAD_TOOL_ARGS: arguments that are not JSON, an unknown tool name, or missing required keys."""
    offered = {o["name"]: o for o in (turn.offered_tools or []) if o.get("name")}
    for i, call in enumerate(turn.tool_calls):
        args, err = _loads(call.get("arguments"))
        if err is not None:
            return Hit("S11", "tool_calls", note=f"call {i} {call.get('name')}: arguments not JSON ({err})")
        if offered and call.get("name") not in offered:
            return Hit("S11", "tool_calls", note=f"call {i}: {call.get('name')!r} is not an offered tool")
        required = (offered.get(call.get("name")) or {}).get("required") or []
        missing = [k for k in required if not isinstance(args, dict) or k not in args]
        if missing:
            return Hit("S11", "tool_calls", note=f"call {i} {call.get('name')}: missing {', '.join(missing)}")
    return None


def s15_empty_turn(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S15 EMPTY_TURN: finish `stop`, no content, no call, yet tokens were generated.

    A source with no metadata at all (a generated-outputs folder) has only the text: an empty
    output there is an empty turn too.
    """
    if (turn.content or "").strip() or turn.tool_calls:
        return None
    if turn.finish_reason == "stop" and (turn.completion_tokens or 0) > 0:
        return Hit("S15", "content", note=f"finish stop, {turn.completion_tokens} completion tokens, nothing returned")
    if (
        turn.finish_reason is None
        and turn.completion_tokens is None
        and turn.http_status is None
        and not (turn.reasoning or "").strip()
        and not turn.error_text
    ):
        return Hit("S15", "content", note="empty output")
    return None


def s16_transfer_error_turn(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S16 TRANSFER_ERROR_TURN: HTTP 500, a KV-transfer error body, or finish `abort`."""
    if turn.error_text:
        m = ERROR_BODY.search(turn.error_text)
        if m:
            return Hit("S16", "error", m.start(), m.end())
    if turn.http_status == 500:
        return Hit("S16", "error", 0, min(len(turn.error_text or ""), 80), "HTTP 500")
    if turn.finish_reason == "abort":
        return Hit("S16", "meta", note="finish_reason abort")
    return None
