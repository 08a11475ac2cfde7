"""Hostile text stays inert in every command and every output format.

A store is built from a dump whose host folders, file names, log lines and transcript replies carry
terminal escapes (ESC[2J, OSC 8 hyperlinks), bidi overrides, spreadsheet formulas, Markdown, HTML,
the HTML page's own placeholders, emoji shortcodes and rich markup, placed by the suite's seed (a
fixed default; FORENSICS_TEST_SEED=random places them afresh, and the seed is in every failure
message; FORENSICS_TEST_SEED=N replays one). Then every command is run in every
format and its output read the way its consumer reads it: a terminal, a spreadsheet, a Markdown
renderer (markdown-it, CommonMark with GFM tables), a browser (the DOM after the script ran), an SVG parser.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib import resources

import polars as pl
import pytest
from click.testing import CliRunner

from forensics.cli import main
from forensics.core.text import CONTROL, escape_control
from forensics.reports.escape import csv_cell, csv_frame, markdown_code, markdown_text, script_json
from tests.conftest import seed

# every command in every format over the hostile store: a CLI run per case
pytestmark = pytest.mark.slow

ESC_CLEAR = "\x1b[2J"
OSC8 = "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07"
RLO = "\u202etxt.exe"
FORMULAS = ['=HYPERLINK("http://x")', "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3+cmd|' /C calc'!A0", "\t=1+2"]
MARKDOWN = [
    "**bold**",
    "[x](javascript:alert(1))",
    "![img](http://x/y.png)",
    "<script>alert(1)</script>",
    "_it_",
    "`code`",
    "~~gone~~",
    "# heading",
    "<img src=x onerror=alert(2)>",
    "[d](data:text/html,x)",
]
PAGE = ["%DATA%", "%JS%", "%CSS%"]
RICH = [":x:", ":ok:", ":b:", "[bold]x[/bold]", "[link=http://evil.example]y[/link]", "$x^2$"]
PAYLOADS = [ESC_CLEAR, OSC8, RLO, *FORMULAS, *MARKDOWN, *PAGE, *RICH]
IPV6 = "2001:db8:0:b:1::1"
PASSWD = "root:x:0:0:root:/root:/bin/bash"
# a file or folder name can hold anything but "/" and NUL
NAME_SAFE = [p for p in PAYLOADS if "/" not in p]

# 76393177 drew 'store<TAB>=1+2…txt.exe': a key=value folder in the store's path
SEED = seed(76393177)


def why(what: str) -> str:
    return f"{what} (replay with FORENSICS_TEST_SEED={SEED})"


def _pick(rng: random.Random, pool: list[str], k: int) -> str:
    return "".join(rng.sample(pool, k))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A dump of a prefill and a decode host, both named with hostile text, and an agent transcript."""
    rng = random.Random(SEED)
    base = tmp_path_factory.mktemp("inert")
    dump = base / "dump"
    # each placement starts with a payload: a cell's first character is what a spreadsheet reads
    decode = _pick(rng, NAME_SAFE, 2) + "decode-1"
    prefill = "prefill-0" + _pick(rng, NAME_SAFE, 2)
    rid = _pick(rng, PAYLOADS, 3)
    reason = _pick(rng, PAYLOADS, 3)
    log = dump / decode / (_pick(rng, NAME_SAFE, 1) + "sglang.log")
    log.parent.mkdir(parents=True)
    lines = [
        f"[2026-11-20 14:00:{s:02d} DP0 TP0 EP0] Decode batch, #running-req: 1, #token: 100, token usage: 0.01, "
        f"#prealloc-req: 0, #transfer-req: 0, cuda graph: True, gen throughput (token/s): 50.0, #queue-req: 0"
        for s in range(0, 40, 2)
    ]
    lines.insert(
        5,
        "[2026-11-20 14:00:09 DP0 TP0 EP0] Decode transfer failed for request rank=0 "
        f"decode_req.req.rid='{rid}' decode_req.req.bootstrap_room=42 with exception "
        f"KVTransferError(bootstrap_room=42): {reason} peer [{IPV6}]:5757 {PASSWD}",
    )
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (dump / prefill).mkdir()
    (dump / prefill / "sglang.log").write_text(
        "".join(
            f"[2026-11-20 14:00:{s:02d} DP0 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 512, "
            f"#cached-token: 0, token usage: 0.02, #running-req: 0, #queue-req: {s % 3}, "
            f"#prealloc-req: 0, #inflight-req: 0, input throughput (token/s): 1000.0\n"
            for s in range(0, 40, 2)
        ),
        encoding="utf-8",
    )
    (dump / "agent").mkdir()
    conn = _pick(rng, PAYLOADS, 2)
    reply = _pick(rng, PAYLOADS, 4) + f" {IPV6} {PASSWD} " + _pick(rng, PAYLOADS, 4)
    leak = '\n<｜DSML｜invoke name="edit">\n<｜DSML｜parameter name="filePath" string="true">/x</｜DSML｜parameter>'
    records = [
        {
            "ts": "2026-11-20T14:00:10.000Z",
            "dir": "req",
            "conn": conn,
            "upstream": "http://router/v1/chat/completions",
            "body": {
                "model": _pick(rng, PAYLOADS, 1) + "m",
                "stream": False,
                "messages": [{"role": "user", "content": _pick(rng, PAYLOADS, 3)}],
            },
        },
        {
            "ts": "2026-11-20T14:00:15.000Z",
            "dir": "resp",
            "conn": conn,
            "status": 200,
            "latency_ms": 5000,
            "body": {
                "id": "chatcmpl-x",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": reply + leak}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 50, "total_tokens": 60},
            },
        },
    ]
    (dump / "agent" / (_pick(rng, NAME_SAFE, 1) + "proxy.jsonl")).write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    # glob characters in the store's own path are left out: readers of the store's Parquet files glob
    # their paths (a separate defect, not one of output)
    store = base / ("store" + _pick(rng, [p for p in NAME_SAFE if not re.search(r"[\[\]*?]", p)], 2))
    r = CliRunner().invoke(main, ["ingest", str(dump), "--store", str(store)])
    return {
        "store": str(store),
        "base": base,
        "decode": decode,
        "prefill": prefill,
        "rid": rid,
        "reply": reply,
        "ingest": r,
    }


