"""Native and Python crash dumps are logs (docs/formats/SGLANG.md, "Crashes and signals" and "Crash dumps"): a file holding only a crash is
read as a server log, whatever its name, and each crash is ONE `crash` event (severity fatal)
with its frames folded into `traceback`, in every shape a dump takes."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics.core import schema
from forensics.core.inputs import Scan
from forensics.ingest import sniff
from forensics.parsers import native, server_log
from forensics.parsers.base import Source
from tests.conftest import ingest_paths, sql
from tests.helpers import parse_text

# torch's handler: the banner, then the native frames of the thread that faulted
TORCH = (
    "!!!!!!! Segfault encountered !!!!!!!\n"
    '  File "<unknown>", line 0, in nixlUcxSharedThread::run()\n'
    '  File "<unknown>", line 0, in std::thread::_State_impl<std::thread::_Invoker<std::tuple<'
    "nixlUcxSharedThread::start()::{lambda()#1}> > >::_M_run()\n"
    '  File "<unknown>", line 0, in execute_native_thread_routine\n'
    '  File "<unknown>", line 0, in start_thread\n'
    '  File "<unknown>", line 0, in clone\n'
)
# UCX's own handler: the signal, then its numbered backtrace between two rules
UCX = (
    "[gpu-node-3:88123:0:88410] Caught signal 11 (Segmentation fault: address not mapped to object at address "
    "0x18)\n"
    "==== backtrace (tid:  88410) ====\n"
    " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2dc) [0x7f11c8a1f2dc]\n"
    " 1  /opt/ucx/lib/libucs.so.0(+0x2e4cc) [0x7f11c8a1f4cc]\n"
    " 2  /usr/lib/x86_64-linux-gnu/libc.so.6(+0x42520) [0x7f12a1042520]\n"
    " 3  /opt/nixl/lib/plugins/libplugin_UCX.so(nixlUcxSharedThread::run()+0x98) [0x7f11b9c31a18]\n"
    "=================================\n"
)
# faulthandler on SIGABRT: one block per thread, blank lines between, the module list last
ABORTED = (
    "Fatal Python error: Aborted\n"
    "\n"
    "Thread 0x00007f3e7dfff640 (most recent call first):\n"
    '  File "/usr/lib/python3.10/threading.py", line 320 in wait\n'
    '  File "/usr/lib/python3.10/threading.py", line 607 in wait\n'
    "\n"
    "Thread 0x00007f3f0b7fe640 (most recent call first):\n"
    '  File "/opt/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 912 in _transfer_worker\n'
    '  File "/usr/lib/python3.10/threading.py", line 953 in run\n'
    "\n"
    "Current thread 0x00007f40a2e4b740 (most recent call first):\n"
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 1021 in event_loop_normal\n'
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2977 in run_scheduler_process\n'
    "\n"
    "Extension modules: numpy.core._multiarray_umath, torch._C, zmq.backend.cython.context (total: 3)\n"
)
SEGV = (
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Current thread 0x00007f40a2e4b740 (most recent call first):\n"
    '  File "/opt/sglang/python/sglang/srt/disaggregation/decode.py", line 640 in pop_transferred\n'
)
# a backtrace whose signal line was never captured: the banner heads the crash
BACKTRACE_ONLY = (
    "==== backtrace (tid:   9120) ====\n"
    " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2dc) [0x7f11c8a1f2dc]\n"
    " 1  /opt/mooncake/lib/libtransfer_engine.so(mooncake::RdmaEndPoint::submitPostSend+0x1a4) [0x7f0e2c11a1a4]\n"
    "=================================\n"
)
# the same dump as some pastes and terminal captures give it: a blank line after every line, two
# between the threads
SPACED = "\n\n".join(ABORTED.replace("\n\nThread", "\n\n\nThread").splitlines()) + "\n"
STATS = (
    "[2026-03-02 08:20:00 DP0 TP0] Decode batch, #running-req: 12, #token: 4096, token usage: 0.11, "
    "cuda graph: True, gen throughput (token/s): 512.30, #queue-req: 0\n"
)

SHAPES = {
    "torch_segfault": (TORCH, "sigsegv", "nixlUcxSharedThread::run()"),
    "ucx_signal": (UCX, "sigsegv", "libplugin_UCX.so(nixlUcxSharedThread::run()+0x98)"),
    "faulthandler_aborted": (ABORTED, "sigabrt", "line 912 in _transfer_worker"),
    "faulthandler_segv": (SEGV, "sigsegv", "line 640 in pop_transferred"),
    "faulthandler_spaced": (SPACED, "sigabrt", "line 2977 in run_scheduler_process"),
    "backtrace_without_its_signal": (BACKTRACE_ONLY, "other", "mooncake::RdmaEndPoint::submitPostSend"),
}


def _crashes(text: str, name: str = "crash.txt") -> pl.DataFrame:
    tables, ctx = parse_text(server_log, text, name=name)
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    return tables["events"].filter(pl.col("kind") == "crash")


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_is_one_crash_with_its_frames(shape):
    text, reason, frame = SHAPES[shape]
    tables, ctx = parse_text(server_log, text, name="crash.txt")
    ev = tables["events"]
    assert ev.height == 1, ev
    row = ev.row(0, named=True)
    assert (row["kind"], row["severity"], row["reason"], row["line_no"]) == ("crash", "fatal", reason, 1)
    assert frame in row["traceback"]
    # every line of the dump is the crash's: its head parsed, the rest folded in (a blank line
    # inside a faulthandler dump included)
    assert ctx.unparsed_lines == 0 and ctx.continuation_lines == text.count("\n") - 1


@pytest.mark.parametrize("shape", SHAPES)
def test_a_crash_dump_alone_is_a_log_whatever_its_name(tmp_path, shape):
    text = SHAPES[shape][0]
    for name in ("crash.txt", "stderr", "core-dump-notes.out"):
        path = tmp_path / name
        path.write_text(text)
        assert server_log.sniff(text.encode(), name) >= 0.5
        src = Source(path=name, fs_path=str(path), size=path.stat().st_size)
        assert sniff.choose_parser(src, None) is server_log, name


def test_two_crashes_in_one_dump_are_two_events():
    text = SEGV + UCX
    ev = _crashes(text)
    assert ev["line_no"].to_list() == [1, SEGV.count("\n") + 1]
    assert ev["reason"].to_list() == ["sigsegv", "sigsegv"]
    assert "pop_transferred" in ev["traceback"][0] and "libucs.so.0" not in ev["traceback"][0]
    assert "ucs_handle_error" in ev["traceback"][1]


def test_a_crash_glued_into_an_sglang_log_is_its_own_record():
    text = (
        STATS
        + TORCH
        + "[2026-03-02 08:20:03] Child process unexpectedly failed with an exit code 139. pid=4412\n"
        + STATS
    )
    tables, _ = parse_text(server_log, text, name="sglang.log")
    assert tables["batches"].height == 2
    ev = _crashes(text, "sglang.log")
    assert ev["line_no"].to_list() == [2, 2 + TORCH.count("\n")]
    assert ev["source"].to_list() == ["crash", "sglang"]
    assert ev["traceback"][0].count("\n") == TORCH.count("\n") - 2  # the banner's frames, no more
    # the dump prints no time: it came after the stats line above it, and says so by a null ts_raw
    assert ev["ts"][0] == tables["batches"]["ts"][0] and ev["ts_raw"][0] is None


def test_a_crash_alone_has_no_time():
    tables, ctx = parse_text(server_log, UCX, name="crash.txt")
    assert tables["events"]["ts"][0] is None
    assert not any("crash dumps without a time" in n for n in ctx.notes)


def test_a_frame_banner_under_another_record_opens_a_crash():
    """A thread dump printed after an ordinary event line is no part of that line."""
    text = (
        "[2026-03-02 08:20:05 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='ab12' "
        "decode_req.req.bootstrap_room=4751139391711345681 with exception KVTransferError(bootstrap_room="
        "4751139391711345681): Failed to get kvcache from prefill instance, it might be dead\n"
        "Current thread 0x00007f40a2e4b740 (most recent call first):\n"
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 1021 in event_loop_normal\n'
    )
    tables, _ = parse_text(server_log, text, name="decode.log")
    ev = tables["events"]
    assert ev["kind"].to_list() == ["transfer_failed", "crash"]
    assert ev["traceback"][0] is None
    assert "event_loop_normal" in ev["traceback"][1]


def test_crash_dumps_in_a_dump_folder_are_ingested_not_skipped(tmp_path):
    dump = tmp_path / "incident"
    (dump / "decode-0").mkdir(parents=True)
    (dump / "decode-0" / "sglang.log").write_text(STATS + TORCH + STATS)
    (dump / "decode-0" / "crash.txt").write_text(UCX)
    (dump / "prefill-0").mkdir()
    (dump / "prefill-0" / "faulthandler.txt").write_text(ABORTED + SEGV)
    store = tmp_path / "store"
    ingest_paths([dump], store)
    files = sql(store, "SELECT path, status, format FROM files ORDER BY path")
    assert files["status"].to_list() == ["ingested"] * 3
    assert set(files["format"]) == {"server_log"}
    crashes = sql(
        store,
        "SELECT host, severity, reason, traceback FROM events WHERE kind = 'crash' ORDER BY host, source_file, line_no",
    )
    assert crashes["host"].to_list() == ["decode-0", "decode-0", "prefill-0", "prefill-0"]
    assert set(crashes["severity"]) == {"fatal"}
    assert crashes["reason"].to_list() == ["sigsegv", "sigsegv", "sigabrt", "sigsegv"]
    assert all(tb for tb in crashes["traceback"])


@pytest.mark.skipif(not native.enabled(), reason="native scanner not built (no C compiler at install)")
@pytest.mark.parametrize("block_bytes", [None, 256])
def test_both_engines_agree_on_crash_dumps(monkeypatch, block_bytes):
    # a spaced dump longer than a 256-byte block is cut where no block may start (parsers/lines.py):
    # it is checked in whole blocks only
    spaced = "" if block_bytes else STATS + SPACED
    text = (STATS + TORCH + STATS + UCX + STATS + BACKTRACE_ONLY + ABORTED + STATS + SEGV + spaced).encode()
    scan = {"scan": Scan(block_bytes=block_bytes, group_blocks=3)} if block_bytes else {}
    out = []
    for flag in ("0", "1"):
        monkeypatch.setenv("FORENSICS_NATIVE", flag)
        tables, ctx = parse_text(server_log, text, name="mixed.log", **scan)
        acct = (ctx.lines, ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines, ctx.notes)
        out.append(({t: schema.conform(t, df) for t, df in tables.items()}, acct))
    (want, wa), (got, ga) = out
    assert wa == ga and sorted(want) == sorted(got)
    for t in want:
        assert_frame_equal(got[t], want[t], check_exact=True)
    assert got["events"].filter(pl.col("kind") == "crash").height == (5 if block_bytes else 6)


FRAMES = {
    "torch_segfault": [
        "<unknown>:0 nixlUcxSharedThread::run()",
        "<unknown>:0 std::thread::_State_impl<std::thread::_Invoker<std::tuple<nixlUcxSharedThread::start()::{lambda()#1}> "
        "> >::_M_run()",
        "<unknown>:0 execute_native_thread_routine",
    ],
    "ucx_signal": ["libplugin_UCX.so nixlUcxSharedThread::run()"],
    "faulthandler_aborted": ["scheduler.py:1021 event_loop_normal", "scheduler.py:2977 run_scheduler_process"],
    "faulthandler_segv": ["decode.py:640 pop_transferred"],
    "faulthandler_spaced": ["scheduler.py:1021 event_loop_normal", "scheduler.py:2977 run_scheduler_process"],
    "backtrace_without_its_signal": ["libtransfer_engine.so mooncake::RdmaEndPoint::submitPostSend"],
}


def test_the_evidence_names_each_crashs_innermost_frames(tmp_path):
    """The frames a person reads first: the faulting thread's innermost three with file and line,
    past UCX's own handler; in the Markdown and the JSON evidence alike."""
    import json

    from click.testing import CliRunner

    from forensics.cli import main

    for shape in SHAPES:
        (tmp_path / "dump" / shape.replace("_", "-")).mkdir(parents=True)
        (tmp_path / "dump" / shape.replace("_", "-") / "crash.txt").write_text(SHAPES[shape][0])
    store = str(tmp_path / "store")
    ingest_paths([tmp_path / "dump"], store)
    r = CliRunner().invoke(main, ["evidence", "--store", store, "--format", "json"])
    assert r.exit_code == 0, r.output
    got = {row["host"]: row["frames"] for row in json.loads(r.stdout)["servers"]["crashes"]}
    assert got == {shape.replace("_", "-"): FRAMES[shape][:3] for shape in SHAPES}
    md = CliRunner().invoke(main, ["evidence", "--store", store]).stdout
    assert "innermost frames" in md and "scheduler.py:1021 event_loop_normal; scheduler.py:2977" in md


