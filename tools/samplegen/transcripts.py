"""The agent transcripts: the OpenAI-compatible proxy log and the opencode exports."""

from __future__ import annotations

import json
import random

from tools.samplegen.ids import _hex, _ms, _OcIds, iso
from tools.samplegen.records import Req, Session
from tools.samplegen.scenario import MODEL
from tools.samplegen.simulation import _Gen
from tools.samplegen.texts import (
    ARTICLE,
    FINAL_EN,
    OPENCODE_TASKS,
    REASONING,
    REVIEW_TASKS,
    SHORT_CONTENT,
    TOOL_RESULTS,
    TOOLS,
    ZH_REPLIES,
    ZH_TASKS,
    _fenced_markup,
    _incoherent_text,
    _leak_text,
    _quoted_log_reply,
    _table_reply,
    _tool_call,
)

# -- transcripts -----------------------------------------------------------------------------------


def _reply(g: _Gen, r: Req) -> dict:
    """The assistant turn as the client saw it: content, reasoning, tool_calls, finish_reason."""
    rng = g.trng
    s = r.sess
    reasoning = rng.choice(REASONING)
    calls: list = []
    if r.corrupt:
        cls, sub = r.corrupt
        if cls == "parse_leak":
            content, reasoning = _leak_text(rng, sub)
        else:
            content = _incoherent_text(rng, sub)
        return dict(content=content, reasoning=reasoning, calls=[], finish="stop")
    if r.hard_negative == "chinese":
        return dict(content=rng.choice(ZH_REPLIES), reasoning="用户用中文提问，用中文回答。", calls=[], finish="stop")
    if r.hard_negative == "fenced_markup":
        return dict(content=_fenced_markup(), reasoning=reasoning, calls=[], finish="stop")
    if r.hard_negative == "repeated_table_rows":
        return dict(content=_table_reply(rng), reasoning=reasoning, calls=[], finish="stop")
    if r.hard_negative == "quoted_log":
        content, r.quoted = _quoted_log_reply(g, r)
        return dict(
            content=content,
            reasoning="The user wants the evidence from the logs, quoted exactly.",
            calls=[],
            finish="stop",
        )
    if r.final:
        if s.agent == "writer":
            content = "\n\n".join(rng.sample(ARTICLE, 2))
        elif s.lang == "zh":
            content = rng.choice(ZH_REPLIES)
        else:
            content = rng.choice(FINAL_EN)
        return dict(content=content, reasoning=reasoning, calls=[], finish="stop")
    k = 2 if rng.random() < 0.2 else 1
    for _ in range(k):
        name, args = _tool_call(rng, s.agent)
        calls.append((f"call_{_hex(rng, 24)}", name, args))
    return dict(content=rng.choice(SHORT_CONTENT), reasoning=reasoning, calls=calls, finish="tool_calls")


AGENT_TOOLS = {"writer": ("read", "bash", "write"), "reviewer": ("read", "grep", "bash", "edit")}


def _tools_body(agent: str) -> list:
    out = []
    for name in AGENT_TOOLS[agent]:
        _desc, props, req = TOOLS[name]
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "parameters": {
                        "type": "object",
                        "properties": {k: {"type": v} for k, v in props.items()},
                        "required": req,
                    },
                },
            }
        )
    return out


def _user_task(rng: random.Random, s: Session) -> str:
    if not s.task:
        if s.agent == "writer":
            s.task = (
                f"Write article msg_0_{rng.randint(0, 9)}_{rng.randint(1, 40)}.md for this chunk of the session "
                "analysis in ocbrowse/ses_3f023736bffe5l8DNFRJbsYbwc_analysis."
            )
        elif s.lang == "zh":
            s.task = rng.choice(ZH_TASKS)
        elif s.agent == "opencode":
            s.task = rng.choice(OPENCODE_TASKS)
        else:
            s.task = rng.choice(REVIEW_TASKS)
    return s.task


def _error_body(r: Req) -> dict:
    return {"object": "error", "message": r.error_text, "type": "InternalServerError", "param": None, "code": 500}


