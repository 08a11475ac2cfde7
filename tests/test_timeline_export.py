"""`forensics timeline --format html|png|svg|perfetto` on the generated incident and on hostile text.

The HTML test drives headless Chromium (Debian's `chromium`; .ci/run installs it): a screenshot, and
the DOM after the page's script ran, opened with `#select=<reply>` so the detail panel is filled as a
click would fill it.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
import struct
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from forensics.analysis import detail, timeline
from forensics.analysis.session import Limits, Session
from forensics.catalog.sql import run_sql
from forensics.ingest import pipeline as ingest
from forensics.reports import export as timeline_export
from forensics.reports.html import fill
from forensics.reports.render import escape_control
from forensics.store import Store
from tests.conftest import chromium, missing, shared

ROOT = Path(__file__).resolve().parent.parent
INCIDENT = ROOT / "sample_logs" / "incident"
PLANTED = json.loads((INCIDENT / "planted.json").read_text())
OFFSET_HOST, OFFSET_S = PLANTED["clock_offset"]["host"], PLANTED["clock_offset"]["offset_s"]
WINDOWS = PLANTED["windows"]

HOSTILE = (
    '<script>alert(1)</script>" onmouseover="document.body.dataset.pwned=1" '
    '<img src=x onerror="document.body.dataset.pwned=1"> \x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 '
    "\u202eevil"
)
# a folder name: anything but "/"
HOSTILE_HOST = "decode-<b onmouseover=alert(2)>x\u202e"


def _chromium() -> str:
    # the tests that call this are marked browser: tests/conftest.py has skipped them (or failed them in CI)
    # where there is no chromium
    return chromium() or missing("no chromium binary on PATH (apt-get install chromium)")


def _run_chromium(tmp: Path, url: str, *mode: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1600,1000",
        *mode,
        url,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def _dom(tmp: Path, html: Path, fragment: str = "") -> str:
    return _run_chromium(tmp, html.as_uri() + fragment, "--dump-dom").stdout


def _page_data(html_text: str) -> dict:
    m = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', html_text, re.S)
    assert m, "the page carries its data in a JSON script element"
    return json.loads(m.group(1))


def _elements(dom: str) -> list[tuple[str, dict]]:
    """Every element of a serialised DOM with its attributes, as a browser would build them."""
    found = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Collect().feed(dom)
    return found


def _us(iso: str) -> int:
    t = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


# -- fixtures ---------------------------------------------------------------------------------------


EXPORTS = {"html": "timeline.html", "png": "timeline.png", "svg": "timeline.svg", "perfetto": "timeline.json"}


@pytest.fixture(scope="module")
def incident(planted_store, tmp_path_factory):
    """The sample incident ingested with its planted clock offset (tests/conftest.py), and every export
    written once for the session (read them; write elsewhere)."""
    store = Store(planted_store)
    model = timeline.build(store, "10s")

    def write(folder):
        for fmt, name in EXPORTS.items():
            write_export(store, model, fmt, str(folder / name))

    exports = shared(tmp_path_factory, "timeline-exports", write)
    files = {fmt: exports / name for fmt, name in EXPORTS.items()}
    return {"store": store, "model": model, "files": files, "tmp": tmp_path_factory.mktemp("timeline_export")}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A dump whose host name, log message, transcript turn id and reply text are all hostile."""
    base = tmp_path_factory.mktemp("hostile")
    dump = base / "dump"
    (dump / HOSTILE_HOST).mkdir(parents=True)
    lines = [
        f"[2026-11-20 14:00:{s:02d} DP0 TP0 EP0] Decode batch, #running-req: 1, #token: 100, token usage: 0.01, "
        f"#prealloc-req: 0, #transfer-req: 0, cuda graph: True, gen throughput (token/s): 50.0, #queue-req: 0"
        for s in range(0, 40, 2)
    ]
    lines.insert(
        5,
        "[2026-11-20 14:00:09 DP0 TP0 EP0] Decode transfer failed for request rank=0 "
        f"decode_req.req.rid='{HOSTILE}' decode_req.req.bootstrap_room=42 with exception "
        f"KVTransferError(bootstrap_room=42): {HOSTILE}",
    )
    (dump / HOSTILE_HOST / "sglang.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (dump / "agent").mkdir()
    conn = "c-" + HOSTILE
    leak = '\n<｜DSML｜invoke name="edit">\n<｜DSML｜parameter name="filePath" string="true">/x</｜DSML｜parameter>'
    records = [
        {
            "ts": "2026-11-20T14:00:10.000Z",
            "dir": "req",
            "conn": conn,
            "upstream": "http://router/v1/chat/completions",
            "body": {"model": "m", "stream": False, "messages": [{"role": "user", "content": HOSTILE}]},
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
                    {"index": 0, "message": {"role": "assistant", "content": HOSTILE + leak}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 50, "total_tokens": 60},
            },
        },
    ]
    (dump / "agent" / "proxy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    store = Store(base / "store")
    ingest.run([str(dump)], str(store.root), ingest.Options())
    model = timeline.build(store, "5s")
    files = {"html": base / "hostile.html", "perfetto": base / "hostile.json"}
    for fmt, path in files.items():
        write_export(store, model, fmt, str(path))
    return {"store": store, "model": model, "files": files, "tmp": base}


# -- HTML -------------------------------------------------------------------------------------------


def test_html_is_self_contained(incident):
    text = incident["files"]["html"].read_text(encoding="utf-8")
    # nothing is fetched: no external script, style, image, font or frame
    assert not re.search(r"""<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=""", text, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", text, re.I)
    assert "default-src 'none'" in text
    assert f"clock offsets applied: {OFFSET_HOST} {OFFSET_S:+g} s" in text
    data = _page_data(text)
    assert [h["name"] for h in data["hosts"]] == ["prefill-0", "decode-0", "decode-1"]
    assert data["offsets"] == {OFFSET_HOST: OFFSET_S}


def test_html_inlines_its_asset_files(incident):
    """The page is assets/timeline.html with assets/timeline.css and timeline.js inlined."""
    text = incident["files"]["html"].read_text(encoding="utf-8")
    assets = resources.files("forensics.reports") / "assets"
    css = (assets / "timeline.css").read_text(encoding="utf-8")
    js = (assets / "timeline.js").read_text(encoding="utf-8")
    assert f"<style>\n{css}</style>" in text and f"<script>\n\n{js}\n</script>" in text
    # inlined, neither may close its element early
    assert "</style" not in css.lower() and "</script" not in js.lower()
    assert not re.search(r"%(TITLE|STORE|OFFSETS|SUMMARY|LEGEND|OUTCOMES|CSS|JS|DATA)%", text)


def test_fill_replaces_each_placeholder_once():
    assert fill("a %X% b %Y%", {"X": "%Y%", "Y": "1"}) == "a %Y% b 1"
    with pytest.raises(ValueError):
        fill("%X% %Y%", {"X": ""})
    with pytest.raises(ValueError):
        fill("%X%", {"X": "", "Y": ""})


@pytest.mark.browser
def test_text_spelling_a_placeholder_stays_text(hostile, tmp_path):
    """A store path or host that spells a placeholder is shown as written, never filled in."""
    store = Store(tmp_path / "store-%JS%-%DATA%-%CSS%")
    # --host is checked against the store's hosts: one is named so
    ingest.run([str(hostile["tmp"] / "dump")], str(store.root), ingest.Options(host="%STORE%"))
    model = timeline.build(store, "5s", host="%STORE%")
    path = tmp_path / "placeholders.html"
    write_export(store, model, "html", str(path))
    text = path.read_text(encoding="utf-8")
    assert len(re.findall(r"<script\b", text)) == 2 and len(re.findall(r"<style\b", text)) == 1
    page = _page_data(text)["page"]
    assert page["store"] == str(store.root) and page["summary"].endswith(" · host %STORE%")
    # the script puts the page's text in as text: the store path shows as written
    dom = _dom(tmp_path, path)
    assert f"<title>forensics timeline — {store.root}</title>" in dom
    assert f'<div class="meta" id="meta">store {store.root} · ' in dom and " · host %STORE%</div>" in dom


@pytest.mark.browser
def test_html_renders_lanes_bands_and_replies_in_chromium(incident):
    html, tmp = incident["files"]["html"], incident["tmp"]
    shot = tmp / "timeline-screenshot.png"
    _run_chromium(tmp, html.as_uri(), f"--screenshot={shot}")
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1600, 1000)
    assert len(png) > 50_000, "a blank page compresses to a few KiB"

    data = _page_data(html.read_text(encoding="utf-8"))
    n_corrupted = run_sql(incident["store"], "SELECT count(*) AS n FROM replies WHERE corrupted")["n"][0]
    dom = _dom(tmp, html)
    assert 'data-rendered="4"' in dom, "the script ran: three hosts and the unlinked replies"
    for host in ("prefill-0", "decode-0", "decode-1"):
        assert f'data-lane="host" data-host="{host}"' in dom
        assert f'data-lane="load" data-host="{host}"' in dom
        assert f'data-lane="transfers" data-host="{host}"' in dom
    # the planted wedge on decode-1 and the abort storm on the prefill host and both decode hosts
    assert re.findall(r'data-band="wedge" data-host="([^"]+)"', dom) == [WINDOWS["wedge"]["host"]]
    assert sorted(re.findall(r'data-band="abort-storm" data-host="([^"]+)"', dom)) == [
        "decode-0",
        "decode-1",
        "prefill-0",
    ]
    assert len(re.findall(r'data-corrupted="true"', dom)) == n_corrupted == len(PLANTED["corrupted_replies"])
    classes = collections.Counter(re.findall(r'data-class="(\w+)" data-corrupted="true"', dom))
    assert classes == collections.Counter(r["class"] for r in PLANTED["corrupted_replies"])
    assert len(re.findall(r'data-outcome="aborted"', dom)) >= WINDOWS["storm"]["aborted_in_transfer"]
    assert sum(1 for r in data["replies"] if r["corrupted"]) == n_corrupted


@pytest.mark.browser
def test_html_click_shows_evidence_and_events(incident):
    html, tmp = incident["files"]["html"], incident["tmp"]
    data = _page_data(html.read_text(encoding="utf-8"))
    # a corrupted reply that overlapped the abort storm: its panel lists the aborts around it
    i, reply = max(((i, r) for i, r in enumerate(data["replies"]) if r["corrupted"]), key=lambda x: len(x[1]["events"]))
    assert reply["events"]
    dom = _dom(tmp, html, f"#select={i}")
    panel = re.search(r'<section id="detail"[^>]*data-selected="(\d+)"[^>]*>(.*?)</section>', dom, re.S)
    assert panel and int(panel.group(1)) == i
    body = panel.group(2)
    assert f"Corrupted reply: {reply['cls'].replace('_', ' ')}" in body
    assert reply["turn"] in body and reply["room"] in body
    assert "data-evidence" in body and reply["signatures"][0] in body
    assert f'data-events="{len(reply["events"])}"' in body
    assert body.count("<tr>") == len(reply["events"]) + 1
    assert 'class="selected"' in dom


@pytest.mark.browser
def test_html_view_fragment_zooms(incident):
    html, tmp = incident["files"]["html"], incident["tmp"]
    storm = WINDOWS["storm"]
    t0, t1 = _us(storm["start"]) / 1000 - 5000, _us(storm["end"]) / 1000 + 5000
    full = _dom(tmp, html)
    zoomed = _dom(tmp, html, f"#view={t0:.0f},{t1:.0f}")
    assert re.search(r'id="range">14:09:52\.\d+ – 14:10:04\.\d+ UTC', zoomed)
    assert 0 < zoomed.count("data-room=") < full.count("data-room=") / 3
    assert 'data-band="abort-storm" data-host="decode-0"' in zoomed


@pytest.mark.browser
def test_html_past_its_limits_draws_counts_and_the_rows_that_matter(incident, tmp_path, monkeypatch):
    """A window with more rooms, lines and replies than the page draws one by one: every bucket's
    counts, the failed rooms, failures and corrupted replies first, and a note naming the way in."""
    store, model = incident["store"], incident["model"]
    whole = _page_data(incident["files"]["html"].read_text(encoding="utf-8"))
    out = tmp_path / "cut.html"
    notes = write_export(store, model, "html", str(out), Limits(rooms=60, marks=40, replies=50))
    data = _page_data(out.read_text(encoding="utf-8"))

    rooms = {t["room"]: t["outcome"] for t in data["transfers"]}
    all_rooms = {t["room"]: t["outcome"] for t in whole["transfers"]}
    failed = set(
        run_sql(
            store,
            "SELECT CAST(bootstrap_room AS VARCHAR) AS r FROM rooms WHERE outcome NOT IN "
            "('ok', 'unknown') OR checksum_verdict = 'corrupted'",
        )["r"]
    ) & set(all_rooms)
    assert len(rooms) == 60 < len(all_rooms) and len(failed) > 60
    assert set(rooms) <= failed, "failed rooms and rooms whose checksums differ come first"
    # every room is in the counts, on the same lanes as its drawn segments would be
    drawn = collections.Counter((t["host"], t["outcome"]) for t in whole["transfers"])
    counted = collections.Counter()
    for lane in data["rooms_per_bucket"]:
        for k, outcome, n in lane["counts"]:
            counted[(lane["host"], outcome)] += n
    assert counted == drawn

    assert len(data["marks"]) == 40 < len(whole["marks"])
    n_failures = sum(1 for m in whole["marks"] if m["mark"] == "failure")
    assert (
        all(m["mark"] == "failure" for m in data["marks"])
        if n_failures >= 40
        else (sum(1 for m in data["marks"] if m["mark"] == "failure") == n_failures)
    )
    assert sum(n for lane in data["marks_per_bucket"] for _, _, n in lane["counts"]) == len(whole["marks"])

    assert len(data["replies"]) == 50 < len(whole["replies"])
    assert all(r["corrupted"] for r in data["replies"]), "81 corrupted replies: the 50 drawn are all corrupted"
    assert all(
        r["events"]
        == next(
            w["events"]
            for w in whole["replies"]
            if (w["source"], w["session"], w["turn"]) == (r["source"], r["session"], r["turn"])
        )
        for r in data["replies"]
    )
    assert sum(n for lane in data["replies_per_bucket"] for _, _, n in lane["counts"]) == len(whole["replies"])
    n_corrupted = sum(1 for r in whole["replies"] if r["corrupted"])
    assert f"{len(whole['replies'])} replies, {n_corrupted} corrupted" in data["page"]["summary"], (
        "the window's, drawn or not"
    )

    assert len(notes) == 3 and all(n.startswith("html: the page draws ") and "--since / --until" in n for n in notes)
    assert [n.removeprefix("html: ") for n in notes] == data["page"]["offsets"][-3:]
    assert "60 of the window's" in notes[0] and "40 of the window's" in notes[1] and "50 of the window's" in notes[2]

    dom = _dom(tmp_path, out)
    assert 'data-rendered="4"' in dom
    assert dom.count('data-count="rooms"') >= len(data["rooms_per_bucket"])
    assert 'data-count="replies"' in dom and 'data-count="failure, abort and error lines"' in dom
    assert len(re.findall(r'data-room="', dom)) == len(data["transfers"])


# -- hostile text -----------------------------------------------------------------------------------


@pytest.mark.browser
def test_hostile_text_is_inert_in_html(hostile):
    html, tmp = hostile["files"]["html"], hostile["tmp"]
    text = html.read_text(encoding="utf-8")
    assert "<script>alert" not in text and "<img" not in text and "<b " not in text
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert len(re.findall(r"<script\b", text)) == 2 and len(re.findall(r"</script>", text)) == 2
    data = _page_data(text)
    (reply,) = data["replies"]
    assert reply["corrupted"] and reply["turn"] == escape_control("c-" + HOSTILE)
    assert [h["name"] for h in data["hosts"]] == [escape_control(HOSTILE_HOST)]

    dom = _dom(tmp, html, "#select=0")
    assert 'data-selected="0"' in dom and 'data-rendered="2"' in dom
    # nothing the transcript or the log carried became an element, an attribute or ran
    elements = _elements(dom)
    tags = collections.Counter(tag for tag, _ in elements)
    assert tags["script"] == 2 and not tags["img"] and not tags["b"]
    assert not [(tag, a) for tag, attrs in elements for a in attrs if a.startswith("on")]
    assert not [a for tag, attrs in elements if tag == "body" for a in attrs if "pwned" in a]
    # it is there as text, with the escapes visible
    assert "c-&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "\\x1b]8;;http://evil.example/\\x07click" in dom and "\\u202eevil" in dom
    assert "\x1b" not in dom and "\u202e" not in dom
    assert 'data-host="' + escape_control(HOSTILE_HOST).replace("<", "&lt;").replace(">", "&gt;") + '"' in dom


