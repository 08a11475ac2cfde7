"""OpenAI-compatible proxy logs as JSONL (docs/formats/TRANSCRIPTS.md, "OpenAI-compatible proxy logs"),
and replies captured off the wire ("What real transcript files look like").

Proxy log lines pair up by `conn`. A streamed response (SSE lines in `raw`) is reassembled into
the same message a non-streamed response carries, so both forms give the same turn. HTTP error
bodies become the turn's `error_text` (S16 reads them).

A capture holds replies without their requests: an SSE body (`data:` chunk lines, blank lines,
`event:` lines, `: keep-alive` comments, `data: [DONE]`), JSON Lines of chunk objects, or one
`chat.completion` object per line. Chunks are reassembled as the proxy's streams are; a stream
ends at `[DONE]` or where the chunks' `id` changes. The turn is timed by `created`, else by the
file's mtime. Records: a reply's first line is parsed, the rest of its lines are continuation.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator

from forensics.core.turns import Turn, as_int, normalise_finish, parse_time
from forensics.parsers.base import Batch, Context, Sample, Source
from forensics.parsers.transcript import TooDeep, batch, json_lines, loads, sniff_jsonl, text_of

name = "openai_proxy"
description = (
    "OpenAI-compatible proxy JSONL (request/response pairs, SSE streams reassembled, HTTP error bodies); "
    "captured SSE bodies, chunk JSON Lines and chat.completion JSON Lines"
)

_RID = re.compile(r"[0-9a-f]{32}")


def _is_proxy_record(o: dict) -> bool:
    return o.get("dir") in ("req", "resp") and ("conn" in o or "body" in o)


def sniff(head: bytes, path: str) -> float:
    return sniff_jsonl(head, {"dir"}, _is_proxy_record) or _sniff_capture(head)


_FRAMING = ("event:", "id:", "retry:", ":")  # SSE lines that carry no chunk


def _reply_object(obj) -> str | None:
    """'chunk', 'completion' or 'error' for the objects a capture holds, None for anything else."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("object")
    if kind == "chat.completion.chunk":
        return "chunk"
    if kind == "chat.completion":
        return "completion"
    if kind == "error" or "error" in obj:
        return "error"
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        # servers that leave `object` out still shape their choices one way or the other
        return "chunk" if "delta" in choices[0] else "completion" if "message" in choices[0] else None
    return None


def _sniff_capture(head: bytes) -> float:
    """1.0 when every line of the head is part of a captured reply, 0.9 when most are, else 0.

    Above any server log's score: a capture is text with no log prefix, and content quoting log
    lines must not hand it to the server-log parser.
    """
    lines = [ln.strip() for ln in head.decode("utf-8", "replace").split("\n")]
    if len(head) >= 64 << 10 and len(lines) > 1:
        lines = lines[:-1]  # the head may cut the last line
    good = bad = 0
    for ln in lines[:400]:
        if not ln or ln.replace(" ", "") in ("data:[DONE]", "[DONE]") or ln.startswith(_FRAMING):
            continue
        payload = ln[5:].strip() if ln.startswith("data:") else ln
        try:
            kind = _reply_object(json.loads(payload))
        except (ValueError, RecursionError):
            kind = None
        if kind:
            good += 1
        else:
            bad += 1
    if not good:
        return 0.0
    return 1.0 if not bad else 0.9 if good >= 2 * bad else 0.0


