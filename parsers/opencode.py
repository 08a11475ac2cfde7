"""opencode sessions: the SQLite `opencode.db`, the older JSON storage tree, `opencode export` JSON,
and the server API shape (`session.json` + `messages.json`, or the messages array alone).

All of them hold the same objects (docs/formats/TRANSCRIPTS.md, "opencode"): messages (`role`
user / assistant) and their parts (text, reasoning, tool, step-finish, ...). They are rebuilt into the export shape and
read by one function. A leaked DSML call is a `text` part with `<｜DSML｜…` and no `tool` part.

Records (for the line accounting) are messages and parts: an assistant message is parsed, a user
message is parsed (it gives the next turn its start and its text), parts are folded into their
message (continuation); a row or file that is not a JSON object goes to `unparsed`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator

from forensics.core.errors import InputError
from forensics.core.turns import Turn, as_int, normalise_finish, parse_time
from forensics.parsers.base import Batch, Context, Sample, Source
from forensics.parsers.transcript import MAX_DEPTH, TooDeep, batch, documents, loads

name = "opencode"
description = (
    "opencode sessions: opencode.db (SQLite), the storage/ JSON tree, `opencode export` JSON, "
    "the server API's session.json + messages.json"
)

SQLITE_MAGIC = b"SQLite format 3\x00"


def sniff(head: bytes, path: str) -> float:
    base = os.path.basename(path.split("!")[-1])
    if head.startswith(SQLITE_MAGIC):
        # the schema sits in page 1: opencode's message and part tables with their JSON `data`
        return 0.95 if b"CREATE TABLE" in head and b"message" in head and b"part" in head and b"data" in head else 0.0
    if base.startswith("opencode") and (base.endswith("-wal") or base.endswith("-shm")):
        return 0.9  # read together with the database; claimed so it is not taken for a log
    text = head.lstrip()[:4096].decode("utf-8", "replace")
    if text.startswith("Exporting session:"):
        text = text.split("\n", 1)[-1].lstrip()
    if (
        text.startswith("{")
        and '"info"' in text
        and '"messages"' in text
        and ('"ses_' in text or '"sessionID"' in text)
    ):
        return 0.95
    if _is_messages_array(text):
        return 0.95
    if _SESSION_INFO.match(text) and '"messages"' not in text and '"role"' not in text:
        return 0.9  # the server API's session.json: no turns, but not a log either
    return 0.0


# an object whose own id is a session id, as the server API's GET /session/:id returns it
_SESSION_INFO = re.compile(r'\{\s*"id"\s*:\s*"ses_')
_API_FILES = {"session.json", "messages.json"}


def _is_messages_array(text: str) -> bool:
    """The head of the server API's messages.json: an array of {"info": Message, "parts": [...]}."""
    return (
        re.match(r'\[\s*\{\s*"(?:info|parts)"\s*:', text) is not None
        and '"parts"' in text
        and '"role"' in text
        and ('"ses_' in text or '"sessionID"' in text)
    )


def sniff_dir(path: str) -> float:
    """A storage tree (message/<ses>/<msg>.json, or session/message/... mid-2025), or a server API folder.

    The API folder is claimed only when it holds nothing but session.json and messages.json: a
    dump that keeps them beside its logs is walked file by file, and each file is sniffed alone.
    """
    for sub in ("message", os.path.join("session", "message")):
        d = os.path.join(path, sub)
        if os.path.isdir(d) and any(n.startswith("ses_") for n in os.listdir(d)):
            return 0.95
    try:
        names = {n for n in os.listdir(path) if not n.startswith(".")}
    except OSError:
        return 0.0
    if "messages.json" in names and names <= _API_FILES:
        with open(os.path.join(path, "messages.json"), "rb") as fh:
            head = fh.read(16 << 10).decode("utf-8", "replace").lstrip()
        if _is_messages_array(head) or re.fullmatch(r"\[\s*\]\s*", head):
            return 0.95
    return 0.0