def test_hostile_text_is_inert_in_perfetto(hostile):
    raw = hostile["files"]["perfetto"].read_text(encoding="utf-8")
    assert raw.isascii() and "<" not in raw and ">" not in raw
    trace = json.loads(raw)
    (reply,) = [e for e in trace["traceEvents"] if e.get("cat") == "reply"]
    assert reply["args"]["turn_id"] == escape_control("c-" + HOSTILE)
    assert "<script>alert(1)</script>" in reply["args"]["turn_id"]
    assert "\u202e" not in reply["args"]["turn_id"] and "\x1b" not in reply["args"]["turn_id"]
    (fail,) = [e for e in trace["traceEvents"] if e.get("cat") == "failure"]
    assert fail["args"]["rid"] == escape_control(HOSTILE) and fail["args"]["bootstrap_room"] == "42"
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert escape_control(HOSTILE_HOST) + " (decode)" in names


# -- Perfetto ---------------------------------------------------------------------------------------


def _ambiguous(incident) -> set[str]:
    """Corrupted replies that time and tokens match to several server requests, so none is chosen."""
    rows = run_sql(
        incident["store"], "SELECT turn_id FROM replies WHERE corrupted AND link_method IS NULL AND link_candidates > 1"
    )
    return set(rows["turn_id"])