def reassemble(lines: list[str]) -> tuple[dict, bool]:
    """A chat.completion object from SSE `data:` lines (or bare chunk objects), and whether [DONE] ended them.

    Content and reasoning deltas are concatenated in order; tool-call deltas are grouped by
    index (the first carries id, type and name, later ones append to arguments); finish_reason
    comes from the last choice chunk; a usage-only chunk may follow it.
    """
    out: dict = {"object": "chat.completion", "choices": []}
    msg: dict = {"role": "assistant", "content": None, "reasoning_content": None}
    calls: dict[int, dict] = {}
    finish = None
    done = False
    for raw in lines:
        line = raw.strip()
        if line.startswith("data:"):
            payload = line[5:].strip()
        elif line.startswith("{") or line == "[DONE]":
            payload = line  # a chunk saved as JSON Lines, without its SSE prefix
        else:
            continue  # event:, id:, retry:, ': keep-alive' comments, blank lines

        if payload == "[DONE]":
            done = True
            continue
        try:
            chunk = loads(payload)
        except ValueError:  # TooDeep too: a chunk nested past the limit is a bad chunk, not a crash
            out.setdefault("_bad_chunks", []).append(payload[:200])
            continue
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            out["error"] = chunk["error"]
            continue
        for k in ("id", "created", "model"):
            if chunk.get(k) is not None:
                out.setdefault(k, chunk[k])
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for ch in chunk.get("choices") or []:
            delta = ch.get("delta") or {}
            for k in ("content", "reasoning_content"):
                if delta.get(k):
                    msg[k] = (msg[k] or "") + delta[k]
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    tc.get("index", len(calls)),
                    {"id": None, "type": "function", "function": {"name": None, "arguments": ""}},
                )
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    slot["function"]["name"] = fn["name"]
                if fn.get("arguments"):
                    slot["function"]["arguments"] += fn["arguments"]
            if ch.get("finish_reason") is not None:
                finish = ch["finish_reason"]
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    out["choices"] = [{"index": 0, "message": msg, "finish_reason": finish}]
    return out, done


def _offered(tools) -> list[dict] | None:
    if not tools:
        return None
    out = []
    for t in tools:
        fn = (t or {}).get("function") or t or {}
        if fn.get("name"):
            out.append({"name": fn["name"], "required": ((fn.get("parameters") or {}).get("required") or [])})
    return out


def _user_text(messages) -> str | None:
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") == "user":
            return text_of(m.get("content"))
    return None


def _session(rec: dict, body: dict, path: str) -> str:
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    for v in (rec.get("session"), rec.get("session_id"), meta.get("session_id"), body.get("user")):
        if v:
            return str(v)
    # a proxy log without session ids: the file is the session (one agent run per log)
    return os.path.basename(path).split(".")[0]


def _other_error_body(body) -> str | None:
    """The text of an error body that is not sglang's `{"object": "error"}`: a router's or gateway's
    plain-text reply, FastAPI's `{"detail": …}`, or a JSON body the proxy logged as a string."""
    if isinstance(body, str):
        try:
            parsed = loads(body)
        except ValueError:
            return body.strip() or None
        return _other_error_body(parsed) if isinstance(parsed, dict) else body.strip() or None
    if isinstance(body, dict):
        inner = body.get("error") if body.get("error") is not None else body
        for key in ("message", "detail"):
            v = inner.get(key) if isinstance(inner, dict) else None
            if v:
                return v if isinstance(v, str) else json.dumps(v)
        return json.dumps(body) if body else None
    return None


def _response(rrec: dict) -> tuple[dict, bool]:
    """The body of a response record, a stream reassembled, and whether that stream was cut."""
    body = rrec.get("body")
    raw = rrec.get("raw") if rrec.get("raw") is not None else (body.get("raw") if isinstance(body, dict) else None)
    if isinstance(body, str) and body.lstrip().startswith("data:"):
        raw = body
    truncated = False
    if raw is not None:
        body, done = reassemble(raw.split("\n") if isinstance(raw, str) else [str(x) for x in raw])
        truncated = not done
    return (body if isinstance(body, dict) else {}), truncated