C10_WATCHDOG = next(s.text for s in server_log.samples if s.name == "c10_frames_fold_into_the_watchdog_line")
C10_TERMINATE = next(s.text for s in server_log.samples if s.name == "c10_terminate_is_a_crash")


@pytest.mark.parametrize("native_flag", ["0", "1"])
def test_c10_frame_lists_and_coredump_lines_fold_into_the_event_they_follow(monkeypatch, native_flag):
    """PyTorch's native frames after a watchdog timeout are that event's traceback, not unread
    lines; an uncaught c10 error's `terminate called ...` is the crash, its frames and CUDA's core
    dump notice folded in (docs/formats/OTHER_ENGINES.md, "c10 native frames")."""
    monkeypatch.setenv("FORENSICS_NATIVE", native_flag)
    for text, kind in ((C10_WATCHDOG, "collective_timeout"), (C10_TERMINATE, "crash")):
        tables, ctx = parse_text(server_log, STATS + text, name="decode.log")
        ev = tables["events"]
        assert ev["kind"].to_list() == [kind]
        assert ctx.unparsed_lines == 0 and ctx.continuation_lines == text.count("\n") - 1
    from forensics.analysis.failures import innermost_frames

    assert innermost_frames(ev["traceback"][0]) == []  # only the raising machinery: nothing to name
    tables, _ = parse_text(server_log, C10_WATCHDOG, name="decode.log")
    assert innermost_frames(tables["events"]["traceback"][0]) == ["libc.so.6 clone"]