def _proxy(g: _Gen) -> tuple[bytes, dict, dict]:
    recs: list = []
    ids: dict = {}
    conn_reqs = sorted((r for s in g.sessions if s.source == "proxy" for r in s.reqs), key=lambda r: r.t_arr)
    for i, r in enumerate(conn_reqs):
        ids[id(r)] = f"c-{i + 1:05d}"
    counts = dict(req=0, resp=0, streamed=0, non_stream=0, errors=0)
    for s in (s for s in g.sessions if s.source == "proxy"):
        prev = None
        for r in s.reqs:
            conn = ids[id(r)]
            body = _proxy_request_body(g.trng, s, r, prev)
            t_req = r.t_arr - g.trng.uniform(0.0015, 0.004)
            req = {"ts": iso(t_req, 3), "dir": "req", "conn": conn, "upstream": PROXY_UPSTREAM, "body": body}
            recs.append((t_req, req))
            counts["req"] += 1
            counts["resp"] += 1
            resp = {"ts": iso(r.t_resp, 3), "dir": "resp", "conn": conn}
            lat = int(round((r.t_resp - t_req) * 1000))
            if r.d_out != "ok":
                resp.update(status=500, latency_ms=lat, body=_error_body(r))
                counts["errors"] += 1
                prev = None
            else:
                prev = _reply(g, r)
                r.reply = prev
                counts["streamed" if r.stream else "non_stream"] += 1
                resp.update(status=200, latency_ms=lat, **_proxy_reply(g.trng, r, prev))
            recs.append((r.t_resp, resp))
    recs.sort(key=lambda x: x[0])
    data = "".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for _, o in recs)
    counts["lines"] = len(recs)
    return data.encode(), counts, ids


PROXY_UPSTREAM = "http://pd-router:8000/v1/chat/completions"


def _proxy_request_body(rng: random.Random, s: Session, r: Req, prev: dict | None) -> dict:
    """The request: the task, and the previous turn (its first tool call and result, or its text)."""
    msgs = [
        {"role": "system", "content": f"You are the {s.agent} agent. Work in /home/dev/sglang. Use tools."},
        {"role": "user", "content": _user_task(rng, s)},
    ]
    if prev is not None and prev.get("calls"):
        cid, name, args = prev["calls"][0]
        tool_call = {"id": cid, "type": "function", "function": _call_function(name, args)}
        msgs.append({"role": "assistant", "content": prev["content"], "tool_calls": [tool_call]})
        msgs.append({"role": "tool", "tool_call_id": cid, "content": rng.choice(TOOL_RESULTS[name])})
    elif prev is not None:
        msgs.append({"role": "assistant", "content": prev["content"][:200]})
        msgs.append({"role": "user", "content": "Continue."})
    body = {
        "model": MODEL,
        "stream": r.stream,
        "messages": msgs,
        "tools": _tools_body(s.agent),
        "max_tokens": r.max_new,
        "chat_template_kwargs": {"thinking": True},
    }
    if r.stream:
        body["stream_options"] = {"include_usage": True}
    return body


def _call_function(name: str, args: dict) -> dict:
    return {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}


def _proxy_reply(rng: random.Random, r: Req, rep: dict) -> dict:
    """The 200 response's fields: the SSE lines as captured (`raw`) for a stream, else the JSON `body`."""
    rid = f"chatcmpl-{_hex(rng, 24)}"
    usage = {
        "prompt_tokens": r.prompt,
        "completion_tokens": r.completion,
        "total_tokens": r.prompt + r.completion,
        "prompt_tokens_details": {"cached_tokens": r.cached},
        "reasoning_tokens": r.reasoning,
    }
    tcs = [{"id": c, "type": "function", "function": _call_function(n, a)} for c, n, a in rep["calls"]]
    if r.stream:
        return dict(raw=_sse_lines(rid, int(r.t_arr), int(r.t_resp), rep, tcs, usage))
    msg = {
        "role": "assistant",
        "content": rep["content"] if rep["content"] or not tcs else None,
        "reasoning_content": rep["reasoning"],
        "tool_calls": tcs or None,
    }
    choice = {
        "index": 0,
        "message": msg,
        "logprobs": None,
        "finish_reason": rep["finish"],
        "matched_stop": 1 if rep["finish"] == "stop" else None,
    }
    body = {
        "id": rid,
        "object": "chat.completion",
        "created": int(r.t_arr),
        "model": MODEL,
        "choices": [choice],
        "usage": usage,
    }
    return dict(body=body)


