"""Transcript parsers beyond their samples: stream vs non-stream, the three opencode forms, folder
claims, sniffing against server logs, linking to server requests, and `forensics replies`."""

import json
import os
import pathlib

import pytest
from click.testing import CliRunner

from forensics.analysis import verdicts
from forensics.cli import main
from forensics.parsers import claude_code, openai_proxy, opencode, outputs_dir, server_log
from tests.conftest import ingest_paths, sql
from tests.corpus import build_transcripts as B
from tests.helpers import parse_text

MESSAGE = {
    "role": "assistant",
    "content": "Reading both files now.",
    "reasoning_content": "Two call sites.",
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"filePath": "a.py"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "load("}'}},
    ],
}
USAGE = {"prompt_tokens": 8192, "completion_tokens": 509, "total_tokens": 8701}
REQ = {
    "ts": "2026-10-30T10:00:00.004Z",
    "dir": "req",
    "conn": "c-1",
    "body": {"model": "deepseek-v3.2", "tools": B.TOOLS, "messages": [{"role": "user", "content": "why?"}]},
}


def _pair(resp_extra):
    return (
        "\n".join(
            json.dumps(x)
            for x in (
                REQ,
                {"ts": "2026-10-30T10:00:14.380Z", "dir": "resp", "conn": "c-1", "status": 200, **resp_extra},
            )
        )
        + "\n"
    )


def test_streamed_and_non_streamed_reply_give_the_same_row():
    body = {
        "id": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1",
        "object": "chat.completion",
        "model": "deepseek-v3.2",
        "choices": [{"index": 0, "message": MESSAGE, "finish_reason": "tool_calls"}],
        "usage": USAGE,
    }
    spec = {
        "content": MESSAGE["content"],
        "reasoning": MESSAGE["reasoning_content"],
        "finish": "tool_calls",
        "calls": [
            {"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
            for c in MESSAGE["tool_calls"]
        ],
    }
    raw = B._sse(body["id"], "deepseek-v3.2", spec, USAGE)
    plain, _ = parse_text(openai_proxy, _pair({"body": body}), name="agent.jsonl")
    streamed, _ = parse_text(openai_proxy, _pair({"raw": raw}), name="agent.jsonl")
    a, b = (verdicts.apply(x["turns"]).drop("source_file") for x in (plain, streamed))
    assert a.height == b.height == 1
    assert a.row(0, named=True) == b.row(0, named=True)
    assert a["n_tool_calls"][0] == 2 and a["corruption_class"][0] == "clean"
    # the same stream cut before [DONE] is kept and flagged
    cut, _ = parse_text(openai_proxy, _pair({"raw": raw[:-1]}), name="agent.jsonl")
    assert cut["turns"]["truncated"][0] and cut["turns"]["content"][0] == MESSAGE["content"]


def test_opencode_export_db_and_tree_give_the_same_turns(tmp_path):
    c = B.Corpus(seed=1)
    sid = "ses_7a00000000000000Eq"
    specs = c.session_specs(6, ["leak", "empty"], 0)
    msgs = B.opencode_messages(c, sid, specs, "deepseek-v3.2")
    B.write_export(tmp_path / "s.json", sid, msgs)
    B.write_db(tmp_path / "opencode.db", {sid: msgs})
    B.write_tree(tmp_path / "storage", {sid: msgs})
    from forensics.ingest.sniff import choose_parser
    from forensics.parsers.base import Context, Source

    frames = []
    for p in (tmp_path / "s.json", tmp_path / "opencode.db", tmp_path / "storage"):
        src = Source(path=str(p), fs_path=str(p))
        assert choose_parser(src, None).name == "opencode"
        ctx = Context()
        (batch,) = list(opencode.parse(src, ctx))
        assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
        frames.append(verdicts.apply(batch["turns"]).drop("source_file", "line_no").sort("turn_id"))
        if p.name == "opencode.db":  # the cut row written by write_db
            assert batch["unparsed"]["reason"].to_list() == ["invalid_json"]
    assert frames[0].height == 6
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2])
    assert sorted(frames[0]["corruption_class"].to_list()) == sorted(s["label"] for s in specs)


