"""Names and text that try to act on whoever reads the output: a terminal, a spreadsheet, a Markdown page, a browser."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib import resources

from tests.attacks import Attack, attack, good
from tests.test_inert_output import assert_csv_inert, assert_markdown_inert

ESC = ["\x1b[2J", "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07", "\x1b[31m", "\x07", "\x9b6n"]
BIDI = ["\u202e", "\u2066", "\u200f"]
SHELL = ["$(touch pwned)", "`id`", ";rm -rf ~;", "|nc x 1|", "&&", "'\"", "*?", "~"]
FORMULAS = [
    '=HYPERLINK("http://evil.example","x")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "\t=1+2",
    "\r=1+2",
]
MARKDOWN = [
    "[x](javascript:alert(1))",
    "**bold**",
    "_it_",
    "![i](http://evil.example/p.png)",
    "<b>html</b>",
    "[y]: javascript:alert(2)",
    "# heading",
    "`code`",
    "~~gone~~",
]


def _numeric(table: str) -> set[str]:
    from forensics.catalog import model

    return {c.name for c in model.tables()[table].columns if c.dtype.is_numeric()}


def _draw(t: Attack, pools, k: int) -> str:
    """`k` payloads from drawn pools, as a file or folder name may hold them (anything but "/")."""
    return "".join(t.rng.choice(t.rng.choice(pools)) for _ in range(k)).replace("/", "")


@attack
def host_folders_with_shell_esc_and_bidi(t: Attack) -> None:
    """Host folders named with shell metacharacters, terminal escapes, bidi overrides and `decode!7`: each
    host keeps its folder name verbatim in the store, every output shows the escapes as text (no raw control
    character), CSV and Markdown stay inert, exit 0."""
    names = [
        "decode!7",
        _draw(t, [ESC, BIDI], 2) + "decode-1",
        "prefill" + _draw(t, [SHELL, BIDI], 3),
        _draw(t, [FORMULAS[:4], MARKDOWN[:3]], 1) + "decode-3",
    ]
    counts = {}
    for i, h in enumerate(names):
        _, counts[h] = t.good_log(f"dump/{h}/server.log", n=t.rng.randint(20, 200))
    t.ingest(t.root / "dump")
    store = t.root / "store"
    got = dict(t.sql("SELECT host, count(*) AS n FROM batches GROUP BY ALL").iter_rows())
    assert got == counts, sorted(got)
    for fmt in ("table", "csv", "markdown", "json"):
        out = t.cli("sql", "--store", store, "--format", fmt, "SELECT host, path FROM files ORDER BY host").stdout
        if fmt == "csv":
            assert_csv_inert(out, "files as csv")
        elif fmt == "markdown":
            assert_markdown_inert(out, "files as markdown")
        elif fmt == "json":
            assert sorted(r["host"] for r in json.loads(out)) == sorted(names)
    t.cli("clocks", "--store", store)
    t.cli("timeline", "--store", store, "--format", "table")


@attack
def file_names_with_esc_and_rlo(t: Attack) -> None:
    """Log file names holding ESC sequences (clear screen, OSC 8 link) and U+202E: ingested as logs, the
    name kept verbatim in `files`, every line of ingest's output and of the reports shows them escaped, exit 0."""
    total = 0
    names = []
    for i in range(t.rng.randint(2, 4)):
        name = _draw(t, [ESC, BIDI], 2) + f"server-{i}" + t.rng.choice(BIDI) + "gol.log"
        _, n = t.good_log(f"dump/decode-0/{name}", n=t.rng.randint(10, 100))
        total += n
        names.append(name)
    from forensics.core.text import escape_control

    t.ingest(t.root / "dump")
    store = t.root / "store"
    out = t.cli("sql", "--store", store, "--format", "json", "SELECT path FROM files").stdout
    assert sorted(p.rsplit("/", 1)[1] for p in (r["path"] for r in json.loads(out))) == sorted(names)
    assert t.count("batches") == total
    shown = t.cli(
        "sql",
        "--store",
        store,
        "--format",
        "csv",
        "SELECT source_file, count(*) AS n FROM batches GROUP BY ALL ORDER BY ALL",
    ).stdout
    for name in names:  # the escapes are there to see, as text
        assert escape_control(name) in shown, (escape_control(name), shown)
    t.cli("timeline", "--store", store, "--format", "table")


