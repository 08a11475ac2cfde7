"""Blocks are cut between records: a traceback, chained ones included, stays in one block with
the line it belongs to, and folds into it whole."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from forensics.core import schema
from forensics.core.inputs import Scan
from forensics.parsers import lines, server_log
from forensics.parsers.lines import _line_cap, _record_cut
from forensics.parsers.server_log import passes as log_passes
from tests.helpers import parse_text

STATS = (
    "[2026-10-30 10:00:{s:02d} DP0 TP0] Decode batch, #running-req: 64, #token: 120000, token usage: 0.45, "
    "cuda graph: True, gen throughput (token/s): 2450.12, #queue-req: 0"
)
TRACEBACK = [
    "[2026-10-30 10:00:30 DP0 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2981, in run_scheduler_process',
    "    scheduler.event_loop_normal_disagg_decode()",
    '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 911, in transfer_worker',
    "    raise RuntimeError(",
    "RuntimeError: NIXL transfer failed: remote agent disconnected",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3001, in run_scheduler_process',
    "KeyError: 'rid'",
]
LOG = "\n".join([STATS.format(s=s) for s in range(20)] + TRACEBACK + [STATS.format(s=40 + s) for s in range(5)]) + "\n"


def test_the_cut_moves_back_to_the_head_of_the_record():
    buf = LOG.encode()
    head = buf.index(b"[2026-10-30 10:00:30")
    newlines = [i for i, c in enumerate(buf) if c == ord("\n")]
    for before, cut in zip(newlines, newlines[1:]):
        # the line ending at `cut` is the last whole one: the block ends before it, or before its
        # record's head when it carries on a traceback
        inside = head < before + 1 <= buf.index(b"KeyError")
        assert _record_cut(buf, cut, server_log.CONTINUES) == (head - 1 if inside else before), cut


def test_a_record_longer_than_the_look_back_is_cut_where_it_was(monkeypatch):
    buf = (STATS.format(s=0) + "\n" + STATS.format(s=1) + "\n" + "\n".join(["    x = f(y)"] * 50) + "\n").encode()
    cut = len(buf) - 1
    monkeypatch.setattr(lines, "RECORD_BACKTRACK", 200)
    assert _record_cut(buf, cut, server_log.CONTINUES) == cut
    monkeypatch.setattr(lines, "RECORD_BACKTRACK", 1 << 20)
    assert _record_cut(buf, cut, server_log.CONTINUES) == buf.index(b"\n")  # before the line the run belongs to
    first = buf.index(b"\n") + 1
    # its head is the buffer's first line: nowhere to cut before it
    assert _record_cut(buf[first:], cut - first, server_log.CONTINUES) == cut - first


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.slow
def test_any_block_size_gives_the_tables_of_one_block(monkeypatch, native):
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    whole, whole_ctx = parse_text(server_log, LOG)
    # the chained traceback, blank lines included, is one record
    assert "unparsed" not in whole and whole["events"]["traceback"][0].endswith("KeyError: 'rid'")
    assert whole["events"]["exc_type"][0] == "KeyError" and whole_ctx.continuation_lines == len(TRACEBACK) - 1
    # block sizes that cut the log on every line of the traceback
    for size in range(len(STATS) * 20, len(LOG), 37):
        got, ctx = parse_text(server_log, LOG, scan=Scan(block_bytes=size))
        assert (ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines) == (
            whole_ctx.parsed_lines,
            whole_ctx.continuation_lines,
            whole_ctx.unparsed_lines,
        ), size
        for t in whole:
            assert_frame_equal(schema.conform(t, got[t]), schema.conform(t, whole[t]))


def test_a_blank_line_away_from_a_traceback_chain_stays_a_blank_line():
    log = STATS.format(s=1) + "\n" + TRACEBACK[0] + "\n" + TRACEBACK[1] + "\n\n" + STATS.format(s=2) + "\n"
    tables, ctx = parse_text(server_log, log)
    assert tables["unparsed"]["reason"].to_list() == ["blank"] and ctx.continuation_lines == 1


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_chained_traceback_folds_whole_with_no_stats_line_around(monkeypatch, native):
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    tables, ctx = parse_text(server_log, "\n".join(TRACEBACK) + "\n")
    assert "unparsed" not in tables and ctx.continuation_lines == len(TRACEBACK) - 1


def test_formats_with_no_record_grammar_are_cut_at_the_last_newline():
    import io

    # the JSONL transfer traces: no `continues`, every block ends at its buffer's last newline
    blocks = list(lines.read_raw_blocks(io.BytesIO(LOG.encode()), 1000))
    for raw in blocks[:-1]:
        assert raw.body.obj.rfind(b"\n") == len(raw.body)
    assert sum(r.lines for r in blocks) == LOG.count("\n")


LINE_KINDS = [STATS.format(s=7), "x", "", "    at frame()", TRACEBACK[0], "KeyError: 'rid'", "é" * 40]


@given(
    st.lists(st.sampled_from(LINE_KINDS), max_size=60),
    st.booleans(),
    st.integers(16, 600),
    st.integers(1, 9),
    st.booleans(),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_blocks_keep_every_line_once_within_their_byte_and_line_bounds(rows, final_newline, size, max_lines, grammar):
    import io

    text = "\n".join(rows) + ("\n" if final_newline and rows else "")
    data = text.encode()
    blocks = list(
        lines.read_raw_blocks(io.BytesIO(data), size, None, server_log.CONTINUES if grammar else None, max_lines)
    )
    if not data:
        assert blocks == []
        return
    terminated = data.endswith(b"\n")  # an empty last row ends the text with a newline too
    assert b"\n".join(bytes(b.body) for b in blocks) == (data[:-1] if terminated else data)
    assert [b.line_no for b in blocks] == [1 + sum(b.lines for b in blocks[:i]) for i in range(len(blocks))]
    assert all(b.lines == bytes(b.body).count(b"\n") + 1 <= max_lines for b in blocks)
    assert [b.last for b in blocks] == [False] * (len(blocks) - 1) + [True]
    assert [b.unterminated for b in blocks] == [False] * (len(blocks) - 1) + [not terminated]


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.slow
def test_a_cap_on_lines_gives_the_tables_of_one_block(monkeypatch, native):
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    whole, whole_ctx = parse_text(server_log, LOG)
    capped = []
    monkeypatch.setattr(lines, "_line_cap", lambda *a: capped.append(a[-1]) or _line_cap(*a))
    # any cap that holds the traceback record (12 lines): the cuts then fall on every line of the log
    for cap in range(len(TRACEBACK), 40):
        got, ctx = parse_text(server_log, LOG, scan=Scan(max_block_lines=cap))
        assert (cap in capped) == (cap < LOG.count("\n")), cap  # the parser's blocks were cut by lines
        assert (ctx.lines, ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines) == (
            whole_ctx.lines,
            whole_ctx.parsed_lines,
            whole_ctx.continuation_lines,
            whole_ctx.unparsed_lines,
        ), cap
        for t in whole:
            assert_frame_equal(schema.conform(t, got[t]), schema.conform(t, whole[t]))


@given(st.lists(st.integers(1, 50), max_size=30), st.integers(1, 4), st.integers(1, 120))
@settings(max_examples=300, deadline=None)
def test_passes_keep_the_blocks_in_order_within_their_block_and_line_bounds(sizes, group, max_lines):
    blocks = [lines.RawBlock(b"", 1 + sum(sizes[:i]), n, False, i == len(sizes) - 1) for i, n in enumerate(sizes)]
    passes = list(log_passes._passes(iter(blocks), group, max_lines))
    assert [b for p in passes for b in p] == blocks
    assert all(1 <= len(p) <= group for p in passes)
    # a pass goes over the line bound only as one block alone
    assert all(sum(b.lines for b in p) <= max_lines or len(p) == 1 for p in passes)
    # and no pass ends early: the next one's first block would have broken a bound
    for p, nxt in zip(passes, passes[1:]):
        assert len(p) == group or sum(b.lines for b in p) + nxt[0].lines > max_lines


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_bound_on_the_lines_of_a_pass_gives_the_tables_of_one_block(monkeypatch, native):
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    whole, whole_ctx = parse_text(server_log, LOG)
    seen = []
    passes = log_passes._passes
    monkeypatch.setattr(log_passes, "_passes", lambda *a: (seen.append([b.lines for b in p]) or p for p in passes(*a)))
    grouped = set()
    for bound in (13, 20, 26, 30, 39, 1000):
        seen.clear()
        got, ctx = parse_text(server_log, LOG, scan=Scan(max_block_lines=13, group_blocks=3, pass_lines=bound))
        assert sum(map(sum, seen)) == LOG.count("\n") and all(sum(p) <= bound or len(p) == 1 for p in seen), bound
        grouped |= {len(p) for p in seen}
        assert (ctx.lines, ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines) == (
            whole_ctx.lines,
            whole_ctx.parsed_lines,
            whole_ctx.continuation_lines,
            whole_ctx.unparsed_lines,
        ), bound
        for t in whole:
            assert_frame_equal(schema.conform(t, got[t]), schema.conform(t, whole[t]))
    assert grouped == ({1, 2, 3} if native == "1" else {1})  # the polars path reads a block a pass
