"""Transcript text is hostile: it must stay inert in every output (terminal, Markdown, HTML, JSON, CSV)."""

import csv
import io
import json

import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import ingest_paths

HOSTILE = (
    'Reading it. <script>alert(1)</script> <img src=x onerror="alert(2)"> " onmouseover="x" '
    "| a | b |\n\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202etxt.exe "
    '<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name="read">'
)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    req = {
        "ts": 1793354400.5,
        "dir": "req",
        "conn": "c-1",
        "body": {
            "model": "deepseek-v3.2",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
        },
    }
    resp = {
        "ts": 1793354402.25,
        "dir": "resp",
        "conn": "c-1",
        "status": 200,
        "body": {
            "id": "x",
            "object": "chat.completion",
            "model": "deepseek-v3.2",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": HOSTILE}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 40},
        },
    }
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


def test_csv_quotes_formulas_and_keeps_numbers(store):
    """OWASP's CSV-injection rule: a text cell starting = + - @ gets a leading quote; numbers stay numbers."""
    out = _run(
        "sql",
        "--store",
        store,
        "--format",
        "csv",
        "SELECT '=HYPERLINK(\"http://x\")' AS f, '+cmd|'' /C calc''!A0' AS g, '@SUM(1)' AS h, "
        "'-3.5' AS t, -3.5 AS n, -2 AS i",
    )
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row == {
        "f": '\'=HYPERLINK("http://x")',
        "g": "'+cmd|' /C calc'!A0",
        "h": "'@SUM(1)",
        "t": "'-3.5",
        "n": "-3.5",
        "i": "-2",
    }


def test_table_prints_text_as_typed(store):
    """rich would turn `:b:` into 🅱, `:x:` into ❌ and read `[bold]` as markup: the table shows the text."""
    out = _run(
        "sql", "--store", store, "SELECT '2001:db8:0:b:1::1' AS ip, 'root:x:0:0' AS pw, '[bold]b[/bold] :ok:' AS m"
    )
    assert "2001:db8:0:b:1::1" in out and "root:x:0:0" in out and "[bold]b[/bold] :ok:" in out


def test_markdown_has_no_live_syntax(store):
    from markdown_it import MarkdownIt

    out = _run(
        "sql",
        "--store",
        store,
        "--format",
        "markdown",
        "SELECT '**bold** [x](javascript:alert(1)) ![i](http://x/y.png) <b>t</b> :x:' AS t",
    )
    tokens = [c for t in MarkdownIt("commonmark").enable("table").parse(out) for c in (t.children or [])]
    assert {t.type for t in tokens} <= {"text", "softbreak"}
    assert "".join(t.content for t in tokens if t.type == "text").endswith(
        "**bold** [x](javascript:alert(1)) ![i](http://x/y.png) <b>t</b> :x:"
    )
    assert "javascript\\:" in out and "\\:x:" in out
