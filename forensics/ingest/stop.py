"""Stopping an ingest on Ctrl-C (SIGINT) or SIGTERM: promptly, with nothing partial committed.

An input becomes visible with one rename (forensics/store/__init__.py), so stopping is a matter of
starting no rename once a signal came: each commit runs under `committing()`, which refuses once
stop was asked and which the main thread waits on before it reports. The handler raises
`Interrupted` in the main thread, which also breaks it out of waits on workers and threads; the
inputs being written are aborted and their folders in .tmp removed, the pool's workers killed.
Workers ignore SIGINT themselves (the terminal sends it to the whole group) and die with their
parent even when it is killed outright (`die_with_parent`).

Once every input is committed (`finishing`), nothing is left that a stop could leave partial: the
clock offsets, verdicts and derived-view snapshots are each written under a temporary name and
published by one rename. A signal then ends the command at once through the caller's `on_stop`,
even while the main thread is inside a long DuckDB query (which looks at signals only between its
tasks, seconds apart on a large store): the signal also wakes a thread of ours (`set_wakeup_fd`),
which acts on it there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable

from forensics.store import InputWriter

_stop = threading.Event()
_signum: int | None = None
_gate = threading.Lock()  # held by a commit's renames; the handler never takes it
_held_by_main = 0  # commits the main thread is inside: a signal then waits for their end
_pending = False
_depth = 0  # handling() blocks the main thread is inside: the outermost one installs the handlers
# once every input is committed: (phase, inputs); what a signal then does, from the main thread
# or from the watcher thread, whichever runs first (it does not return)
_finishing: tuple[str, int] | None = None
_on_stop: Callable[["Interrupted"], None] | None = None
_ending = threading.Lock()
_writes = threading.Condition()  # guards _writers, the writes into .tmp under way (`writing`)
_writers = 0


class Interrupted(BaseException):
    """Ingest stopped by a signal (a BaseException: no `except Exception` of one input swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM
        self.done = 0  # inputs whose result was committed (or found already in the store)
        self.total = 0
        self.not_done: list[str] = []
        # 'ingest' while inputs are committed; after the last one 'verdicts' (the verdicts and the
        # derived views still to compute) and 'derived' (the derived views and the summary)
        self.phase = "ingest"

    def line(self) -> str:
        name = signal.Signals(self.signum).name
        if self.phase == "verdicts":
            return (
                f"interrupted ({name}): all {self.total} inputs are committed; the verdicts and derived views "
                "were not computed (the next report computes them)"
            )
        if self.phase == "derived":
            return (
                f"interrupted ({name}): all {self.total} inputs are committed; the derived views and the summary "
                "were not finished (the next report computes them)"
            )
        if not self.total:
            return f"interrupted ({name}) before any input was read: the store is as it was"
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
        _stop_now()


def interrupted() -> Interrupted:
    """The Interrupted of the stop asked, with the phase it came in."""
    e = Interrupted(_signum or signal.SIGINT)
    if _finishing is not None:
        e.phase, e.total = _finishing
        e.done = e.total
    return e


def finishing(phase: str, inputs: int) -> None:
    """Every input is committed; what follows is `phase` ('verdicts', then 'derived'): from here a
    signal stops the command at once (see the module docstring)."""
    global _finishing
    _finishing = (phase, inputs)


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
        _stop_now()


@contextlib.contextmanager
def writing():
    """Around one write into .tmp (store.InputWriter.gate): none starts after a signal, and
    `writes_ended` waits for those under way, so the sweep of .tmp after a stop is the last word."""
    global _writers
    with _writes:
        check()
        _writers += 1
    try:
        yield
    finally:
        with _writes:
            _writers -= 1
            _writes.notify_all()


def writes_ended(timeout: float = 30.0) -> bool:
    """After a signal: wait for the writes into .tmp under way (a Parquet part takes a second at most)."""
    with _writes:
        return _writes.wait_for(lambda: _writers == 0, timeout)


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
    _stop_now()


def _stop_now() -> None:
    """Raise Interrupted, or once every input is committed end the command (`on_stop`) if there is one."""
    if _finishing is not None:
        _end(interrupted())
    raise interrupted()


def _end(e: Interrupted) -> None:
    """`on_stop(e)` once, from whichever thread gets here first; the other waits for the end."""
    if _on_stop is None:
        return
    if _ending.acquire(blocking=False):
        try:
            _on_stop(e)
        finally:
            os._exit(e.exit_code)  # whatever on_stop did, the command ends here
    threading.Event().wait()  # the other thread is ending the process


def _watch(fd: int) -> None:
    """The watcher thread: the signals written to `fd` by the C-level handler, acted on after the
    commits without waiting for the main thread to run Python again."""
    global _signum
    try:
        while data := os.read(fd, 64):  # empty once handling() ended: its end of the pipe closed
            sigs = [b for b in data if b in (signal.SIGINT, signal.SIGTERM)]
            if sigs and _finishing is not None:
                _signum = _signum or sigs[0]
                _stop.set()
                with _gate:  # a commit under way (the offsets) ends first
                    _end(interrupted())
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def handling(on_stop: Callable[[Interrupted], None] | None = None):
    """SIGINT and SIGTERM stop the ingest (`Interrupted`) while inside; the old handlers after.

    `on_stop(e)` ends the command once every input is committed (`finishing`), called from the
    handler or the watcher thread: it must not return (the CLI prints its line and exits). Without
    one, Interrupted is raised there too. A handling() inside another changes nothing."""
    global _signum, _pending, _depth, _finishing, _on_stop
    if threading.current_thread() is not threading.main_thread() or _depth:
        yield  # signals reach the main thread only: a library caller on a thread keeps its own
        return
    _stop.clear()
    _signum, _pending, _finishing, _on_stop = None, False, None, on_stop
    old = {s: signal.signal(s, _handler) for s in (signal.SIGINT, signal.SIGTERM)}
    r, w = os.pipe()
    os.set_blocking(w, False)
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(r,), name="signals", daemon=True).start()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        signal.set_wakeup_fd(old_fd)
        os.close(w)  # the watcher reads the end of the pipe, closes its end and ends
        for s, h in old.items():
            signal.signal(s, h)
        _finishing, _on_stop = None, None
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


@contextlib.contextmanager
def sigint_blocked():
    """SIGINT blocked in this thread while inside, so a process started here inherits it blocked.

    The fork server ignores SIGINT only once its imports are done, and a Ctrl-C to the process
    group during them printed its KeyboardInterrupt traceback after the stop's one line; blocked,
    the signal waits until it is ignored, and the workers it forks inherit the mask."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


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


InputWriter.gate = staticmethod(writing)
