"""The example lines of docs/formats/ are read the way the pages say they are.

Code blocks marked `log` in SGLANG.md and NIXL.md are server-log lines: every one must be
recognised (no unparsed line). The trace of TRANSFER_TRACE.md, "Example: two rooms" must give the
verdicts the page derives from it, and the transcript examples of TRANSCRIPTS.md must fire the
signatures the page names. A page that shows a line the parsers do not read, or claims a result
they do not reach, fails here.
"""

from __future__ import annotations

import re

import pytest

from forensics.parsers import server_log
from tests.conftest import ROOT, ingest_paths, sql
from tests.helpers import parse_text

DOCS = ROOT / "docs" / "formats"


def _blocks(doc: str, lang: str, section: str | None = None) -> list[str]:
    text = (DOCS / doc).read_text(encoding="utf-8")
    if section is not None:
        start = text.index(f"\n## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start : end if end > 0 else None]
    return re.findall(rf"(?ms)^```{lang}\n(.*?)^```$", text)


LOG_BLOCKS = [(doc, i, b) for doc in ("SGLANG.md", "NIXL.md") for i, b in enumerate(_blocks(doc, "log"))]


def test_the_pages_mark_their_examples():
    assert len([b for b in LOG_BLOCKS if b[0] == "SGLANG.md"]) >= 10
    assert len([b for b in LOG_BLOCKS if b[0] == "NIXL.md"]) >= 3


@pytest.mark.parametrize("doc, i, block", LOG_BLOCKS, ids=[f"{d}-{i}" for d, i, _ in LOG_BLOCKS])
def test_server_log_examples_are_recognised(doc, i, block):
    tables, _ = parse_text(server_log, block)
    unparsed = tables.get("unparsed")
    assert unparsed is None, unparsed.select("line_no", "reason", "line").rows()
    assert "events" in tables or "batches" in tables


def test_the_trace_example_gives_the_verdicts_the_page_states(tmp_path):
    (block,) = _blocks("TRANSFER_TRACE.md", "jsonl", "Example: two rooms")
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "kvtrace-pd-p2-51877.jsonl").write_text(block)
    ingest_paths([tmp_path / "dump"], tmp_path / "store")
    assert sql(tmp_path / "store", "SELECT count(*) AS n FROM transfer_events")["n"].to_list() == [10]
    assert sql(tmp_path / "store", "SELECT count(*) AS n FROM unparsed")["n"].to_list() == [0]
    rooms = sql(
        tmp_path / "store",
        "SELECT bootstrap_room, checksum_verdict, mismatched_units, n_fail, n_abort FROM rooms ORDER BY bootstrap_room",
    ).rows()
    assert rooms == [
        (3391827465019283746, "verified", None, 0, 0),
        (8801234567890123456, "corrupted", "index_k:", 1, 1),
    ]


def test_the_transcript_examples_fire_the_signatures_the_page_names(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    (proxy,) = _blocks("TRANSCRIPTS.md", "jsonl", "OpenAI-compatible proxy logs")
    (claude,) = _blocks("TRANSCRIPTS.md", "jsonl", "Claude Code sessions")
    (export,) = _blocks("TRANSCRIPTS.md", "json", "opencode")
    (dump / "proxy.jsonl").write_text(proxy, encoding="utf-8")
    (dump / "7a1d2c3e-4f50-4617-8293-a4b5c6d7e8f9.jsonl").write_text(claude, encoding="utf-8")
    (dump / "ses_5c31d7f0b2aa01Kd.json").write_text(export, encoding="utf-8")
    ingest_paths([dump], tmp_path / "store")
    got = {
        (source, status): (sigs, cls)
        for source, status, sigs, cls in sql(
            tmp_path / "store", "SELECT source, http_status, signatures, corruption_class FROM replies"
        ).rows()
    }
    assert got[("claude_code", None)] == (["S1", "S4", "S10"], "parse_leak")
    assert got[("opencode", None)] == (["S1", "S3", "S10"], "parse_leak")
    assert got[("openai_proxy", 200)] == ([], "clean")
    assert got[("openai_proxy", 500)] == (["S16"], "transfer_error")