def _sse_lines(rid: str, created: int, done: int, rep: dict, tcs: list, usage: dict) -> list[str]:
    """A stream as sglang sends it: the role, reasoning in 240-character chunks, content in 480, each tool
    call's name then its arguments, the finish (stamped at the end), the usage, [DONE]."""

    def data(o: dict) -> str:
        return "data: " + json.dumps(o, ensure_ascii=False, separators=(",", ":"))

    def chunk(delta: dict, fin=None, t: int = created) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": fin}
        return data({"id": rid, "object": "chat.completion.chunk", "created": t, "model": MODEL, "choices": [choice]})

    lines = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    reas, cont = rep["reasoning"], rep["content"]
    lines += [chunk({"reasoning_content": reas[a : a + 240]}) for a in range(0, len(reas), 240)]
    lines += [chunk({"content": cont[a : a + 480]}) for a in range(0, len(cont), 480)]
    for j, tc in enumerate(tcs):
        fn = tc["function"]
        head = {"index": j, "id": tc["id"], "type": "function", "function": {"name": fn["name"], "arguments": ""}}
        lines.append(chunk({"tool_calls": [head]}))
        lines.append(chunk({"tool_calls": [{"index": j, "function": {"arguments": fn["arguments"]}}]}))
    lines.append(chunk({}, rep["finish"], done))
    lines.append(
        data(
            {
                "id": rid,
                "object": "chat.completion.chunk",
                "created": done,
                "model": MODEL,
                "choices": [],
                "usage": usage,
            }
        )
    )
    lines.append("data: [DONE]")
    return lines


def _opencode(g: _Gen) -> list[tuple[str, bytes, dict, dict]]:
    rng = g.trng
    oid = _OcIds(random.Random(g.seed * 977 + 3))
    files = []
    for s in (s for s in g.sessions if s.source == "opencode"):
        if not s.reqs:
            continue
        t_first = s.reqs[0].t_arr
        ses = oid("ses", t_first - 3.0)
        proj = _hex(rng, 40)
        msgs, ids = [], {}
        user_id = None
        prev_leak = False
        loop_break = True
        for i, r in enumerate(s.reqs):
            # a user turn opens each loop, and follows a reply whose tool call leaked as text
            if loop_break or prev_leak:
                tu = r.t_arr - rng.uniform(0.02, 0.08)
                user_id = oid("msg", tu)
                msgs.append(_oc_user_message(oid, ses, user_id, tu, _oc_user_text(rng, s, bool(msgs), prev_leak)))
            nxt = s.reqs[i + 1].t_arr if i + 1 < len(s.reqs) else None
            msg = _oc_assistant_message(g, oid, ses, user_id, r, nxt)
            ids[id(r)] = msg["info"]["id"]
            msgs.append(msg)
            ok = r.d_out == "ok"
            prev_leak = ok and r.corrupt is not None and r.corrupt[0] == "parse_leak"
            loop_break = ok and r.final
        doc = {"info": _oc_session_info(rng, s, ses, proj, t_first), "messages": msgs}
        name = f"opencode-session-{ses}.json"
        counts = dict(
            sessions=1,
            messages=len(msgs),
            assistant_messages=sum(1 for m in msgs if m["info"]["role"] == "assistant"),
            user_messages=sum(1 for m in msgs if m["info"]["role"] == "user"),
        )
        files.append((name, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode(), counts, ids))
    return files


def _oc_user_text(rng: random.Random, s: Session, follows_turns: bool, prev_leak: bool) -> str:
    if not follows_turns:
        return _user_task(rng, s)
    if prev_leak:
        return "The last tool call came back as plain text instead of running. Try again."
    return rng.choice(OPENCODE_TASKS if s.lang == "en" else ZH_TASKS)


