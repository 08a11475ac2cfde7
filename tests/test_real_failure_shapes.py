"""Failure, crash and foreign-line shapes of real servers (docs/formats/SGLANG.md, "What real dumps carry"), checked by
value on the real excerpts (tests/conftest.py's REAL_LOGS and its mooncake_incident/): every failure line is a failure
event with the room it names, every line is accounted, and both parser paths give one table."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
from click.testing import CliRunner

from forensics.parsers import server_log
from forensics.parsers.server_log import grammar
from tests.conftest import REAL_LOGS, ingest_paths, missing, sql
from tests.helpers import parse_text

FILES = (
    sorted(REAL_LOGS.glob("*.log")) + sorted(REAL_LOGS.glob("mooncake_incident/*.log")) if REAL_LOGS.is_dir() else []
)
IDS = [p.name for p in FILES]

# Failure lines, found here with plain regexes on the raw text, independently of the grammar.
FAILURE_TEXT = re.compile(
    r"transfer failed|bootstrap failed|handshake failed|KVTransferError|Error fetching prefill parallel info"
    r"|Could not fetch prefill parallel info|Failed to get kvcache|Aborted by AbortReq|Unexpected transfer worker error"
    r"|Context corruption detected|[Cc]hecksum mismatch|Lost connection with prefill|NIXL transfer encountered ERR"
    r"|Child process unexpectedly failed|Segfault encountered|Fatal Python error|Caught signal [0-9]+ \("
    r"|watchdog timeout|Health check failed"
)
# the room a line names, in the spellings a reader would search for
ROOM_TEXT = re.compile(r"bootstrap_room[=:] ?([0-9]+)|\broom[= ]([0-9]+)|for room ([0-9]+)")
# a request log quoting an abort reason is the request's finish, not a failure line of its own
REQUEST_LOG = re.compile(r"\b(?:Finish|Receive): obj=|\"event\": ?\"request\.")


def _lines(path) -> list[str]:
    return path.read_bytes().decode("utf-8", "replace").splitlines()


def _failure_row(rows: dict[int, dict], lines: list[str], line_no: int) -> dict | None:
    """The event a failure line is: its own, or the record it is folded into (the last line of a
    traceback, `...KVTransferError: KVTransferError(bootstrap_room=N): ...`)."""
    if line_no in rows:
        return rows[line_no]
    text = lines[line_no - 1].strip()
    head = max((n for n in rows if n < line_no), default=None)
    if head is not None and text in (rows[head].get("traceback") or ""):
        return rows[head]
    return None


def _expected_failures(path) -> dict[int, int | None]:
    """line number -> the room the line names (None: it names none), for every failure line."""
    out = {}
    for i, line in enumerate(_lines(path), 1):
        if FAILURE_TEXT.search(line) and not REQUEST_LOG.search(line):
            m = ROOM_TEXT.search(line)
            out[i] = int(next(g for g in m.groups() if g)) if m else None
    return out


@pytest.fixture(scope="module")
def parsed():
    if not FILES:
        missing("the real excerpts are not present")
    cache = {}
    for p in FILES:
        cache[p.name] = parse_text(server_log, p.read_bytes(), name=p.name)
    return cache


@pytest.mark.real_data
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_failure_line_is_a_failure_event_with_its_room(parsed, path):
    tables, _ = parsed[path.name]
    ev = tables.get("events", pl.DataFrame(schema={"line_no": pl.Int64, "kind": pl.Utf8, "bootstrap_room": pl.Int64}))
    by_line = {r["line_no"]: r for r in ev.iter_rows(named=True)}
    lines = _lines(path)
    for line_no, room in _expected_failures(path).items():
        row = _failure_row(by_line, lines, line_no)
        assert row is not None, (path.name, line_no, "not an event")
        assert row["kind"] in grammar.FAILURE_KINDS, (path.name, line_no, row["kind"])
        if room is not None:
            assert row["bootstrap_room"] == room, (path.name, line_no)


@pytest.mark.real_data
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_line_is_accounted(parsed, path):
    _, ctx = parsed[path.name]
    raw = path.read_bytes()
    n = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    assert ctx.lines == n == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines


@pytest.mark.real_data
def test_failure_lines_found_with_their_room_overall(parsed):
    """The recovery over all excerpts, the figure the parser is held to (at least 97%)."""
    total = found = 0
    for p in FILES:
        ev = parsed[p.name][0].get("events")
        rows = {} if ev is None else {r["line_no"]: r for r in ev.iter_rows(named=True)}
        lines = _lines(p)
        for line_no, room in _expected_failures(p).items():
            total += 1
            r = _failure_row(rows, lines, line_no)
            found += (
                r is not None and r["kind"] in grammar.FAILURE_KINDS and (room is None or r["bootstrap_room"] == room)
            )
    assert total > 0 and found / total >= 0.97, (found, total)


BOOTSTRAP_26 = "26_pd_mooncake_decode_bootstrap_fetch_refused_v058.log"


@pytest.fixture(scope="module")
def store_26(tmp_path_factory):
    path = REAL_LOGS / "mooncake_incident" / BOOTSTRAP_26
    if not path.is_file():
        missing(f"{BOOTSTRAP_26} is not among the real excerpts")
    d = tmp_path_factory.mktemp("real26")
    ingest_paths([path], d, jobs=1)
    return d


@pytest.mark.real_data
def test_bootstrap_fetch_refused_is_a_failure_in_events(store_26):
    df = sql(
        store_26,
        "SELECT line_no, kind, severity, reason, bootstrap_room, tp_rank FROM events "
        "WHERE message LIKE 'Error fetching prefill parallel info%' ORDER BY line_no",
    )
    assert df["line_no"].to_list() == [1, 2, 3, 4, 5, 6, 7]
    assert set(df["kind"]) == {"bootstrap_failed"} and set(df["severity"]) == {"error"}
    assert set(df["reason"]) == {"bootstrap_unreachable"}
    assert df["bootstrap_room"].null_count() == 7  # the line names no room, and takes none from its neighbours
    assert sorted(df["tp_rank"]) == [0, 1, 2, 3, 5, 6, 7]


@pytest.mark.real_data
def test_bootstrap_fetch_refused_is_in_the_timeline_failures(store_26):
    from forensics.cli import main

    r = CliRunner().invoke(main, ["timeline", "--store", str(store_26), "--format", "json", "--bucket", "60s"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    rows = [dict(zip(doc["columns"], row)) for row in doc["rows"]] if isinstance(doc["rows"][0], list) else doc["rows"]
    reasons: dict[str, int] = {}
    signals: dict[str, int] = {}
    for row in rows:
        for x in row["failures_by_reason"] or []:
            reasons[x["reason"]] = reasons.get(x["reason"], 0) + x["n"]
        for x in row["signals_by_host"] or []:
            signals[x["reason"]] = signals.get(x["reason"], 0) + x["n"]
    # the fetch errors name no request: failure signals of the host, not failure lines of a request
    assert signals.get("bootstrap_unreachable") == 7 and "bootstrap_unreachable" not in reasons
    assert reasons.get("bootstrap_info") == 8 and reasons.get("node_failure") == 7
    assert sum(row["failed_requests"] for row in rows) == 2


# --- the shapes' samples, on both parser paths ---------------------------------------------------
SHAPES = [
    "bootstrap_fetch_refused",
    "launcher_child_crash",
    "crash_dump_torch_segfault",
    "crash_dump_faulthandler",
    "crash_dump_ucx_signal",
    "ucx_without_head",
    "sgl_router_rust",
    "aiohttp_bootstrap_access_and_glog_notice",
    "traceback_tail_at_excerpt_start",
    "exception_names_its_room_in_its_last_line",
    "kvtransfererror_alone_at_excerpt_start",
]
SAMPLES = {s.name: s for s in server_log.samples}


@pytest.mark.parametrize("name", SHAPES)
def test_crash_dumps_and_tails_are_one_record_each(name):
    """Every line of a shape's sample is parsed or folded: nothing is left unparsed."""
    tables, ctx = parse_text(server_log, SAMPLES[name].text, name=f"{name}.log")
    assert "unparsed" not in tables, tables.get("unparsed")
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines


