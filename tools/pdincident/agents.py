"""The agents' side: reply texts and the transcripts each agent leaves (proxy log, opencode, Claude Code)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

from tools.pdincident.lines import iso_ms
from tools.pdincident.records import Req, hexid, oc_id, room_id
from tools.pdincident.scenario import MODEL, UTC
from tools.pdincident.texts import FILES, clean_text, corrupted_text, hard_negative_text


class _Agents:
    """Incident's agent transcripts (a mixin)."""

    def reply_texts(self, r: Req) -> tuple[str, str]:
        if r.label == "corrupted":
            return corrupted_text(r.ckind, self.rng)
        if r.label == "hard_negative":
            return hard_negative_text(r.ckind, self.rng, room_id(self.rng), hexid(self.rng), self.T(r.t_end))
        return clean_text(self.rng), "Check the call sites first." if self.rng.random() < 0.5 else ""

    def user_text(self, r: Req) -> str:
        if r.ckind == "cjk_reply":
            return "为什么解码端会超时？请解释一下。"
        return self.rng.choice(
            [
                "Why does config loading fail?",
                "Fix the flaky test and run the suite.",
                "Look at the decode log and tell me what happened.",
                "Summarise the incident.",
                "Read the benchmark script and speed it up.",
            ]
        )

    def write_agents(self, out: Path):
        rng = self.rng
        by_agent: dict[str, dict[str, list[Req]]] = {}
        for r in self.reqs:
            by_agent.setdefault(r.agent, {}).setdefault(r.session, []).append(r)
        self.texts = {}
        # --- OpenAI-compatible proxy (one line per direction, SSE captured raw for streams)
        (out / "llm-proxy").mkdir(parents=True, exist_ok=True)
        recs = []
        for sid, rs in by_agent.get("proxy", {}).items():
            for r in rs:
                content, reasoning = self.reply_texts(r)
                tools = [
                    {
                        "type": "function",
                        "function": {
                            "name": "read",
                            "parameters": {
                                "type": "object",
                                "properties": {"filePath": {"type": "string"}},
                                "required": ["filePath"],
                            },
                        },
                    }
                ]
                req = {
                    "ts": iso_ms(self.T(r.t0) - 0.003),
                    "dir": "req",
                    "conn": r.turn,
                    "upstream": "http://pd-router:8000/v1/chat/completions",
                    "body": {
                        "model": MODEL,
                        "stream": r.stream,
                        "messages": [{"role": "user", "content": self.user_text(r)}],
                        "tools": tools,
                        "chat_template_kwargs": {"thinking": True},
                    },
                }
                recs.append((self.T(r.t0) - 0.003, req))
                lat = int((r.t_end - r.t0) * 1000)
                if r.outcome != "ok":
                    resp = {
                        "ts": iso_ms(self.T(r.t_end) + 0.004),
                        "dir": "resp",
                        "conn": r.turn,
                        "status": 500,
                        "latency_ms": lat,
                        "body": {
                            "object": "error",
                            "message": r.error_body,
                            "type": "InternalServerError",
                            "param": None,
                            "code": 500,
                        },
                    }
                else:
                    tool_calls = []
                    if r.label == "clean" and rng.random() < 0.4:
                        tool_calls = [
                            {
                                "id": f"call_{rng.getrandbits(32):08x}",
                                "type": "function",
                                "function": {"name": "read", "arguments": json.dumps({"filePath": rng.choice(FILES)})},
                            }
                        ]
                    usage = {
                        "prompt_tokens": r.prompt,
                        "completion_tokens": r.completion,
                        "total_tokens": r.prompt + r.completion,
                        "prompt_tokens_details": {"cached_tokens": r.cached},
                    }
                    fin = "tool_calls" if tool_calls else "stop"
                    created = int(self.T(r.t0))
                    if r.stream:
                        raw = []
                        pieces = [content[i : i + 40] for i in range(0, len(content), 40)] or [""]
                        head = {"id": r.rid_d, "object": "chat.completion.chunk", "created": created, "model": MODEL}
                        if reasoning:
                            raw.append(
                                "data: "
                                + json.dumps(
                                    dict(
                                        head,
                                        choices=[
                                            {
                                                "index": 0,
                                                "delta": {"role": "assistant", "reasoning_content": reasoning},
                                                "finish_reason": None,
                                            }
                                        ],
                                    ),
                                    ensure_ascii=False,
                                )
                            )
                        for p in pieces:
                            raw.append(
                                "data: "
                                + json.dumps(
                                    dict(head, choices=[{"index": 0, "delta": {"content": p}, "finish_reason": None}]),
                                    ensure_ascii=False,
                                )
                            )
                        if tool_calls:
                            raw.append(
                                "data: "
                                + json.dumps(
                                    dict(
                                        head,
                                        choices=[
                                            {
                                                "index": 0,
                                                "delta": {"tool_calls": [dict(tool_calls[0], index=0)]},
                                                "finish_reason": None,
                                            }
                                        ],
                                    )
                                )
                            )
                        raw.append(
                            "data: " + json.dumps(dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": fin}]))
                        )
                        raw.append("data: " + json.dumps(dict(head, choices=[], usage=usage)))
                        raw.append("data: [DONE]")
                        resp = {
                            "ts": iso_ms(self.T(r.t_end) + 0.004),
                            "dir": "resp",
                            "conn": r.turn,
                            "status": 200,
                            "latency_ms": lat,
                            "raw": raw,
                        }
                    else:
                        msg = {"role": "assistant", "content": content, "reasoning_content": reasoning or None}
                        if tool_calls:
                            msg["tool_calls"] = tool_calls
                        resp = {
                            "ts": iso_ms(self.T(r.t_end) + 0.004),
                            "dir": "resp",
                            "conn": r.turn,
                            "status": 200,
                            "latency_ms": lat,
                            "body": {
                                "id": r.rid_d,
                                "object": "chat.completion",
                                "created": created,
                                "model": MODEL,
                                "choices": [
                                    {
                                        "index": 0,
                                        "message": msg,
                                        "logprobs": None,
                                        "finish_reason": fin,
                                        "matched_stop": 1,
                                    }
                                ],
                                "usage": usage,
                            },
                        }
                recs.append((self.T(r.t_end) + 0.004, resp))
        recs.sort(key=lambda x: x[0])
        stamp = dt.datetime.fromtimestamp(self.T0, UTC).strftime("%Y-%m-%d")
        with open(out / "llm-proxy" / f"proxy-{stamp}.jsonl", "w", encoding="utf-8") as f:
            for _, o in recs:
                f.write(json.dumps(o, ensure_ascii=False) + "\n")
        # --- Claude Code via a translator: one line per content block, progress lines between
        proj = out / "claude" / "projects" / "-home-dev-app"
        proj.mkdir(parents=True, exist_ok=True)
        for sid, rs in by_agent.get("claude", {}).items():
            lines = []
            parent = None

            def line(t, typ, **kw):
                nonlocal parent
                u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                o = {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "userType": "external",
                    "cwd": "/home/dev/app",
                    "sessionId": sid,
                    "version": "2.1.39",
                    "gitBranch": "main",
                    "type": typ,
                }
                o.update(kw)
                o["uuid"] = u
                o["timestamp"] = iso_ms(t)
                parent = u
                lines.append(o)
                return u

            for r in rs:
                line(self.T(r.t0) - 0.01, "user", message={"role": "user", "content": self.user_text(r)})
                usage = {
                    "input_tokens": r.prompt - r.cached,
                    "cache_read_input_tokens": r.cached,
                    "output_tokens": r.completion,
                }
                if r.outcome != "ok":
                    line(
                        self.T(r.t_end),
                        "assistant",
                        message={
                            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                            "type": "message",
                            "role": "assistant",
                            "model": "<synthetic>",
                            "content": [
                                {
                                    "type": "text",
                                    "text": f"API Error: 500 {json.dumps({'object': 'error', 'message': r.error_body, 'type': 'InternalServerError', 'param': None, 'code': 500})}",
                                }
                            ],
                            "stop_reason": "stop_sequence",
                            "usage": {"input_tokens": 0, "output_tokens": 0},
                        },
                        isApiErrorMessage=True,
                    )
                    r.turn = lines[-1]["message"]["id"]
                    continue
                content, reasoning = self.reply_texts(r)
                req_id = "req_" + "".join(rng.choice("abcdefghijkmnopqrstuvwxyz0123456789") for _ in range(24))
                base = {
                    "model": MODEL,
                    "id": r.turn,
                    "type": "message",
                    "role": "assistant",
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                }
                t1 = self.T(r.t_xfer)
                if reasoning:
                    line(
                        t1,
                        "assistant",
                        message=dict(
                            base,
                            content=[{"type": "thinking", "thinking": reasoning, "signature": "[REDACTED_SIGNATURE]"}],
                        ),
                        requestId=req_id,
                    )
                tool = r.label == "clean" and rng.random() < 0.5
                line(
                    self.T(r.t_end) - (0.3 if tool else 0),
                    "assistant",
                    message=dict(
                        base, content=[{"type": "text", "text": content}], stop_reason=None if tool else "end_turn"
                    ),
                    requestId=req_id,
                )
                if tool:
                    tu = "toolu_01" + "".join(
                        rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijk0123456789") for _ in range(22)
                    )
                    line(
                        self.T(r.t_end),
                        "assistant",
                        message=dict(
                            base,
                            content=[
                                {
                                    "type": "tool_use",
                                    "id": tu,
                                    "name": "Read",
                                    "input": {"file_path": "/home/dev/" + rng.choice(FILES)},
                                }
                            ],
                            stop_reason="tool_use",
                        ),
                        requestId=req_id,
                    )
                    line(
                        self.T(r.t_end) + 0.01,
                        "progress",
                        data={
                            "type": "hook_progress",
                            "hookEvent": "PostToolUse",
                            "hookName": "PostToolUse:Read",
                            "command": "callback",
                        },
                        parentToolUseID=tu,
                        toolUseID=tu,
                    )
                    line(
                        self.T(r.t_end) + 0.05,
                        "user",
                        message={
                            "role": "user",
                            "content": [
                                {"tool_use_id": tu, "type": "tool_result", "content": "     1→import os\n     2→"}
                            ],
                        },
                    )
            with open(proj / f"{sid}.jsonl", "w", encoding="utf-8") as f:
                for o in lines:
                    f.write(json.dumps(o, ensure_ascii=False) + "\n")
        # --- opencode server API shape: session.json + messages.json per session
        for agent, folder in (("opencode", "opencode-sessions"), ("killed", "opencode-writer-run2")):
            for sid, rs in by_agent.get(agent, {}).items():
                d = out / folder / sid
                d.mkdir(parents=True, exist_ok=True)
                t_c = self.T(rs[0].t0) - 0.5
                info = {
                    "id": sid,
                    "slug": f"s{sid[-6:].lower()}",
                    "projectID": "prj_app",
                    "directory": "/home/dev/app",
                    "title": "Write the analysis articles" if agent == "killed" else "Debug the PD deployment",
                    "version": "1.0.134",
                    "time": {"created": int(t_c * 1000), "updated": int(self.T(rs[-1].t_end) * 1000)},
                }
                msgs = []
                for r in rs:
                    uid = oc_id("msg", self.T(r.t0) - 0.02, rng)
                    msgs.append(
                        {
                            "info": {
                                "id": uid,
                                "sessionID": sid,
                                "role": "user",
                                "time": {"created": int((self.T(r.t0) - 0.02) * 1000)},
                                "agent": "build",
                                "model": {"providerID": "sglang-pd", "modelID": MODEL},
                            },
                            "parts": [
                                {
                                    "id": oc_id("prt", self.T(r.t0), rng),
                                    "sessionID": sid,
                                    "messageID": uid,
                                    "type": "text",
                                    "text": self.user_text(r),
                                }
                            ],
                        }
                    )
                    a = {
                        "id": r.turn,
                        "sessionID": sid,
                        "role": "assistant",
                        "parentID": uid,
                        "time": {"created": int(self.T(r.t0) * 1000)},
                        "modelID": MODEL,
                        "providerID": "sglang-pd",
                        "mode": "build",
                        "agent": "build",
                        "path": {"cwd": "/home/dev/app", "root": "/home/dev/app"},
                        "cost": 0,
                        "tokens": {
                            "input": r.prompt - r.cached,
                            "output": int(r.completion * 0.7),
                            "reasoning": r.completion - int(r.completion * 0.7),
                            "cache": {"read": r.cached, "write": 0},
                        },
                    }
                    parts = [
                        {
                            "id": oc_id("prt", self.T(r.t0) + 0.01, rng),
                            "sessionID": sid,
                            "messageID": r.turn,
                            "type": "step-start",
                        }
                    ]
                    if r.outcome == "aborted":
                        a["time"]["completed"] = int(self.T(self.storm_kill) * 1000)
                        a["error"] = {"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}
                        a["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
                    elif r.outcome != "ok":
                        a["time"]["completed"] = int(self.T(r.t_end) * 1000)
                        a["error"] = {
                            "name": "APIError",
                            "data": {
                                "message": "Internal Server Error",
                                "statusCode": 500,
                                "isRetryable": True,
                                "responseBody": json.dumps(
                                    {
                                        "object": "error",
                                        "message": r.error_body,
                                        "type": "InternalServerError",
                                        "param": None,
                                        "code": 500,
                                    }
                                ),
                            },
                        }
                        a["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
                    else:
                        content, reasoning = self.reply_texts(r)
                        a["time"]["completed"] = int(self.T(r.t_end) * 1000)
                        a["finish"] = "stop"
                        if reasoning:
                            parts.append(
                                {
                                    "id": oc_id("prt", self.T(r.t_xfer), rng),
                                    "sessionID": sid,
                                    "messageID": r.turn,
                                    "type": "reasoning",
                                    "text": reasoning,
                                    "time": {
                                        "start": int(self.T(r.t_xfer) * 1000),
                                        "end": int(self.T(r.t_xfer) * 1000) + 800,
                                    },
                                }
                            )
                        parts.append(
                            {
                                "id": oc_id("prt", self.T(r.t_end) - 1, rng),
                                "sessionID": sid,
                                "messageID": r.turn,
                                "type": "text",
                                "text": content,
                                "time": {
                                    "start": int((self.T(r.t_end) - 1) * 1000),
                                    "end": int(self.T(r.t_end) * 1000),
                                },
                            }
                        )
                        parts.append(
                            {
                                "id": oc_id("prt", self.T(r.t_end), rng),
                                "sessionID": sid,
                                "messageID": r.turn,
                                "type": "step-finish",
                                "reason": "stop",
                                "cost": 0,
                                "tokens": a["tokens"],
                            }
                        )
                    msgs.append({"info": a, "parts": parts})
                (d / "session.json").write_text(json.dumps(info, indent=2, ensure_ascii=False), encoding="utf-8")
                (d / "messages.json").write_text(json.dumps(msgs, indent=2, ensure_ascii=False), encoding="utf-8")
