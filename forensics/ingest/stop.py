"""Stopping an ingest on Ctrl-C (SIGINT) or SIGTERM: promptly, with nothing partial committed.

An input becomes visible with one rename (forensics/store/__init__.py), so stopping is a matter of
starting no rename once a signal came: each commit runs under `committing()`, which refuses once
stop was asked and which the main thread waits on before it reports. The handler raises
`Interrupted` in the main thread, which also breaks it out of waits on workers and threads; the
inputs being written are aborted and their folders in .tmp removed, the pool's workers killed.
Workers ignore SIGINT themselves (the terminal sends it to the whole group) and die with their
parent even when it is killed outright (`die_with_parent`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

_stop = threading.Event()
_signum: int | None = None
_gate = threading.Lock()  # held by a commit's renames; the handler never takes it
_held_by_main = 0  # commits the main thread is inside: a signal then waits for their end
_pending = False


class Interrupted(BaseException):
    """Ingest stopped by a signal (a BaseException: no `except Exception` of one input swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM
        self.done = 0  # inputs whose result was committed (or found already in the store)
        self.total = 0
        self.not_done: list[str] = []
        self.phase = "ingest"  # 'verdicts' once every input was committed

    def line(self) -> str:
        name = signal.Signals(self.signum).name
        if self.phase == "verdicts":
            return (
                f"interrupted ({name}): all {self.total} inputs are committed; the verdicts were not computed "
                "(the next report or ingest computes them)"
            )
        left = len(self.not_done)
        which = f" ({self.not_done[0]}{f' and {left - 1} more' if left > 1 else ''})" if left else ""
        return (
            f"interrupted ({name}): {self.done} of {self.total} inputs committed, {left} not{which}: nothing "
            "of those is in the store; run the same ingest again to continue"
        )


def requested() -> bool:
    return _stop.is_set()


def check() -> None:
    """Raise Interrupted once a stop was asked (a thread's next step ends there)."""
    if _stop.is_set():
        raise Interrupted(_signum or signal.SIGINT)


@contextlib.contextmanager
def committing():
    """Around one commit's renames: none starts after a signal, none is cut by one."""
    global _held_by_main, _pending
    main = threading.current_thread() is threading.main_thread()
    with _gate:
        check()
        if main:
            _held_by_main += 1
        try:
            yield
        finally:
            if main:
                _held_by_main -= 1
    if main and _pending:
        _pending = False
        check()


def settle() -> None:
    """Wait for a commit another thread is in the middle of (it finishes, and no other starts)."""
    with _gate:
        pass


def _handler(signum, frame) -> None:
    global _signum, _pending
    if _stop.is_set():
        return  # a second signal while stopping: the stop is under way, its cleanup is not cut short
    _signum = _signum or signum
    _stop.set()
    if _held_by_main:
        _pending = True  # raised when the commit under way ends
        return
    raise Interrupted(_signum)


@contextlib.contextmanager
def handling():
    """SIGINT and SIGTERM stop the ingest (`Interrupted`) while inside; the old handlers after."""
    global _signum, _pending
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: a library caller on a thread keeps its own
        return
    _stop.clear()
    _signum, _pending = None, False
    old = {s: signal.signal(s, _handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _stop.clear()  # a later ingest in this process starts afresh


def end_fork_server() -> None:
    """Kill multiprocessing's fork server now, rather than let it wind down after this process
    (its workers are gone already; it would otherwise hold the terminal's pipes a moment longer)."""
    try:
        from multiprocessing import forkserver

        pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
        if pid:
            os.kill(pid, signal.SIGKILL)
    except (ImportError, OSError):
        pass


def quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker with its stderr on /dev/null.

    After a stop kills the pool, the tracker cleans up the pool's semaphores as it exits and warns
    about each one on the stderr it inherited, after the one line the stop promised. What it
    cleans up is the same either way; only the warnings go."""
    from multiprocessing import resource_tracker

    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        resource_tracker.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def worker_init(parent: int, server: int | None = None) -> None:
    """A pool worker's setup: SIGINT left to the parent, and death with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent, server)


PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, server: int | None = None) -> None:
    """SIGKILL this process when its parent dies (Linux prctl PR_SET_PDEATHSIG).

    A worker's parent is multiprocessing's fork server, which exits as soon as the ingest process
    is gone, however it went (a SIGKILL too); before, the workers ran on and committed. A parent
    already gone before the prctl took effect is checked by its pid, and so is the fork server
    (`server`): one killed as the ingest stops, between this worker's fork and its prctl, would
    leave it waiting for work forever, holding the ingest's stderr open.
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the parent's own stop still kills its pool
    if server is not None and os.getppid() != server:
        os._exit(1)
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        os._exit(1)
    except PermissionError:
        pass
