"""Real Claude Code files (tests/conftest.py's REAL_TRANSCRIPTS): one turn per assistant message, every line accounted."""

import json

import pytest

from forensics.ingest.sniff import choose_parser
from forensics.parsers import claude_code
from forensics.parsers.base import Context, Source
from tests.conftest import REAL_TRANSCRIPTS

REAL = REAL_TRANSCRIPTS / "claude_code"
FILES = sorted(REAL.glob("*.jsonl")) if REAL.is_dir() else []

# file -> message id -> columns of its turn (values read from the file by hand)
EXPECTED = {
    "spotter_4d5611e5_main_first150lines.jsonl": {
        # thinking, text and three tool_use lines, with tool results and hook progress between them
        "msg_01Aci2WjhVxhEoZK5GJvwVrD": {
            "line_no": 114,
            "n_tool_calls": 3,
            "content": "Good, I have a thorough understanding of the codebase. Let me now read the key files I'll be "
            "modifying.",
            "reasoning": "Excellent, now I have a thorough understanding. Let me read the key files myself to have "
            "them in context for writing code.",
            # the last line's usage is the complete one: the earlier lines say 10 output tokens
            "prompt_tokens": 1 + 5601 + 29509,
            "cached_tokens": 29509,
            "completion_tokens": 299,
            "finish_reason": None,
        },
        "msg_01PdWvcjJ6E9BgscDveYt9YV": {
            "line_no": 8,
            "n_tool_calls": 2,
            "content": "\n\n",
            "reasoning": "Let me start by checking the issue details and finding available subtasks.",
        },
    },
    "spotter_4d5611e5_subagent_a2898e3.jsonl": {
        # nine parallel Read calls, each tool_use line followed by its result
        "msg_016xcKQRzQXv2gLKoiSyUZxc": {
            "line_no": 2,
            "n_tool_calls": 9,
            "prompt_tokens": 3 + 13522,
            "completion_tokens": 3,
            "session_id": "4d5611e5-241a-462a-8d15-5122611a9569/a2898e3",
            "content": "I'll conduct a thorough exploration of the transcript rendering system. Let me read all the "
            "key files you've specified.",
        },
    },
    "spotter_4d5611e5_subagent_acompact-e1f845.jsonl": {
        "msg_013a13makKr7N19Xg6cuFoeK": {
            "line_no": 5,
            "n_tool_calls": 0,
            "prompt_tokens": 3 + 8681 + 164830,
            "completion_tokens": 8,
            "cached_tokens": 164830,
        },
    },
}

pytestmark = pytest.mark.real_data


def _assistant_ids(path) -> list[str]:
    ids = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "assistant" and obj["message"]["id"] not in ids:
            ids.append(obj["message"]["id"])
    return ids


def _parse(path):
    src = Source(path=str(path), fs_path=str(path), size=path.stat().st_size)
    ctx = Context()
    (batch,) = list(claude_code.parse(src, ctx))
    return batch, ctx, src


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_one_turn_per_assistant_message(path):
    batch, ctx, src = _parse(path)
    turns = batch["turns"]
    assert choose_parser(src, None).name == "claude_code"
    ids = _assistant_ids(path)
    assert turns.height == len(ids)
    assert sorted(turns["turn_id"].to_list()) == sorted(ids)
    assert turns.select("source", "session_id", "turn_id").n_unique() == turns.height
    # every line is accounted, and a message's later block lines are its continuation
    n_lines = len(path.read_text().splitlines())
    assert ctx.lines == n_lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    assert ctx.unparsed_lines == 0 and batch["unparsed"].height == 0
    n_assistant_lines = sum(1 for ln in path.read_text().splitlines() if json.loads(ln).get("type") == "assistant")
    assert ctx.continuation_lines == n_assistant_lines - len(ids)
    # a turn ends at its last block, never before it starts
    assert all(r["t_start"] <= r["t_end"] for r in turns.iter_rows(named=True))


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_chosen_turns_by_value(path):
    batch, _ctx, _src = _parse(path)
    rows = {r["turn_id"]: r for r in batch["turns"].iter_rows(named=True)}
    for msg_id, expect in EXPECTED.get(path.name, {}).items():
        for k, v in expect.items():
            assert rows[msg_id][k] == v, f"{msg_id} {k}: {rows[msg_id][k]!r} != {v!r}"
