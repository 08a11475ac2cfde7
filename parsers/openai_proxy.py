"""OpenAI-compatible proxy logs as JSONL: one request or response per line (TRANSCRIPTS.md §8).

Lines pair up by `conn`. A streamed response (SSE lines in `raw`) is reassembled into the same
message a non-streamed response carries, so both forms give the same turn. HTTP error bodies
become the turn's `error_text` (S16 reads them).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator

from forensics.core.turns import Turn, as_int, normalise_finish, parse_time
from forensics.parsers.base import Batch, Context, Sample, Source
from forensics.parsers.transcript import batch, json_lines, sniff_jsonl, text_of

name = "openai_proxy"
description = "OpenAI-compatible proxy JSONL (request/response pairs, SSE streams reassembled, HTTP error bodies)"

_RID = re.compile(r"[0-9a-f]{32}")


def sniff(head: bytes, path: str) -> float:
    return sniff_jsonl(head, {"dir"}, lambda o: o.get("dir") in ("req", "resp") and ("conn" in o or "body" in o))


def reassemble(lines: list[str]) -> tuple[dict, bool]:
    """A chat.completion object from SSE `data:` lines, and whether the stream ended with [DONE].

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
        if not line.startswith("data:"):
            continue  # event:, id:, retry:, ': keep-alive' comments
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            continue
        try:
            chunk = json.loads(payload)
        except ValueError:
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
                slot = calls.setdefault(tc.get("index", len(calls)), {"id": None, "type": "function",
                                                                      "function": {"name": None, "arguments": ""}})
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


def _turn(path: str, conn: str, req: dict | None, resp: dict | None, req_line: int | None,
          resp_line: int | None) -> Turn:
    qbody = (req or {}).get("body") if isinstance((req or {}).get("body"), dict) else {}
    rrec = resp or {}
    body = rrec.get("body")
    raw = rrec.get("raw") if rrec.get("raw") is not None else (body.get("raw") if isinstance(body, dict) else None)
    if isinstance(body, str) and body.lstrip().startswith("data:"):
        raw = body
    truncated = False
    if raw is not None:
        body, done = reassemble(raw.split("\n") if isinstance(raw, str) else [str(x) for x in raw])
        truncated = not done
    body = body if isinstance(body, dict) else {}
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
    t_end = parse_time(rrec.get("ts"))
    t_start = parse_time((req or {}).get("ts"))
    if t_start is None and t_end is not None and rrec.get("latency_ms") is not None:
        import datetime as dt

        t_start = t_end - dt.timedelta(milliseconds=float(rrec["latency_ms"]))
    resp_id = body.get("id")
    rid = qbody.get("rid") or (resp_id if isinstance(resp_id, str) and _RID.fullmatch(resp_id) else None)
    calls = [{"id": c.get("id"), "name": (c.get("function") or {}).get("name"),
              "arguments": (c.get("function") or {}).get("arguments")} for c in (msg.get("tool_calls") or [])]
    details = usage.get("completion_tokens_details") or {}
    return Turn(
        source=name, session_id=_session(req or rrec, qbody, path), turn_id=str(conn), source_file=path,
        line_no=resp_line or req_line, t_start=t_start, t_end=t_end,
        model=body.get("model") or qbody.get("model"), content=text_of(msg.get("content")),
        reasoning=msg.get("reasoning_content") or msg.get("reasoning") or "", tool_calls=calls,
        finish_reason=normalise_finish(choice.get("finish_reason")), http_status=status, error_text=error_text,
        prompt_tokens=as_int(usage.get("prompt_tokens")), completion_tokens=as_int(usage.get("completion_tokens")),
        reasoning_tokens=as_int(usage.get("reasoning_tokens") or details.get("reasoning_tokens")),
        cached_tokens=as_int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")),
        response_id=resp_id, rid=str(rid) if rid else None, bootstrap_room=as_int(qbody.get("bootstrap_room")),
        offered_tools=_offered(qbody.get("tools")), tools_offered=bool(qbody.get("tools")) if req else None,
        user_text=_user_text(qbody.get("messages")), parent_id=None, truncated=truncated,
    )


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
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
    ctx.account(parsed=parsed, unparsed=len(unparsed))
    if turns:
        ctx.first_ts = min((t.t_start or t.t_end for t in turns if t.t_start or t.t_end), default=None)
        ctx.last_ts = max((t.t_end or t.t_start for t in turns if t.t_start or t.t_end), default=None)
    yield batch(turns, unparsed, name)


_TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {
    "type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]}}}]
_REQ = json.dumps({"ts": "2026-10-30T10:00:00.004Z", "dir": "req", "conn": "c-204",
                   "upstream": "http://pd-router:8000/v1/chat/completions",
                   "body": {"model": "deepseek-v3.2", "stream": True, "bootstrap_room": 4793981895866140836,
                            "messages": [{"role": "user", "content": "Why does config loading fail?"}],
                            "tools": _TOOLS}})
_CHUNK = {"id": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1", "object": "chat.completion.chunk", "created": 1793354401,
          "model": "deepseek-v3.2"}


def _sse(*deltas_and_finish) -> list[str]:
    out = []
    for delta, finish in deltas_and_finish:
        out.append("data: " + json.dumps({**_CHUNK, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    return out


samples = [
    Sample(
        "stream_tool_call",
        _REQ + "\n" + json.dumps({"ts": "2026-10-30T10:00:14.380Z", "dir": "resp", "conn": "c-204", "status": 200,
                                  "latency_ms": 14376, "raw": _sse(
                                      ({"role": "assistant", "reasoning_content": "Two call"}, None),
                                      ({"reasoning_content": " sites."}, None),
                                      ({"tool_calls": [{"index": 0, "id": "call_7e2a", "type": "function",
                                                        "function": {"name": "read", "arguments": "{\"filePath\": "}}]},
                                       None),
                                      ({"tool_calls": [{"index": 0, "function": {"arguments": "\"config.py\"}"}}]},
                                       "tool_calls"),
                                  ) + ["data: " + json.dumps({**_CHUNK, "choices": [], "usage": {
                                      "prompt_tokens": 8192, "completion_tokens": 509}}), "data: [DONE]"]}) + "\n",
        {"turns": [{"turn_id": "c-204", "rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1", "n_tool_calls": 1,
                    "finish_reason": "tool_calls", "reasoning": "Two call sites.", "prompt_tokens": 8192,
                    "completion_tokens": 509, "bootstrap_room": 4793981895866140836, "corruption_class": "clean",
                    "signatures": [], "truncated": False, "tool_calls":
                        '[{"id": "call_7e2a", "name": "read", "arguments": "{\\"filePath\\": \\"config.py\\"}"}]'}]},
    ),
    Sample(
        "nonstream_dsml_leak",
        json.dumps({"ts": 1793354400.5, "dir": "req", "conn": "c-7", "body": {
            "model": "deepseek-v3.2", "tools": _TOOLS, "messages": [{"role": "user", "content": "read config"}]}}) + "\n"
        + json.dumps({"ts": 1793354402.25, "dir": "resp", "conn": "c-7", "status": 200, "body": {
            "id": "chatcmpl-1", "object": "chat.completion", "model": "deepseek-v3.2", "choices": [{
                "index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": "Reading it.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read\">\n"
                    "<｜DSML｜parameter name=\"filePath\" string=\"true\">config.py</｜DSML｜parameter>\n</｜DSML｜invoke>"}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 41}}}) + "\n",
        {"turns": [{"finish_reason": "stop", "rid": None, "response_id": "chatcmpl-1", "n_tool_calls": 0,
                    "signatures": ["S1", "S3", "S10"], "corruption_class": "parse_leak", "corrupted": True}]},
    ),
    Sample(
        "http_500_kvtransfer",
        json.dumps({"ts": "2026-10-30T10:01:02.511Z", "dir": "req", "conn": "c-231",
                    "body": {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": "go on"}]}}) + "\n"
        + json.dumps({"ts": "2026-10-30T10:06:02.511Z", "dir": "resp", "conn": "c-231", "status": 500, "latency_ms": 300087,
                      "body": {"object": "error", "message": "Decode transfer failed for request rank=2 KVTransferError("
                               "bootstrap_room=6593551520068383758): Request 6593551520068383758 timed out after 300.0s"
                               " in KVPoll.WaitingForInput", "type": "InternalServerError", "param": None, "code": 500}})
        + "\nnot json\n",
        {"turns": [{"http_status": 500, "signatures": ["S16"], "corruption_class": "transfer_error",
                    "corrupted": False, "content_chars": 0}],
         "unparsed": [{"line_no": 3, "reason": "invalid_json", "line": "not json"}]},
    ),
    Sample(
        "stream_without_done_is_truncated",
        json.dumps({"ts": "2026-10-30T10:00:00Z", "dir": "resp", "conn": "c-9", "status": 200,
                    "raw": _sse(({"role": "assistant", "content": "The answer is"}, None))}) + "\n",
        {"turns": [{"content": "The answer is", "truncated": True, "finish_reason": None, "t_start": None}]},
    ),
]
