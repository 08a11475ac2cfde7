"""Ingest: discover inputs, pick a parser for each, parse into the store; the schedulers.

One engine (engine.py: worker processes, one per core this process may use or `--jobs`, or Ray
tasks) parses every input: a small input whole in one task, a large one pass by pass on all the
workers, each pass written where it ran. An input goes to the store's .tmp and is committed by its
manifest; its sha256 (of the decompressed content) is the key, so the same content is ingested
once whatever its name. A file that grew since it was committed is read on from where it ended
(forensics/ingest/grown.py); a signal stops the ingest between commits (forensics/ingest/stop.py).

The stages of one input are parse.py's (sniff.py, digest.py, records.py beside it); the engines
are pool.py's and rayengine.py's. This module finds the inputs and schedules them: small ones to
the workers whole, large ones read here, one after another.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_futures

from forensics.core.errors import UsageError
from forensics.core.inputs import Scan
from forensics.ingest import engine, parse, pool, reread, stop, years
from forensics.ingest.records import FileResult, Options
from forensics.ingest.sources import discover
from forensics.parsers import PARSERS
from forensics.parsers.base import Source
from forensics.store import Store, pieces

__all__ = ["FileResult", "Options", "default_host", "run"]

_ROTATION = re.compile(r"(\.(log|txt|out|err|jsonl?|gz|zst|\d+))+$", re.I)


def default_host(
    src_path: str, roots: list[str], member: str | None = None, host_folders: set[str] | None = None
) -> str:
    """Host from the path: the folder a file sits in, unless that is the folder given to ingest and
    a dump's (then the file's name); a host's folder given alone names the host as it does inside
    its parent (`ingest dump/prefill-0`: `prefill-0`). `host_folders`: those of `roots` that are a
    host's (`host_folders_of(roots)`, computed once for many files).

    The folder's name is kept as it is (`decode!7` stays `decode!7`): only an archive member's
    path says where the archive ends (`member`), a `!` in a folder or file name is a character.
    """
    path = src_path[: -len(member) - 1] if member and src_path.endswith("!" + member) else src_path
    if member:
        parts = [p for p in member.split("/") if p not in ("", ".", "..")]
        if len(parts) >= 2:
            return parts[-2]
        return _ROTATION.sub("", parts[-1]) if parts else "unknown"
    parent = os.path.dirname(os.path.abspath(path))
    if parent in (host_folders_of(roots) if host_folders is None else host_folders):
        return os.path.basename(parent)
    if any(os.path.abspath(r) == parent for r in roots if os.path.isdir(r)) or all(not os.path.isdir(r) for r in roots):
        return _file_host(os.path.basename(path))
    return os.path.basename(parent)


# what a file's name carries when it names its host: a role, a node or rank word, an index
_HOST_LIKE = re.compile(r"prefill|decode|unified|node|host|worker|rank|gpu|\d", re.I)


def _file_host(name: str) -> str:
    return _ROTATION.sub("", name) or name


def host_folders_of(roots: list[str]) -> set[str]:
    """The folders among `roots` that are one host's (absolute paths)."""
    return {os.path.abspath(r) for r in roots if os.path.isdir(r) and _is_host_folder(r)}


