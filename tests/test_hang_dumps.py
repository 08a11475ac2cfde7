"""A py-spy dump of a live process (docs/formats/OTHER_ENGINES.md, "py-spy dumps") is a `hang_dump`
event with its threads' innermost frames, and a wedge signal of its host: an operator (or SGLang's
watchdog) took it because the server looked stuck. The lines below follow py-spy's printer
(`src/dump.rs`: `Process <pid>: <cmdline>`, `Python v<ver> (<exe>)`, `Thread <tid> (<status>): "<name>"`,
`    <func> (<file>:<line>)`) and SGLang's watchdog (`Pyspy dump for PID <pid>:` then the dump)."""

from __future__ import annotations

import datetime as dt
import json
import os

import polars as pl
from click.testing import CliRunner

from forensics.analysis.failures import hang_threads
from forensics.cli import main
from forensics.parsers import server_log
from tests.conftest import ingest_paths, sql
from tests.helpers import parse_text

UTC = dt.timezone.utc

# one process; `--native` frames and a line-less frame (`<func> (<file>)`) take the same shape
STUCK_PREFILL = (
    "Process 4121: python3 -m sglang.launch_server --disaggregation-mode prefill --port 30000\n"
    "Python v3.10.12 (/usr/bin/python3.10)\n"
    "\n"
    'Thread 4121 (active): "MainThread"\n'
    "    send (zmq/sugar/socket.py:701)\n"
    "    event_loop_pp_disagg_prefill (sglang/srt/disaggregation/prefill.py:388)\n"
    "    run_scheduler_process (sglang/srt/managers/scheduler.py:2960)\n"
    "    <module> (<string>:1)\n"
    'Thread 4388 (idle): "Thread-3 (_transfer_worker)"\n'
    "    wait (threading.py:324)\n"
    "    get (queue.py:171)\n"
    "    ncclAllReduce (libnccl.so.2)\n"
)
# `py-spy dump --subprocesses`: a block per process, the thread ids in hex where py-spy has no OS id
TWO_RANKS = (
    "Process 5001: sglang::scheduler_DP0_TP0\n"
    "Python v3.12.3 (/usr/bin/python3.12)\n"
    "\n"
    "Thread 0x7F3A9C2B1740 (active+gil)\n"
    "    all_reduce (torch/distributed/distributed_c10d.py:2501)\n"
    "\n"
    "Process 5002: sglang::scheduler_DP0_TP1\n"
    "Python v3.12.3 (/usr/bin/python3.12)\n"
    "\n"
    "Thread 0x7F3A9C2B2880 (idle)\n"
    "    poll (zmq/sugar/socket.py:1062)\n"
)


def _stats(t: dt.datetime, running: int) -> str:
    return (
        f"[{t:%Y-%m-%d %H:%M:%S} DP0 TP0] Decode batch, #running-req: {running}, #token: {running * 1500}, "
        f"token usage: 0.19, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, "
        f"cuda graph: True, gen throughput (token/s): {running * 30:.2f}, #queue-req: 0"
    )


def _health(t: dt.datetime) -> str:
    return f'[{t:%Y-%m-%d %H:%M:%S}] INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" 200 OK'


T0 = dt.datetime(2026, 3, 2, 8, 20, tzinfo=UTC)


def _decode_log() -> str:
    """Stats every 2 s for half a minute with 12 requests running, then none for six minutes while
    `/health` keeps answering 200: a stop that nothing in the log itself calls stuck."""
    lines = [(T0 + dt.timedelta(seconds=s), _stats(T0 + dt.timedelta(seconds=s), 12)) for s in range(0, 31, 2)]
    lines += [(T0 + dt.timedelta(seconds=s), _health(T0 + dt.timedelta(seconds=s))) for s in range(40, 400, 30)]
    return "".join(line + "\n" for _, line in sorted(lines))


def _events(text: str, name: str) -> pl.DataFrame:
    tables, ctx = parse_text(server_log, text, name=name)
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    # a blank line between records is no line of theirs (SGLang's message ends with the dump's newline)
    assert set(tables["unparsed"]["reason"]) <= {"blank"} if "unparsed" in tables else ctx.unparsed_lines == 0
    return tables["events"]


def test_a_pyspy_dump_is_one_hang_dump_with_every_line_read():
    ev = _events(STUCK_PREFILL, "py-spy.txt")
    assert ev.select("kind", "source", "severity").rows() == [("hang_dump", "py-spy", "warning")]
    assert ev["message"][0].startswith("Process 4121: python3 -m sglang.launch_server")
    assert len(ev["traceback"][0].split("\n")) == STUCK_PREFILL.count("\n") - 1  # every line but the head