def _trace(incident) -> dict:
    return json.loads(incident["files"]["perfetto"].read_text(encoding="utf-8"))


def test_perfetto_schema(incident):
    raw = incident["files"]["perfetto"].read_text(encoding="utf-8")
    trace = json.loads(raw)
    # Perfetto's tokenizer stops at an unknown key; these three are known
    assert list(trace) == ["displayTimeUnit", "otherData", "traceEvents"]
    assert trace["displayTimeUnit"] == "ms"
    events = trace["traceEvents"]
    lo, hi = _us(PLANTED["t0"]) - 3600 * 10**6, _us(PLANTED["t_end"]) + 3600 * 10**6
    threads, processes = set(), set()
    for e in events:
        assert e["ph"] in {"M", "C", "b", "e", "i"}, e
        assert isinstance(e["ts"], int) and lo <= e["ts"] <= hi, "µs since the epoch"
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            (processes if e["name"].startswith("process") else threads).add((e["pid"], e["tid"]))
        if e["ph"] == "i":
            assert e["s"] == "t"
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
        for k, v in (e.get("args") or {}).items():
            if k == "bootstrap_room":
                assert v is None or (isinstance(v, str) and v.isdigit()), "63-bit rooms travel as text"
    named_threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in events if e["ph"] != "M"} <= named_threads
    # async slices: every begin has its end, per category and id, never before it
    open_ = collections.defaultdict(list)
    for e in sorted((e for e in events if e["ph"] in "be"), key=lambda e: (e["ts"], e["ph"] != "b")):
        key = (e["pid"], e["cat"], e["id"])
        assert isinstance(e["id"], str)
        if e["ph"] == "b":
            open_[key].append(e)
        else:
            assert open_[key], f"end without begin: {key}"
            b = open_[key].pop()
            assert b["name"] == e["name"] and b["ts"] <= e["ts"]
    assert not any(open_.values())
    # flows: one out and one in per id, the out no later than the in, on the two sides of one room
    outs = {e["bind_id"]: e for e in events if e.get("flow_out")}
    ins = {e["bind_id"]: e for e in events if e.get("flow_in")}
    assert outs and outs.keys() == ins.keys()
    assert len(outs) == sum(1 for e in events if e.get("flow_out"))
    for fid, o in outs.items():
        i = ins[fid]
        assert o["cat"] == "transfer" and i["cat"] == "transfer.recv" and o["id"] == i["id"]
        assert int(fid, 16) == int(o["id"]) and o["ts"] <= i["ts"] and o["pid"] != i["pid"]
    proc = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    # time and tokens never pick one of several candidates (docs/formats/TRANSCRIPTS.md, "Linking turns to server requests"): replies left
    # ambiguous get a lane of their own
    hosts = ["decode-0 (decode)", "decode-1 (decode)", "prefill-0 (prefill)"]
    unlinked = run_sql(incident["store"], "SELECT count(*) AS n FROM replies WHERE corrupted AND link_method IS NULL")
    assert sorted(proc.values()) == sorted(hosts + ["replies without a server link"] * bool(unlinked["n"][0]))
    ranks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {"rank 0", "rank 1", "rank 2", "rank 3"} <= ranks
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"queue_req", "running_req", "bootstrap_req", "inflight_req", "transfer_req"} <= counters