def _turns(path: str, session: dict | None, messages: list[dict]) -> list[Turn]:
    """Turns of one session from export-shaped messages [{"info": Message, "parts": [Part]}]."""
    turns = []
    by_id = {m["info"].get("id"): m for m in messages}
    for i, m in enumerate(messages):
        info = m["info"]
        if info.get("role") != "assistant":
            continue
        parts = m.get("parts") or []
        texts = [
            p.get("text") or ""
            for p in parts
            if p.get("type") == "text" and not p.get("synthetic") and not p.get("ignored")
        ]
        reasoning = [p.get("text") or "" for p in parts if p.get("type") == "reasoning"]
        calls = []
        for p in parts:
            if p.get("type") == "tool":
                state = p.get("state") or {}
                calls.append({"id": p.get("callID"), "name": p.get("tool"), "arguments": state.get("input")})
        finish = info.get("finish")
        if finish is None:
            steps = [p.get("reason") for p in parts if p.get("type") == "step-finish" and p.get("reason")]
            finish = steps[-1] if steps else None
        tok = info.get("tokens") or {}
        cache = tok.get("cache") or {}
        err = info.get("error") or {}
        data = err.get("data") or {}
        error_text = None
        if err:
            error_text = " ".join(str(x) for x in (err.get("name"), data.get("message"), data.get("responseBody")) if x)
        parent = by_id.get(info.get("parentID"))
        user_text = (
            "\n".join(
                p.get("text") or ""
                for p in (parent or {}).get("parts") or []
                if p.get("type") == "text" and not p.get("synthetic")
            )
            if parent
            else None
        )
        t = info.get("time") or {}
        # the server counts cached prompt tokens and reasoning tokens in its totals
        # (docs/formats/TRANSCRIPTS.md, "Linking turns to server requests")
        prompt = as_int(tok.get("input"))
        completion = as_int(tok.get("output"))
        turns.append(
            Turn(
                source=name,
                session_id=str(info.get("sessionID") or (session or {}).get("id") or ""),
                turn_id=str(info.get("id")),
                source_file=path,
                line_no=m.get("_record", i + 1),
                parent_id=info.get("parentID"),
                t_start=parse_time(t.get("created")),
                t_end=parse_time(t.get("completed")),
                model=info.get("modelID"),
                content="".join(texts),
                reasoning="".join(reasoning),
                tool_calls=calls,
                finish_reason=normalise_finish(finish),
                http_status=as_int(data.get("statusCode")),
                error_text=error_text,
                prompt_tokens=None if prompt is None else prompt + (as_int(cache.get("read")) or 0),
                completion_tokens=None if completion is None else completion + (as_int(tok.get("reasoning")) or 0),
                reasoning_tokens=as_int(tok.get("reasoning")),
                cached_tokens=as_int(cache.get("read")),
                tools_offered=True,
                user_text=user_text,
            )
        )
    return turns


def _group(msgs: list[tuple[int, dict]], parts: list[dict]) -> dict[str, list[dict]]:
    """Export-shaped messages per session, in id order (ids sort by creation time)."""
    by_msg: dict[str, list[dict]] = {}
    for p in sorted(parts, key=lambda p: str(p.get("id"))):
        by_msg.setdefault(p.get("messageID"), []).append(p)
    out: dict[str, list[dict]] = {}
    for rec, info in sorted(msgs, key=lambda x: str(x[1].get("id"))):
        out.setdefault(info.get("sessionID"), []).append(
            {"info": info, "parts": by_msg.get(info.get("id"), []), "_record": rec}
        )
    return out


def _load(raw: str | bytes):
    try:
        obj = loads(raw)
    except TooDeep:
        return None, "too_deep"
    except (ValueError, UnicodeDecodeError):
        return None, "invalid_json"
    return (obj, None) if isinstance(obj, dict) else (None, "schema:not_an_object")