def test_each_process_of_a_subprocesses_dump_is_its_own_hang_dump():
    ev = _events(TWO_RANKS, "py-spy.txt")
    assert ev["kind"].to_list() == ["hang_dump", "hang_dump"]
    assert [m.split(":")[0] for m in ev["message"]] == ["Process 5001", "Process 5002"]


def test_the_watchdogs_pyspy_dump_is_one_event_at_its_line_then_the_watchdog():
    text = (
        _stats(T0, 12) + "\n"
        "[2026-03-02 08:25:01 DP0 TP0] Pyspy dump for PID 4121:\n" + STUCK_PREFILL + "\n"
        "[2026-03-02 08:25:02 DP0 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n"
    )
    ev = _events(text, "decode.log")
    assert ev.select("kind", "ts").rows() == [
        ("hang_dump", dt.datetime(2026, 3, 2, 8, 25, 1, tzinfo=UTC)),
        ("watchdog_timeout", dt.datetime(2026, 3, 2, 8, 25, 2, tzinfo=UTC)),
    ]
    assert "Process 4121:" in ev["traceback"][0] and "ncclAllReduce" in ev["traceback"][0]


def test_a_frame_banner_under_an_error_line_opens_one_crash_however_many_threads():
    """faulthandler's thread sections after a line that is no crash head: one dump, one crash."""
    text = (
        "[2026-03-02 08:25:01 DP0 TP0] Scheduler hit an exception: see below\n"
        "Thread 0x00007f3e7dfff640 (most recent call first):\n"
        '  File "/usr/lib/python3.10/threading.py", line 320 in wait\n'
        "\n"
        "Current thread 0x00007f40a2e4b740 (most recent call first):\n"
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 1021 in event_loop_normal\n'
    )
    ev = _events(text, "decode.log")
    assert ev["kind"].to_list() == ["exception", "crash"]


def test_each_thread_shows_its_innermost_frames():
    assert hang_threads(_events(STUCK_PREFILL, "py-spy.txt")["traceback"][0]) == [
        "MainThread (active): socket.py:701 send < prefill.py:388 event_loop_pp_disagg_prefill"
        " < scheduler.py:2960 run_scheduler_process",
        "Thread-3 (_transfer_worker) (idle): threading.py:324 wait < queue.py:171 get < libnccl.so.2 ncclAllReduce",
    ]
    assert hang_threads(TWO_RANKS) == [
        "0x7F3A9C2B1740 (active+gil): distributed_c10d.py:2501 all_reduce",
        "0x7F3A9C2B2880 (idle): socket.py:1062 poll",
    ]
    assert hang_threads(None) == []


def _dump(tmp_path, with_pyspy: bool):
    host = tmp_path / "dump" / "decode-0"
    host.mkdir(parents=True)
    (host / "decode.log").write_text(_decode_log())
    if with_pyspy:
        # a dump file of its own: it has no clock, its time is the file's (written as it was taken)
        p = host / "py-spy-4121.txt"
        p.write_text(STUCK_PREFILL)
        taken = (T0 + dt.timedelta(minutes=4)).timestamp()
        os.utime(p, (taken, taken))
    store = tmp_path / "store"
    ingest_paths([tmp_path / "dump"], store)
    return store


def test_a_pyspy_dump_inside_a_stop_makes_it_a_wedge_of_its_host(tmp_path):
    store = _dump(tmp_path / "with", with_pyspy=True)
    rows = sql(store, "SELECT host, kind, signals FROM incident_wedges").rows()
    assert len(rows) == 1
    host, kind, signals = rows[0]
    assert (host, kind) == ("decode-0", "silence")
    assert "py-spy dump x1" in signals and "/health 200 x12" in signals
    # the same stop without the dump: live health checks and no other word of trouble
    assert sql(_dump(tmp_path / "without", with_pyspy=False), "SELECT count(*) FROM incident_wedges").item() == 0


def test_the_evidence_lists_each_dumps_threads_and_counts_it_a_signal(tmp_path):
    store = str(_dump(tmp_path, with_pyspy=True))
    r = CliRunner().invoke(main, ["evidence", "--store", store, "--format", "json"])
    assert r.exit_code == 0, r.output
    servers = json.loads(r.stdout)["servers"]
    (dump,) = servers["hang_dumps"]
    assert dump["host"] == "decode-0" and dump["ts_placed"] == "file_time"
    assert dump["threads"][0].startswith("MainThread (active): socket.py:701 send")
    assert servers["failures"]["signals"] >= 1
    md = CliRunner().invoke(main, ["evidence", "--store", store]).stdout
    assert "### Hang dumps" in md and "prefill.py:388 event_loop_pp_disagg_prefill" in md