def test_perfetto_shows_the_planted_facts(incident):
    events = _trace(incident)["traceEvents"]
    pid = {e["args"]["name"].split(" ")[0]: e["pid"] for e in events if e["name"] == "process_name"}
    # the wedge on decode-1, edges within a log second of the planted ones (clock offset applied)
    w = WINDOWS["wedge"]
    (wb,) = [e for e in events if e["ph"] == "b" and e["cat"] == "wedge"]
    (we,) = [e for e in events if e["ph"] == "e" and e["cat"] == "wedge"]
    assert wb["pid"] == pid[w["host"]]
    assert abs(wb["ts"] - _us(w["start"])) < 10**6 and abs(we["ts"] - _us(w["end"])) < 10**6
    assert {str(r) for r in w["stuck_rooms"]} <= set(wb["args"]["rooms"])
    # the abort storm: a slice on each host it touched and the decode hosts' aborts as instants inside it
    s = WINDOWS["storm"]
    storms = {e["pid"]: e for e in events if e["ph"] == "b" and e["cat"] == "abort_storm"}
    assert set(storms) == {pid["prefill-0"], pid["decode-0"], pid["decode-1"]}
    assert abs(storms[pid[s["host"]]]["ts"] - _us(s["start"])) < 10**6
    for host, n in s["aborted_requests_by_host"].items():
        inside = [
            e
            for e in events
            if e["ph"] == "i"
            and e["cat"] == "abort"
            and e["pid"] == pid[host]
            and _us(s["start"]) - 10**6 <= e["ts"] <= _us(s["end"]) + 10**6
        ]
        assert len(inside) >= min(n, 20)
        assert storms[pid[host]]["args"]["aborts_on_host"] == n
    aborted = {e["id"] for e in events if e["ph"] == "b" and e["cat"] == "transfer" and "aborted" in e["name"]}
    assert len(aborted & {str(r) for r in s["aborted_rooms"]}) >= s["aborted_in_transfer"] * 0.9
    # every planted corrupted reply, on its decode host, with its room as exact text
    replies = [e for e in events if e["ph"] == "i" and e["cat"] == "reply"]
    assert len(replies) == len(PLANTED["corrupted_replies"])
    by_room = {e["args"]["bootstrap_room"]: e for e in replies}
    by_turn = {e["args"]["turn_id"]: e for e in replies}
    ambiguous = _ambiguous(incident)
    assert len(ambiguous) <= 0.05 * len(PLANTED["corrupted_replies"])
    for r in PLANTED["corrupted_replies"]:
        if r["reply_id"] in ambiguous:
            e = by_turn[r["reply_id"]]
            assert e["args"]["bootstrap_room"] is None and e["pid"] == pid["replies"]
        else:
            e = by_room[str(r["room"])]
            assert e["pid"] == pid[r["decode_host"]]
        assert e["args"]["class"] == r["class"]
    # the planted transfer failures on decode-0 are failure instants naming their rooms
    f = WINDOWS["transfer_failures"]
    failed = {
        e["args"]["bootstrap_room"]
        for e in events
        if e["ph"] == "i" and e["cat"] == "failure" and e["pid"] == pid[f["host"]]
    }
    assert {str(r) for r in f["rooms"]} <= failed
    # the prefill slam shows in the prefill queue counter
    slam = WINDOWS["slam"]
    q = [
        sum(e["args"].values())
        for e in events
        if e["ph"] == "C"
        and e["name"] == "queue_req"
        and e["pid"] == pid[slam["host"]]
        and _us(slam["start"]) <= e["ts"] <= _us(slam["backlog_cleared"])
    ]
    assert max(q) >= slam["peak_queue_req"] / 4 > 0