def _parse_db(source: Source, ctx: Context, unparsed: list) -> list[Turn]:
    import sqlite3

    tmp = tempfile.mkdtemp(prefix="opencode-")
    try:
        db = os.path.join(tmp, "opencode.db")
        with source.open() as src, open(db, "wb") as dst:
            shutil.copyfileobj(src, dst)
        if source.member is None:
            # recent writes may still sit in the write-ahead log beside the database
            for suffix in ("-wal", "-shm"):
                if os.path.exists(source.fs_path + suffix):
                    shutil.copyfile(source.fs_path + suffix, db + suffix)
        con = sqlite3.connect(db)
        try:
            msgs, parts = [], []
            rows = con.execute("SELECT id, session_id, data FROM message ORDER BY rowid").fetchall()
            prow = con.execute("SELECT id, message_id, session_id, data FROM part ORDER BY rowid").fetchall()
        finally:
            con.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for n, (mid, sid, data) in enumerate(rows, 1):
        obj, why = _load(data)
        if why:
            unparsed.append((f"{source.path}#message", n, str(data), why))
            continue
        msgs.append((n, {**obj, "id": mid, "sessionID": sid}))
    for n, (pid, mid, sid, data) in enumerate(prow, 1):
        obj, why = _load(data)
        if why:
            unparsed.append((f"{source.path}#part", n, str(data), why))
            continue
        parts.append({**obj, "id": pid, "messageID": mid, "sessionID": sid})
    ctx.account(parsed=len(msgs), continuation=len(parts), unparsed=len(unparsed))
    turns = []
    for sid, ms in _group(msgs, parts).items():
        turns += _turns(source.path, None, ms)
    return turns


def _parse_tree(path: str, ctx: Context, unparsed: list) -> list[Turn]:
    msgs, parts = [], []
    n = 0
    for d, dirs, files in os.walk(path):
        dirs.sort()
        rel = os.path.relpath(d, path).split(os.sep)
        kind = "message" if "message" in rel else "part" if "part" in rel else None
        for f in sorted(files):
            if not f.endswith(".json") or kind is None:
                continue  # project/, session info, todo/, permission/ hold no turns
            n += 1
            full = os.path.join(d, f)
            with open(full, "rb") as fh:
                raw = fh.read()
            obj, why = _load(raw)
            if why:
                unparsed.append((full, 1, raw.decode("utf-8", "backslashreplace"), why))
            elif kind == "message":
                msgs.append((n, obj))
            else:
                parts.append(obj)
    ctx.account(parsed=len(msgs), continuation=len(parts), unparsed=len(unparsed))
    turns = []
    for sid, ms in _group(msgs, parts).items():
        turns += _turns(path, None, ms)
    return turns


def _read_text(source: Source) -> str:
    with source.open() as f:
        raw = f.read().decode("utf-8", "backslashreplace")
    if raw.lstrip().startswith("Exporting session:"):  # stderr captured together with stdout
        return raw.lstrip().split("\n", 1)[-1]
    return raw


def _messages(items: list, path: str, ctx: Context, unparsed: list) -> list[dict]:
    """Export-shaped messages of a `messages` array; a message is parsed, its parts continuation."""
    messages = []
    for n, m in enumerate(items, 1):
        if not isinstance(m, dict) or not isinstance(m.get("info"), dict):
            unparsed.append((path, n, json.dumps(m, ensure_ascii=False), "schema:info"))
            ctx.account(unparsed=1)
            continue
        parts = [p for p in (m.get("parts") or []) if isinstance(p, dict)]
        messages.append({"info": m["info"], "parts": parts, "_record": n})
        ctx.account(parsed=1, continuation=len(parts))
    return messages


def _parse_json(path: str, raw: str, ctx: Context, unparsed: list, session: dict | None = None) -> list[Turn]:
    """Export objects (one, or several written one after another), a server API messages array, or a bare
    Session.Info (which holds no turn). A document that does not read (nested too deep, invalid) goes to
    `unparsed` alone, with the line it starts on; the documents beside it are read."""
    turns: list[Turn] = []
    deep = 0
    for line, text, obj, why in documents(raw, skip=("Exporting session:",)):
        if isinstance(obj, list):
            turns += _turns(path, session, _messages(obj, path, ctx, unparsed))
        elif isinstance(obj, dict) and isinstance(obj.get("messages"), list):
            turns += _turns(path, obj.get("info"), _messages(obj["messages"], path, ctx, unparsed))
        elif isinstance(obj, dict) and str(obj.get("id", "")).startswith("ses_") and "role" not in obj:
            ctx.account(parsed=1)
        else:
            deep += why == "too_deep"
            unparsed.append((path, line, text, why or "schema:messages"))
            ctx.account(unparsed=1)
    if not raw.strip():
        unparsed.append((path, 1, raw, "schema:messages"))
        ctx.account(unparsed=1)
    if deep:
        ctx.notes.append(
            f"{deep} JSON document{'s' * (deep > 1)} nested deeper than {MAX_DEPTH} levels: in `unparsed` "
            "(reason too_deep), the documents beside it read"
        )
    return turns


