"""The Ray engine (`ingest --engine ray [--address ADDR]`): the ingest's task units as Ray tasks.

Each unit (engine.py) is one task that reads its bytes itself and writes its own Parquet parts
into the store, so the store and the inputs must be at the same paths on every node (a shared
file system); the driver plans the units and commits, as with the local engine. Without an
address a local cluster is started for the ingest and stopped after it; with one the ingest joins
that cluster and leaves it running. A process that already called `ray.init()` lends its cluster.

The workers import the package installed where they run: Ray puts the driver's working directory
first on every worker's sys.path, and run from a checkout of this repository with the package
installed (not editable) they would import the checkout's forensics/ folder, which has no
forensics.parsers, and every task would fail. So the driver joins from a folder of its own
(`_away`); the workers get the start of this process's sys.path, as the local engine's do
(`pool.worker_env`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future

from forensics.core.errors import UsageError
from forensics.ingest import pool
from forensics.ingest.engine import RAY_INSTALL

# A task whose worker died (a node lost, the OOM killer) runs again this often before its input
# fails; a task that raises fails its input at once. A pass run again rewrites the same parts.
RETRIES = 2


def _run(fn: Callable, *args):
    """One task unit in a Ray worker."""
    return fn(*args)


class RayEngine:
    """Ray tasks on a cluster (engine.Engine)."""

    name = "ray"

    def __init__(self, jobs: int, address: str | None = None):
        try:
            import ray
        except ImportError as e:
            raise UsageError(f"--engine ray needs Ray, which does not import ({e}): {RAY_INSTALL}") from e
        self._ray = ray
        self._away: str | None = None
        self.owned = not ray.is_initialized()
        if self.owned:
            self._away = tempfile.mkdtemp(prefix="forensics-ray-")
            _init(ray, jobs, address, self._away)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        self.workers = jobs if self.owned and address is None else max(cpus, 1)
        self._task = ray.remote(max_retries=RETRIES)(_run)
        self._live: dict = {}  # ObjectRef -> its future, while it runs
        self._lock = threading.Lock()

    @staticmethod
    def worth(jobs: int, small: int, large_bytes: int, scan) -> bool:
        """Always: the cluster was asked for, and its workers may be all the cores there are."""
        return True

    def submit(self, fn: Callable, *args) -> Future:
        ref = self._task.remote(fn, *args)
        out: Future = Future()
        with self._lock:
            self._live[ref] = out
        ref.future().add_done_callback(lambda f, ref=ref: self._done(ref, f, out))
        return out

    def _done(self, ref, f: Future, out: Future) -> None:
        with self._lock:
            self._live.pop(ref, None)
        if out.cancelled():
            return
        e = f.exception()
        if e is None:
            out.set_result(f.result())
            return
        # a task's own exception, as the local engine gives it (Ray wraps it with its traceback)
        cause = getattr(e, "cause", None)
        out.set_exception(cause if isinstance(e, self._ray.exceptions.RayTaskError) and cause else e)

    def kill(self) -> None:
        with self._lock:
            live = list(self._live)
        for ref in live:
            with contextlib.suppress(Exception):  # finished meanwhile
                self._ray.cancel(ref, force=True)
        # a cancel only asks: its worker ends a moment later, and writes nothing after that
        if live:
            with contextlib.suppress(Exception):
                self._ray.wait(live, num_returns=len(live), timeout=5)
        self.shutdown()

    def shutdown(self) -> None:
        if self.owned and self._ray.is_initialized():
            self._ray.shutdown()
        if self._away:
            shutil.rmtree(self._away, ignore_errors=True)
            self._away = None


def _init(ray, jobs: int, address: str | None, away: str) -> None:
    """`ray.init`: a local cluster of `jobs` CPUs, or the cluster at `address`, quietly, with this
    process's signal handlers kept (Ray puts in its own for SIGTERM)."""
    import logging

    kw = {"log_to_driver": False, "logging_level": logging.ERROR, "configure_logging": True}
    if address is None:
        kw |= {"num_cpus": jobs, "include_dashboard": False}
    else:
        # another node's workers start with its raylet's environment, not this one's
        kw |= {"address": address, "runtime_env": {"env_vars": {"POLARS_MAX_THREADS": "1"}}}
    main = threading.current_thread() is threading.main_thread()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    here = os.getcwd()
    try:
        # a local cluster's processes inherit this environment, its workers too
        with pool.environment(pool.worker_env() if address is None else {}):
            os.chdir(away)
            try:
                ray.init(**kw)
            except ConnectionError as e:
                raise UsageError(
                    f"--address {address}: no Ray cluster there ({e})",
                    help="give the address `ray start --head` printed, or leave --address out for a local cluster",
                ) from None
    finally:
        os.chdir(here)
        for s, h in handlers.items():
            signal.signal(s, h)
