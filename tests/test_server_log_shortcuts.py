"""The cheaper forms server_log uses give what the plain regexes give, on any text."""

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.parsers.server_log import classify, grammar

ACCESS = [
    'INFO:     10.82.2.111:33402 - "POST /generate HTTP/1.1" 200 OK',
    'INFO:  1.2.3.4:5 - "GET /h HTTP/1.0" 503 x',
    '10.0.0.1 - - [12/Oct/2024:10:00:00 +0000] "GET /x HTTP/1.1" 200 5',
]
PIECES = ACCESS + [
    "INFO:",
    "WARNING:",
    "TRACE:",
    " ",
    "\t",
    "\n",
    "\u00a0",
    '"',
    "-",
    " - ",
    "[x] ",
    "HTTP/2",
    "200",
    "2000",
    "\u0663",
    "\u00e9",
    "Receive: ",
    "Finish: ",
    "Prefill transfer failed",
    "NIXL",
    "ABORT",
    "KVPoll.WaitingForInput",
    "timed out after 5ms",
    "checksum mismatch",
    "4127750395128840213_kv_0_1",
]
texts = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(PIECES)), max_size=8).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, min_size=1, max_size=40))
def test_shortcuts_match_the_plain_regexes(rows):
    m = pl.Series("message", rows, dtype=pl.Utf8)
    msg = pl.col("message")
    d = m.to_frame()
    want = d.select(msg.str.extract(grammar.RE_UVICORN_LEVEL, 1)).to_series().to_list()
    assert d.select(classify._uvicorn_level(msg)).to_series().to_list() == want
    for rules, default in ((grammar.KIND_RULES, "log"), (grammar.REASON_RULES, None)):
        want = d.select(classify._kind_expr(rules, "message", default)).to_series().to_list()
        assert classify._first_kind(m, rules, default).to_list() == want


def test_no_event_lines_give_the_columns_of_the_full_path(monkeypatch):
    """`_event_fields` of no rows is computed once per schema and zone and then copied: the tables
    of a log without event lines are the same with the copy and with the whole computation."""
    from forensics.parsers import server_log
    from forensics.parsers.server_log import events, passes
    from tests.helpers import parse_text

    text = (
        "[2026-11-20 14:00:01 DP0 TP0] Decode batch. #running-req: 3, #token: 4096, token usage: 0.10, "
        "gen throughput (token/s): 512.00, #queue-req: 0, \n"
    )
    for tz in ("UTC", "Asia/Shanghai"):
        cached = [parse_text(server_log, text, tz=tz)[0] for _ in range(2)]
        monkeypatch.setattr(events, "_NO_EVENTS", {})
        monkeypatch.setattr(events, "_event_fields", events._event_fields_of)
        monkeypatch.setattr(passes, "_event_fields", events._event_fields_of)
        whole, _ = parse_text(server_log, text, tz=tz)
        monkeypatch.undo()
        for got in cached:
            assert got.keys() == whole.keys() and "batches" in got
            for t in whole:
                assert got[t].equals(whole[t]), t
    assert events._NO_EVENTS, "the empty frame was not kept"
