"""The local engine: worker processes started from a fork server, one per core this process may use.

Small inputs are parsed whole in a worker (`parse.ingest_one`); a large input read in this process
lends the engine to its parser (`InputPool`), which sends it pass after pass, each written as a part
of the input's folder in .tmp where it ran. A stop kills the workers (`kill`): what they were
writing is in .tmp, never committed. The engines behind the pipeline are engine.py's; this one is
`LocalEngine`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from concurrent.futures import Future, ProcessPoolExecutor

from forensics.ingest import stop
from forensics.parsers.base import Batch, Written
from forensics.store.parts import write_part


def cores() -> int:
    """The cores this process may run on (`taskset` limits them), not those of the machine."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# What the fork server imports once for every worker: the modules a task runs in.
PRELOAD = ["forensics.ingest.parse", "forensics.ingest.pool", "pyarrow.parquet"]


def worker_env() -> dict[str, str]:
    """The environment a worker starts with, whatever starts it (the fork server, a Ray raylet).

    A worker has one core's share: polars' own threads (one per core in every worker) would only
    contend with the other workers. Its pool is sized when polars is imported, in the fork server.

    The server runs `python -c`, which puts the working directory first on sys.path (and Python
    3.11's fork server drops the sys.path it is sent): run from a checkout of this repository with
    the package installed (not editable), the server and its workers would import the checkout's
    forensics/ folder, which has no forensics.parsers, and every task would fail. So the server
    gets the start of this process's sys.path instead, as a spawned process would: PYTHONSAFEPATH
    leaves the working directory out (`_server_env`), PYTHONPATH gives the entries this process has
    before the standard library (its script's folder, its PYTHONPATH, a test runner's root); the
    standard library and site-packages (with an editable install's finder) the server finds itself.
    """
    stdlib = os.path.dirname(os.__file__)
    first = []
    for p in sys.path:
        if os.path.abspath(p or ".") == stdlib or p.endswith(".zip"):
            break
        if os.pathsep not in p:
            first.append(os.path.abspath(p or "."))
    return {"POLARS_MAX_THREADS": "1", "PYTHONPATH": os.pathsep.join(first)}


def _server_env() -> dict[str, str]:
    """The fork server's environment while it starts (its workers inherit it)."""
    return {**worker_env(), "PYTHONSAFEPATH": "1"}


@contextlib.contextmanager
def environment(env: dict[str, str]):
    """`env` in os.environ while inside, for the processes started there."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start(jobs: int) -> ProcessPoolExecutor:
    import multiprocessing as mp
    from multiprocessing import forkserver

    # forkserver, not fork: a parent that already ran polars or DuckDB has worker threads
    # holding locks, and a forked child inherits those locks held forever (a deadlock).
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    stop.quiet_resource_tracker()
    with environment(_server_env()), stop.sigint_blocked():
        forkserver.ensure_running()
    server = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    ex = ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=stop.worker_init, initargs=(os.getpid(), server)
    )
    # The workers start while this process finds, sniffs and reads the first inputs: a submit
    # waits for the start of the worker it adds, and that for the fork server's imports.
    import threading

    def start() -> None:
        try:
            for _ in range(jobs):
                if stop.requested():
                    return
                ex.submit(_ready)
        except Exception:  # noqa: BLE001 - a pool stopped meanwhile: nothing to start
            pass

    threading.Thread(target=start, name="pool-start", daemon=True).start()
    return ex


def _ready() -> None:
    """A worker's first task: nothing, so that it starts before there is work for it."""


class LocalEngine:
    """The default engine (engine.Engine): `jobs` worker processes of this machine."""

    name = "local"

    def __init__(self, jobs: int, address: str | None = None):
        self.ex, self.workers = start(jobs), jobs

    @staticmethod
    def worth(jobs: int, small: int, large_bytes: int, scan) -> bool:
        """Whether the inputs go to workers at all: not on one core, nor when the workers would
        only add their start-up (at most one small input, and little to parse in passes)."""
        return jobs > 1 and not (small <= 1 and large_bytes < scan.pool_input_bytes)

    def submit(self, fn, *args) -> Future:
        return self.ex.submit(fn, *args)

    def kill(self) -> None:
        kill(self.ex)

    def shutdown(self) -> None:
        self.ex.shutdown()


class Pool:
    """The engine's workers, and room for the passes in flight of every input read at once: a
    pass holds its text here until a worker takes it."""

    def __init__(self, engine):
        import threading

        self.engine, self.workers = engine, engine.workers
        self.room = threading.BoundedSemaphore(self.workers + 2)


class InputPool:
    """The pool lent to one input's parser (parsers.base.PassPool): its passes are written into
    the input's folder in .tmp as parts numbered by pass, wherever they ran."""

    def __init__(self, pool: Pool, folder):
        self.pool, self.folder, self.workers = pool, str(folder), pool.workers

    def submit(self, part: int, fn, *args) -> Future:
        stop.check()  # a stop reads no further
        self.pool.room.acquire()
        try:
            fut = self.pool.engine.submit(pass_in_worker, self.folder, part, fn, args)
        except BaseException:
            self.pool.room.release()
            raise
        fut.add_done_callback(lambda _: self.pool.room.release())
        return fut

    def write(self, part: int, batch: Batch) -> Written:
        write_parts(self.folder, part, batch)
        return Written(part)


def pass_in_worker(folder: str, part: int, fn, args):
    batch, info, write = fn(*args)
    if not write:
        return batch, info
    write_parts(folder, part, batch)
    return Written(part), info


def write_parts(folder: str, part: int, batch: Batch) -> None:
    for table, df in batch.items():
        write_part(folder, table, part, df)


def kill(ex: ProcessPoolExecutor) -> None:
    """End the pool's workers now: what they were writing is in .tmp, never committed."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, AttributeError):
            pass
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(timeout=5)
