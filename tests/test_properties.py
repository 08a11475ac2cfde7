"""Property tests: no input makes a parser raise, and the line accounting always holds."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.parsers import server_log
from tests.helpers import parse_text

FRAGMENTS = [
    "[2026-10-30 10:00:05 DP1 TP1] ",
    "Decode batch, ",
    "Prefill batch. ",
    "#running-req: 3, ",
    "token usage: 0.1",
    "Traceback (most recent call last):",
    '  File "x.py", line 1',
    "ValueError: x",
    "\t",
    "\r",
    "\x00",
    "\xff",
    "2026-03-24T12:06:11.864923140+08:00 stderr P ",
    '{"log":"',
    "I0801 15:40:04.429156 1 a.cc:1] ",
    "[1754062805.042276] [h:1 :0] a.c:1 UCX ERROR ",
    "bootstrap_room=99999999999999999999",
    "rid='",
    "\u202e",
]

lines = st.lists(st.one_of(st.text(max_size=80), st.sampled_from(FRAGMENTS)), max_size=6).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, max_size=30), st.booleans())
@pytest.mark.slow
def test_server_log_never_raises_and_accounts_every_line(ls, final_newline):
    text = "\n".join(ls) + ("\n" if final_newline and ls else "")
    data = text.encode("utf-8", "surrogatepass")
    tables, ctx = parse_text(server_log, data)
    n = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert ctx.lines == n
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    rows = sum(tables[t].height for t in ("batches", "events", "unparsed") if t in tables)
    assert rows == ctx.parsed_lines + ctx.unparsed_lines


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_server_log_on_arbitrary_bytes(data):
    tables, ctx = parse_text(server_log, data)
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