def _run(*args) -> str:
    """What the command printed, stderr too: both reach the terminal."""
    return _invoke(*args).output


def _invoke(*args):
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, why(f"{args}: exit {r.exit_code}: {r.output[-2000:]}")
    return r


# -- what each consumer sees ---------------------------------------------------------------------------


def assert_terminal_safe(out: str, what: str) -> None:
    """Nothing a terminal acts on: no escape, control or bidi character (tab and newline are text)."""
    bad = sorted({f"U+{ord(c):04X}" for c in CONTROL.findall(out)})
    assert not bad, why(f"{what}: raw control characters {bad}")
    # rich's emoji codes and markup: `:b:` in an IPv6 address, `[bold]`
    assert not re.search("[\U0001f170-\U0001f251\u274c\u2705\U0001f197]", out), why(
        f"{what}: an emoji code was rendered"
    )


def assert_csv_inert(out: str, what: str, numeric: set[str] = frozenset()) -> None:
    rows = list(csv.reader(io.StringIO(out)))
    header = rows[0] if rows else []
    for row in rows[1:]:
        for name, cell in zip(header, row):
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                assert name in numeric and re.fullmatch(r"-?\d+(\.\d+)?(e[+-]?\d+)?", cell), why(
                    f"{what}: CSV cell {name}={cell!r} starts a formula"
                )


def _markdown_tokens(text: str):
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    out = []

    def walk(tokens):
        for t in tokens:
            out.append(t)
            if t.children:
                walk(t.children)

    walk(md.parse(text))
    return out