def _oc_user_message(oid: _OcIds, ses: str, user_id: str, tu: float, text: str) -> dict:
    info = {
        "id": user_id,
        "sessionID": ses,
        "role": "user",
        "time": {"created": _ms(tu)},
        "agent": "build",
        "model": {"providerID": "sglang-pd", "modelID": MODEL},
    }
    part = {"id": oid("prt", tu), "sessionID": ses, "messageID": user_id, "type": "text", "text": text}
    return {"info": info, "parts": [part]}


def _oc_assistant_message(g: _Gen, oid: _OcIds, ses: str, user_id: str, r: Req, nxt: float | None) -> dict:
    ta, tb = r.t_arr - g.trng.uniform(0.004, 0.012), r.t_resp
    mid = oid("msg", ta)
    tokens = {
        "input": r.prompt - r.cached,
        "output": r.completion - r.reasoning,
        "reasoning": r.reasoning,
        "cache": {"read": r.cached, "write": 0},
    }
    info = {
        "id": mid,
        "sessionID": ses,
        "role": "assistant",
        "time": {"created": _ms(ta), "completed": _ms(tb)},
        "parentID": user_id,
        "modelID": MODEL,
        "providerID": "sglang-pd",
        "mode": "build",
        "agent": "build",
        "path": {"cwd": "/home/dev/sglang", "root": "/home/dev/sglang"},
        "cost": 0,
        "tokens": tokens,
    }
    parts = [{"id": oid("prt", ta + 0.05), "sessionID": ses, "messageID": mid, "type": "step-start"}]
    if r.d_out != "ok":
        info["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
        info["error"] = {
            "name": "APIError",
            "data": {
                "message": r.error_text,
                "statusCode": 500,
                "isRetryable": True,
                "responseBody": json.dumps(_error_body(r)),
            },
        }
        return {"info": info, "parts": parts}
    rep = _reply(g, r)
    r.reply = rep
    fin = "tool-calls" if rep["finish"] == "tool_calls" else "stop"
    info["finish"] = fin
    parts += _oc_reply_parts(g.trng, oid, ses, mid, rep, ta, tb, tb + 2.0 if nxt is None else nxt)
    step_finish = {"id": oid("prt", tb + 0.001), "sessionID": ses, "messageID": mid, "type": "step-finish"}
    parts.append(dict(step_finish, reason=fin, cost=0, tokens=tokens))
    return {"info": info, "parts": parts}


def _oc_reply_parts(
    rng: random.Random, oid: _OcIds, ses: str, mid: str, rep: dict, ta: float, tb: float, nxt: float
) -> list[dict]:
    """The reply's reasoning, text and tool parts; each tool runs until shortly before the next request."""
    parts = []
    t1 = ta + (tb - ta) * 0.1
    t2 = ta + (tb - ta) * rng.uniform(0.4, 0.8)

    def part(t: float, typ: str, **fields) -> dict:
        return {"id": oid("prt", t), "sessionID": ses, "messageID": mid, "type": typ, **fields}

    if rep["reasoning"]:
        parts.append(part(t1, "reasoning", text=rep["reasoning"], time={"start": _ms(t1), "end": _ms(t2)}))
    if rep["content"]:
        parts.append(part(t2, "text", text=rep["content"], time={"start": _ms(t2), "end": _ms(tb)}))
    for cid, name, args in rep["calls"]:
        te = tb + min(2.0, (nxt - tb) * 0.8)
        state = {
            "status": "completed",
            "input": args,
            "output": rng.choice(TOOL_RESULTS[name]),
            "title": name,
            "metadata": {},
            "time": {"start": _ms(tb), "end": _ms(te)},
        }
        parts.append(part(tb, "tool", callID=cid, tool=name, state=state))
    return parts


def _oc_session_info(rng: random.Random, s: Session, ses: str, proj: str, t_first: float) -> dict:
    return {
        "id": ses,
        "slug": "pd-wedge-" + s.sid[:4],
        "projectID": proj,
        "directory": "/home/dev/sglang",
        "title": _user_task(rng, s)[:60],
        "version": "1.0.112",
        "time": {"created": _ms(t_first - 3.0), "updated": _ms(max(r.t_resp for r in s.reqs))},
    }
