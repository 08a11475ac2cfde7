"""Error replies link to their server request by the rid and room their body names (docs/formats/SGLANG.md, "PD transfer and bootstrap failures" and "Identifiers: rid and bootstrap room")."""

import json

import pytest

from forensics.core.turns import rid_in_error, room_in_error
from tests.conftest import ingest_paths, sql

ROOM_D = 6593551520068383758  # above 2**53: a float would round it
ROOM_P = 9223372036854775807  # the largest 63-bit room
RID_D = "c3a81f0e6b2d4f57a9e0d1c2b3a49586"
RID_P = "5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4"
RID_LONG = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"

DECODE_FAILED = (
    f"Decode transfer failed for request rank=2 decode_req.req.rid='{RID_D}' "
    f"decode_req.req.bootstrap_room={ROOM_D} with exception KVTransferError(bootstrap_room={ROOM_D}): "
    f"Request {ROOM_D} timed out after 300.0s in KVPoll.WaitingForInput"
)
PREFILL_FAILED = (
    f"Prefill bootstrap failed for request rank=0 req.rid='{RID_P}' req.bootstrap_room={ROOM_P} with "
    f"exception KVTransferError(bootstrap_room={ROOM_P}): Request {ROOM_P} timed out after 300.0s in "
    f"KVPoll.Bootstrapping"
)
TOO_LONG = f"Request {RID_LONG} exceeds the maximum number of tokens: 140000 > 131072"
ROOM_H = 4611686018427387905
RID_H = "7f00c1d2e3f4a5b6c7d8e9f0a1b2c3e5"
HANDSHAKE = (
    f"Decode handshake failed for request rank=0 decode_req.req.rid='{RID_H}' "
    f"decode_req.req.bootstrap_room={ROOM_H} with exception KVTransferError(bootstrap_room={ROOM_H}): "
    "Lost connection with prefill instance (bootstrap_addr: 10.0.0.2:8998)"
)


@pytest.mark.parametrize(
    "text, rid, room",
    [
        (DECODE_FAILED, RID_D, ROOM_D),
        (PREFILL_FAILED, RID_P, ROOM_P),
        # 0.4.6: no rank, no quotes
        ("Decode transfer failed for request decode_req.req.rid=abc123 decode_req.req.bootstrap_room=42", "abc123", 42),
        # the node-down reason names the room with a colon
        (
            "Prefill server with bootstrap_addr: 10.0.0.2:8998 is healthy before, but now it is down. Request "
            "(bootstrap_room: 77) has been marked as failed.",
            None,
            77,
        ),
        ("KVTransferError(bootstrap_room=45): Request 45 timed out after 300.0s in KVPoll.WaitingForInput", None, 45),
        ("Request 45 waiting_timeout", None, 45),
        # the victim's own room comes first; the room its metadata came from does not link it
        (
            "Context corruption detected: Request 0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b (bootstrap_room=1188402291734905512) "
            "received metadata from bootstrap_room=6593551520068383758.",
            "0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b",
            1188402291734905512,
        ),
        (TOO_LONG, RID_LONG, None),
        # a gateway echoing the request body, JSON-escaped inside a string
        ('{\\"rid\\": \\"r-77\\", \\"bootstrap_room\\": 9001}', "r-77", 9001),
        ("rid=None bootstrap_room=None", None, None),
        ("Metadata corruption detected - bootstrap_room mismatch", None, None),
        # not a 63-bit room: nothing rather than a wrapped or rounded number
        ("KVTransferError(bootstrap_room=99999999999999999999)", None, None),
        ("NIXL transfer encountered ERR room=31337", None, 31337),
        (None, None, None),
    ],
)
def test_rid_and_room_named_by_an_error(text, rid, room):
    assert rid_in_error(text) == rid
    got = room_in_error(text)
    assert got == room and (got is None or isinstance(got, int))


