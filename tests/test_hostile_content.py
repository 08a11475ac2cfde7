"""Transcript text is hostile: it must stay inert in every output (terminal, Markdown, HTML, JSON, CSV)."""

import json

import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import ingest_paths

HOSTILE = ('Reading it. <script>alert(1)</script> <img src=x onerror="alert(2)"> " onmouseover="x" '
           "| a | b |\n\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202etxt.exe "
           "<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name=\"read\">")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    req = {"ts": 1793354400.5, "dir": "req", "conn": "c-1",
           "body": {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": "hi"}],
                    "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}]}}
    resp = {"ts": 1793354402.25, "dir": "resp", "conn": "c-1", "status": 200,
            "body": {"id": "x", "object": "chat.completion", "model": "deepseek-v3.2",
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": HOSTILE}}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 40}}}
    (d / "agent").mkdir()
    (d / "agent" / "proxy.jsonl").write_text(json.dumps(req) + "\n" + json.dumps(resp) + "\n")
    ingest_paths([d / "agent"], d / "store")
    return str(d / "store")


def _run(*args):
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def _assert_inert_text(out: str):
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out


def test_the_reply_is_there_and_corrupted(store):
    out = _run("sql", "--store", store, "--format", "json", "SELECT corrupted, evidence FROM replies")
    rows = json.loads(out)
    assert rows[0]["corrupted"] is True


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_sql_outputs(store, fmt):
    out = _run("sql", "--store", store, "--format", fmt, "SELECT evidence, signatures FROM replies")
    _assert_inert_text(out)
    if fmt == "markdown":
        assert "<script>" not in out and "<img" not in out
        # a pipe in the text does not open a new column
        body = out.splitlines()[2]
        assert body.count(" | ") == 1


def test_replies_command(store):
    _assert_inert_text(_run("replies", "--store", store))


def test_evidence_markdown_and_json(store):
    md = _run("evidence", "--store", store)
    _assert_inert_text(md)
    assert "<script>" not in md and "<img" not in md
    js = _run("evidence", "--store", store, "--format", "json")
    _assert_inert_text(js)
    doc = json.loads(js)
    assert doc["summary"]["corrupted"] == 1