def test_crash_dump_frames_are_folded_into_the_crash():
    tables, ctx = parse_text(server_log, SAMPLES["crash_dump_faulthandler"].text, name="fh.log")
    ev = tables["events"]
    assert ev.height == 1 and ctx.continuation_lines == 9
    assert "line 1234 in event_loop_overlap" in ev["traceback"][0]
    tables, ctx = parse_text(server_log, SAMPLES["crash_dump_ucx_signal"].text, name="ucx.log")
    assert tables["events"].height == 1 and ctx.continuation_lines == 4
    assert "ucs_handle_error" in tables["events"]["traceback"][0]


def test_a_dotted_traceback_header_opens_a_record():
    text = (
        "[2026-03-01 10:00:00 TP0] Decode batch, #running-req: 1, #token: 208, token usage: 0.00, #queue-req: 0\n"
        ".Traceback (most recent call last):\n"
        '  File "/t/test_pd.py", line 40, in test_transfer\n'
        "    self.assertEqual(a, b)\n"
        "AssertionError: 1 != 2\n"
    )
    tables, ctx = parse_text(server_log, text, name="dots.log")
    ev = tables["events"]
    assert ev.height == 1 and ev["kind"][0] == "exception" and ev["exc_type"][0] == "AssertionError"
    assert ctx.continuation_lines == 3 and "unparsed" not in tables


@pytest.mark.native
@pytest.mark.parametrize("name", SHAPES)
def test_shapes_both_ways(monkeypatch, name):
    from tests.test_native import assert_same

    assert_same(SAMPLES[name].text.encode(), monkeypatch)


@pytest.mark.native
@pytest.mark.real_data
@pytest.mark.parametrize(
    "path",
    [p for p in FILES if p.parent.name == "mooncake_incident"],
    ids=[p.name for p in FILES if p.parent.name == "mooncake_incident"],
)
def test_mooncake_incident_both_ways(monkeypatch, path):
    from tests.test_native import assert_same

    assert_same(path.read_bytes(), monkeypatch)
