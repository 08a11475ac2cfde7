"""The transcript shapes real files take (docs/formats/TRANSCRIPTS.md, "What real transcript files look like"), recognised without flags and counted exactly.

Fixtures: tests/corpus/shapes/ (the opencode server API folder and its messages array alone, kept out
of tests/corpus/transcripts/, which build_transcripts.py rewrites) and the capture samples of
parsers/openai_proxy.py.
"""

import json
import pathlib
import shutil

import polars as pl
import pytest

from forensics.analysis import verdicts
from forensics.ingest.sniff import choose_parser
from forensics.parsers import claude_code, openai_proxy, opencode, server_log
from forensics.parsers.base import Context, Source
from tests.conftest import ROOT, ingest_paths, sql
from tests.helpers import parse_text

SHAPES = ROOT / "tests" / "corpus" / "shapes"
API_DIR = SHAPES / "opencode_api"
CAPTURES = {s.name: s for s in openai_proxy.samples if s.name.startswith("captured_")}


def _src(p):
    return Source(path=str(p), fs_path=str(p), size=p.stat().st_size if p.is_file() else None)


def _parse(parser, p):
    ctx = Context()
    (batch,) = list(parser.parse(_src(p), ctx))
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    return batch, ctx


def test_opencode_api_folder_is_one_session():
    assert opencode.sniff_dir(str(API_DIR)) >= 0.5
    assert choose_parser(_src(API_DIR), None).name == "opencode"
    batch, ctx = _parse(opencode, API_DIR)
    turns = verdicts.apply(batch["turns"])
    assert turns["turn_id"].to_list() == ["msg_5c10a2f4b001As", "msg_5c10a2f4c001As"]
    first, second = turns.iter_rows(named=True)
    assert first["session_id"] == second["session_id"] == "ses_5c10a2f3e0ffQk7Rt2mVbN"
    assert (first["content"], first["reasoning"], first["finish_reason"], first["n_tool_calls"]) == (
        "Reading the loader.",
        "Two call sites, read both.",
        "tool_calls",
        1,
    )
    # cached prompt tokens and reasoning tokens count in the server's totals
    assert (first["prompt_tokens"], first["completion_tokens"], first["cached_tokens"]) == (7200, 119, 6000)
    assert first["source_file"].endswith("messages.json") and first["line_no"] == 2
    assert second["corruption_class"] == "parse_leak" and second["signatures"] == ["S1", "S3", "S10"]
    # records: session.json and three messages parsed, their eleven parts folded in
    assert (ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines) == (4, 9, 0)


def test_opencode_api_files_beside_other_files_are_read_one_by_one(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(API_DIR, dump)
    (dump / "decode.log").write_text("[2026-10-30 10:00:07 TP0] Decode batch, #running-req: 64, #token: 1200\n")
    assert opencode.sniff_dir(str(dump)) == 0.0  # the log must not vanish into a transcript claim
    assert choose_parser(_src(dump / "messages.json"), None).name == "opencode"
    assert choose_parser(_src(dump / "session.json"), None).name == "opencode"
    batch, ctx = _parse(opencode, dump / "messages.json")
    assert batch["turns"].height == 2
    batch, ctx = _parse(opencode, dump / "session.json")
    # turn_id, not height: frame() of no turns gives one all-NULL row today
    assert batch["turns"].filter(pl.col("turn_id").is_not_null()).height == 0
    assert (ctx.parsed_lines, ctx.unparsed_lines) == (1, 0)


def test_opencode_messages_array_alone():
    p = SHAPES / "opencode_api_messages_only.json"
    assert choose_parser(_src(p), None).name == "opencode"
    batch, ctx = _parse(opencode, p)
    assert batch["turns"]["turn_id"].to_list() == ["msg_5c10a2f4b001As"]
    assert (ctx.parsed_lines, ctx.continuation_lines) == (2, 6)
    assert server_log.sniff(p.read_bytes(), str(p)) < opencode.sniff(p.read_bytes(), str(p))


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_captured_replies_are_not_taken_for_server_logs(tmp_path, name):
    text = CAPTURES[name].text
    p = tmp_path / "capture.txt"
    p.write_text(text)
    assert choose_parser(_src(p), None).name == "openai_proxy"
    # a reply quoting a few server log lines stays a reply: the log sniff reads no JSON or `data:` line
    quoted = "[2026-10-30 10:00:0%d TP0] Decode batch, #running-req: 64, #token: 1200\n"
    leak = {
        "id": "chatcmpl-q",
        "object": "chat.completion.chunk",
        "created": 1793354401,
        "choices": [{"index": 0, "delta": {"content": "".join(quoted % i for i in range(3))}, "finish_reason": None}],
    }
    line = json.dumps(leak) if name != "captured_sse_body" else "data: " + json.dumps(leak)
    p.write_text(line + "\n" + text)
    assert server_log.sniff(p.read_bytes(), str(p)) == 0.0
    assert choose_parser(_src(p), None).name == "openai_proxy"


def test_a_stream_cut_short_and_a_stray_line_are_accounted():
    sse = CAPTURES["captured_sse_body"].text
    cut = sse[: sse.index("data: [DONE]")] + 'data: {"id": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1", "obj'
    tables, ctx = parse_text(openai_proxy, cut, name="cut.sse")
    assert tables["turns"]["truncated"].to_list() == [True]
    assert tables["turns"]["content"].to_list() == ["Config loads in two places."]
    assert tables["unparsed"]["reason"].to_list() == ["invalid_json"]
    assert ctx.lines == cut.count("\n") + 1 == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    # a [DONE] with no stream before it is a line of its own, not a reply
    tables, ctx = parse_text(openai_proxy, "data: [DONE]\n" + sse, name="late.sse")
    assert tables["turns"].height == 1 and tables["unparsed"]["reason"].to_list() == ["no_stream"]


def test_every_shape_through_ingest(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    shutil.copytree(API_DIR, dump / "opencode_api")
    shutil.copy(SHAPES / "opencode_api_messages_only.json", dump / "messages.json")
    for name, s in CAPTURES.items():
        (dump / f"{name}.txt").write_text(s.text)
    (dump / "claude.jsonl").write_text(
        next(s for s in claude_code.samples if s.name == "parallel_calls_interleaved_with_results").text
    )
    store = tmp_path / "store"
    results = ingest_paths([dump], store, jobs=1)
    assert all(r.status == "ingested" for r in results), [(r.path, r.error) for r in results]
    by_name = {str(pathlib.Path(r.path).relative_to(dump)): r for r in results}
    assert {n: r.format for n, r in by_name.items()} == {
        "opencode_api": "opencode",
        "messages.json": "opencode",
        "claude.jsonl": "claude_code",
        **{f"{n}.txt": "openai_proxy" for n in CAPTURES},
    }
    for n, r in by_name.items():
        assert r.lines == r.parsed + r.continuation + r.unparsed, n
        if n.endswith((".txt", ".jsonl")):
            assert r.lines == (dump / n).read_text().count("\n"), n
    got = sql(store, "SELECT source_file, count(*) AS n, count(DISTINCT turn_id) AS ids FROM turns GROUP BY 1")
    counts = {
        str(pathlib.Path(row["source_file"]).relative_to(dump)): (row["n"], row["ids"])
        for row in got.iter_rows(named=True)
    }
    assert counts == {
        "opencode_api/messages.json": (2, 2),
        "messages.json": (1, 1),
        "claude.jsonl": (2, 2),
        "captured_sse_body.txt": (1, 1),
        "captured_chunk_jsonl.txt": (2, 2),
        "captured_completion_jsonl.txt": (3, 3),
    }