def assert_markdown_inert(out: str, what: str) -> None:
    tokens = _markdown_tokens(out)
    # the reports' own section headings are words; code spans (a command, a store path) hold text only
    ours = [
        nxt
        for t, nxt in zip(tokens, tokens[1:])
        if t.type == "heading_open" and re.fullmatch(r"[\w ,;()\u2013-]+", nxt.content)
    ]
    live = [
        (t.type, t.content or t.attrs)
        for t in tokens
        if t.type in ("link_open", "image", "html_inline", "html_block", "s_open")
    ]
    assert sum(t.type == "heading_open" for t in tokens) == len(ours), why(f"{what}: a heading from the data")
    assert not live, why(f"{what}: live Markdown {live[:5]}")
    # our own emphasis is around our own words; none of the planted emphasis formed
    for t, nxt in zip(tokens, tokens[1:]):
        if t.type in ("strong_open", "em_open"):
            assert nxt.content not in ("bold", "it"), why(f"{what}: planted emphasis rendered as {t.type}")
    assert not re.search(r"(?i)javascript:|vbscript:", "".join(str(t.attrs) for t in tokens)), why(what)
    # GitHub turns `:x:` into an emoji outside code spans, so there shortcodes are escaped in the source
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", out)
    assert not re.search(r"(?<!\\):(x|ok|b):", prose), why(f"{what}: a live emoji shortcode")


# -- the commands -----------------------------------------------------------------------------------------


def test_ingest_output_is_inert(hostile):
    r = hostile["ingest"]
    assert r.exit_code == 0, why(r.output)
    assert_terminal_safe(r.output, "ingest")


TEXT_FORMATS = ("table", "csv", "tsv", "json", "jsonl", "markdown")
# the commands whose formats are only these
REPORT_FORMATS = ("table", "csv", "json", "markdown")


def _numeric(table: str) -> set[str]:
    from forensics.catalog import model

    return {c.name for c in model.tables()[table].columns if c.dtype.is_numeric()}


def assert_tsv_inert(out: str, what: str, numeric: set[str] = frozenset()) -> None:
    """One row a line, as many cells in each; no cell a spreadsheet would run (the same rule as CSV)."""
    lines = out.splitlines()
    header = lines[0].split("\t") if lines else []
    for line in lines[1:]:
        cells = line.split("\t")
        assert len(cells) == len(header), why(f"{what}: a TSV row of {len(cells)} cells under {len(header)}")
        for name, cell in zip(header, cells):
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                assert name in numeric and re.fullmatch(r"-?\d+(\.\d+)?(e[+-]?\d+)?", cell), why(
                    f"{what}: TSV cell {name}={cell!r} starts a formula"
                )


def _check(r, fmt: str, what: str, numeric=frozenset()) -> None:
    """`r`, a command's result: its whole output is terminal-safe, its stdout valid and inert in `fmt`."""
    assert_terminal_safe(r.output, what)
    if fmt == "csv":
        assert_csv_inert(r.stdout, what, numeric)
    elif fmt == "tsv":
        assert_tsv_inert(r.stdout, what, numeric)
    elif fmt == "jsonl":
        for line in r.stdout.splitlines():
            json.loads(line)
    elif fmt == "markdown":
        assert_markdown_inert(r.stdout, what)
    elif fmt == "json":
        json.loads(r.stdout)


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_sql_every_table(hostile, fmt):
    from forensics.catalog import model

    for table in model.tables():
        r = _invoke("sql", "--store", hostile["store"], "--format", fmt, f"SELECT * FROM {table}")
        _check(r, fmt, f"sql {table} --format {fmt}", _numeric(table))


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_named_queries(hostile, fmt):
    from forensics.catalog import named as queries

    for name in queries.all_queries():
        r = CliRunner().invoke(main, ["query", "run", name, "--store", hostile["store"], "--format", fmt])
        if r.exit_code == 2:  # a query that needs parameters
            continue
        assert r.exit_code == 0, why(f"query {name}: {r.output[-1000:]}")
        _check(r, fmt, f"query run {name} --format {fmt}")


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
def test_replies_room_clocks(hostile, fmt):
    s = hostile["store"]
    _check(_invoke("replies", "--store", s, "--format", fmt), fmt, f"replies --format {fmt}", _numeric("replies"))
    _check(_invoke("room", "42", "--store", s, "--format", fmt), fmt, f"room --format {fmt}")
    _check(_invoke("clocks", "--store", s, "--format", fmt), fmt, f"clocks --format {fmt}")


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
def test_timeline_text_formats(hostile, fmt):
    _check(
        _invoke("timeline", "--store", hostile["store"], "--format", fmt, "--bucket", "5s"),
        fmt,
        f"timeline --format {fmt}",
        {"replies", "corrupted_rate", "transfers", "aborts", "errors"},
    )


