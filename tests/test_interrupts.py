"""Ctrl-C and SIGTERM stop an ingest with one line and nothing partial; workers die with their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import sql
from tools import procs

# each case starts an ingest in a subprocess and waits for it to be stopped
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals and /proc as on Linux"),
]

LINE = (
    "[2026-10-30 10:{m:02d}:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
)


def _dump(root, hosts: int, lines: int):
    for h in range(hosts):
        (root / f"decode-{h}").mkdir(parents=True)
        (root / f"decode-{h}" / "sglang.log").write_text(
            "".join(LINE.format(m=(i // 60) % 60, s=i % 60, n=i * hosts + h) for i in range(lines))
        )
    return root


def _ingest(dump, store, *extra) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "forensics.cli", "ingest", str(dump), "--store", str(store), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _wait_for_data(store, proc, timeout=120) -> None:
    """Until the ingest has started writing (its scratch folder holds an input being written)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        tmp = store / ".tmp"
        if tmp.is_dir() and any(p.name.startswith("tmp") for p in tmp.iterdir()):
            return
        time.sleep(0.05)


def _consistent(store) -> None:
    if not (store / "inputs").exists():
        return
    seen = sql(store, "SELECT count(*) n, count(DISTINCT sha256) d, coalesce(sum(parsed_lines), 0) p FROM files")
    assert seen["n"][0] == seen["d"][0]
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == seen["p"][0]  # no partial input visible


def _complete(dump, store, hosts: int, lines: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "forensics.cli", "ingest", str(dump), "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    f = sql(store, "SELECT count(*) n, count(DISTINCT path) p FROM files")
    assert f["n"][0] == f["p"][0] == hosts
    b = sql(store, "SELECT count(*) n, count(DISTINCT (source_file, line_no)) d FROM batches")
    assert b["n"][0] == b["d"][0] == hosts * lines
    assert not any((store / ".tmp").iterdir())


@pytest.mark.parametrize(
    "sig, code, extra",
    [
        (signal.SIGINT, 130, ()),  # large inputs, parsed in the ingest process itself
        (signal.SIGTERM, 143, ("--jobs", "2")),  # inputs in a pool of worker processes
    ],
)
def test_a_signal_stops_ingest_with_one_line_and_nothing_partial(tmp_path, sig, code, extra):
    hosts, lines = 6, 120_000
    dump, store = _dump(tmp_path / "dump", hosts, lines), tmp_path / "store"
    proc = _ingest(dump, store, *extra)
    _wait_for_data(store, proc)
    if proc.poll() is not None:
        pytest.skip("the ingest ended before the signal (a very fast machine)")
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    said = [ln for ln in err.decode().splitlines() if ln.strip()]
    assert len(said) == 1 and said[0].startswith("forensics: interrupted (") and "run the same ingest again" in said[0]
    assert not procs.wait_gone(proc.pid), "a worker outlived the ingest"
    assert not any((store / ".tmp").iterdir())  # what was being written is gone
    _consistent(store)
    _complete(dump, store, hosts, lines)


def test_workers_die_when_the_parent_is_killed(tmp_path):
    hosts, lines = 8, 60_000
    dump, store = _dump(tmp_path / "dump", hosts, lines), tmp_path / "store"
    proc = _ingest(dump, store, "--jobs", "2")
    end = time.monotonic() + 120
    while time.monotonic() < end and proc.poll() is None and len(procs.session(proc.pid)) < 3:
        time.sleep(0.05)  # the ingest, its fork server and a worker
    if proc.poll() is not None:
        pytest.skip("the ingest ended before it was killed")
    assert len(procs.session(proc.pid)) >= 3
    os.kill(proc.pid, signal.SIGKILL)  # the parent alone, as the OOM killer does
    proc.wait(timeout=30)
    assert not procs.wait_gone(proc.pid), "workers outlived a killed parent"
    _consistent(store)
    _complete(dump, store, hosts, lines)


def test_ctrl_c_while_the_command_line_imports_is_one_line(tmp_path):
    """A Ctrl-C before any command runs (the imports of the command line) exits 130 with one line."""
    shim, ready = tmp_path / "shim", tmp_path / "ready"
    shim.mkdir()
    # an import the command line makes, held open so that the signal lands inside it
    (shim / "click.py").write_text(f"import pathlib, time\npathlib.Path({str(ready)!r}).touch()\ntime.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": str(shim)}
    p = subprocess.Popen(
        [sys.executable, "-c", "from forensics.cli import main"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):
            if ready.exists() or p.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), p.communicate(timeout=10)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert err.decode().splitlines() == ["forensics: interrupted (SIGINT) while starting: nothing was changed"]
    assert out == b""


def test_no_write_into_tmp_starts_after_a_stop_and_the_sweep_waits_for_those_under_way(tmp_path):
    """A thread reading an input that makes its folder in .tmp just behind the sweep after a signal
    would leave it half-written: from the signal on no write starts, and the sweep waits for those under way."""
    import threading

    from forensics.ingest import stop
    from forensics.store import Store

    store = Store(str(tmp_path / "store"))
    store.tmp.mkdir(parents=True)
    inside, release = threading.Event(), threading.Event()

    def slow_write():
        with stop.writing():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=slow_write)
    t.start()
    inside.wait(5)
    stop._stop.set()
    try:
        assert not stop.writes_ended(timeout=0.1), "a write under way was not waited for"
        release.set()
        assert stop.writes_ended(timeout=5)
        with pytest.raises(stop.Interrupted):
            store.writer("late")
        assert not (store.tmp / f"late.{os.getpid()}").exists()
    finally:
        stop._stop.clear()
        t.join()