def _turn(
    path: str,
    conn: str,
    req: dict | None,
    resp: dict | None,
    req_line: int | None,
    resp_line: int | None,
    reply: tuple[dict, bool] | None = None,
) -> Turn:
    """The turn of one exchange; `reply` is the body already read (a capture has no response record)."""
    qbody = (req or {}).get("body") if isinstance((req or {}).get("body"), dict) else {}
    rrec = resp or {}
    body, truncated = reply if reply is not None else _response(rrec)
    choice = (body.get("choices") or [{}])[0] or {}
    msg = choice.get("message") or {}
    usage = body.get("usage") or {}
    status = as_int(rrec.get("status"))
    err = body.get("error") if body.get("error") is not None else (body if body.get("object") == "error" else None)
    error_text = None
    if err is not None:
        error_text = err.get("message") if isinstance(err, dict) and err.get("message") else json.dumps(err)
        if status is None and isinstance(err, dict):
            status = as_int(err.get("code"))
    elif status is not None and status >= 400:
        error_text = _other_error_body(rrec.get("body"))
    t_end = parse_time(rrec.get("ts"))
    t_start = parse_time((req or {}).get("ts"))
    if t_start is None and t_end is not None and rrec.get("latency_ms") is not None:
        import datetime as dt

        t_start = t_end - dt.timedelta(milliseconds=float(rrec["latency_ms"]))
    resp_id = body.get("id")
    rid = qbody.get("rid") or (resp_id if isinstance(resp_id, str) and _RID.fullmatch(resp_id) else None)
    calls = [
        {
            "id": c.get("id"),
            "name": (c.get("function") or {}).get("name"),
            "arguments": (c.get("function") or {}).get("arguments"),
        }
        for c in (msg.get("tool_calls") or [])
    ]
    details = usage.get("completion_tokens_details") or {}
    return Turn(
        source=name,
        session_id=_session(req or rrec, qbody, path),
        turn_id=str(conn),
        source_file=path,
        line_no=resp_line or req_line,
        t_start=t_start,
        t_end=t_end,
        model=body.get("model") or qbody.get("model"),
        content=text_of(msg.get("content")),
        reasoning=msg.get("reasoning_content") or msg.get("reasoning") or "",
        tool_calls=calls,
        finish_reason=normalise_finish(choice.get("finish_reason")),
        http_status=status,
        error_text=error_text,
        prompt_tokens=as_int(usage.get("prompt_tokens")),
        completion_tokens=as_int(usage.get("completion_tokens")),
        reasoning_tokens=as_int(usage.get("reasoning_tokens") or details.get("reasoning_tokens")),
        cached_tokens=as_int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")),
        response_id=resp_id,
        rid=str(rid) if rid else None,
        bootstrap_room=as_int(qbody.get("bootstrap_room")),
        offered_tools=_offered(qbody.get("tools")),
        tools_offered=bool(qbody.get("tools")) if req else None,
        user_text=_user_text(qbody.get("messages")),
        parent_id=None,
        truncated=truncated,
    )


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
    from forensics.parsers.lines import read_upto

    with source.open() as f:
        head = read_upto(f, 64 << 10)
    if not sniff_jsonl(head, {"dir"}, _is_proxy_record) and _sniff_capture(head):
        turns, unparsed, counts = _parse_capture(source)
        ctx.account(**counts, unparsed=len(unparsed))
    else:
        turns, unparsed, parsed = _parse_proxy_log(source)
        ctx.account(parsed=parsed, unparsed=len(unparsed))
    if turns:
        ctx.first_ts = min((t.t_start or t.t_end for t in turns if t.t_start or t.t_end), default=None)
        ctx.last_ts = max((t.t_end or t.t_start for t in turns if t.t_start or t.t_end), default=None)
    yield batch(turns, unparsed, name)


def _parse_capture(source: Source) -> tuple[list[Turn], list, dict[str, int]]:
    """Replies of an SSE body, chunk JSON Lines or chat.completion JSON Lines."""
    turns: list[Turn] = []
    ids: set[str] = set()
    unparsed = []
    parsed = cont = 0
    stream: list[str] = []  # the open stream's lines, as reassemble reads them
    stream_line = stream_id = None
    done = False
    framing: list[tuple[int, str]] = []  # blank and event lines before the first chunk, kept until one comes

    def add(line_no: int, body: dict, truncated: bool) -> None:
        conn = str(body.get("id") or f"line{line_no}")
        if conn in ids:  # the same reply captured twice: both kept, told apart by line
            conn = f"{conn}@{line_no}"
        ids.add(conn)
        when = body.get("created") if body.get("created") is not None else source.mtime
        turns.append(_turn(source.path, conn, None, {"ts": when}, None, line_no, reply=(body, truncated)))

    def close() -> None:
        nonlocal stream, stream_line, stream_id, done
        if stream:
            body, complete = reassemble(stream)
            if not any(ln.startswith("data:") for ln in stream):
                # chunks saved as objects cannot hold the [DONE] line: a finish reason is their end
                complete = complete or body["choices"][0]["finish_reason"] is not None
            add(stream_line, body, not complete)
        stream, stream_line, stream_id, done = [], None, None, False

    for line_no, line, obj, why in json_lines(source):
        text = line.strip()
        if not text or (why and text.startswith(_FRAMING)):
            if stream or turns:
                cont += 1
            else:
                framing.append((line_no, line))
            continue
        if why and text.replace(" ", "") in ("data:[DONE]", "[DONE]"):
            if stream:
                stream.append(text)
                done = True
                cont += 1
            else:
                unparsed.append((source.path, line_no, line, "no_stream"))
            continue
        if why and text.startswith("data:"):
            try:
                obj, why = loads(text[5:].strip()), None
            except TooDeep:
                why = "too_deep"
            except ValueError:
                pass
        kind = _reply_object(obj) if why is None else None
        if kind is None:
            unparsed.append((source.path, line_no, line, why or "schema:not_a_reply"))
            continue
        if kind == "completion" or (kind == "error" and "error" not in obj):
            close()  # an HTTP error body, like a whole completion, is a reply of its own
            add(line_no, obj, False)
            parsed += 1
            continue
        chunk_id = obj.get("id")
        if stream and (done or (chunk_id and stream_id and chunk_id != stream_id)):
            close()
        if stream:
            cont += 1
        else:
            stream_line = line_no
            parsed += 1
            cont += len(framing)
            framing = []
        stream.append(text)
        stream_id = stream_id or chunk_id
    close()
    for line_no, line in framing:
        unparsed.append((source.path, line_no, line, "blank" if not line.strip() else "no_stream"))
    return turns, unparsed, {"parsed": parsed, "continuation": cont}


