"""Claude Code session JSONL (`~/.claude/projects/<cwd>/<sessionId>.jsonl`).

The format: docs/formats/TRANSCRIPTS.md, "Claude Code sessions". Claude Code writes one line per
content block of an assistant message (thinking, text and tool_use each on their own line, all with
the same `message.id`; docs/formats/TRANSCRIPTS.md, "What real transcript files look like"), with
tool results and hook progress lines between them; the lines of one message are folded into one
turn, wherever they sit. A turn starts at the user line before its first block and ends at its
last. API failures are assistant lines with `isApiErrorMessage` whose text reads `API Error:
<status> <body>`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from forensics.core.turns import Turn, as_int, normalise_finish, parse_time
from forensics.parsers.base import Batch, Context, Sample, Source
from forensics.parsers.transcript import batch, json_lines, sniff_jsonl, text_of

name = "claude_code"
description = "Claude Code session JSONL (assistant messages folded from their per-block lines)"

_TYPES = {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress"}
_RID = re.compile(r"[0-9a-f]{32}")
_API_ERROR = re.compile(r"^API Error:?\s*(\d{3})?")


def sniff(head: bytes, path: str) -> float:
    return sniff_jsonl(
        head,
        {"type"},
        lambda o: o.get("type") in _TYPES and ("sessionId" in o or "leafUuid" in o or "messageId" in o or "uuid" in o),
    )


def _user_text(obj: dict) -> str | None:
    """The text a user typed (None for tool results, which are not a user turn)."""
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
        return None
    return text_of(content)


def _final(lines: list[tuple[int, dict]]) -> dict:
    """The message as it stood when complete: the last line with a stop_reason, else the most output tokens.

    Each block's line repeats the message's usage as it was when that block was written, so early
    lines carry the output count of the stream's start (Claude Code 2.1 writes stop_reason null on
    all of them); the count only grows, and a later line is never less complete.
    """
    msgs = [obj.get("message") or {} for _, obj in lines]
    stopped = [m for m in msgs if m.get("stop_reason")]
    if stopped:
        return stopped[-1]
    return max(reversed(msgs), key=lambda m: as_int((m.get("usage") or {}).get("output_tokens")) or -1)


def _turn(path: str, lines: list[tuple[int, dict]], prev_user_ts, user_text) -> Turn:
    first = lines[0][1]
    msg = first.get("message") or {}
    texts, thinking, calls = [], [], []
    for _, obj in lines:
        m = obj.get("message") or {}
        content = m.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text") or "")
            elif kind in ("thinking", "redacted_thinking"):
                thinking.append(block.get("thinking") or "")
            elif kind in ("tool_use", "server_tool_use"):
                calls.append({"id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")})
    final = _final(lines)
    stop, usage = final.get("stop_reason"), final.get("usage") or {}
    last = lines[-1][1]
    content = "\n".join(texts)
    status, error_text = None, None
    if first.get("isApiErrorMessage") or (msg.get("model") == "<synthetic>" and _API_ERROR.match(content)):
        # the text is Claude Code's report of a failed request, not something the model wrote
        m = _API_ERROR.match(content)
        status = as_int(m.group(1)) if m and m.group(1) else None
        error_text, content = content, ""
    msg_id = msg.get("id")
    req_id = first.get("requestId")
    rid = next((x for x in (req_id, msg_id) if isinstance(x, str) and _RID.fullmatch(x)), None)
    prompt = (
        sum(
            as_int(usage.get(k)) or 0
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        if usage
        else None
    )
    return Turn(
        source=name,
        session_id=_session(first),
        turn_id=str(msg_id or first.get("uuid")),
        source_file=path,
        line_no=lines[0][0],
        parent_id=first.get("parentUuid"),
        t_start=prev_user_ts or parse_time(first.get("timestamp")),
        t_end=parse_time(last.get("timestamp")),
        model=msg.get("model"),
        content=content,
        reasoning="\n".join(thinking),
        tool_calls=calls,
        finish_reason=normalise_finish(stop),
        http_status=status,
        error_text=error_text,
        prompt_tokens=prompt,
        completion_tokens=as_int(usage.get("output_tokens")),
        cached_tokens=as_int(usage.get("cache_read_input_tokens")),
        response_id=msg_id or req_id,
        rid=rid,
        tools_offered=True,
        user_text=user_text,
    )


def _session(obj: dict) -> str:
    session = str(obj.get("sessionId") or "")
    if obj.get("isSidechain") and obj.get("agentId"):
        session += f"/{obj['agentId']}"
    return session


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
    unparsed = []
    parsed = cont = 0
    # message key -> its lines, and the user line it answers (time and text) as it stood at its first block
    messages: dict[tuple[str, str], tuple[list[tuple[int, dict]], object, str | None]] = {}
    seen_uuids: set[str] = set()
    prev_user_ts, user_text = None, None
    for line_no, line, obj, why in json_lines(source):
        if why:
            unparsed.append((source.path, line_no, line, why))
            continue
        kind = obj.get("type")
        if kind not in _TYPES:
            unparsed.append((source.path, line_no, line, "schema:type"))
            continue
        if kind != "assistant":
            if kind == "user":
                prev_user_ts = parse_time(obj.get("timestamp")) or prev_user_ts
                text = _user_text(obj)
                if text is not None:
                    user_text = text
            parsed += 1
            continue
        # the blocks of one message are interleaved with its tool results and hook progress lines,
        # so lines fold by message id wherever they sit, not only when adjacent
        key = (_session(obj), str((obj.get("message") or {}).get("id") or obj.get("requestId") or obj.get("uuid")))
        uuid = obj.get("uuid")
        if key in messages:
            cont += 1
            if uuid is None or uuid not in seen_uuids:  # a line written twice (resume) adds no block twice
                messages[key][0].append((line_no, obj))
        else:
            messages[key] = ([(line_no, obj)], prev_user_ts, user_text)
            parsed += 1
        if uuid is not None:
            seen_uuids.add(uuid)
    turns = [_turn(source.path, lines, ts, text) for lines, ts, text in messages.values()]
    ctx.account(parsed=parsed, continuation=cont, unparsed=len(unparsed))
    stamps = [t.t_end for t in turns if t.t_end]
    ctx.first_ts, ctx.last_ts = (min(stamps), max(stamps)) if stamps else (None, None)
    yield batch(turns, unparsed, name)


def _line(**kw) -> str:
    base = {
        "parentUuid": "5d0e",
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/app",
        "sessionId": "3c9a7f52-0e41-4b8d-9d6a-1f2e3d4c5b6a",
        "version": "2.0.61",
        "gitBranch": "main",
    }
    return json.dumps({**base, **kw}, ensure_ascii=False)


_USER = _line(
    type="user",
    uuid="u1",
    timestamp="2026-10-30T10:02:01.000Z",
    message={"role": "user", "content": "list the app folder"},
)


def _asst(uuid, ts, content, stop, mid="msg_01Hq", usage=None):
    return _line(
        type="assistant",
        uuid=uuid,
        timestamp=ts,
        requestId="req_2f7b91c0",
        message={
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": "deepseek-v3.2",
            "content": content,
            "stop_reason": stop,
            "usage": usage or {"input_tokens": 9120, "output_tokens": 38},
        },
    )


samples = [
    Sample(
        "bare_invoke_in_text",
        _USER
        + "\n"
        + _asst(
            "a81c",
            "2026-10-30T10:02:11.874Z",
            [
                {
                    "type": "text",
                    "text": '<｜DSML｜invoke name="Bash">\n<｜DSML｜parameter name="command" string="true">ls app</｜DSML｜parameter>\n'
                    "</｜DSML｜invoke>",
                }
            ],
            "end_turn",
        )
        + "\n",
        {
            "turns": [
                {
                    "turn_id": "msg_01Hq",
                    "finish_reason": "stop",
                    "signatures": ["S1", "S4", "S10"],
                    "corruption_class": "parse_leak",
                    "prompt_tokens": 9120,
                    "completion_tokens": 38,
                    "t_start": parse_time("2026-10-30T10:02:01.000Z"),
                    "rid": None,
                }
            ]
        },
    ),
    Sample(
        "blocks_of_one_message_folded",
        _USER
        + "\n"
        + _asst(
            "a1",
            "2026-10-30T10:03:00.000Z",
            [{"type": "thinking", "thinking": "List it.", "signature": ""}],
            None,
            mid="msg_02",
        )
        + "\n"
        + _asst("a2", "2026-10-30T10:03:01.000Z", [{"type": "text", "text": "Listing the folder."}], None, mid="msg_02")
        + "\n"
        + _asst(
            "a3",
            "2026-10-30T10:03:02.000Z",
            [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls app"}}],
            "tool_use",
            mid="msg_02",
        )
        + "\n"
        + _line(
            type="user",
            uuid="u2",
            timestamp="2026-10-30T10:03:03.000Z",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "main.py"}],
            },
        )
        + "\n"
        + _line(type="summary", summary="Listing", leafUuid="a3")
        + "\n",
        {
            "turns": [
                {
                    "turn_id": "msg_02",
                    "reasoning": "List it.",
                    "content": "Listing the folder.",
                    "n_tool_calls": 1,
                    "finish_reason": "tool_calls",
                    "line_no": 2,
                    "corruption_class": "clean",
                    "signatures": [],
                }
            ]
        },
    ),
    Sample(
        # as Claude Code 2.1 writes a parallel call: a line per block, the first tool's result and a
        # hook's progress line between the two tool_use lines, stop_reason null everywhere, and only
        # the last line carrying the final output count
        "parallel_calls_interleaved_with_results",
        _USER
        + "\n"
        + _asst(
            "b1",
            "2026-10-30T10:05:00.000Z",
            [{"type": "text", "text": "Reading both files."}],
            None,
            mid="msg_03",
            usage={"input_tokens": 4, "cache_read_input_tokens": 9000, "output_tokens": 2},
        )
        + "\n"
        + _asst(
            "b2",
            "2026-10-30T10:05:01.000Z",
            [{"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"file_path": "a.py"}}],
            None,
            mid="msg_03",
            usage={"input_tokens": 4, "cache_read_input_tokens": 9000, "output_tokens": 2},
        )
        + "\n"
        + _line(
            type="progress",
            uuid="p1",
            timestamp="2026-10-30T10:05:01.100Z",
            data={"type": "hook_progress", "hookEvent": "PostToolUse"},
        )
        + "\n"
        + _line(
            type="user",
            uuid="u3",
            timestamp="2026-10-30T10:05:01.200Z",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "x = 1"}],
            },
        )
        + "\n"
        + _asst(
            "b3",
            "2026-10-30T10:05:02.000Z",
            [{"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"file_path": "b.py"}}],
            None,
            mid="msg_03",
            usage={"input_tokens": 4, "cache_read_input_tokens": 9000, "output_tokens": 57},
        )
        + "\n"
        + _line(
            type="user",
            uuid="u4",
            timestamp="2026-10-30T10:05:02.200Z",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "y = 2"}],
            },
        )
        + "\n"
        + _asst(
            "b4",
            "2026-10-30T10:05:04.000Z",
            [{"type": "text", "text": "Both set it."}],
            None,
            mid="msg_04",
            usage={"input_tokens": 1, "cache_read_input_tokens": 9100, "output_tokens": 6},
        )
        + "\n",
        {
            "turns": [
                {
                    "turn_id": "msg_03",
                    "line_no": 2,
                    "content": "Reading both files.",
                    "n_tool_calls": 2,
                    "t_start": parse_time("2026-10-30T10:02:01.000Z"),
                    "t_end": parse_time("2026-10-30T10:05:02.000Z"),
                    "prompt_tokens": 9004,
                    "completion_tokens": 57,
                    "cached_tokens": 9000,
                    "finish_reason": None,
                    "corruption_class": "clean",
                },
                {
                    "turn_id": "msg_04",
                    "line_no": 8,
                    "content": "Both set it.",
                    "n_tool_calls": 0,
                    "t_start": parse_time("2026-10-30T10:05:02.200Z"),
                    "completion_tokens": 6,
                },
            ]
        },
    ),
    Sample(
        "api_error_500",
        _USER
        + "\n"
        + _line(
            type="assistant",
            uuid="e1",
            timestamp="2026-10-30T10:04:00.000Z",
            isApiErrorMessage=True,
            message={
                "id": "e1",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [
                    {
                        "type": "text",
                        "text": 'API Error: 500 {"object":"error","message":"Prefill '
                        "bootstrap failed for request rank=0 req.rid='5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4' "
                        "req.bootstrap_room=9223372036854775807 with exception KVTransferError(bootstrap_room="
                        "9223372036854775807): Request 9223372036854775807 timed out after 300.0s in "
                        'KVPoll.Bootstrapping","code":500}',
                    }
                ],
                "stop_reason": "stop_sequence",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        )
        + "\n",
        {
            "turns": [
                {
                    "http_status": 500,
                    "content_chars": 0,
                    "signatures": ["S16"],
                    "corruption_class": "transfer_error",
                    "error_rid": "5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4",
                    "error_bootstrap_room": 9223372036854775807,
                }
            ]
        },
    ),
]