def _proxy_log(t: Attack, reply: str, prompt: str) -> str:
    records = [
        {
            "ts": "2026-10-30T10:00:10.000Z",
            "dir": "req",
            "conn": "c-1",
            "upstream": "http://router/v1/chat/completions",
            "body": {"model": "m", "stream": False, "messages": [{"role": "user", "content": prompt}]},
        },
        {
            "ts": "2026-10-30T10:00:15.000Z",
            "dir": "resp",
            "conn": "c-1",
            "status": 200,
            "latency_ms": 5000,
            "body": {
                "id": "chatcmpl-x",
                "object": "chat.completion",
                "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 50, "total_tokens": 60},
            },
        },
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


@attack
def formulas_and_markdown_in_transcripts(t: Attack) -> None:
    """Transcript text holding `=HYPERLINK(..)`, `+cmd|' /C calc'!A0`, `[x](javascript:alert(1))`, `**bold**`
    and raw ESC, and a server log line quoting them: no CSV cell starts a formula, no Markdown link, image,
    emphasis or javascript: forms, no raw ESC reaches the terminal, in replies, evidence and sql, exit 0."""
    lead = t.rng.choice(FORMULAS)  # a cell's first character is what a spreadsheet reads
    reply = lead + " " + " ".join(t.rng.sample(MARKDOWN, 4) + t.rng.sample(ESC, 2) + t.rng.sample(FORMULAS, 2))
    # a leaked tool call makes the reply corrupted, so it reaches evidence and the replies' detail
    reply += '\n<\uff5cDSML\uff5cinvoke name="edit">\n<\uff5cDSML\uff5cparameter name="p" string="true">/x</\uff5cDSML\uff5cparameter>'
    t.write("dump/agent/proxy.jsonl", _proxy_log(t, reply, t.rng.choice(FORMULAS) + " " + t.rng.choice(MARKDOWN)))
    quoted = t.rng.choice(FORMULAS[:4]).replace("\t", "").replace("\r", "")
    t.write(
        "dump/decode-0/server.log",
        good(20) + f"[2026-10-30 10:00:12 DP0 TP0] Decode transfer failed for "
        f"request rank=0 decode_req.req.rid='{quoted}' decode_req.req.bootstrap_room=42 with exception "
        f"KVTransferError(bootstrap_room=42): {t.rng.choice(MARKDOWN)} {t.rng.choice(ESC)}\n" + good(20, 30),
    )
    t.ingest(t.root / "dump")
    store = t.root / "store"
    assert t.count("replies") == 1 and t.sql("SELECT corrupted FROM replies")["corrupted"][0]
    checked = 0
    for args, numeric in (
        (["replies"], _numeric("replies")),
        (["sql", "SELECT * FROM replies"], _numeric("replies")),
        (["sql", "SELECT * FROM turns"], _numeric("turns")),
        (["sql", "SELECT * FROM events"], _numeric("events")),
        (["room", "42"], set()),
    ):
        csv_out = t.cli(*args[:1], "--store", store, "--format", "csv", *args[1:]).stdout
        assert_csv_inert(csv_out, f"{args} csv", numeric)
        checked += sum(1 for row in csv.reader(io.StringIO(csv_out)) for c in row if c[:2] in ("'=", "'+", "'@", "'-"))
        assert_markdown_inert(
            t.cli(*args[:1], "--store", store, "--format", "markdown", *args[1:]).stdout, f"{args} markdown"
        )
    assert checked, "no planted formula reached a CSV cell: the probe tests nothing"
    assert_markdown_inert(t.cli("evidence", "--store", store).stdout, "evidence")


@attack
def store_path_with_page_placeholders(t: Attack) -> None:
    """A store whose path contains %DATA%, %JS% and %CSS% (the HTML page's old placeholders) and `</script>`-free
    hostile text: the timeline page keeps exactly its JSON data element and its own script, the store path is
    data inside the JSON only, exit 0."""
    _, n = t.good_log()
    parts = ["%DATA%", "%JS%", "%CSS%"]
    t.rng.shuffle(parts)
    store = t.root / ("store" + "".join(parts) + t.rng.choice(["", "\u202e", "\x1b[2J"]))
    t.ingest(t.root / "dump", store=store)
    page = t.root / "t.html"
    t.cli("timeline", "--store", store, "--format", "html", "-o", page)
    text = page.read_text(encoding="utf-8")
    scripts = []

    class Scripts(HTMLParser):
        inside = False

        def handle_starttag(self, tag, attrs):
            if tag == "script":
                scripts.append([dict(attrs), ""])
                self.inside = True

        def handle_endtag(self, tag):
            self.inside = self.inside and tag != "script"

        def handle_data(self, data):
            if self.inside:
                scripts[-1][1] += data

    Scripts().feed(text)
    assert [a for a, _ in scripts] == [{"type": "application/json", "id": "timeline-data"}, {}], [a for a, _ in scripts]
    js = (resources.files("forensics.reports") / "assets" / "timeline.js").read_text(encoding="utf-8")
    assert scripts[1][1].strip() == js.strip(), "the page's own script was changed"
    data = json.loads(scripts[0][1])
    assert "".join(parts) in data["page"]["store"]
    outside = text.replace(scripts[0][1], "")
    for p in parts:  # outside the data element a placeholder is only the title's text
        assert outside.count(p) <= 1, f"{p} pasted into the page {outside.count(p)} times"
    svg = t.root / "t.svg"
    t.cli("timeline", "--store", store, "--format", "svg", "-o", svg)
    root = ET.parse(svg).getroot()
    assert not [e.tag for e in root.iter() if e.tag.rsplit("}", 1)[-1] in ("script", "foreignObject", "a")]
    assert t.count("batches", store=store) == n