def _parse_proxy_log(source: Source) -> tuple[list[Turn], list, int]:
    reqs: dict[str, tuple[int, dict]] = {}
    turns: list[Turn] = []
    unparsed = []
    parsed = 0
    for line_no, line, obj, why in json_lines(source):
        if why:
            unparsed.append((source.path, line_no, line, why))
            continue
        d, conn = obj.get("dir"), obj.get("conn")
        if d not in ("req", "resp"):
            unparsed.append((source.path, line_no, line, "schema:dir"))
            continue
        if conn is None:
            conn = f"line{line_no}"
        parsed += 1
        if d == "req":
            if conn in reqs:  # a retry reusing the conn id: the earlier request never got its reply
                ln, old = reqs.pop(conn)
                unparsed.append((source.path, ln, json.dumps(old, ensure_ascii=False), "no_response"))
                parsed -= 1
            reqs[conn] = (line_no, obj)
            continue
        req_line, req = reqs.pop(conn, (None, None))
        turns.append(_turn(source.path, conn, req, obj, req_line, line_no))
    for conn, (ln, req) in reqs.items():
        unparsed.append((source.path, ln, json.dumps(req, ensure_ascii=False), "no_response"))
        parsed -= 1
    return turns, unparsed, parsed


_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]},
        },
    }
]
_REQ = json.dumps(
    {
        "ts": "2026-10-30T10:00:00.004Z",
        "dir": "req",
        "conn": "c-204",
        "upstream": "http://pd-router:8000/v1/chat/completions",
        "body": {
            "model": "deepseek-v3.2",
            "stream": True,
            "bootstrap_room": 4793981895866140836,
            "messages": [{"role": "user", "content": "Why does config loading fail?"}],
            "tools": _TOOLS,
        },
    }
)
_CHUNK = {
    "id": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1",
    "object": "chat.completion.chunk",
    "created": 1793354401,
    "model": "deepseek-v3.2",
}


