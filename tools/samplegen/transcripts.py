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
    rng = g.trng
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
            msgs = [
                {"role": "system", "content": f"You are the {s.agent} agent. Work in /home/dev/sglang. Use tools."},
                {"role": "user", "content": _user_task(rng, s)},
            ]
            if prev is not None and prev.get("calls"):
                cid, name, args = prev["calls"][0]
                msgs.append(
                    {
                        "role": "assistant",
                        "content": prev["content"],
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                            }
                        ],
                    }
                )
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
            t_req = r.t_arr - rng.uniform(0.0015, 0.004)
            recs.append(
                (
                    t_req,
                    {
                        "ts": iso(t_req, 3),
                        "dir": "req",
                        "conn": conn,
                        "upstream": "http://pd-router:8000/v1/chat/completions",
                        "body": body,
                    },
                )
            )
            counts["req"] += 1
            t_resp = r.t_resp
            lat = int(round((t_resp - t_req) * 1000))
            resp = {"ts": iso(t_resp, 3), "dir": "resp", "conn": conn}
            counts["resp"] += 1
            if r.d_out != "ok":
                resp.update(status=500, latency_ms=lat, body=_error_body(r))
                counts["errors"] += 1
                recs.append((t_resp, resp))
                prev = None
                continue
            rep = _reply(g, r)
            r.reply = rep
            rid = f"chatcmpl-{_hex(rng, 24)}"
            usage = {
                "prompt_tokens": r.prompt,
                "completion_tokens": r.completion,
                "total_tokens": r.prompt + r.completion,
                "prompt_tokens_details": {"cached_tokens": r.cached},
                "reasoning_tokens": r.reasoning,
            }
            created = int(r.t_arr)
            tcs = [
                {"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
                for c, n, a in rep["calls"]
            ]
            if r.stream:
                counts["streamed"] += 1
                lines = []

                def chunk(delta, fin=None, t=created):
                    o = {
                        "id": rid,
                        "object": "chat.completion.chunk",
                        "created": t,
                        "model": MODEL,
                        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": fin}],
                    }
                    lines.append("data: " + json.dumps(o, ensure_ascii=False, separators=(",", ":")))

                chunk({"role": "assistant", "content": None, "reasoning_content": ""})
                reas = rep["reasoning"]
                for a in range(0, len(reas), 240):
                    chunk({"reasoning_content": reas[a : a + 240]})
                cont = rep["content"]
                for a in range(0, len(cont), 480):
                    chunk({"content": cont[a : a + 480]})
                for j, tc in enumerate(tcs):
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": j,
                                    "id": tc["id"],
                                    "type": "function",
                                    "function": {"name": tc["function"]["name"], "arguments": ""},
                                }
                            ]
                        }
                    )
                    chunk({"tool_calls": [{"index": j, "function": {"arguments": tc["function"]["arguments"]}}]})
                chunk({}, rep["finish"], int(t_resp))
                u = {
                    "id": rid,
                    "object": "chat.completion.chunk",
                    "created": int(t_resp),
                    "model": MODEL,
                    "choices": [],
                    "usage": usage,
                }
                lines.append("data: " + json.dumps(u, ensure_ascii=False, separators=(",", ":")))
                lines.append("data: [DONE]")
                resp.update(status=200, latency_ms=lat, raw=lines)
            else:
                counts["non_stream"] += 1
                msg = {
                    "role": "assistant",
                    "content": rep["content"] if rep["content"] or not tcs else None,
                    "reasoning_content": rep["reasoning"],
                    "tool_calls": tcs or None,
                }
                resp.update(
                    status=200,
                    latency_ms=lat,
                    body={
                        "id": rid,
                        "object": "chat.completion",
                        "created": created,
                        "model": MODEL,
                        "choices": [
                            {
                                "index": 0,
                                "message": msg,
                                "logprobs": None,
                                "finish_reason": rep["finish"],
                                "matched_stop": 1 if rep["finish"] == "stop" else None,
                            }
                        ],
                        "usage": usage,
                    },
                )
            recs.append((t_resp, resp))
            prev = rep
    recs.sort(key=lambda x: x[0])
    data = "".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for _, o in recs)
    counts["lines"] = len(recs)
    return data.encode(), counts, ids


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
        for r in s.reqs:
            if loop_break or prev_leak:
                tu = r.t_arr - rng.uniform(0.02, 0.08)
                user_id = oid("msg", tu)
                text = (
                    _user_task(rng, s)
                    if not msgs
                    else (
                        "The last tool call came back as plain text instead of running. Try again."
                        if prev_leak
                        else rng.choice(OPENCODE_TASKS if s.lang == "en" else ZH_TASKS)
                    )
                )
                msgs.append(
                    {
                        "info": {
                            "id": user_id,
                            "sessionID": ses,
                            "role": "user",
                            "time": {"created": _ms(tu)},
                            "agent": "build",
                            "model": {"providerID": "sglang-pd", "modelID": MODEL},
                        },
                        "parts": [
                            {"id": oid("prt", tu), "sessionID": ses, "messageID": user_id, "type": "text", "text": text}
                        ],
                    }
                )
            ta, tb = r.t_arr - rng.uniform(0.004, 0.012), r.t_resp
            mid = oid("msg", ta)
            ids[id(r)] = mid
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
                msgs.append({"info": info, "parts": parts})
                loop_break, prev_leak = False, False
                continue
            rep = _reply(g, r)
            r.reply = rep
            t1 = ta + (tb - ta) * 0.1
            t2 = ta + (tb - ta) * rng.uniform(0.4, 0.8)
            if rep["reasoning"]:
                parts.append(
                    {
                        "id": oid("prt", t1),
                        "sessionID": ses,
                        "messageID": mid,
                        "type": "reasoning",
                        "text": rep["reasoning"],
                        "time": {"start": _ms(t1), "end": _ms(t2)},
                    }
                )
            if rep["content"]:
                parts.append(
                    {
                        "id": oid("prt", t2),
                        "sessionID": ses,
                        "messageID": mid,
                        "type": "text",
                        "text": rep["content"],
                        "time": {"start": _ms(t2), "end": _ms(tb)},
                    }
                )
            nxt = s.reqs[s.reqs.index(r) + 1].t_arr if s.reqs.index(r) + 1 < len(s.reqs) else tb + 2.0
            for cid, name, args in rep["calls"]:
                te = tb + min(2.0, (nxt - tb) * 0.8)
                parts.append(
                    {
                        "id": oid("prt", tb),
                        "sessionID": ses,
                        "messageID": mid,
                        "type": "tool",
                        "callID": cid,
                        "tool": name,
                        "state": {
                            "status": "completed",
                            "input": args,
                            "output": rng.choice(TOOL_RESULTS[name]),
                            "title": name,
                            "metadata": {},
                            "time": {"start": _ms(tb), "end": _ms(te)},
                        },
                    }
                )
            fin = "tool-calls" if rep["finish"] == "tool_calls" else "stop"
            info["finish"] = fin
            parts.append(
                {
                    "id": oid("prt", tb + 0.001),
                    "sessionID": ses,
                    "messageID": mid,
                    "type": "step-finish",
                    "reason": fin,
                    "cost": 0,
                    "tokens": tokens,
                }
            )
            msgs.append({"info": info, "parts": parts})
            prev_leak = r.corrupt is not None and r.corrupt[0] == "parse_leak"
            loop_break = r.final
        last_t = max(r.t_resp for r in s.reqs)
        doc = {
            "info": {
                "id": ses,
                "slug": "pd-wedge-" + s.sid[:4],
                "projectID": proj,
                "directory": "/home/dev/sglang",
                "title": _user_task(rng, s)[:60],
                "version": "1.0.112",
                "time": {"created": _ms(t_first - 3.0), "updated": _ms(last_t)},
            },
            "messages": msgs,
        }
        name = f"opencode-session-{ses}.json"
        counts = dict(
            sessions=1,
            messages=len(msgs),
            assistant_messages=sum(1 for m in msgs if m["info"]["role"] == "assistant"),
            user_messages=sum(1 for m in msgs if m["info"]["role"] == "user"),
        )
        files.append((name, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode(), counts, ids))
    return files