def test_outputs_folder_is_claimed_only_when_it_holds_outputs(tmp_path):
    arts = tmp_path / "articles"
    arts.mkdir()
    (arts / "a.md").write_text("# Title\n\nSome prose about caches.\n")
    (arts / "b.txt").write_text("More prose.\n")
    os.utime(arts / "b.txt", (1793354400, 1793354400))
    assert outputs_dir.sniff_dir(str(arts)) >= 0.5
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "prefill.txt").write_text("[2026-10-30 10:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 10\n" * 5)
    (logs / "notes.md").write_text("notes\n")
    assert outputs_dir.sniff_dir(str(logs)) == 0.0
    mixed = tmp_path / "mixed"
    (mixed / "sub").mkdir(parents=True)
    (mixed / "a.md").write_text("prose\n")
    (mixed / "b.md").write_text("prose\n")
    assert outputs_dir.sniff_dir(str(mixed)) == 0.0  # a folder with subfolders is a dump, not an output folder
    (tmp_path / "x.json").write_text("{}")
    store = tmp_path / "store"
    ingest_paths([arts], store, jobs=1)
    got = sql(store, "SELECT turn_id, t_end, corruption_class FROM replies WHERE turn_id = 'b.txt'")
    assert got["t_end"][0].timestamp() == 1793354400 and got["corruption_class"][0] == "clean"


def test_transcripts_sniff_above_server_logs_and_logs_below():
    for parser in (openai_proxy, claude_code, opencode):
        for s in parser.samples:
            head = s.text.encode()
            assert parser.sniff(head, "x") > 0.5, (parser.name, s.name)
            assert server_log.sniff(head, "x") < parser.sniff(head, "x")
    log = b"[2026-10-30 10:00:07 DP0 TP0] Decode batch, #running-req: 64, #token: 1200, gen throughput (token/s): 2450.1\n"
    for parser in (openai_proxy, claude_code, opencode, outputs_dir):
        assert parser.sniff(log, "decode.log") < 0.1


def _finish_line(ts, rid, room, prompt, completion):
    return (
        f"[{ts}] Finish: obj=GenerateReqInput(rid='{rid}', bootstrap_room={room}), out={{'text': 'x', 'meta_info': "
        f"{{'id': '{rid}', 'finish_reason': {{'type': 'stop'}}, 'prompt_tokens': {prompt}, 'completion_tokens': "
        f"{completion}}}}}\n"
    )