@pytest.mark.parametrize("fmt", ("markdown", "json"))
def test_evidence_and_compare(hostile, fmt):
    s = hostile["store"]
    _check(_invoke("evidence", "--store", s, "--format", fmt), fmt, f"evidence --format {fmt}")
    _check(_invoke("compare", s, s, "--format", fmt), fmt, f"compare --format {fmt}")


def test_ipv6_and_passwd_print_exactly(hostile):
    """rich turns `:b:` into 🅱 and `:x:` into ❌ unless told not to: the text prints as it is."""
    out = _run(
        "sql",
        "--store",
        hostile["store"],
        f"SELECT '{IPV6}' AS literal, regexp_extract(message, '2001:[0-9a-f:]+') AS ip, "
        "regexp_extract(message, 'root:[^ ]+') AS passwd FROM events WHERE message LIKE '%2001:db8%'",
    )
    assert out.count(IPV6) == 2 and PASSWD in out, why(out)
    evidence = _run("sql", "--store", hostile["store"], "SELECT evidence FROM replies")
    assert_terminal_safe(evidence, "replies evidence")


def test_terminal_shows_the_escapes(hostile):
    """The planted text is there, its escapes visible, `[bold]` and `:x:` as typed."""
    # JSON carries the path whole, its control characters as \u escapes that decode back to them
    out = _invoke("sql", "--store", hostile["store"], "--format", "json", "SELECT path FROM files").stdout
    assert "\x1b" not in out and "\u202e" not in out
    paths = [r["path"] for r in json.loads(out)]
    assert any(f"/{hostile['decode']}/" in p for p in paths), why(f"{paths}")
    table = _run("sql", "--store", hostile["store"], "SELECT '[bold]x[/bold] :x: :ok:' AS t")
    assert "[bold]x[/bold] :x: :ok:" in table


@pytest.mark.browser
def test_html_page_is_intact(hostile, tmp_path):
    from tests.test_timeline_export import _dom, _elements

    path = tmp_path / "t.html"
    _run("timeline", "--store", hostile["store"], "--format", "html", "--bucket", "5s", "-o", str(path))
    text = path.read_text(encoding="utf-8")
    js = (resources.files("forensics.reports") / "assets" / "timeline.js").read_text(encoding="utf-8")
    scripts = []

    class Scripts(HTMLParser):
        def __init__(self):
            super().__init__()
            self.open = None

        def handle_starttag(self, tag, attrs):
            if tag == "script":
                self.open = [dict(attrs), ""]

        def handle_data(self, data):
            if self.open is not None:
                self.open[1] += data

        def handle_endtag(self, tag):
            if tag == "script":
                scripts.append(self.open)
                self.open = None

    Scripts().feed(text)
    assert [a for a, _ in scripts] == [{"type": "application/json", "id": "timeline-data"}, {}], why(str(scripts))
    assert scripts[1][1].strip() == js.strip(), why("the page's script was changed")
    data = json.loads(scripts[0][1])
    assert data["page"]["store"] == escape_control(hostile["store"])
    # outside the data element the page is its template: no store text anywhere else
    outside = text.replace(scripts[0][1], "")
    for p in ("evil.example", "HYPERLINK", "calc", "javascript", "alert"):
        assert p not in outside, why(f"{p!r} outside the JSON element")

    dom = _dom(tmp_path, path, "#select=0")
    elements = _elements(dom)
    tags = [t for t, _ in elements]
    assert tags.count("script") == 2 and "img" not in tags and "a" not in tags, why(str(set(tags)))
    assert not [a for _, attrs in elements for a in attrs if a.startswith("on")], why("an event handler")
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    import html as html_lib

    assert html_lib.unescape(title) == "forensics timeline — " + escape_control(hostile["store"]), why(title)
    assert "\x1b" not in dom and "\u202e" not in dom