def test_perfetto_counters_follow_the_bucket(incident, tmp_path):
    """One sample per rank and bucket, at the bucket's start: --bucket sets how many the trace holds."""

    store = incident["store"]
    counts = {}
    for bucket in ("10s", "1m"):
        model = timeline.build(store, bucket)
        out = tmp_path / f"t-{bucket}.json"
        write_export(store, model, "perfetto", str(out))
        trace = json.loads(out.read_text(encoding="utf-8"))
        assert trace["otherData"]["bucket_s"] == model["bucket_s"] and "note" not in trace["otherData"]
        samples = [e for e in trace["traceEvents"] if e["ph"] == "C"]
        step = int(model["bucket_s"] * 10**6)
        assert samples and all(e["ts"] % step == 0 for e in samples), "samples sit on bucket starts"
        # one sample per (track, counter, bucket): the stats lines of a rank within a bucket are one mean
        keys = [(e["pid"], e["tid"], e["name"], e["ts"]) for e in samples]
        assert len(keys) == len(set(keys))
        counts[bucket] = len(samples)
        with Session.open(store) as s:
            rows = list(detail.counter_rows(s, model))
        assert [r["t_us"] for r in rows] == sorted(r["t_us"] for r in rows), "streamed in time order"
    assert counts["1m"] < counts["10s"] / 3