def _sse(*deltas_and_finish) -> list[str]:
    out = []
    for delta, finish in deltas_and_finish:
        out.append(
            "data: " + json.dumps({**_CHUNK, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    return out


samples = [
    Sample(
        "stream_tool_call",
        _REQ
        + "\n"
        + json.dumps(
            {
                "ts": "2026-10-30T10:00:14.380Z",
                "dir": "resp",
                "conn": "c-204",
                "status": 200,
                "latency_ms": 14376,
                "raw": _sse(
                    ({"role": "assistant", "reasoning_content": "Two call"}, None),
                    ({"reasoning_content": " sites."}, None),
                    (
                        {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_7e2a",
                                    "type": "function",
                                    "function": {"name": "read", "arguments": '{"filePath": '},
                                }
                            ]
                        },
                        None,
                    ),
                    ({"tool_calls": [{"index": 0, "function": {"arguments": '"config.py"}'}}]}, "tool_calls"),
                )
                + [
                    "data: "
                    + json.dumps({**_CHUNK, "choices": [], "usage": {"prompt_tokens": 8192, "completion_tokens": 509}}),
                    "data: [DONE]",
                ],
            }
        )
        + "\n",
        {
            "turns": [
                {
                    "turn_id": "c-204",
                    "rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1",
                    "n_tool_calls": 1,
                    "finish_reason": "tool_calls",
                    "reasoning": "Two call sites.",
                    "prompt_tokens": 8192,
                    "completion_tokens": 509,
                    "bootstrap_room": 4793981895866140836,
                    "corruption_class": "clean",
                    "signatures": [],
                    "truncated": False,
                    "tool_calls": '[{"id": "call_7e2a", "name": "read", "arguments": "{\\"filePath\\": \\"config.py\\"}"}]',
                }
            ]
        },
    ),
    Sample(
        "nonstream_dsml_leak",
        json.dumps(
            {
                "ts": 1793354400.5,
                "dir": "req",
                "conn": "c-7",
                "body": {
                    "model": "deepseek-v3.2",
                    "tools": _TOOLS,
                    "messages": [{"role": "user", "content": "read config"}],
                },
            }
        )
        + "\n"
        + json.dumps(
            {
                "ts": 1793354402.25,
                "dir": "resp",
                "conn": "c-7",
                "status": 200,
                "body": {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": "deepseek-v3.2",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {
                                "role": "assistant",
                                "content": 'Reading it.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="read">\n'
                                '<｜DSML｜parameter name="filePath" string="true">config.py</｜DSML｜parameter>\n</｜DSML｜invoke>',
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 41},
                },
            }
        )
        + "\n",
        {
            "turns": [
                {
                    "finish_reason": "stop",
                    "rid": None,
                    "response_id": "chatcmpl-1",
                    "n_tool_calls": 0,
                    "signatures": ["S1", "S3", "S10"],
                    "corruption_class": "parse_leak",
                    "corrupted": True,
                }
            ]
        },
    ),
    Sample(
        "http_500_kvtransfer",
        json.dumps(
            {
                "ts": "2026-10-30T10:01:02.511Z",
                "dir": "req",
                "conn": "c-231",
                "body": {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": "go on"}]},
            }
        )
        + "\n"
        + json.dumps(
            {
                "ts": "2026-10-30T10:06:02.511Z",
                "dir": "resp",
                "conn": "c-231",
                "status": 500,
                "latency_ms": 300087,
                "body": {
                    "object": "error",
                    "message": "Decode transfer failed for request rank=2 "
                    "decode_req.req.rid='c3a81f0e6b2d4f57a9e0d1c2b3a49586' "
                    "decode_req.req.bootstrap_room=6593551520068383758 with exception KVTransferError("
                    "bootstrap_room=6593551520068383758): Request 6593551520068383758 timed out after 300.0s"
                    " in KVPoll.WaitingForInput",
                    "type": "InternalServerError",
                    "param": None,
                    "code": 500,
                },
            }
        )
        + "\nnot json\n",
        {
            "turns": [
                {
                    "http_status": 500,
                    "signatures": ["S16"],
                    "corruption_class": "transfer_error",
                    "corrupted": False,
                    "content_chars": 0,
                    "rid": None,
                    "bootstrap_room": None,
                    "error_rid": "c3a81f0e6b2d4f57a9e0d1c2b3a49586",
                    "error_bootstrap_room": 6593551520068383758,
                }
            ],
            "unparsed": [{"line_no": 3, "reason": "invalid_json", "line": "not json"}],
        },
    ),
    Sample(
        "stream_without_done_is_truncated",
        json.dumps(
            {
                "ts": "2026-10-30T10:00:00Z",
                "dir": "resp",
                "conn": "c-9",
                "status": 200,
                "raw": _sse(({"role": "assistant", "content": "The answer is"}, None)),
            }
        )
        + "\n",
        {"turns": [{"content": "The answer is", "truncated": True, "finish_reason": None, "t_start": None}]},
    ),
]


def _chunk(delta: dict | None, finish=None, **extra) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({**_CHUNK, "choices": choices, **extra}, ensure_ascii=False)


samples += [
    Sample(
        # a body saved as it came over the wire: an event line and keep-alive comments around the chunks
        "captured_sse_body",
        "event: message\n: keep-alive\n\n"
        + "\n\n".join(
            "data: " + c
            for c in (
                _chunk({"role": "assistant", "reasoning_content": "It is read"}),
                _chunk({"reasoning_content": " twice."}),
                _chunk({"content": "Config loads in"}),
            )
        )
        + "\n\n: keep-alive\n\n"
        + "\n\n".join(
            "data: " + c
            for c in (
                _chunk({"content": " two places."}, "stop"),
                _chunk(None, usage={"prompt_tokens": 640, "completion_tokens": 12}),
            )
        )
        + "\n\ndata: [DONE]\n\n",
        {
            "turns": [
                {
                    "turn_id": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1",
                    "rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1",
                    "content": "Config loads in two places.",
                    "reasoning": "It is read twice.",
                    "finish_reason": "stop",
                    "prompt_tokens": 640,
                    "completion_tokens": 12,
                    "truncated": False,
                    "t_start": None,
                    "t_end": parse_time(1793354401),
                    "model": "deepseek-v3.2",
                    "corruption_class": "clean",
                    "line_no": 4,
                }
            ]
        },
    ),
    Sample(
        # chunk objects without their SSE prefix, two streams one after the other (told apart by id);
        # the second has no finish reason: it was cut
        "captured_chunk_jsonl",
        "\n".join(
            (
                _chunk({"role": "assistant", "content": ""}, id="chatcmpl-a1"),
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_9",
                                "type": "function",
                                "function": {"name": "read", "arguments": '{"filePath": '},
                            }
                        ]
                    },
                    id="chatcmpl-a1",
                ),
                _chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '"a.py"}'}}]}, "tool_calls", id="chatcmpl-a1"
                ),
                _chunk({"role": "assistant", "content": "Partial ans"}, id="chatcmpl-a2", created=1793354460),
            )
        )
        + "\n",
        {
            "turns": [
                {
                    "turn_id": "chatcmpl-a1",
                    "rid": None,
                    "n_tool_calls": 1,
                    "finish_reason": "tool_calls",
                    "truncated": False,
                    "line_no": 1,
                    "t_end": parse_time(1793354401),
                    "tool_calls": '[{"id": "call_9", "name": "read", "arguments": "{\\"filePath\\": \\"a.py\\"}"}]',
                },
                {
                    "turn_id": "chatcmpl-a2",
                    "content": "Partial ans",
                    "truncated": True,
                    "line_no": 4,
                    "t_end": parse_time(1793354460),
                },
            ]
        },
    ),
    Sample(
        # whole replies, one per line: a leak, a clean answer, an HTTP 500 body, and a line that is not a reply
        "captured_completion_jsonl",
        "\n".join(
            json.dumps(x, ensure_ascii=False)
            for x in (
                {
                    "id": "chatcmpl-b1",
                    "object": "chat.completion",
                    "created": 1793354500,
                    "model": "deepseek-v3.2",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {
                                "role": "assistant",
                                "content": 'Reading.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="read">\n<｜DSML｜parameter '
                                'name="filePath" string="true">a.py</｜DSML｜parameter>\n</｜DSML｜invoke>',
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 700, "completion_tokens": 40},
                },
                {
                    "id": "chatcmpl-b2",
                    "object": "chat.completion",
                    "created": 1793354510,
                    "model": "deepseek-v3.2",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "It is set in a.py."},
                        }
                    ],
                    "usage": {"prompt_tokens": 760, "completion_tokens": 9},
                },
                {
                    "object": "error",
                    "message": "Prefill transfer failed for request rank=0 KVTransferError("
                    "bootstrap_room=77): timed out",
                    "type": "InternalServerError",
                    "param": None,
                    "code": 500,
                },
                {"note": "not a reply"},
            )
        )
        + "\n",
        # rows come in time order: the error body has no `created`, and a sample has no mtime
        {
            "turns": [
                {
                    "turn_id": "line3",
                    "http_status": 500,
                    "signatures": ["S16"],
                    "error_bootstrap_room": 77,
                    "error_rid": None,
                    "bootstrap_room": None,
                    "corruption_class": "transfer_error",
                    "t_end": None,
                },
                {
                    "turn_id": "chatcmpl-b1",
                    "signatures": ["S1", "S3", "S10"],
                    "corruption_class": "parse_leak",
                    "prompt_tokens": 700,
                    "t_end": parse_time(1793354500),
                },
                {"turn_id": "chatcmpl-b2", "corruption_class": "clean", "content": "It is set in a.py."},
            ],
            "unparsed": [{"line_no": 4, "reason": "schema:not_a_reply"}],
        },
    ),
]
