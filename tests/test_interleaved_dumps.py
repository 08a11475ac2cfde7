"""Two writers on one stderr, and frames with no exception (docs/formats/SGLANG.md, "Interleaved
writers and lone frames"): a crash head or a glog line that ran into another writer's unfinished
line is a record of its own, the text before it the line's prefix, and the frames after it fold
into it as under a head of its own line; a frame line alone shows no exception and opens none."""

from __future__ import annotations

import polars as pl
import pytest

from forensics.parsers import native, server_log
from tests.helpers import parse_text

STATS = (
    "[2026-03-02 08:20:00 DP0 TP0] Decode batch, #running-req: 12, #token: 4096, token usage: 0.11, "
    "cuda graph: True, gen throughput (token/s): 512.30, #queue-req: 0\n"
)
# a scheduler's traceback cut mid-frame by faulthandler writing from the same process group
FAULTHANDLER = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/site-packages/sglang/srt/utils.pyFatal Python error: Segmentation fault\n'
    "\n"
    "Current thread 0x00007f2a11d4e740 (most recent call first):\n"
    '  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 745 in recv_requests\n'
    '  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 702 in event_loop_normal\n'
    "\n"
    "Extension modules: torch._C, zmq.backend.cython._zmq (total: 2)\n"
)
# UCX's handler, bracket and all, run into a frame line that had not ended
UCX = (
    '  File "/usr/lib/python3.10/site-packages/sglang/srt/utils.py", line 12[node-7:3301:0:3390] Caught signal 11 '
    "(Segmentation fault: address not mapped to object at address 0x8)\n"
    "==== backtrace (tid:   3390) ====\n"
    " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2dc) [0x7f0a5c11f2dc]\n"
    " 1  /opt/nixl/lib/plugins/libplugin_UCX.so(nixlUcxEngine::progress()+0x41) [0x7f0a4b2a0c41]\n"
    "=================================\n"
)
GLOG = "worker 3 is waiting forE0917 16:23:13.419399  4242 nixl_agent.cpp:812] postXferReq failed: NIXL_ERR_BACKEND\n"
LONE_FRAME = (
    '  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 702, in event_loop_normal\n'
)
QUOTED = (
    "[2026-03-02 08:20:01 TP0] Scheduler subprocess stderr: Fatal Python error: Segmentation fault\n"
    '[2026-03-02 08:20:02 TP0] last words were "Fatal Python error: Aborted"\n'
)


def _parse(text: str, name: str = "stderr.log"):
    tables, ctx = parse_text(server_log, text, name=name)
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    return tables, ctx


def _events(tables) -> pl.DataFrame:
    return tables.get("events", pl.DataFrame(schema={"kind": pl.Utf8, "source": pl.Utf8}))


@pytest.fixture(params=["0", "1"] if native.enabled() else ["0"], ids=lambda f: f"native={f}")
def engine(request, monkeypatch):
    monkeypatch.setenv("FORENSICS_NATIVE", request.param)


def test_a_faulthandler_head_glued_onto_a_frame_line_is_one_crash(engine):
    tables, ctx = _parse(STATS + FAULTHANDLER)
    ev = _events(tables)
    crash = ev.filter(pl.col("kind") == "crash")
    assert crash.height == 1, ev
    row = crash.row(0, named=True)
    assert (row["line_no"], row["reason"], row["severity"], row["source"]) == (3, "sigsegv", "fatal", "crash")
    assert row["message"] == "Fatal Python error: Segmentation fault"
    assert row["prefix"] == '  File "/usr/lib/python3.10/site-packages/sglang/srt/utils.py'
    assert row["ts_raw"] is None
    # the thread header, both frames, the module list and the blank lines between are the crash's
    assert "line 745 in recv_requests" in row["traceback"] and "Extension modules" in row["traceback"]
    assert ctx.continuation_lines == 6
    # the traceback the dump cut short is its own record: a header, no frame, nothing raised
    assert ev.filter(pl.col("line_no") == 2)["kind"].to_list() == ["exception"]
    assert "unparsed" not in tables


def test_a_ucx_signal_glued_mid_line_takes_its_backtrace(engine):
    tables, ctx = _parse(STATS + UCX)
    ev = _events(tables)
    assert ev["kind"].to_list() == ["crash"]
    row = ev.row(0, named=True)
    assert (row["line_no"], row["reason"]) == (2, "sigsegv")
    assert row["message"].startswith("[node-7:3301:0:3390] Caught signal 11 (Segmentation fault")
    assert row["prefix"].endswith('utils.py", line 12')
    assert "nixlUcxEngine::progress()" in row["traceback"] and row["traceback"].endswith("=" * 33)
    assert ctx.continuation_lines == 4 and "unparsed" not in tables


