"""Where an ingest's task units run: the engine behind the pipeline (`--engine`).

The pipeline plans the units and commits; an engine only runs them. A unit is a small input parsed
and committed whole (`parse.ingest_one`), or a pass of a large input's parser (`pool.pass_in_worker`)
written as a part into that input's folder in .tmp, wherever it ran. Two engines:

    local   worker processes of this machine, from a fork server (pool.LocalEngine, the default)
    ray     Ray tasks, on a local Ray cluster or on one joined with --address (rayengine.RayEngine)

Both take paths as the ingest saw them made absolute (a worker may run in another folder), and a
task that fails fails its input alone. Ray is an optional extra: `engine_class` says how to
install it when it is missing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from concurrent.futures import Future
from typing import Protocol

from forensics.core.errors import UsageError

NAMES = ("local", "ray")
RAY_INSTALL = "pip install 'sglang-forensics[ray]'"


class Engine(Protocol):
    """What the pipeline asks of an engine, started for one ingest."""

    name: str
    workers: int  # the tasks it runs at once: how many passes the pipeline keeps in flight

    def __init__(self, jobs: int, address: str | None = None): ...

    @staticmethod
    def worth(jobs: int, small: int, large_bytes: int, scan) -> bool:
        """Whether to start it for `small` small inputs and `large_bytes` of large ones (else
        every input is parsed in this process)."""

    def submit(self, fn: Callable, *args) -> Future:
        """`fn(*args)` as one task; its result, or the exception that failed it, in the future."""

    def kill(self) -> None:
        """End the tasks now (a stop, an error): what they were writing is in .tmp, never committed."""

    def shutdown(self) -> None:
        """After the last task: what this engine started is stopped."""


def engine_class(name: str) -> type[Engine]:
    """The engine called `name`; UsageError for an unknown one or for Ray not installed."""
    if name == "local":
        from forensics.ingest.pool import LocalEngine

        return LocalEngine
    if name == "ray":
        if importlib.util.find_spec("ray") is None:
            raise UsageError(f"--engine ray needs Ray, which is not installed: {RAY_INSTALL}")
        from forensics.ingest.rayengine import RayEngine

        return RayEngine
    raise UsageError(f"--engine must be one of {', '.join(NAMES)}, not {name!r}")