@pytest.mark.slow
def test_linking_by_rid_room_and_time(tmp_path):
    d = tmp_path / "dump"
    (d / "decode-0").mkdir(parents=True)
    (d / "decode-0" / "decode.log").write_text(
        "[2026-10-30 10:00:01 DP0 TP0] Decode batch, #running-req: 1, #token: 10, pre-allocated usage: 0.00, "
        "#transfer-req: 0, gen throughput (token/s): 1.0\n"
        + _finish_line("2026-10-30 10:00:14", "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1", 11, 8192, 509)
        + _finish_line("2026-10-30 10:05:10", "d0000000000000000000000000000002", 4793981895866140836, 900, 41)
        + _finish_line("2026-10-30 10:09:10", "d0000000000000000000000000000003", 33, 5000, 120)
        + _finish_line("2026-10-30 10:20:10", "d0000000000000000000000000000004", 44, 7000, 60)
        + _finish_line("2026-10-30 10:20:11", "d0000000000000000000000000000005", 45, 7002, 61)
    )

    def exch(conn, t0, t1, rid=None, room=None, resp_id="chatcmpl-x", prompt=1, completion=1):
        body = {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": "hi"}]}
        if rid:
            body["rid"] = rid
        if room:
            body["bootstrap_room"] = room
        return [
            {"ts": t0, "dir": "req", "conn": conn, "body": body},
            {
                "ts": t1,
                "dir": "resp",
                "conn": conn,
                "status": 200,
                "body": {
                    "id": resp_id,
                    "model": "deepseek-v3.2",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "Hello."}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
                },
            },
        ]

    recs = (
        exch("by-rid", "2026-10-30T10:00:00Z", "2026-10-30T10:00:14Z", resp_id="9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1")
        + exch("by-room", "2026-10-30T10:05:00Z", "2026-10-30T10:05:10Z", room=4793981895866140836)
        + exch("by-time", "2026-10-30T10:09:00Z", "2026-10-30T10:09:10.500Z", prompt=5003, completion=121)
        + exch("ambiguous", "2026-10-30T10:20:00Z", "2026-10-30T10:20:10Z", prompt=7001, completion=60)
        + exch("none", "2026-10-30T11:00:00Z", "2026-10-30T11:00:10Z", prompt=7001, completion=60)
    )
    # a failed request without a room of its own: the error body names it
    recs += [
        {"ts": "2026-10-30T10:25:00Z", "dir": "req", "conn": "error-room", "body": {"model": "deepseek-v3.2"}},
        {
            "ts": "2026-10-30T10:30:00Z",
            "dir": "resp",
            "conn": "error-room",
            "status": 500,
            "body": {
                "object": "error",
                "code": 500,
                "message": "KVTransferError(bootstrap_room=45): Request 45 timed "
                "out after 300.0s in KVPoll.WaitingForInput",
            },
        },
    ]
    (d / "proxy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    store = tmp_path / "store"
    ingest_paths([d], store, jobs=1)
    got = {
        r["turn_id"]: r
        for r in sql(
            store,
            "SELECT turn_id, link_method, link_confidence, link_candidates, "
            "server_rid, server_bootstrap_room, server_host FROM replies",
        ).iter_rows(named=True)
    }
    assert got["by-rid"]["link_method"] == "rid" and got["by-rid"]["link_confidence"] == 1.0
    assert got["by-rid"]["server_host"] == "decode-0"
    assert got["by-room"]["link_method"] == "bootstrap_room"
    assert got["by-room"]["server_rid"] == "d0000000000000000000000000000002"
    assert got["by-time"]["link_method"] == "time_tokens" and got["by-time"]["server_bootstrap_room"] == 33
    assert 0.5 <= got["by-time"]["link_confidence"] < 0.8
    assert got["ambiguous"]["link_method"] is None and got["ambiguous"]["link_candidates"] == 2
    assert got["none"]["link_method"] is None and got["none"]["link_candidates"] == 0
    assert got["error-room"]["link_method"] == "error_room"
    assert got["error-room"]["server_rid"] == "d0000000000000000000000000000005"
    cands = sql(store, "SELECT server_rid FROM reply_candidates WHERE turn_id = 'ambiguous' ORDER BY server_rid")
    assert cands["server_rid"].to_list() == ["d0000000000000000000000000000004", "d0000000000000000000000000000005"]


def test_replies_command(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "p.jsonl").write_text(
        openai_proxy.samples[1].text
        + openai_proxy.samples[2].text.replace("Decode transfer failed", "\\u001b[31mDecode transfer failed")
    )
    store = str(tmp_path / "store")
    ingest_paths([d], store, jobs=1)
    r = CliRunner().invoke(main, ["replies", "--store", store, "--corrupted", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [x["corruption_class"] for x in rows] == ["parse_leak"]
    assert "⟦" in rows[0]["evidence"]
    r = CliRunner().invoke(main, ["replies", "--store", store, "--class", "transfer_error"])
    # the escape sequence in the error body is shown escaped, never sent to the terminal
    assert r.exit_code == 0 and "S16" in r.output and "\x1b" not in r.output and "\\x1b" in r.output
    assert "⟦" not in r.output  # the markers become highlighting
    r = CliRunner().invoke(main, ["replies", "--store", store, "--session", "nope", "--format", "csv"])
    assert r.exit_code == 0 and r.output.strip().count("\n") == 0
    r = CliRunner().invoke(main, ["replies", "--store", store, "--class", "bogus"])
    assert r.exit_code == 2 and "unknown class" in r.output


def test_sample_incident_replies_match_what_was_planted(planted_store):
    """The sample-data generator labels its replies independently of these detectors."""
    root = pathlib.Path(__file__).resolve().parent.parent / "sample_logs" / "incident"
    planted = json.loads((root / "planted.json").read_text())
    store = planted_store  # the incident with its planted clock offset set (tests/conftest.py)
    got = {
        r["turn_id"]: r
        for r in sql(store, "SELECT turn_id, corruption_class, server_rid FROM replies").iter_rows(named=True)
    }
    truth = {r["reply_id"]: "clean" for r in planted["reply_links"]}
    truth.update({r["reply_id"]: r["class"] for r in planted["corrupted_replies"]})
    truth.update({r["reply_id"]: "transfer_error" for r in planted["error_replies"]})
    assert set(got) == set(truth)
    wrong = {k: (v, got[k]["corruption_class"]) for k, v in truth.items() if got[k]["corruption_class"] != v}
    assert not wrong
    rids = {r["reply_id"]: r["decode_rid"] for r in planted["reply_links"]}
    linked = [k for k, r in got.items() if r["server_rid"]]
    assert len(linked) >= 0.95 * len(got)
    assert all(got[k]["server_rid"] == rids[k] for k in linked)


def test_json_documents_read_one_after_another_a_deep_one_alone():
    from forensics.parsers.transcript import MAX_DEPTH, TooDeep, documents, loads

    deep = "[" * 10_000 + "]" * 10_000
    text = 'Exporting session: ses_a\n{"a": "]}["}\nnot json\n' + deep + '\n{"b": [1,\n2]}\n{"c":'
    got = [(line, obj, why) for line, _, obj, why in documents(text, skip=("Exporting session:",))]
    assert got == [
        (2, {"a": "]}["}, None),
        (3, None, "invalid_json"),
        (4, None, "too_deep"),
        (5, {"b": [1, 2]}, None),
        (7, None, "truncated"),
    ]
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(TooDeep):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
