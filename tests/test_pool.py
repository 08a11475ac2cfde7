"""One input's passes on ingest's worker processes give the tables the passes give in order in one
process: the clock a pass leaves, the lines that take their time from the passes above, the Kibana
offset the first pass teaches, the counts and the notes."""

from __future__ import annotations

import glob
import gzip
import os
import pickle
import shutil
import subprocess
import sys
from concurrent.futures import Future

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics.core import schema
from forensics.core.inputs import Scan
from forensics.ingest import pipeline
from forensics.parsers import server_log
from forensics.parsers.base import Context, Source, Written

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))


class _InProcess:
    """A PassPool that runs each pass here, its arguments and results through pickle as they go
    to a worker, and keeps what a worker would write, by part."""

    workers = 2

    def __init__(self):
        self.parts: dict[int, dict] = {}
        self.sent_back = 0

    def submit(self, part, fn, *args):
        fut: Future = Future()
        batch, info, write = fn(*pickle.loads(pickle.dumps(args)))
        if write:
            self.parts[part] = batch
            fut.set_result((Written(part), pickle.loads(pickle.dumps(info))))
        else:
            self.sent_back += 1
            fut.set_result(pickle.loads(pickle.dumps((batch, info))))
        return fut

    def write(self, part, batch):
        self.parts[part] = batch
        return Written(part)


class Signalled(BaseException):
    """A stand-in for ingest's Interrupted, which a signal raises in whatever wait is under way."""


class SignalledInWait(_InProcess):
    """A pool of 4 whose parts are still running when asked (none can be cancelled), and whose
    first wait for one is cut short by a signal; it notes the parts waited for to the end."""

    workers = 4

    def __init__(self):
        super().__init__()
        self.submitted: list[Future] = []
        self.waited: set[int] = set()
        self.signalled = False

    def submit(self, part, fn, *args):
        pool = self

        class Running(Future):
            def result(self, timeout=None):
                if not pool.signalled:
                    pool.signalled = True
                    raise Signalled()
                return super().result(timeout)

            def cancel(self):
                return False

            def exception(self, timeout=None):
                pool.waited.add(id(self))

        fut = Running()
        self.submitted.append(fut)
        return fut

    def abandoned(self) -> int:
        """Parts left running when the parse ended: their workers would write into a removed folder."""
        return sum(id(f) not in self.waited for f in self.submitted)


class FailingAtPart2(_InProcess):
    """An `_InProcess` pool of 4 whose third part fails as a full disk would."""

    workers = 4

    def submit(self, part, fn, *args):
        if part == 2:
            fut: Future = Future()
            fut.set_exception(OSError("No space left on device"))
            return fut
        return super().submit(part, fn, *args)


def _parse(path: str, pool=None, scan: Scan = Scan(), source: Source | None = None) -> tuple[dict, Context, list]:
    ctx = Context(host="h", pool=pool, scan=scan)
    src = source or Source(path="x.log", fs_path=path, size=os.path.getsize(path), mtime=os.path.getmtime(path))
    got = list(server_log.parse(src, ctx))
    batches = [pool.parts[w.part] for w in got] if pool else got
    tables = {}
    for t in ("events", "batches", "unparsed"):
        # as stored: a pass the polars path read (a k8s partial record) has columns of its own
        frames = [schema.conform(t, b[t]) for b in batches if t in b and b[t].height]
        if frames:
            tables[t] = pl.concat(frames)
    return tables, ctx, got


def _same(path: str, scan: Scan = Scan(), source: Source | None = None, pool: _InProcess | None = None) -> _InProcess:
    want, wctx, _ = _parse(path, scan=scan, source=source)
    pool = pool or _InProcess()
    got, gctx, yielded = _parse(path, pool, scan, source)
    assert all(isinstance(w, Written) for w in yielded)
    assert sorted(got) == sorted(want)
    for t in want:
        assert_frame_equal(got[t], want[t], check_exact=True)
    for f in (
        "lines",
        "parsed_lines",
        "continuation_lines",
        "unparsed_lines",
        "first_ts",
        "last_ts",
        "outer_offset_s",
        "notes",
        "carry",
    ):
        assert getattr(gctx, f) == getattr(wctx, f), f
    return pool


SHAPES = [
    s
    for s in server_log.samples
    if s.name
    in {"time_only_prefix_2024", "bare_stats_line_inherits_ts", "new_fill_batch_may_2024", "truncated_last_line"}
]


@pytest.mark.parametrize("sample", SHAPES, ids=[s.name for s in SHAPES])
def test_small_passes_on_a_pool_give_the_same_tables(tmp_path, sample):
    """Blocks of a few lines put a dated line, the time-only lines after it, a bare stats line and
    the timed line above it in different passes."""
    p = tmp_path / "x.log"
    p.write_text(sample.text)
    pool = _same(str(p), Scan(block_bytes=120, group_blocks=1))
    assert len(pool.parts) > 1 or sample.text.strip().count("\n") == 0
    if sample.name in ("time_only_prefix_2024", "bare_stats_line_inherits_ts"):
        assert pool.sent_back  # their passes need the clock of the passes before them