def _parse_api_dir(path: str, ctx: Context, unparsed: list) -> list[Turn]:
    """The server API folder: session.json (one record) beside messages.json."""
    session = None
    info_path = os.path.join(path, "session.json")
    if os.path.exists(info_path):
        with open(info_path, "rb") as fh:
            raw = fh.read().decode("utf-8", "backslashreplace")
        obj, why = _load(raw)
        if why:
            unparsed.append((info_path, 1, raw, why))
            ctx.account(unparsed=1)
        else:
            session = obj
            ctx.account(parsed=1)
    msgs_path = os.path.join(path, "messages.json")
    with open(msgs_path, "rb") as fh:
        raw = fh.read().decode("utf-8", "backslashreplace")
    return _parse_json(msgs_path, raw, ctx, unparsed, session)


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
    unparsed: list = []
    if os.path.isdir(source.fs_path) and source.member is None:
        if os.path.exists(os.path.join(source.fs_path, "messages.json")):
            turns = _parse_api_dir(source.fs_path, ctx, unparsed)
        else:
            turns = _parse_tree(source.fs_path, ctx, unparsed)
    else:
        with source.open() as f:
            head = f.read(len(SQLITE_MAGIC))
        base = os.path.basename(source.path)
        if head == SQLITE_MAGIC:
            import sqlite3  # here, not at the top: most ingests read no database

            try:
                turns = _parse_db(source, ctx, unparsed)
            except sqlite3.DatabaseError as e:
                # a half-copied or corrupt database: refuse it by name rather than crash the ingest
                raise InputError(
                    f"{source.path} is an unreadable SQLite database: {e}",
                    file=source.path,
                    help="copy opencode.db again together with its -wal file, or open it with sqlite3 and run .recover",
                ) from None
        elif base.endswith(("-wal", "-shm")):
            ctx.notes.append("write-ahead log: read together with its opencode.db")
            turns = []
        else:
            turns = _parse_json(source.path, _read_text(source), ctx, unparsed)
    stamps = [x for t in turns for x in (t.t_start, t.t_end) if x]
    ctx.first_ts, ctx.last_ts = (min(stamps), max(stamps)) if stamps else (None, None)
    yield batch(turns, unparsed, name)


def _export(*messages) -> str:
    return json.dumps(
        {
            "info": {
                "id": "ses_4b21c07aa0ffe1Qm",
                "title": "Fix config loading",
                "directory": "/home/dev/app",
                "time": {"created": 1793354100112, "updated": 1793354415870},
            },
            "messages": list(messages),
        },
        ensure_ascii=False,
        indent=2,
    )


_USER_MSG = {
    "info": {
        "id": "msg_4b21c9c11001Pa",
        "sessionID": "ses_4b21c07aa0ffe1Qm",
        "role": "user",
        "time": {"created": 1793354400100},
        "agent": "build",
        "model": {"providerID": "sglang-pd", "modelID": "deepseek-v3.2"},
    },
    "parts": [{"id": "prt_1", "type": "text", "text": "Why does config loading fail?"}],
}


def _asst(mid, parts, finish="stop", tokens=None, error=None, created=1793354400210, completed=1793354414377):
    info = {
        "id": mid,
        "sessionID": "ses_4b21c07aa0ffe1Qm",
        "role": "assistant",
        "parentID": "msg_4b21c9c11001Pa",
        "time": {"created": created, "completed": completed},
        "modelID": "deepseek-v3.2",
        "providerID": "sglang-pd",
        "agent": "build",
        "cost": 0,
        "tokens": tokens or {"input": 8192, "output": 97, "reasoning": 412, "cache": {"read": 0, "write": 0}},
        "finish": finish,
    }
    if error:
        info["error"] = error
    return {"info": info, "parts": parts}


