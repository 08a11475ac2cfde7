"""A JSON value nested 10,000+ deep in an opencode export: that document fails alone, with a plain reason."""

from __future__ import annotations

import json
from pathlib import Path

from tests.attacks import Attack, attack

AGENT = Path(__file__).resolve().parents[2] / "sample_logs" / "incident" / "agent"


def _records(doc: str) -> int:
    """What the opencode parser counts of an export: its messages and their parts."""
    msgs = json.loads(doc)["messages"]
    return len(msgs) + sum(len(m.get("parts") or []) for m in msgs)


@attack
def deep_json_in_opencode_export_fails_alone(t: Attack) -> None:
    """An opencode export file holding several sessions as separate JSON documents, one of them (drawn) with a value
    nested 10,000 to 40,000 deep, beside a good server log: the deep document is one `unparsed` record with reason
    too_deep at the line it starts on and a note naming the limit, no 'parser failed' and no RecursionError, every
    turn of the other sessions is stored, the log's batches all there, exit 0."""
    _, n_good = t.good_log()
    exports = sorted(AGENT.glob("opencode-session-*.json"))
    docs = [p.read_text() for p in exports]
    depth = t.rng.randint(10_000, 40_000)
    opener, closer = t.rng.choice([("[", "]"), ('{"a":', "}")])
    deep = docs[0].replace('"messages"', f'"x": {opener * depth}1{closer * depth}, "messages"', 1)
    at = t.rng.randint(0, len(docs))
    parts = docs[:at] + [deep] + docs[at:]
    text = "\n".join(parts) + "\n"
    p = t.write("dump/agent/opencode-export.json", text)
    start = sum(d.count("\n") + 1 for d in parts[:at]) + 1
    want = sum(_records(d) for d in docs) + 1
    run = t.ingest(t.root / "dump", lines={p.name: want})
    assert "parser failed" not in run.output and "RecursionError" not in run.output, run.output[-2000:]
    said = " ".join(run.stderr.split())
    assert "nested deeper than 512 levels" in said, run.stderr[-2000:]
    f = t.files()[p.name]
    assert (f["status"], f["unparsed_lines"]) == ("ingested", 1), f
    got = t.sql("SELECT line_no, reason FROM unparsed WHERE source_file = $p", p=str(p)).rows()
    assert got == [(start, "too_deep")], got
    sessions = {json.loads(d)["info"]["id"] for d in docs}
    stored = set(t.sql("SELECT DISTINCT session_id FROM turns")["session_id"].to_list())
    assert stored == sessions, (stored, sessions)
    assert t.count("batches") == n_good