def test_svg_and_png(hostile, tmp_path):
    svg, png = tmp_path / "t.svg", tmp_path / "t.png"
    _run("timeline", "--store", hostile["store"], "--format", "svg", "--bucket", "5s", "-o", str(svg))
    _run("timeline", "--store", hostile["store"], "--format", "png", "--bucket", "5s", "-o", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert not [e.tag for e in root.iter() if e.tag in (ns + "script", ns + "a", ns + "foreignObject", ns + "image")]
    texts = {"".join(t.itertext()) for t in root.iter(ns + "text")}
    want = f"{escape_control(hostile['decode'])} (decode)"
    assert want in texts, why(f"{want!r} not among {sorted(texts)[:8]}")
    assert not CONTROL.search(svg.read_text(encoding="utf-8")), why("control character in the SVG")


def test_perfetto(hostile, tmp_path):
    out = tmp_path / "t.json"
    _run("timeline", "--store", hostile["store"], "--format", "perfetto", "--bucket", "5s", "-o", str(out))
    raw = out.read_text(encoding="utf-8")
    assert "<" not in raw and not CONTROL.search(raw)
    json.loads(raw)


# -- the escapers themselves ----------------------------------------------------------------------------


def test_csv_decides_by_column_type():
    df = pl.DataFrame({"n": [-3.5, 2.0], "i": [-1, 3], "t": ["-3.5", "=1+2"]})
    out = list(csv.reader(io.StringIO(csv_frame(df).write_csv())))
    assert out[1:] == [["-3.5", "-1", "'-3.5"], ["2.0", "3", "'=1+2"]]
    for s in ("=x", "+x", "-x", "@x", "\tx", "\uff1dx"):
        assert csv_cell(s).startswith("'")
    # a CR is made visible first, so the cell starts with a backslash
    assert csv_cell("\r=x") == "\\x0d=x" and csv_cell("ok") == "ok"


@pytest.mark.parametrize(
    "payload",
    PAYLOADS + [IPV6, PASSWD, "3. item", "> quote", "a_b_c", "x | y", "&amp;", "* item", "raises *", "***", "_ _ _"],
)
def test_markdown_text_renders_as_written(payload):
    for inline in (False, True):
        src = ("| c |\n|---|\n| " + markdown_text(payload, inline=True) + " |\n") if inline else markdown_text(payload)
        tokens = _markdown_tokens(src)
        assert not [
            t.type
            for t in tokens
            if t.type
            in (
                "link_open",
                "image",
                "html_inline",
                "html_block",
                "strong_open",
                "em_open",
                "s_open",
                "code_inline",
                "heading_open",
                "bullet_list_open",
                "ordered_list_open",
                "blockquote_open",
            )
        ]
        if inline:  # the cell's text, past the header's
            tokens = tokens[[t.type for t in tokens].index("td_open") :]
        text = "".join(t.content for t in tokens if t.type == "text")
        # a table cell's content is trimmed by the table syntax itself
        want = escape_control(payload).replace("\n", " ")
        assert text == (want.strip() if inline else want)
        if inline:
            assert sum(t.type == "td_open" for t in tokens) == 1


def test_markdown_code_holds_backticks():
    tokens = _markdown_tokens("x " + markdown_code("a `b` ``c``") + " y")
    (code,) = [t for t in tokens if t.type == "code_inline"]
    assert code.content == "a `b` ``c``"


def test_script_json_cannot_close_its_element():
    s = script_json({"a": "</script><!-- \u2028\u2029 &"})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s and "\u2029" not in s
    assert json.loads(s) == {"a": "</script><!-- \u2028\u2029 &"}
