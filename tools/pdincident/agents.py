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
        by_agent: dict[str, dict[str, list[Req]]] = {}
        for r in self.reqs:
            by_agent.setdefault(r.agent, {}).setdefault(r.session, []).append(r)
        self.texts = {}
        self._write_proxy(out, by_agent.get("proxy", {}))
        self._write_claude(out, by_agent.get("claude", {}))
        for agent, folder in (("opencode", "opencode-sessions"), ("killed", "opencode-writer-run2")):
            for sid, rs in by_agent.get(agent, {}).items():
                self._write_opencode_session(out / folder / sid, agent, sid, rs)

    # --- OpenAI-compatible proxy (one line per direction, SSE captured raw for streams)

    def _write_proxy(self, out: Path, sessions: dict[str, list[Req]]):
        (out / "llm-proxy").mkdir(parents=True, exist_ok=True)
        recs = []
        for rs in sessions.values():
            for r in rs:
                content, reasoning = self.reply_texts(r)
                recs.append((self.T(r.t0) - 0.003, self._proxy_request(r)))
                recs.append((self.T(r.t_end) + 0.004, self._proxy_response(r, content, reasoning)))
        recs.sort(key=lambda x: x[0])
        stamp = dt.datetime.fromtimestamp(self.T0, UTC).strftime("%Y-%m-%d")
        with open(out / "llm-proxy" / f"proxy-{stamp}.jsonl", "w", encoding="utf-8") as f:
            for _, o in recs:
                f.write(json.dumps(o, ensure_ascii=False) + "\n")

    def _proxy_request(self, r: Req) -> dict:
        return {
            "ts": iso_ms(self.T(r.t0) - 0.003),
            "dir": "req",
            "conn": r.turn,
            "upstream": "http://pd-router:8000/v1/chat/completions",
            "body": {
                "model": MODEL,
                "stream": r.stream,
                "messages": [{"role": "user", "content": self.user_text(r)}],
                "tools": _PROXY_TOOLS,
                "chat_template_kwargs": {"thinking": True},
            },
        }

    def _proxy_response(self, r: Req, content: str, reasoning: str) -> dict:
        resp = {
            "ts": iso_ms(self.T(r.t_end) + 0.004),
            "dir": "resp",
            "conn": r.turn,
            "status": 200 if r.outcome == "ok" else 500,
            "latency_ms": int((r.t_end - r.t0) * 1000),
        }
        if r.outcome != "ok":
            resp["body"] = _error_body(r)
            return resp
        rng = self.rng
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
            resp["raw"] = _sse_lines(r, created, content, reasoning, tool_calls, fin, usage)
            return resp
        msg = {"role": "assistant", "content": content, "reasoning_content": reasoning or None}
        if tool_calls:
            msg["tool_calls"] = tool_calls
        resp["body"] = {
            "id": r.rid_d,
            "object": "chat.completion",
            "created": created,
            "model": MODEL,
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": fin, "matched_stop": 1}],
            "usage": usage,
        }
        return resp

    # --- Claude Code via a translator: one line per content block, progress lines between

    def _write_claude(self, out: Path, sessions: dict[str, list[Req]]):
        proj = out / "claude" / "projects" / "-home-dev-app"
        proj.mkdir(parents=True, exist_ok=True)
        for sid, rs in sessions.items():
            log = _ClaudeLog(sid, self.rng)
            for r in rs:
                self._claude_turn(log, r)
            with open(proj / f"{sid}.jsonl", "w", encoding="utf-8") as f:
                for o in log.lines:
                    f.write(json.dumps(o, ensure_ascii=False) + "\n")

    def _claude_turn(self, log: _ClaudeLog, r: Req):
        rng = self.rng
        log.line(self.T(r.t0) - 0.01, "user", message={"role": "user", "content": self.user_text(r)})
        usage = {
            "input_tokens": r.prompt - r.cached,
            "cache_read_input_tokens": r.cached,
            "output_tokens": r.completion,
        }
        if r.outcome != "ok":
            error = json.dumps(_error_body(r))
            message = {
                "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "type": "message",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": f"API Error: 500 {error}"}],
                "stop_reason": "stop_sequence",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
            log.line(self.T(r.t_end), "assistant", message=message, isApiErrorMessage=True)
            r.turn = log.lines[-1]["message"]["id"]
            return
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
        if reasoning:
            thinking = [{"type": "thinking", "thinking": reasoning, "signature": "[REDACTED_SIGNATURE]"}]
            log.line(self.T(r.t_xfer), "assistant", message=dict(base, content=thinking), requestId=req_id)
        tool = r.label == "clean" and rng.random() < 0.5
        text = dict(base, content=[{"type": "text", "text": content}], stop_reason=None if tool else "end_turn")
        log.line(self.T(r.t_end) - (0.3 if tool else 0), "assistant", message=text, requestId=req_id)
        if tool:
            self._claude_tool_use(log, r, base, req_id)

    def _claude_tool_use(self, log: _ClaudeLog, r: Req, base: dict, req_id: str):
        rng = self.rng
        tu = "toolu_01" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijk0123456789") for _ in range(22))
        use = {"type": "tool_use", "id": tu, "name": "Read", "input": {"file_path": "/home/dev/" + rng.choice(FILES)}}
        log.line(
            self.T(r.t_end), "assistant", message=dict(base, content=[use], stop_reason="tool_use"), requestId=req_id
        )
        hook = {
            "type": "hook_progress",
            "hookEvent": "PostToolUse",
            "hookName": "PostToolUse:Read",
            "command": "callback",
        }
        log.line(self.T(r.t_end) + 0.01, "progress", data=hook, parentToolUseID=tu, toolUseID=tu)
        result = {"tool_use_id": tu, "type": "tool_result", "content": "     1→import os\n     2→"}
        log.line(self.T(r.t_end) + 0.05, "user", message={"role": "user", "content": [result]})

    # --- opencode server API shape: session.json + messages.json per session

    def _write_opencode_session(self, d: Path, agent: str, sid: str, rs: list[Req]):
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
            uid = oc_id("msg", self.T(r.t0) - 0.02, self.rng)
            msgs.append(self._opencode_user(sid, uid, r))
            msgs.append(self._opencode_assistant(sid, uid, r))
        (d / "session.json").write_text(json.dumps(info, indent=2, ensure_ascii=False), encoding="utf-8")
        (d / "messages.json").write_text(json.dumps(msgs, indent=2, ensure_ascii=False), encoding="utf-8")

    def _opencode_user(self, sid: str, uid: str, r: Req) -> dict:
        return {
            "info": {
                "id": uid,
                "sessionID": sid,
                "role": "user",
                "time": {"created": int((self.T(r.t0) - 0.02) * 1000)},
                "agent": "build",
                "model": {"providerID": "sglang-pd", "modelID": MODEL},
            },
            "parts": [
                # the part id is drawn before the text (dict literals evaluate in order)
                {
                    "id": oc_id("prt", self.T(r.t0), self.rng),
                    "sessionID": sid,
                    "messageID": uid,
                    "type": "text",
                    "text": self.user_text(r),
                }
            ],
        }

    def _opencode_assistant(self, sid: str, uid: str, r: Req) -> dict:
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
        parts = [self._oc_part(sid, r, self.T(r.t0) + 0.01, "step-start")]
        if r.outcome != "ok":
            aborted = r.outcome == "aborted"
            a["time"]["completed"] = int(self.T(self.storm_kill if aborted else r.t_end) * 1000)
            if aborted:
                a["error"] = {"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}
            else:
                a["error"] = {
                    "name": "APIError",
                    "data": {
                        "message": "Internal Server Error",
                        "statusCode": 500,
                        "isRetryable": True,
                        "responseBody": json.dumps(_error_body(r)),
                    },
                }
            a["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
            return {"info": a, "parts": parts}
        content, reasoning = self.reply_texts(r)
        a["time"]["completed"] = int(self.T(r.t_end) * 1000)
        a["finish"] = "stop"
        if reasoning:
            t = int(self.T(r.t_xfer) * 1000)
            parts.append(
                self._oc_part(sid, r, self.T(r.t_xfer), "reasoning", text=reasoning, time={"start": t, "end": t + 800})
            )
        span = {"start": int((self.T(r.t_end) - 1) * 1000), "end": int(self.T(r.t_end) * 1000)}
        parts.append(self._oc_part(sid, r, self.T(r.t_end) - 1, "text", text=content, time=span))
        parts.append(self._oc_part(sid, r, self.T(r.t_end), "step-finish", reason="stop", cost=0, tokens=a["tokens"]))
        return {"info": a, "parts": parts}

    def _oc_part(self, sid: str, r: Req, t: float, typ: str, **fields) -> dict:
        return {"id": oc_id("prt", t, self.rng), "sessionID": sid, "messageID": r.turn, "type": typ, **fields}


# every proxied request offers the agent the same one tool
_PROXY_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]},
        },
    }
]


