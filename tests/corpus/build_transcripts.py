"""Build the labelled transcript corpus under tests/corpus/transcripts/ (deterministic).

    python -m tests.corpus.build_transcripts      # rewrites the corpus and its labels; read the diff

Every turn is written in the source's own format (proxy JSONL, streamed and not; Claude Code
JSONL; opencode export JSON, opencode.db and the storage tree; a folder of generated outputs),
and labelled with the class a reviewer gives it. Labels go to tests/corpus/transcript_labels.json,
outside the folder, so that ingesting the folder reads only transcripts.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import sqlite3
from pathlib import Path

from tests.corpus import texts as T

ROOT = Path(__file__).resolve().parent / "transcripts"
LABELS = Path(__file__).resolve().parent / "transcript_labels.json"
T0 = dt.datetime(2026, 10, 30, 10, 0, 0, tzinfo=dt.timezone.utc)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": n,
            "description": n,
            "parameters": {"type": "object", "properties": {k: {"type": "string"} for k in req}, "required": req},
        },
    }
    for n, req in (("read", ["filePath"]), ("bash", ["command"]), ("grep", ["pattern"]), ("write", ["path", "content"]))
]


class Corpus:
    def __init__(self, seed: int = 4):
        self.rng = random.Random(seed)
        self.labels: list[dict] = []
        self.clock = T0
        self.pools = {
            k: list(v)
            for k, v in {
                "prose": T.CLEAN_PROSE,
                "markup": T.CLEAN_MARKUP_DISCUSSION,
                "tables": T.CLEAN_TABLES,
                "errors": T.CLEAN_QUOTED_ERRORS,
                "chinese": T.CLEAN_CHINESE,
                "other": T.CLEAN_OTHER,
                "leak": T.leak_texts(),
                "incoherent": T.INCOHERENT,
            }.items()
        }
        self.cursor = {k: 0 for k in self.pools}

    def take(self, pool: str) -> str:
        items = self.pools[pool]
        i = self.cursor[pool]
        self.cursor[pool] += 1
        return items[i % len(items)]

    def tick(self, seconds: float) -> dt.datetime:
        self.clock += dt.timedelta(seconds=seconds)
        return self.clock

    # --- turn specs ----------------------------------------------------------------------------
    def clean_text(self) -> dict:
        kind = self.rng.choice(["prose", "prose", "prose", "markup", "tables", "errors", "chinese", "other"])
        text = self.take(kind)
        reasoning = self.rng.choice(T.CLEAN_REASONING)
        return dict(
            label="clean",
            content=text,
            reasoning=reasoning,
            calls=[],
            finish="stop",
            user="用中文回答。" if kind == "chinese" else None,
        )

    def clean_tool(self) -> dict:
        name = self.rng.choice(["read", "bash", "grep"])
        arg = {"read": {"filePath": "app/config.py"}, "bash": {"command": "pytest -q"}, "grep": {"pattern": "TODO"}}[
            name
        ]
        lead = self.rng.choice(["", "Let me check.", "Reading the file first.", "Running the tests."])
        return dict(
            label="clean",
            content=lead,
            reasoning=self.rng.choice(T.CLEAN_REASONING),
            calls=[{"id": f"call_{self.rng.randrange(1 << 30):x}", "name": name, "arguments": arg}],
            finish="tool_calls",
        )

    def leak(self, text: str | None = None) -> dict:
        return dict(label="parse_leak", content=text or self.take("leak"), reasoning="", calls=[], finish="stop")

    def incoherent(self) -> dict:
        text = self.take("incoherent")
        user = T.INCOHERENT_CN_USER if text.startswith("我们需要") else None
        return dict(label="incoherent", content=text, reasoning="", calls=[], finish="stop", user=user)

    def empty(self, variant: int) -> dict:
        if variant % 2:
            return dict(
                label="empty", content="", reasoning=T.EMPTY_REASONING_ONLY[variant % 2], calls=[], finish="stop"
            )
        return dict(label="empty", content="", reasoning="", calls=[], finish="stop")

    def transfer_error(self, variant: int) -> dict:
        if variant % 3 == 2:
            return dict(label="transfer_error", content="The answer is", reasoning="", calls=[], finish="abort")
        msg = T.TRANSFER_ERRORS[variant % len(T.TRANSFER_ERRORS)]
        return dict(label="transfer_error", content="", reasoning="", calls=[], finish=None, status=500, error=msg)

    def session_specs(self, n: int, corrupt: list[str], variant: int) -> list[dict]:
        """n turns: mostly clean (tool calls and text), with the given corrupted kinds spread in."""
        specs = []
        for i in range(n):
            specs.append(self.clean_tool() if self.rng.random() < 0.45 else self.clean_text())
        slots = self.rng.sample(range(1, n), len(corrupt)) if corrupt else []
        for slot, kind in zip(slots, corrupt):
            specs[slot] = {"leak": self.leak, "incoherent": self.incoherent}.get(kind, lambda: None)() or (
                self.empty(variant + slot) if kind == "empty" else self.transfer_error(variant + slot)
            )
        return specs

    def config_specs(self, n: int, v31: bool) -> list[dict]:
        """A template/parser mismatch: every tool call of the session leaks, from the first request on."""
        specs = []
        for i in range(n):
            if i % 3 == 2:
                specs.append(dict(label="clean", content=self.take("prose"), reasoning="", calls=[], finish="stop"))
                continue
            path = ["app/config.py", "README.md", "setup.cfg", "main.py"][i % 4]
            text = ("Reading it.\n\n" if i % 2 else "") + (
                T.V31_TOKENS_CALL % path if v31 else T.dsml_block([("read", {"filePath": path})])
            )
            specs.append(dict(label="config", content=text, reasoning="", calls=[], finish="stop"))
        return specs

    def usage(self, spec: dict) -> tuple[int, int]:
        prompt = self.rng.randrange(2000, 60000)
        completion = max(1, len(spec["content"]) // 4 + len(spec["reasoning"]) // 4 + 10 * len(spec["calls"]))
        if spec.get("status"):
            completion = 0
        return prompt, completion

    def label(self, source: str, session: str, turn: str, spec: dict) -> None:
        self.labels.append({"source": source, "session_id": session, "turn_id": turn, "label": spec["label"]})


# --- writers ------------------------------------------------------------------------------------
def _iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sse(resp_id: str, model: str, spec: dict, usage: dict) -> list[str]:
    base = {"id": resp_id, "object": "chat.completion.chunk", "created": 1793354401, "model": model}

    def chunk(delta, finish=None):
        return "data: " + json.dumps(
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}, ensure_ascii=False
        )

    out = [chunk({"role": "assistant", "content": ""})]
    for k, text in (("reasoning_content", spec["reasoning"]), ("content", spec["content"])):
        for i in range(0, len(text), 7):
            out.append(chunk({k: text[i : i + 7]}))
    for i, c in enumerate(spec["calls"]):
        args = json.dumps(c["arguments"])
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": args[:5]},
                        }
                    ]
                }
            )
        )
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[5:]}}]}))
    out.append(chunk({}, spec["finish"]))
    out.append("data: " + json.dumps({**base, "choices": [], "usage": usage}))
    out.append("data: [DONE]")
    return out


def write_proxy(c: Corpus, path: Path, session: str, specs: list[dict], model: str, stream_every: int) -> None:
    lines = []
    for i, spec in enumerate(specs):
        conn = f"{session}-c{i:03d}"
        t0 = c.tick(c.rng.uniform(3, 20))
        t1 = c.tick(c.rng.uniform(1, 15))
        stream = stream_every and i % stream_every == 0
        body = {
            "model": model,
            "stream": bool(stream),
            "tools": TOOLS,
            "messages": [{"role": "user", "content": spec.get("user") or c.rng.choice(T.USER_PROMPTS)}],
        }
        lines.append(
            {
                "ts": _iso(t0),
                "dir": "req",
                "conn": conn,
                "upstream": "http://pd-router:8000/v1/chat/completions",
                "body": body,
            }
        )
        prompt, completion = c.usage(spec)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        resp_id = f"{c.rng.getrandbits(128):032x}"
        resp = {
            "ts": _iso(t1),
            "dir": "resp",
            "conn": conn,
            "status": spec.get("status", 200),
            "latency_ms": int((t1 - t0).total_seconds() * 1000),
        }
        if spec.get("status"):
            resp["body"] = {
                "object": "error",
                "message": spec["error"],
                "type": "InternalServerError",
                "param": None,
                "code": spec["status"],
            }
        elif stream:
            resp["raw"] = _sse(resp_id, model, spec, usage)
        else:
            msg = {
                "role": "assistant",
                "content": spec["content"] or None,
                "reasoning_content": spec["reasoning"] or None,
            }
            if spec["calls"]:
                msg["tool_calls"] = [
                    {
                        "id": x["id"],
                        "type": "function",
                        "function": {"name": x["name"], "arguments": json.dumps(x["arguments"])},
                    }
                    for x in spec["calls"]
                ]
            resp["body"] = {
                "id": resp_id,
                "object": "chat.completion",
                "created": int(t1.timestamp()),
                "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": spec["finish"]}],
                "usage": usage,
            }
        lines.append(resp)
        c.label("openai_proxy", session, conn, spec)
    with open(path, "w") as f:
        for rec in lines:
            f.write(json.dumps({**rec, "session": session}, ensure_ascii=False) + "\n")


def _no_abort(spec: dict) -> dict:
    """Claude Code and opencode record no `abort` finish: an aborted request reaches them as an HTTP 500."""
    if spec["finish"] == "abort":
        return dict(spec, content="", finish=None, status=500, error=T.TRANSFER_ERRORS[3])
    return spec


def write_claude(c: Corpus, path: Path, session: str, specs: list[dict], model: str) -> None:
    lines = []
    parent = None
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/app",
        "sessionId": session,
        "version": "2.0.61",
        "gitBranch": "main",
    }
    for i, spec in enumerate(specs):
        spec = _no_abort(spec)
        uid = f"u-{session[:8]}-{i}"
        lines.append(
            {
                **base,
                "parentUuid": parent,
                "type": "user",
                "uuid": uid,
                "timestamp": _iso(c.tick(5)),
                "message": {"role": "user", "content": spec.get("user") or c.rng.choice(T.USER_PROMPTS)},
            }
        )
        parent = uid
        mid = f"msg_{session[:6]}{i:04d}"
        prompt, completion = c.usage(spec)
        usage = {"input_tokens": prompt, "output_tokens": completion, "cache_read_input_tokens": 0}
        if spec.get("status"):
            lines.append(
                {
                    **base,
                    "parentUuid": parent,
                    "type": "assistant",
                    "uuid": f"a-{mid}",
                    "timestamp": _iso(c.tick(3)),
                    "isApiErrorMessage": True,
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": "<synthetic>",
                        "content": [
                            {
                                "type": "text",
                                "text": f"API Error: {spec['status']} "
                                + json.dumps({"object": "error", "message": spec["error"], "code": 500}),
                            }
                        ],
                        "stop_reason": "stop_sequence",
                        "usage": {"input_tokens": 0, "output_tokens": 0},
                    },
                }
            )
            c.label("claude_code", session, mid, spec)
            continue
        blocks = []
        if spec["reasoning"]:
            blocks.append({"type": "thinking", "thinking": spec["reasoning"], "signature": ""})
        if spec["content"] or not spec["calls"]:
            blocks.append({"type": "text", "text": spec["content"]})
        for x in spec["calls"]:
            blocks.append({"type": "tool_use", "id": x["id"], "name": x["name"], "input": x["arguments"]})
        stop = {"stop": "end_turn", "tool_calls": "tool_use", "abort": None}[spec["finish"]]
        for j, b in enumerate(blocks):
            last = j == len(blocks) - 1
            lines.append(
                {
                    **base,
                    "parentUuid": parent,
                    "type": "assistant",
                    "uuid": f"a-{mid}-{j}",
                    "timestamp": _iso(c.tick(1)),
                    "requestId": f"req_{mid}",
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [b],
                        "stop_reason": stop if last else None,
                        "usage": usage,
                    },
                }
            )
            parent = f"a-{mid}-{j}"
        for x in spec["calls"]:
            lines.append(
                {
                    **base,
                    "parentUuid": parent,
                    "type": "user",
                    "uuid": f"r-{x['id']}",
                    "timestamp": _iso(c.tick(1)),
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": x["id"], "content": "ok"}],
                    },
                }
            )
        c.label("claude_code", session, mid, spec)
    lines.append({"type": "summary", "summary": "Session", "leafUuid": parent})
    with open(path, "w") as f:
        for rec in lines:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def opencode_messages(c: Corpus, session: str, specs: list[dict], model: str) -> list[dict]:
    msgs = []
    for i, spec in enumerate(specs):
        spec = _no_abort(spec)
        t_user = c.tick(6)
        uid, aid = f"msg_{session[4:]}_{i:03d}0", f"msg_{session[4:]}_{i:03d}1"
        msgs.append(
            {
                "info": {
                    "id": uid,
                    "sessionID": session,
                    "role": "user",
                    "time": {"created": int(t_user.timestamp() * 1000)},
                    "agent": "build",
                    "model": {"providerID": "sglang-pd", "modelID": model},
                },
                "parts": [
                    {
                        "id": f"prt_{uid}t",
                        "sessionID": session,
                        "messageID": uid,
                        "type": "text",
                        "text": spec.get("user") or c.rng.choice(T.USER_PROMPTS),
                    }
                ],
            }
        )
        t0, t1 = c.tick(0.2), c.tick(c.rng.uniform(2, 12))
        prompt, completion = c.usage(spec)
        info = {
            "id": aid,
            "sessionID": session,
            "role": "assistant",
            "parentID": uid,
            "time": {"created": int(t0.timestamp() * 1000), "completed": int(t1.timestamp() * 1000)},
            "modelID": model,
            "providerID": "sglang-pd",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": "/home/dev/app", "root": "/home/dev/app"},
            "cost": 0,
            "tokens": {"input": prompt, "output": completion, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "finish": {"stop": "stop", "tool_calls": "tool-calls", "abort": "other", None: None}[spec["finish"]],
        }
        parts = [{"id": f"prt_{aid}0", "type": "step-start"}]
        if spec.get("status"):
            info["error"] = {
                "name": "APIError",
                "data": {
                    "message": "Internal Server Error",
                    "statusCode": 500,
                    "isRetryable": True,
                    "responseBody": json.dumps({"object": "error", "message": spec["error"]}),
                },
            }
            info["tokens"]["output"] = 0
        if spec["reasoning"]:
            parts.append(
                {
                    "id": f"prt_{aid}1",
                    "type": "reasoning",
                    "text": spec["reasoning"],
                    "time": {"start": info["time"]["created"], "end": info["time"]["completed"]},
                }
            )
        if spec["content"]:
            parts.append({"id": f"prt_{aid}2", "type": "text", "text": spec["content"]})
        for j, x in enumerate(spec["calls"]):
            parts.append(
                {
                    "id": f"prt_{aid}3{j}",
                    "type": "tool",
                    "callID": x["id"],
                    "tool": x["name"],
                    "state": {
                        "status": "completed",
                        "input": x["arguments"],
                        "output": "ok",
                        "title": x["name"],
                        "metadata": {},
                        "time": {"start": info["time"]["completed"], "end": info["time"]["completed"] + 40},
                    },
                }
            )
        if not spec.get("status"):
            parts.append(
                {
                    "id": f"prt_{aid}9",
                    "type": "step-finish",
                    "reason": info["finish"],
                    "cost": 0,
                    "tokens": info["tokens"],
                }
            )
        for p in parts:
            p.update(sessionID=session, messageID=aid)
        msgs.append({"info": info, "parts": parts})
        c.label("opencode", session, aid, spec)
    return msgs


def write_export(path: Path, session: str, msgs: list[dict]) -> None:
    info = {
        "id": session,
        "slug": "s",
        "projectID": "prj_1",
        "directory": "/home/dev/app",
        "title": "Work",
        "version": "1.0.20",
        "time": {"created": msgs[0]["info"]["time"]["created"], "updated": msgs[-1]["info"]["time"]["created"]},
    }
    path.write_text(
        "Exporting session: "
        + session
        + "\n"
        + json.dumps({"info": info, "messages": msgs}, ensure_ascii=False, indent=2)
        + "\n"
    )


def write_db(path: Path, sessions: dict[str, list[dict]]) -> None:
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT, time_created INTEGER, time_updated INTEGER);"
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT, directory TEXT,"
        " title TEXT, version TEXT, time_created INTEGER, time_updated INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER,"
        " data TEXT NOT NULL);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER,"
        " time_updated INTEGER, data TEXT NOT NULL);"
        "CREATE TABLE todo (session_id TEXT, data TEXT);"
    )
    for sid, msgs in sessions.items():
        con.execute(
            "INSERT INTO session VALUES (?, 'prj_1', NULL, 's', '/home/dev/app', 'Work', '1.1.0', 0, 0)", (sid,)
        )
        for m in msgs:
            info = dict(m["info"])
            mid = info.pop("id")
            info.pop("sessionID")
            t = m["info"]["time"]["created"]
            con.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, t, t, json.dumps(info, ensure_ascii=False))
            )
            for p in m["parts"]:
                p = dict(p)
                pid = p.pop("id")
                p.pop("sessionID"), p.pop("messageID")
                con.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (pid, mid, sid, t, t, json.dumps(p, ensure_ascii=False)),
                )
    # a row whose JSON is cut: it must land in unparsed, not vanish
    con.execute("INSERT INTO part VALUES ('prt_broken', 'msg_x', 'ses_x', 0, 0, '{\"type\": \"text\", \"te')")
    con.commit()
    con.close()


def write_tree(root: Path, sessions: dict[str, list[dict]]) -> None:
    for sid, msgs in sessions.items():
        (root / "session" / "prj_1").mkdir(parents=True, exist_ok=True)
        (root / "session" / "prj_1" / f"{sid}.json").write_text(json.dumps({"id": sid, "title": "Work"}))
        for m in msgs:
            mid = m["info"]["id"]
            (root / "message" / sid).mkdir(parents=True, exist_ok=True)
            (root / "message" / sid / f"{mid}.json").write_text(json.dumps(m["info"], ensure_ascii=False, indent=2))
            for p in m["parts"]:
                (root / "part" / mid).mkdir(parents=True, exist_ok=True)
                (root / "part" / mid / f"{p['id']}.json").write_text(json.dumps(p, ensure_ascii=False, indent=2))


def write_outputs(c: Corpus, folder: Path, specs: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, spec in enumerate(specs):
        name = f"article_{i:02d}.md"
        t = c.tick(40)
        body = spec["content"]
        if i % 2:
            body = f"---\ntitle: Article {i}\ndate: {_iso(t)}\nmodel: deepseek-v3.2\n---\n" + body
        (folder / name).write_text(body)
        os.utime(folder / name, (t.timestamp(), t.timestamp()))
        c.labels.append({"source": "outputs_dir", "session_id": folder.name, "turn_id": name, "label": spec["label"]})


def build() -> None:
    c = Corpus()
    if ROOT.exists():
        shutil.rmtree(ROOT)
    for d in ("proxy", "claude", "opencode_export", "opencode_db", "opencode_tree/storage", "outputs"):
        (ROOT / d).mkdir(parents=True)
    v32, v4, v31 = "deepseek-v3.2", "deepseek-v4-flash", "deepseek-v3.1-terminus"
    plan = [  # (corrupted kinds in a session of mostly clean turns)
        ["leak", "incoherent", "empty"],
        ["leak", "transfer_error", "incoherent"],
        ["incoherent", "incoherent", "leak", "transfer_error"],
        ["empty", "transfer_error", "leak", "empty"],
        ["incoherent", "leak", "empty", "transfer_error"],
        [],
        ["leak", "incoherent", "transfer_error", "empty"],
        ["transfer_error", "incoherent", "empty", "incoherent"],
    ]
    # proxy: eight ordinary sessions (every other response streamed), one V4 session with sporadic
    # V4 leaks, one config session each of the two mismatch kinds
    for k, corrupt in enumerate(plan):
        specs = c.session_specs(12, corrupt, k)
        write_proxy(c, ROOT / "proxy" / f"agent{k}.jsonl", f"proxy-s{k}", specs, v32, stream_every=2 if k % 2 else 0)
    specs = c.session_specs(10, [], 9)
    for slot, text in zip((3, 7), T.v4_leak_texts()):
        specs[slot] = c.leak(text)
    specs[5] = dict(label="parse_leak", content="", reasoning="", calls=[], finish="tool_calls")
    specs[8] = dict(
        label="parse_leak",
        content="Writing it.",
        reasoning="",
        finish="tool_calls",
        calls=[{"id": "call_bad", "name": "write", "arguments": {"path": "notes.md"}}],
    )
    write_proxy(c, ROOT / "proxy" / "agent_v4.jsonl", "proxy-v4", specs, v4, stream_every=3)
    write_proxy(
        c,
        ROOT / "proxy" / "agent_cfg_dsml.jsonl",
        "proxy-cfg-dsml",
        c.config_specs(9, v31=False),
        "sglang-default",
        stream_every=0,
    )
    write_proxy(
        c, ROOT / "proxy" / "agent_cfg_v31.jsonl", "proxy-cfg-v31", c.config_specs(9, v31=True), v32, stream_every=2
    )
    # a V3.1 deployment whose own tool tokens leak now and then: a parse leak, not a mismatch
    specs = c.session_specs(8, [], 10)
    specs[4] = c.leak("Reading it.\n\n" + T.V31_TOKENS_CALL % "setup.cfg")
    write_proxy(c, ROOT / "proxy" / "agent_v31.jsonl", "proxy-v31", specs, v31, stream_every=0)

    # Claude Code through a translator
    for k, corrupt in enumerate(
        [
            ["leak", "incoherent", "transfer_error"],
            ["empty", "transfer_error", "incoherent"],
            [],
            ["leak", "leak", "incoherent", "empty"],
            ["transfer_error", "empty", "incoherent"],
        ]
    ):
        sid = f"3c9a7f52-0e41-4b8d-9d6a-1f2e3d4c5b{k:02d}"
        write_claude(c, ROOT / "claude" / f"{sid}.jsonl", sid, c.session_specs(10, corrupt, 20 + k), v32)
    sid = "3c9a7f52-0e41-4b8d-9d6a-1f2e3d4c5bcf"
    write_claude(c, ROOT / "claude" / f"{sid}.jsonl", sid, c.config_specs(6, v31=False), "deepseek-chat")

    # opencode: export files, a database and a storage tree, with reasoning-only and reasoning-leak turns
    for k, corrupt in enumerate([["incoherent", "transfer_error", "empty"], ["leak", "empty", "transfer_error"]]):
        sid = f"ses_4b21c07aa0ff{k:02d}Qm"
        specs = c.session_specs(11, corrupt, 30 + k)
        if k == 1:
            specs[6] = dict(label="parse_leak", content="", reasoning=T.REASONING_LEAKS[0], calls=[], finish="stop")
        write_export(ROOT / "opencode_export" / f"{sid}.json", sid, opencode_messages(c, sid, specs, v32))
    db_sessions = {}
    for k, corrupt in enumerate([["leak", "empty", "incoherent"], ["transfer_error", "incoherent"], ["empty", "leak"]]):
        sid = f"ses_5c31d08bb1aa{k:02d}Db"
        specs = c.session_specs(10, corrupt, 40 + k)
        if k == 0:
            specs[7] = dict(label="parse_leak", content="", reasoning=T.REASONING_LEAKS[1], calls=[], finish="stop")
        db_sessions[sid] = opencode_messages(c, sid, specs, v32)
    sid = "ses_5c31d08bb1aa09Cf"
    db_sessions[sid] = opencode_messages(c, sid, c.config_specs(6, v31=False), v32)
    write_db(ROOT / "opencode_db" / "opencode.db", db_sessions)
    tree_sessions = {}
    for k, corrupt in enumerate([["incoherent", "leak", "transfer_error"], ["empty", "incoherent", "empty"]]):
        sid = f"ses_6d41e09cc2bb{k:02d}Tr"
        tree_sessions[sid] = opencode_messages(c, sid, c.session_specs(9, corrupt, 50 + k), v32)
    write_tree(ROOT / "opencode_tree" / "storage", tree_sessions)

    # generated articles: clean prose (Chinese and tables included) and a few broken ones
    for k in range(2):
        specs = [dict(c.clean_text(), user=None) for _ in range(10)]
        specs[3] = dict(label="incoherent", content=c.take("incoherent"), reasoning="", calls=[], finish="stop")
        specs[6] = c.leak()
        if k:
            specs[8] = dict(label="empty", content="", reasoning="", calls=[], finish="stop")
        write_outputs(c, ROOT / "outputs" / f"writer_run{k}", specs)

    # every incoherent text of the bank appears at least once, between clean turns
    rest = T.INCOHERENT[c.cursor["incoherent"] :]
    specs = []
    for text in rest:
        specs.append(c.clean_tool())
        specs.append(dict(c.incoherent(), content=text))
    if specs:
        write_proxy(c, ROOT / "proxy" / "agent_mix.jsonl", "proxy-mix", specs, v32, stream_every=3)

    LABELS.write_text(
        json.dumps(
            sorted(c.labels, key=lambda x: (x["source"], x["session_id"], x["turn_id"])), ensure_ascii=False, indent=0
        )
        + "\n"
    )
    print(f"{len(c.labels)} turns written to {ROOT}")


if __name__ == "__main__":
    build()