def test_perfetto_trace_over_budget_is_cut_around_the_trouble(incident, tmp_path):
    """A trace that would not fit the budget keeps a window of whole buckets around the busiest
    failures, names it, and says how to see the rest; every event lies inside that window."""
    from forensics.reports import perfetto

    store, model = incident["store"], incident["model"]
    with Session.open(store) as s:
        whole, note = detail.fit(s, model)
        assert note is None and whole is model
        cut, note = detail.fit(s, model, budget=2_000_000)
    assert note and "--since/--until" in note and "--bucket" in note and "cut to" in note
    rows = cut["rows"]
    assert 0 < rows.height < model["rows"].height
    lo = _us(rows["bucket_start"].min().isoformat())
    hi = _us(rows["bucket_start"].max().isoformat()) + int(model["bucket_s"] * 10**6)
    # the kept window holds the bucket with the most failures, aborts, errors and corrupted replies
    trouble = model["rows"].with_columns(
        t=pl.col("failure_lines") + pl.col("aborts") + pl.col("errors") + pl.col("replies") - pl.col("replies_clean")
    )
    worst = _us(trouble.sort("t", descending=True)["bucket_start"][0].isoformat())
    assert lo <= worst < hi
    out = tmp_path / "cut.json"
    notes = write_export(store, cut, "perfetto", str(out))
    assert notes == []  # already cut: it fits
    with Session.open(store) as s:
        perfetto.write(cut, perfetto_detail(s, cut), str(out), detail.counter_rows(s, cut), note)
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert trace["otherData"]["note"] == note
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert counters and all(lo <= e["ts"] < hi for e in counters)