def _error_body(r: Req) -> dict:
    """The router's 500 body, as the proxy, Claude Code and opencode each quote it."""
    return {"object": "error", "message": r.error_body, "type": "InternalServerError", "param": None, "code": 500}


def _sse_lines(r: Req, created: int, content: str, reasoning: str, tool_calls: list, fin: str, usage: dict) -> list:
    """A streamed reply as the proxy captured it: reasoning, 40-character content chunks, the tool call, the end."""
    head = {"id": r.rid_d, "object": "chat.completion.chunk", "created": created, "model": MODEL}

    def chunk(delta: dict, finish=None, ascii_only: bool = False) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps(dict(head, choices=[choice]), ensure_ascii=ascii_only)

    raw = []
    if reasoning:
        raw.append(chunk({"role": "assistant", "reasoning_content": reasoning}))
    for p in [content[i : i + 40] for i in range(0, len(content), 40)] or [""]:
        raw.append(chunk({"content": p}))
    # the tool-call and closing chunks stay ASCII-escaped, as the samples were first written (byte-identical output)
    if tool_calls:
        raw.append(chunk({"tool_calls": [dict(tool_calls[0], index=0)]}, ascii_only=True))
    raw.append(chunk({}, fin, ascii_only=True))
    raw.append("data: " + json.dumps(dict(head, choices=[], usage=usage)))
    raw.append("data: [DONE]")
    return raw


class _ClaudeLog:
    """One Claude Code session file: each line links to the one before it (parentUuid)."""

    def __init__(self, sid: str, rng):
        self.sid, self.rng = sid, rng
        self.lines: list[dict] = []
        self.parent = None

    def line(self, t, typ, **kw) -> str:
        u = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        o = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/app",
            "sessionId": self.sid,
            "version": "2.1.39",
            "gitBranch": "main",
            "type": typ,
        }
        o.update(kw)
        o["uuid"] = u
        o["timestamp"] = iso_ms(t)
        self.parent = u
        self.lines.append(o)
        return u