def _is_host_folder(folder: str) -> bool:
    """A folder given to ingest is one host's (`dump/prefill-0`, as its parent would name it) when it
    holds files and no folder, and no file's name names a host (`sglang.log`, `server.log.1.gz`):
    a dump's folder holds a folder per host, or files named by their hosts (`prefill-0.log`)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    files = [e.name for e in entries if e.is_file() and not e.name.startswith(".")]
    if not files or any(e.is_dir() and not e.name.startswith(".") for e in entries):
        return False
    return not any(_HOST_LIKE.search(_file_host(n)) for n in files)


def _free_heap_back_to_the_os() -> None:
    """Return the heap the last input freed to the OS (glibc's malloc_trim).

    glibc keeps freed memory for reuse, and an input's large parse blocks leave the heap
    fragmented, so RSS grew from file to file. A fixed mmap threshold cured that at the price of
    page faults on every block; a trim between inputs costs next to nothing.
    """
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)  # glibc only
    except (OSError, AttributeError):
        pass


def run(paths: list[str], store_root: str, opts: Options, progress=None) -> list[FileResult]:
    """Ingest `paths` into the store at `store_root`; return one result per input."""
    if opts.role not in (None, "prefill", "decode", "unified"):
        raise UsageError(f"--role must be prefill, decode or unified, not {opts.role!r}")
    engine.engine_class(opts.engine)  # a missing engine is refused before the store is made
    store = Store(store_root)
    lock = store.lock()
    sources: list[Source] = []
    results: list[FileResult] = []
    try:
        store.upgrade(locked=True)
        store.clear_tmp()
        before = store.committed()
        stop.check()  # a signal that came during the imports, whatever caught its exception
        try:
            _find_and_ingest(paths, store, opts, sources, results, progress)
        except stop.Interrupted as e:  # a signal while inputs were found, hashed or parsed
            _stopped(store, sources, results, before, e)
            raise
        order = {s.path: i for i, s in enumerate(sources)}
        results.sort(key=lambda r: order.get(r.path, 0))
        stop.finishing("verdicts", len(results))  # every input is committed: a signal from here ends it
        return results
    finally:
        import shutil

        shutil.rmtree(store.tmp / "archives", ignore_errors=True)
        lock.close()


def _find_and_ingest(
    paths: list[str], store: Store, opts: Options, sources: list[Source], results: list[FileResult], progress
) -> None:
    """The inputs under `paths` into `sources`, then each into the store, its result into `results`."""
    dir_claim = _dir_claimer()
    for item in discover(paths, dir_claim, spool=str(store.tmp / "archives"), skip=(str(store.root),)):
        if isinstance(item, tuple):
            d, _fmt = item
            sources.append(Source(path=d, fs_path=d))
        else:
            sources.append(item)
    host_folders = host_folders_of(paths)
    hosts = {s.path: opts.host or default_host(s.path, paths, s.member, host_folders) for s in sources}
    if opts.explicit and "host" not in opts.explicit:
        # an input read again for another --tz, --year, ... keeps the host it was read under
        hosts |= reread.held_hosts(store, sources)
    priors = pieces.committed(store, sources, hosts)
    if opts.year is None and opts.date is None:
        found = years.heads(sources, hosts)
        opts = dataclasses.replace(
            opts, host_years=years.host_years(found), input_years=years.linked_years(found, store)
        )
    if progress:
        progress.start(sum(s.size or 0 for s in sources), len(sources))
    _ingest_all(str(store.root), sources, opts, hosts, priors, results, progress)


def _stopped(
    store: Store, sources: list[Source], results: list[FileResult], before: set[str], e: stop.Interrupted
) -> None:
    """After a signal: the commit under way ends, the inputs being written are removed from .tmp,
    and `e` says what was committed and what was not (by the store's folders: an input finished
    on a thread or in a worker as the signal came is committed with no result here)."""
    stop.settle()
    # the threads reading inputs are not waited for (stop.committing refuses their commits), but
    # their writes into .tmp are: from the signal on none starts (stop.writing)
    stop.writes_ended()
    for _ in range(40):  # a killed worker's last part can still land as its process ends
        store.clear_tmp()
        if not any(store.tmp.iterdir()):
            break
        time.sleep(0.025)
    done = {r.path for r in results}
    new = [f for k in store.committed() - before for f in store.input_parts(k, "files")]
    done |= {r["path"] for r in pieces.files_rows(new)}
    e.total, e.done = len(sources), len(done)
    e.not_done = [s.path for s in sources if s.path not in done]


def _ingest_all(
    store_root: str,
    sources: list[Source],
    opts: Options,
    hosts: dict,
    priors: dict,
    results: list[FileResult],
    progress,
) -> None:
    """Every input into the store, each result appended to `results` as it comes.

    One engine (`opts.engine`, of `jobs` workers on this machine) does the parsing: each small
    input goes to it whole; the large ones are read here, two at a time (`_one_after_another`), and
    their passes go to the same engine, behind the small ones. Where the local engine is not worth
    its start (one core, little to parse), everything runs in this process.
    """
    kind = engine.engine_class(opts.engine)
    jobs, scan = opts.jobs or pool.cores(), opts.scan
    # a worker may run in another folder, or on another machine: it gets the paths made absolute
    store_root = os.path.abspath(store_root)
    pooled = [dataclasses.replace(s, fs_path=os.path.abspath(s.fs_path)) for s in sources if _is_small(s, scan)]
    large = [s for s in sources if not _is_small(s, scan)]
    spread = kind.worth(jobs, len(pooled), sum(_weight(s, scan) for s in large), scan)
    if not spread:  # everything in this process
        pooled, large = [], ([s for s in sources if _is_small(s, scan)] + large if jobs > 1 else sources)
    ex = kind(jobs, opts.address) if spread and (pooled or large) else None
    try:
        futs = {
            ex.submit(parse.ingest_one, store_root, s, opts, hosts[s.path], None, priors.get(s.path)): s for s in pooled
        }
        for r in _one_after_another(store_root, large, opts, hosts, progress, priors, pool.Pool(ex) if ex else None):
            results.append(r)
            if progress:
                progress.done_file(r)
            stop.check()
        for fut in _as_completed(futs):
            s = futs[fut]
            try:
                r = fut.result()
            except Exception as e:  # a worker crash must not lose the other files
                r = parse.record_failed(Store(store_root), s, opts, hosts[s.path], None, e)
            results.append(r)
            if progress:
                progress.advance(s.size or 0)
                progress.done_file(r)
            stop.check()
    except BaseException:
        if ex is not None:
            ex.kill()
        raise
    if ex is not None:
        ex.shutdown()


def _one_after_another(
    store_root: str,
    sources: list[Source],
    opts: Options,
    hosts: dict,
    progress,
    priors: dict | None = None,
    workers: pool.Pool | None = None,
) -> Iterator[FileResult]:
    """The inputs read in this process, each parsed on every core (the `workers`, else this
    process); the last parts of one are written while the next is read.

    Without a pool, writing an input's last parts once all its lines are parsed would leave the
    core idle: the finishing runs on a thread of its own, in input order, and ends before the
    input after the next starts, so at most one input finishes while another is parsed. With a
    pool, two inputs are read at once, so that the workers parse the next input's first passes
    while the last passes of one end; the pool bounds the passes in flight of both together.
    """

    def finished(finish) -> FileResult:
        try:
            return finish()
        finally:
            _free_heap_back_to_the_os()

    advance = progress.advance if progress else None
    if workers is not None:

        def one(s: Source) -> FileResult:
            finish = parse.parse_one(store_root, s, opts, hosts[s.path], advance, (priors or {}).get(s.path), workers)
            return finished(finish) if callable(finish) else finish

        with _threads(2, "input") as readers:
            for fut in [readers.submit(one, s) for s in sources]:
                yield _result(fut)
        return
    with _threads(1, "finish") as tail:
        finishing = None
        for s in sources:
            finish = parse.parse_one(store_root, s, opts, hosts[s.path], advance, (priors or {}).get(s.path))
            if finishing is not None:
                yield _result(finishing)
            finishing = tail.submit(finished, finish if callable(finish) else lambda r=finish: r)
        if finishing is not None:
            yield _result(finishing)


# The main thread waits in steps of this long: a signal the kernel gave another thread (any thread
# may take a process's signal) breaks no untimed wait, and its handler would wait for the wait's end.
_WAIT_STEP = 0.1


def _result(fut: Future):
    """`fut.result()`, waited for in steps so that a signal's handler runs within one."""
    while True:
        try:
            return fut.result(timeout=_WAIT_STEP)
        except FutureTimeout:
            continue


def _as_completed(futs) -> Iterator[Future]:
    """concurrent.futures.as_completed, waited for in steps (see _result)."""
    pending = set(futs)
    while pending:
        done, pending = wait_futures(pending, timeout=_WAIT_STEP, return_when=FIRST_COMPLETED)
        yield from done


@contextlib.contextmanager
def _threads(n: int, name: str):
    """A thread pool that a stop does not wait for: the input its threads are reading is given up
    (its commit is refused: stop.committing), and the pool's passes are killed behind it."""
    from concurrent.futures import ThreadPoolExecutor

    ex = ThreadPoolExecutor(n, thread_name_prefix=name)
    try:
        yield ex
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown()


COMPRESSED = (".gz", ".zst", ".bz2", ".xz")


def _weight(s: Source, scan: Scan) -> int:
    """What a large input gives the pool to parse, by its size on disk (a compressed one counted at
    a few times that)."""
    if s.size is None:
        return scan.pool_input_bytes
    return s.size * (4 if s.fs_path.lower().endswith(COMPRESSED) else 1)


def _is_small(s: Source, scan: Scan) -> bool:
    """A plain file well under one parse block: cheap to parse in a worker process."""
    if (s.member is not None and s.offset is None) or s.size is None or s.special or os.path.isdir(s.fs_path):
        return False
    return s.size < scan.small_input_bytes and not s.fs_path.lower().endswith(COMPRESSED)


def _dir_claimer():
    claimers = [p for p in PARSERS if hasattr(p, "sniff_dir")]
    if not claimers:
        return None

    def claim(d: str):
        best = max(claimers, key=lambda p: p.sniff_dir(d))
        return best.name if best.sniff_dir(d) >= 0.5 else None

    return claim