def test_kibana_offset_from_the_first_pass_reaches_the_others(tmp_path):
    line = (
        "May 16, 2026 @ 20:44:{s:02d}.560    [2026-05-16 12:44:{s:02d} DP2 TP2] Decode batch, #running-req: 1, "
        "#token: 31936, token usage: 0.15, #queue-req: 0\n"
    )
    later = "[2026-05-16 12:45:{s:02d} DP2 TP2] Decode batch, #running-req: 2, #token: 3, token usage: 0.15, #queue-req: 0\n"
    p = tmp_path / "x.log"
    p.write_text("".join(line.format(s=s) for s in range(3)) + "".join(later.format(s=s) for s in range(12)))
    _same(str(p), Scan(block_bytes=200, group_blocks=1))


@pytest.mark.native
def test_a_pd_log_in_many_passes(tmp_path):
    import gen

    p = tmp_path / "decode.log"
    gen.write_log(str(p), "decode", 1 << 20, 3)
    assert len(_same(str(p), Scan(block_bytes=96 << 10)).parts) > 3


def _store_tables(store: str) -> dict:
    out = {}
    for t in ("events", "batches", "unparsed", "files"):
        parts = sorted(glob.glob(f"{store}/tables/{t}/*/*/part-*.parquet"))
        if parts:
            out[t] = pl.concat([pl.read_parquet(f) for f in parts]).drop("ingested_at", strict=False)
    return out


@pytest.mark.native
def test_ingest_on_workers_writes_the_store_one_process_writes(tmp_path):
    """A compressed input is read here and parsed on the workers, pass by pass, beside small
    inputs parsed whole in the same pool."""
    import gen

    d = tmp_path / "in"
    d.mkdir()
    gen.write_log(str(d / "decode.log"), "decode", 1 << 20, 5)
    with open(d / "decode.log", "rb") as f, gzip.open(d / "decode.log.gz", "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(d / "decode.log")
    for i in range(2):
        gen.write_log(str(d / f"prefill-{i}.log"), "prefill", 64 << 10, 6 + i)
    stores = {}
    for jobs in (1, 2):
        stores[jobs] = str(tmp_path / f"store{jobs}")
        res = pipeline.run([str(d)], stores[jobs], pipeline.Options(jobs=jobs, scan=Scan(block_bytes=128 << 10)))
        assert sorted(r.status for r in res) == ["ingested"] * 3
    one, two = _store_tables(stores[1]), _store_tables(stores[2])
    assert sorted(one) == sorted(two)
    for t in one:
        key = ["source_file", "line_no"] if "line_no" in one[t].columns else ["path"]
        assert_frame_equal(two[t].sort(key), one[t].sort(key), check_exact=True)
    # the large input's passes were written as parts of their own, in pass order
    parts = glob.glob(f"{stores[2]}/tables/batches/*/*/part-*.parquet")
    assert len(parts) > 3


@pytest.mark.skipif(
    shutil.which("taskset") is None or not {0, 1} <= os.sched_getaffinity(0), reason="needs taskset and two cores"
)
def test_the_pool_is_sized_to_the_cores_this_process_may_use():
    code = "from forensics.ingest.pool import cores; print(cores())"
    for cpus, n in (("0", "1"), ("0,1", "2")):
        out = subprocess.run(["taskset", "-c", cpus, sys.executable, "-c", code], capture_output=True, text=True)
        assert out.stdout.strip() == n


def test_a_pass_that_fails_in_a_worker_fails_its_input(tmp_path):
    """The error reaches the input's parse (ingest then records the input as failed, alone), once
    the passes still in flight have ended: the input's folder is removed next."""
    p = tmp_path / "x.log"
    p.write_text(
        "".join(
            f"[2026-05-16 12:45:{s:02d} DP2 TP2] Decode batch, #running-req: 2, #token: 3, "
            "token usage: 0.15, #queue-req: 0\n"
            for s in range(12)
        )
    )

    pool = FailingAtPart2()
    with pytest.raises(OSError, match="No space left"):
        _parse(str(p), pool, Scan(block_bytes=120, group_blocks=1))
    assert 2 not in pool.parts and len(pool.parts) > 2  # the passes after it ran, into a folder then removed


def test_a_signal_in_the_wait_for_a_pass_leaves_no_pass_running(tmp_path):
    """The pass whose wait a signal cut short is still running: the parse waits for it, as for the
    others, before the input's folder is removed (else its worker writes the folder back)."""
    p = tmp_path / "x.log"
    p.write_text(
        "".join(
            f"[2026-05-16 12:45:{s:02d} DP2 TP2] Decode batch, #running-req: 2, #token: 3, "
            "token usage: 0.15, #queue-req: 0\n"
            for s in range(40)
        )
    )
    pool = SignalledInWait()
    with pytest.raises(Signalled):
        _parse(str(p), pool, Scan(block_bytes=120, group_blocks=1))
    assert len(pool.submitted) == pool.workers + 2 and pool.abandoned() == 0


def test_one_small_input_starts_no_workers(tmp_path, monkeypatch):
    """Workers would only add their start-up to an input smaller than what the pool is for."""
    from forensics.ingest import pool

    def no_pool(*a, **k):
        raise AssertionError("a pool was started for one small input")

    monkeypatch.setattr(pool, "start", no_pool)
    log = tmp_path / "decode.log"
    log.write_text(
        "[2025-10-15 14:44:32 DP0 TP0] Decode batch. #running-req: 1, #token: 90, token usage: 0.01, "
        "gen throughput (token/s): 10.00, #queue-req: 0, \n" * 100
    )
    res = pipeline.run([str(log)], str(tmp_path / "store"), pipeline.Options(jobs=2))
    assert [r.status for r in res] == ["ingested"]
