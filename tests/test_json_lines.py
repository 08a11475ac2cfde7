"""A file named as a log is read line by line whatever its first character: a response body pasted
in front of the server's lines does not make it a JSON document, and a JSON line that holds a
server's message (a /generate abort, an OpenAI error body, a structured logger's record) is read as
that message. The lines here are written from the formats (docs/formats/SGLANG.md)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from forensics.cli import main
from forensics.parsers import server_log
from tests.conftest import sql
from tests.helpers import parse_text

RID = "3e8a1f0c5b9d4a72b6c1e0f9d8a7b6c5"
ROOM = 6120447381920553017
ABORT = (
    f"Decode transfer failed for request rank=0 decode_req.rid='{RID}' decode_req.bootstrap_room={ROOM} "
    f"with exception KVTransferError(bootstrap_room={ROOM}): Failed to get kvcache from prefill"
)
# what /generate answers for a request the decode side aborted
GENERATE_BODY = json.dumps(
    {
        "text": "",
        "meta_info": {
            "id": RID,
            "finish_reason": {"type": "abort", "message": ABORT, "status_code": 500},
            "prompt_tokens": 640,
            "completion_tokens": 0,
            "e2e_latency": 3.02,
        },
    }
)
SERVER_LINES = (
    "[2025-09-17 16:23:13 TP0] Prefill batch, #new-seq: 1, #new-token: 640, #cached-token: 0, token usage: 0.02, "
    "#running-req: 0, #queue-req: 0\n"
    "[2025-09-17 16:23:14 TP0] Decode batch, #running-req: 1, #token: 700, token usage: 0.02, cuda graph: True, "
    "gen throughput (token/s): 38.50, #queue-req: 0\n"
    '[2025-09-17 16:23:16 TP0] INFO:     10.0.0.7:51234 - "POST /generate HTTP/1.1" 200 OK\n'
)


def _ingest(tmp_path, path, *extra):
    store = tmp_path / "store"
    res = CliRunner().invoke(main, ["ingest", str(path), "--store", str(store), *extra])
    assert res.exit_code == 0, res.output
    return store, res.output


def _log(tmp_path, text, name="decode.log"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_log_after_a_generate_body_is_ingested_with_its_failure(tmp_path):
    p = _log(tmp_path, GENERATE_BODY + "\n" + SERVER_LINES)
    store, out = _ingest(tmp_path, p)
    assert "not a log" not in out, out
    f = sql(store, "SELECT status, format, lines, parsed_lines, unparsed_lines FROM files").row(0, named=True)
    assert f["status"] == "ingested" and f["format"] == "server_log", f
    assert f["lines"] == 4 and f["parsed_lines"] + f["unparsed_lines"] == 4, f
    ev = sql(store, "SELECT kind, bootstrap_room, rid, line_no FROM events WHERE kind = 'transfer_failed'")
    assert ev.rows() == [("transfer_failed", ROOM, RID, 1)]
    failed = sql(store, "SELECT bootstrap_room FROM failed_requests")
    assert failed["bootstrap_room"].to_list() == [ROOM]
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 2


def test_a_body_glued_in_front_of_the_first_line_is_no_json_document(tmp_path):
    # curl prints the body without a line end: the server's first line follows it on the same line
    p = _log(tmp_path, GENERATE_BODY + SERVER_LINES)
    store, out = _ingest(tmp_path, p)
    # one line is one record: the log line's; the report says what the body's failure is not counted
    assert "1 line begins with a JSON body glued in front of the log line (first at line 1)" in " ".join(out.split())
    f = sql(store, "SELECT status, lines, parsed_lines FROM files").row(0, named=True)
    assert (f["status"], f["lines"], f["parsed_lines"]) == ("ingested", 3, 3), f
    first = sql(store, "SELECT kind, prefix FROM batches WHERE line_no = 1").row(0, named=True)
    assert first["kind"] == "prefill" and first["prefix"] == GENERATE_BODY, first


def test_in_a_folder_the_log_is_read_and_only_the_json_document_skipped(tmp_path):
    d = tmp_path / "dump"
    d.mkdir()
    _log(d, GENERATE_BODY + "\n" + SERVER_LINES)
    (d / "response.json").write_text(GENERATE_BODY)
    store, out = _ingest(tmp_path, d)
    assert "skipped 1 file that is not a log: 1 json" in out, out
    files = dict(sql(store, "SELECT path, status FROM files").rows())
    assert files == {str(d / "decode.log"): "ingested", str(d / "response.json"): "skipped"}
    assert sql(store, "SELECT bootstrap_room FROM failed_requests")["bootstrap_room"].to_list() == [ROOM]


def test_the_forced_parser_finds_the_failure(tmp_path):
    p = _log(tmp_path, GENERATE_BODY + "\n" + SERVER_LINES, name="capture.txt")
    store, _ = _ingest(tmp_path, p, "--parser", "server_log")
    assert sql(store, "SELECT bootstrap_room FROM failed_requests")["bootstrap_room"].to_list() == [ROOM]


def test_a_json_line_without_a_message_stays_unparsed_with_its_line_number():
    other = json.dumps({"text": "hello", "meta_info": {"id": RID, "finish_reason": {"type": "stop", "matched": 1}}})
    tables, _ = parse_text(server_log, SERVER_LINES + other + "\n" + '{"rooms": [1, 2]}\n')
    un = tables["unparsed"]
    assert un["line_no"].to_list() == [4, 5] and un["line"].to_list() == [other, '{"rooms": [1, 2]}']
    assert "events" not in tables or tables["events"].filter(tables["events"]["line_no"] >= 4).height == 0


def test_an_openai_error_body_gives_an_event_with_its_message():
    prefill = (
        f"Prefill transfer failed for request rank=0 req.rid='{RID}' req.bootstrap_room={ROOM} "
        f"with exception KVTransferError(bootstrap_room={ROOM}): Decode instance could be dead"
    )
    bodies = [
        {"object": "error", "message": prefill, "type": "InternalServerError", "param": None, "code": 500},
        {"error": {"message": ABORT.replace(str(ROOM), "17"), "type": "server_error", "code": 500}},
        # a message no rule knows is what it would be on a line of its own: unparsed
        {"error": {"message": "the upstream went away", "type": "server_error", "code": 502}},
    ]
    text = SERVER_LINES + "".join(json.dumps(b) + "\n" for b in bodies)
    tables, _ = parse_text(server_log, text)
    ev = tables["events"].filter(tables["events"]["line_no"] >= 4).sort("line_no")
    assert ev.select("line_no", "kind", "bootstrap_room", "message").rows() == [
        (4, "transfer_failed", ROOM, prefill),
        (5, "transfer_failed", 17, ABORT.replace(str(ROOM), "17")),
    ]
    assert ev["rid"].to_list() == [RID, RID]
    assert (
        ev["prefix"][0]
        == '{"object": "error", "message": "\u2026", "type": "InternalServerError", "param": null, "code": 500}'
    )
    assert tables["unparsed"].select("line_no", "message").rows() == [(6, "the upstream went away")]