def _finish(ts, rid, room, prompt, completion, reason="stop"):
    room_part = f", bootstrap_room={room}" if room is not None else ""
    return (
        f"[{ts}] Finish: obj=GenerateReqInput(rid='{rid}'{room_part}), out={{'text': '', 'meta_info': "
        f"{{'id': '{rid}', 'finish_reason': {{'type': '{reason}'}}, 'prompt_tokens': {prompt}, "
        f"'completion_tokens': {completion}}}}}\n"
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("errlinks")
    d = root / "dump"
    for sub in ("decode-0", "prefill-0", "agent/claude"):
        (d / sub).mkdir(parents=True)
    (d / "prefill-0" / "prefill.log").write_text(
        "[2026-10-30 10:00:01 DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: "
        "0.10, #running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 1, input throughput (token/s): 900.0\n"
        f"[2026-10-30 10:07:10 DP0 TP0] {TOO_LONG}\n"
        f"[2026-10-30 10:09:00 DP0 TP0] {PREFILL_FAILED}\n"
    )
    (d / "decode-0" / "decode.log").write_text(
        "[2026-10-30 10:00:01 DP0 TP0] Decode batch, #running-req: 1, #token: 10, pre-allocated usage: 0.00, "
        "#transfer-req: 0, gen throughput (token/s): 1.0\n"
        # request logging is off for the failed request: its failure line is all the server says of it
        f"[2026-10-30 10:06:02 DP0 TP2] {DECODE_FAILED}\n"
        # another request finishing in the same window with the failed turn's token counts: a time match
        + _finish("2026-10-30 10:06:02", "d0000000000000000000000000000001", 1111, 8192, 0)
        + _finish("2026-10-30 10:09:01", "d0000000000000000000000000000002", 2222, 0, 0)
        + f"[2026-10-30 10:12:00 DP0 TP0] {HANDSHAKE}\n"
    )

    # proxy JSONL: sglang's error object, and a gateway's {"error": {...}} around the 400
    proxy = [
        {"ts": "2026-10-30T10:01:02.511Z", "dir": "req", "conn": "c-231", "body": {"model": "deepseek-v3.2"}},
        {
            "ts": "2026-10-30T10:06:02.600Z",
            "dir": "resp",
            "conn": "c-231",
            "status": 500,
            "latency_ms": 300087,
            "body": {
                "object": "error",
                "message": DECODE_FAILED,
                "type": "InternalServerError",
                "param": None,
                "code": 500,
            },
        },
        {"ts": "2026-10-30T10:07:09.000Z", "dir": "req", "conn": "c-240", "body": {"model": "deepseek-v3.2"}},
        {
            "ts": "2026-10-30T10:07:10.200Z",
            "dir": "resp",
            "conn": "c-240",
            "status": 400,
            "body": json.dumps({"error": {"message": TOO_LONG, "type": "BadRequestError", "code": 400}}),
        },
        # a stream that had started: the error arrives as an SSE event, the status line said 200
        {
            "ts": "2026-10-30T10:11:58.000Z",
            "dir": "req",
            "conn": "c-250",
            "body": {"model": "deepseek-v3.2", "stream": True},
        },
        {
            "ts": "2026-10-30T10:12:00.400Z",
            "dir": "resp",
            "conn": "c-250",
            "status": 200,
            "raw": [
                "data: "
                + json.dumps(
                    {
                        "id": "chatcmpl-s",
                        "object": "chat.completion.chunk",
                        "model": "deepseek-v3.2",
                        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                    }
                ),
                "data: " + json.dumps({"error": {"message": HANDSHAKE, "type": "InternalServerError", "code": 500}}),
            ],
        },
    ]
    (d / "agent" / "proxy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in proxy))

    # opencode export: the 500 lands in the assistant message's APIError, its body as a JSON string
    body = json.dumps({"object": "error", "message": DECODE_FAILED, "code": 500})
    export = {
        "info": {"id": "ses_err", "title": "t", "directory": "/app", "time": {"created": 1793354100000}},
        "messages": [
            {
                "info": {"id": "msg_u", "sessionID": "ses_err", "role": "user", "time": {"created": 1793354460000}},
                "parts": [{"id": "prt_u", "type": "text", "text": "go on"}],
            },
            {
                "info": {
                    "id": "msg_e",
                    "sessionID": "ses_err",
                    "role": "assistant",
                    "parentID": "msg_u",
                    "time": {"created": 1793354462000, "completed": 1793354762000},
                    "modelID": "deepseek-v3.2",
                    "providerID": "sglang-pd",
                    "agent": "build",
                    "cost": 0,
                    "tokens": {"input": 8192, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                    "error": {
                        "name": "APIError",
                        "data": {
                            "message": "Internal Server Error",
                            "statusCode": 500,
                            "isRetryable": True,
                            "responseBody": body,
                        },
                    },
                },
                "parts": [],
            },
        ],
    }
    (d / "agent" / "opencode-export.json").write_text(json.dumps(export, indent=2))

    # Claude Code through a translator: the synthetic API-error message quotes the body
    base = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/app",
        "sessionId": "3c9a7f52-0e41-4b8d-9d6a-1f2e3d4c5b6a",
        "version": "2.0.61",
    }
    cc = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "timestamp": "2026-10-30T10:04:00.000Z",
            "message": {"role": "user", "content": "list the app folder"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "e1",
            "parentUuid": "u1",
            "timestamp": "2026-10-30T10:09:01.000Z",
            "isApiErrorMessage": True,
            "message": {
                "id": "e1",
                "role": "assistant",
                "model": "<synthetic>",
                "stop_reason": "stop_sequence",
                "usage": {"input_tokens": 0, "output_tokens": 0},
                "content": [
                    {
                        "type": "text",
                        "text": "API Error: 500 "
                        + json.dumps({"object": "error", "message": PREFILL_FAILED, "code": 500}),
                    }
                ],
            },
        },
    ]
    (d / "agent" / "claude" / "3c9a7f52-0e41-4b8d-9d6a-1f2e3d4c5b6a.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in cc)
    )
    s = root / "store"
    ingest_paths([d], s, jobs=1)
    return s


def _replies(store):
    rows = sql(
        store,
        "SELECT source, turn_id, http_status, error_rid, error_bootstrap_room, link_method, "
        "link_confidence, link_candidates, server_rid, server_bootstrap_room, server_host "
        "FROM replies",
    ).iter_rows(named=True)
    return {(r["source"], r["turn_id"]): r for r in rows}


def test_the_error_names_the_request_in_every_transcript_shape(store):
    got = _replies(store)
    assert len(got) == 5
    for key in (("openai_proxy", "c-231"), ("opencode", "msg_e")):
        r = got[key]
        assert (r["error_rid"], r["error_bootstrap_room"]) == (RID_D, ROOM_D)
        # the room beats the finish line of another request that matches by time and tokens
        assert (r["link_method"], r["link_confidence"], r["link_candidates"]) == ("error_room", 1.0, 1)
        assert (r["server_rid"], r["server_bootstrap_room"], r["server_host"]) == (RID_D, ROOM_D, "decode-0")
    r = got[("claude_code", "e1")]
    assert r["http_status"] == 500 and r["error_bootstrap_room"] == ROOM_P
    assert (r["link_method"], r["server_rid"], r["server_bootstrap_room"], r["server_host"]) == (
        "error_room",
        RID_P,
        ROOM_P,
        "prefill-0",
    )
    # a 400 names the rid alone; the gateway logged its body as a JSON string
    r = got[("openai_proxy", "c-240")]
    assert (r["http_status"], r["error_rid"], r["error_bootstrap_room"]) == (400, RID_LONG, None)
    assert (r["link_method"], r["server_rid"], r["server_host"]) == ("error_rid", RID_LONG, "prefill-0")
    r = got[("openai_proxy", "c-250")]
    assert (r["http_status"], r["error_rid"], r["error_bootstrap_room"]) == (200, RID_H, ROOM_H)
    assert (r["link_method"], r["server_rid"], r["server_bootstrap_room"]) == ("error_room", RID_H, ROOM_H)


def test_rooms_stay_int64_end_to_end(store):
    types = sql(
        store,
        "SELECT typeof(error_bootstrap_room) t1, typeof(server_bootstrap_room) t2 FROM replies "
        "WHERE error_bootstrap_room IS NOT NULL LIMIT 1",
    )
    assert (types["t1"][0], types["t2"][0]) == ("BIGINT", "BIGINT")
    exact = sql(store, "SELECT count(*) n FROM replies WHERE server_bootstrap_room = $room", room=ROOM_P)
    assert exact["n"][0] == 1


def test_candidates_keep_the_weaker_matches_for_the_reader(store):
    c = sql(
        store,
        "SELECT method, server_rid, server_event FROM reply_candidates WHERE turn_id = 'msg_e' "
        "ORDER BY method, server_rid",
    )
    got = list(zip(c["method"], c["server_rid"], c["server_event"]))
    assert ("error_room", RID_D, "transfer_failed") in got
    assert ("error_rid", RID_D, "transfer_failed") in got
    assert ("time_tokens", "d0000000000000000000000000000001", "request_finished") in got