def test_a_glog_line_glued_mid_line_is_the_librarys_error_with_its_time(engine):
    tables, ctx = _parse(STATS + GLOG)
    ev = _events(tables)
    assert ev.height == 1
    row = ev.row(0, named=True)
    assert (row["kind"], row["source"], row["ts_raw"]) == ("nixl_error", "glog", "E0917 16:23:13.419399")
    assert row["message"] == "postXferReq failed: NIXL_ERR_BACKEND"
    assert row["prefix"] == "worker 3 is waiting for"
    assert row["ts"].month == 9 and row["ts"].day == 17 and row["ts"].second == 13
    assert "unparsed" not in tables


@pytest.mark.parametrize("before", ["", STATS], ids=["at_start", "after_stats"])
def test_a_lone_frame_line_is_no_exception(engine, before):
    tables, ctx = _parse(before + LONE_FRAME)
    assert _events(tables).height == 0
    un = tables["unparsed"]
    assert un["line_no"].to_list() == [before.count("\n") + 1]
    assert un["reason"].to_list() == ["orphan_continuation"]
    assert ctx.unparsed_lines == 1


def test_a_tail_that_says_what_was_raised_still_opens_its_record(engine):
    text = LONE_FRAME + "    self.recv_from_tokenizer()\nConnectionResetError: [Errno 104] Connection reset by peer\n"
    tables, ctx = _parse(text)
    ev = _events(tables)
    assert ev.select("line_no", "kind", "exc_type").rows() == [(1, "exception", "ConnectionResetError")]
    assert "unparsed" not in tables and ctx.continuation_lines == 2


def test_an_sglang_line_quoting_a_crash_head_stays_its_own_line(engine):
    tables, ctx = _parse(QUOTED)
    ev = _events(tables)
    assert ev.height == 2 and "crash" not in ev["kind"].to_list()
    assert set(ev["source"]) == {"sglang"} and ev["prefix"].to_list() == [None, None]
    assert ev["message"][0] == "Scheduler subprocess stderr: Fatal Python error: Segmentation fault"


@pytest.mark.parametrize(
    "line",
    [
        "the child said: Fatal Python error: Aborted",
        "see 'Fatal Python error: Segmentation fault' in the docs",
        "hint: grep for Caught signal 11 (Segmentation fault) in stderr",
        "INFO:     10.0.0.3:5512 - E0917 16:23:13.419399  4242 a.cpp:1] quoted",
    ],
)
def test_a_head_after_a_space_or_a_quote_splits_nothing(engine, line):
    tables, _ = _parse(line + "\n")
    ev = _events(tables)
    assert "crash" not in ev["kind"].to_list() and "glog" not in ev["source"].to_list()
    for t in tables.values():
        if "prefix" in t.columns:
            assert t["prefix"].to_list() == [None] * t.height


@pytest.mark.parametrize(
    "text, prefix, reason",
    [
        (
            '  File "/usr/lib/python3.10/site-packages/sglang/srt/utils.py", line 12Caught signal 11 (Segmentation '
            "fault: address not mapped to object at address 0x8)\n==== backtrace (tid:   3390) ====\n"
            " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2dc) [0x7f0a5c11f2dc]\n=================================\n",
            '  File "/usr/lib/python3.10/site-packages/sglang/srt/utils.py", line 12',
            "sigsegv",
        ),
        (
            "Loading safetensors shards 3/8!!!!!!! Segfault encountered !!!!!!!\n"
            '  File "<unknown>", line 0, in cuEventQuery\n',
            "Loading safetensors shards 3/8",
            "sigsegv",
        ),
    ],
    ids=["ucx_without_bracket", "torch_banner"],
)
def test_the_other_heads_glued_mid_line_are_one_crash_each(engine, text, prefix, reason):
    tables, ctx = _parse(text)
    ev = _events(tables)
    assert ev.select("line_no", "kind", "reason", "prefix", "ts_raw").rows() == [(1, "crash", reason, prefix, None)]
    assert ctx.continuation_lines == text.count("\n") - 1 and "unparsed" not in tables