samples = [
    Sample(
        "export_text_part_leak",
        _export(
            _USER_MSG,
            _asst(
                "msg_4b21c9e05001Zt",
                [
                    {
                        "id": "prt_4b21c9e06002Lk",
                        "type": "reasoning",
                        "text": "Two call sites…",
                        "time": {"start": 1793354401020, "end": 1793354409950},
                    },
                    {
                        "id": "prt_4b21c9e07003Hv",
                        "type": "text",
                        "text": "Reading both.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke "
                        'name="read">\n<｜DSML｜parameter name="filePath" string="true">/home/dev/app/config.py</｜DSML｜parameter>'
                        "\n</｜DSML｜invoke>",
                    },
                    {"id": "prt_4b21c9e08004Qe", "type": "step-finish", "reason": "stop", "cost": 0},
                ],
            ),
        ),
        {
            "turns": [
                {
                    "session_id": "ses_4b21c07aa0ffe1Qm",
                    "turn_id": "msg_4b21c9e05001Zt",
                    "finish_reason": "stop",
                    "prompt_tokens": 8192,
                    "completion_tokens": 509,
                    "reasoning_tokens": 412,
                    "t_start": parse_time(1793354400210),
                    "t_end": parse_time(1793354414377),
                    "signatures": ["S1", "S3", "S10"],
                    "corruption_class": "parse_leak",
                    "corrupted": True,
                    "parent_id": "msg_4b21c9c11001Pa",
                }
            ]
        },
    ),
    Sample(
        "export_tool_part_clean",
        _export(
            _USER_MSG,
            _asst(
                "msg_5",
                [
                    {"id": "prt_a", "type": "text", "text": "Reading the config."},
                    {
                        "id": "prt_b",
                        "type": "tool",
                        "callID": "call_1",
                        "tool": "read",
                        "state": {
                            "status": "completed",
                            "input": {"filePath": "config.py"},
                            "output": "…",
                            "title": "config.py",
                            "metadata": {},
                            "time": {"start": 1, "end": 2},
                        },
                    },
                ],
                finish="tool-calls",
                tokens={"input": 1000, "output": 20, "reasoning": 0, "cache": {"read": 7000, "write": 0}},
            ),
        ),
        {
            "turns": [
                {
                    "finish_reason": "tool_calls",
                    "n_tool_calls": 1,
                    "prompt_tokens": 8000,
                    "cached_tokens": 7000,
                    "completion_tokens": 20,
                    "corruption_class": "clean",
                    "signatures": [],
                }
            ]
        },
    ),
    Sample(
        "export_api_error_500",
        _export(
            _USER_MSG,
            _asst(
                "msg_6",
                [],
                finish=None,
                tokens={"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                error={
                    "name": "APIError",
                    "data": {
                        "message": "Internal Server Error",
                        "statusCode": 500,
                        "isRetryable": True,
                        "responseBody": '{"object":"error","message":"KVTransferError(bootstrap_room='
                        '1): Request 1 timed out in KVPoll.WaitingForInput"}',
                    },
                },
            ),
        ),
        {
            "turns": [
                {
                    "http_status": 500,
                    "signatures": ["S16"],
                    "corruption_class": "transfer_error",
                    "corrupted": False,
                    "error_bootstrap_room": 1,
                    "error_rid": None,
                }
            ]
        },
    ),
    Sample(
        # the server API's messages.json on its own: the export's messages array without its wrapper
        "api_messages_array",
        json.dumps(
            [
                _USER_MSG,
                _asst(
                    "msg_7",
                    [
                        {"id": "prt_c", "type": "reasoning", "text": "Check the loader."},
                        {"id": "prt_d", "type": "text", "text": "It loads once per import."},
                        {"id": "prt_e", "type": "step-finish", "reason": "stop", "cost": 0},
                    ],
                ),
            ],
            ensure_ascii=False,
        ),
        {
            "turns": [
                {
                    "session_id": "ses_4b21c07aa0ffe1Qm",
                    "turn_id": "msg_7",
                    "content": "It loads once per import.",
                    "reasoning": "Check the loader.",
                    "finish_reason": "stop",
                    "line_no": 2,
                    "corruption_class": "clean",
                }
            ]
        },
    ),
]