def test_perfetto_cli_says_when_the_trace_is_cut(incident, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from forensics.cli import main

    # the session every command opens carries the budget
    monkeypatch.setattr(Session, "limits", Limits(trace_bytes=2_000_000))
    out = tmp_path / "t.json"
    r = CliRunner().invoke(
        main,
        ["timeline", "--store", str(incident["store"].root), "--format", "perfetto", "--bucket", "10s", "-o", str(out)],
    )
    assert r.exit_code == 0, r.output
    assert "cut to" in r.output and "--since/--until" in r.output
    assert json.loads(out.read_text(encoding="utf-8"))["otherData"]["note"] in r.output


def test_perfetto_streams_its_counters(incident, tmp_path):
    """Counters are consumed as the file is written, not gathered first: events reach the file while
    the counter rows are still coming."""
    from forensics.reports import perfetto

    store = incident["store"]
    model = timeline.build(store, "1s")
    out = tmp_path / "stream.json"
    sizes = []

    with Session.open(store) as s:

        def rows():
            for i, r in enumerate(detail.counter_rows(s, model)):
                if i % 500 == 499:
                    sizes.append(out.stat().st_size)
                yield r

        perfetto.write(model, perfetto_detail(s, model), str(out), rows())
    assert len(sizes) >= 2 and sizes[-1] > sizes[0]
    json.loads(out.read_text(encoding="utf-8"))


def perfetto_detail(session, model) -> dict:
    return {**detail.gather(session, model), "store": str(session.store.root)}


def write_export(store, model, fmt: str, path: str, limits: Limits | None = None) -> list[str]:
    """The export of `model` as `fmt` written to `path` as `forensics timeline -o` writes it; its notes."""
    with Session.open(store, limits=limits) as s:
        return timeline_export.write(detail.export(s, model, fmt), fmt, path)


# -- static chart -----------------------------------------------------------------------------------


def test_png_is_sized_for_an_issue(incident):
    png = incident["files"]["png"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1600, 900)
    assert len(png) > 60_000


def test_svg_parses_and_names_every_panel(incident):
    svg = incident["files"]["svg"]
    assert svg.stat().st_size > 60_000
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {"".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")}
    for title in ("prefill-0 (prefill)", "decode-0 (decode)", "decode-1 (decode)"):
        assert title in texts
    assert any(t.startswith("replies by class") for t in texts)
    (title,) = [t for t in texts if t.startswith("forensics timeline")]
    assert str(incident["store"].root) in title and f"{OFFSET_HOST} {OFFSET_S:+g} s" in title
    assert any(t.startswith("wedge (silence") for t in texts)
    assert sum(t.startswith("abort storm") for t in texts) == 3  # one storm, a band per host


def test_cli_writes_each_format_and_needs_a_file(incident, tmp_path):
    from click.testing import CliRunner

    from forensics.cli import main

    runner = CliRunner()
    out = tmp_path / "t.svg"
    r = runner.invoke(main, ["timeline", "--store", str(incident["store"].root), "--format", "svg", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert ET.parse(out).getroot().tag.endswith("svg")
    r = runner.invoke(main, ["timeline", "--store", str(incident["store"].root), "--format", "perfetto"])
    assert r.exit_code == 2 and "add -o FILE" in r.output


def test_a_stats_line_between_silent_buckets_is_drawn_as_a_dot():
    import numpy as np

    from forensics.reports.chart import isolated

    nan = np.nan
    y = np.array([1.0, nan, 2.0, 3.0, nan, 4.0])
    assert isolated(y).tolist() == [True, False, False, False, False, True]
    assert not isolated(np.array([nan, nan])).any()
