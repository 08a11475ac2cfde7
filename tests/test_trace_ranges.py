"""A large plain transfer trace goes to the workers as byte ranges of the file, block by block, in
the pool the server logs use: the tables, the counts and the store (every table and view) are
those of one process, wherever the blocks are cut (beside a line cut to its first MiB, a line that
is not JSON, a blank line, a truncated last line, lines the splitter hands back)."""

from __future__ import annotations

import glob
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics.core import schema
from forensics.core.inputs import Scan
from forensics.ingest import pipeline
from forensics.parsers import transfer_trace
from forensics.parsers.base import Context, Written
from forensics.parsers.lines import MAX_LINE_BYTES
from tests.test_pool import FailingAtPart2, Signalled, SignalledInWait
from tests.test_ranges import _plain, _Sent
from tests.test_trace_fast import CTX_FIELDS
from tools.digest import store_digest

_P = '"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3'
_D = '"host":"node-d1","pid":90412,"side":"decode","engine_rank":3'


def _trace(path, n: int = 3000, seed: int = 7) -> list[int]:
    """A trace of `n` lines with the odd ones near each other (a blank line, a line that is not
    JSON, one the splitter hands back, a line past MAX_LINE_BYTES) and a truncated last line;
    the 1-based numbers of the odd lines."""
    rng = random.Random(seed)
    out, odd = [], []
    for i in range(n):
        side = _P if i % 2 else _D
        line = (
            f'{{"ts":{1793354400 + i / 100:.6f},{side},"room":{rng.randrange(1, 1 << 62)},'
            f'"kind":"kv","chunk":{i % 4},"is_last":{"true" if i % 4 == 3 else "false"},'
            f'"event":"{("post", "done", "notif", "checksum")[i % 4]}","bytes":{rng.randrange(1 << 30)}'
            + (f',"checksum":"{rng.getrandbits(64):016x}"' if i % 4 == 3 else "")
            + "}"
        )
        if i % 211 == 100:
            odd.append(len(out) + 1)
            out.append("")
        if i % 173 == 50:
            odd.append(len(out) + 1)
            out.append("not json at all {")
        if i % 97 == 30:  # an escape: the splitter hands it to the DuckDB path
            odd.append(len(out) + 1)
            out.append(line[:-1] + ',"note":"a \\"quoted\\" word"}')
            continue
        if i == n // 2:
            odd.append(len(out) + 1)
            out.append(line[:-1] + ',"pad":"' + "x" * (MAX_LINE_BYTES + 100) + '"}')
            continue
        out.append(line)
    odd.append(len(out))
    path.write_text("\n".join(out)[:-7])  # the last line cut short, with no newline
    return odd


def _parse(path: str, pool=None, scan: Scan = Scan()):
    ctx = Context(host="h", pool=pool, scan=scan)
    got = list(transfer_trace.parse(_plain(path), ctx))
    batches = [pool.parts[w.part] for w in got] if pool else got
    tables = {}
    for t in ("transfer_events", "unparsed"):
        frames = [schema.conform(t, b[t]) for b in batches if t in b and b[t].height]
        tables[t] = pl.concat(frames)
    return tables, ctx, got


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("block", [4099, 61 << 10])
def test_blocks_on_workers_give_the_tables_of_one_process(tmp_path, monkeypatch, native, block):
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    p = tmp_path / "t.jsonl"
    odd = _trace(p)
    want, wctx, _ = _parse(str(p))
    pool = _Sent()
    got, gctx, yielded = _parse(str(p), pool, Scan(block_bytes=block))
    assert all(isinstance(w, Written) for w in yielded)
    assert pool.ranges >= 2 and len(pool.parts) > 3
    for t in want:
        assert_frame_equal(got[t], want[t], check_exact=True)
    for f in CTX_FIELDS:
        assert getattr(gctx, f) == getattr(wctx, f), f
    # the lines of the file, numbered as the file numbers them
    reasons = dict(zip(got["unparsed"]["line_no"], got["unparsed"]["reason"]))
    assert {reasons[n] for n in odd if n in reasons} == {"invalid_json", "line_too_long", "truncated"}
    assert reasons[odd[-1]] == "truncated"
    with open(p, "rb") as f:
        text = f.read().split(b"\n")
    for n, line in zip(got["unparsed"]["line_no"], got["unparsed"]["line"]):
        assert text[n - 1].decode().startswith(line[:1000])
    assert wctx.lines == len(text)


def _boundary_trace(path, block: int) -> None:
    """Lines laid so that a line that is not JSON ends a few bytes before each block of `block`
    bytes would be cut, with a blank line and a line past MAX_LINE_BYTES among them."""
    rows = [
        f'{{"ts":{1793354400 + i:.1f},{_P},"room":{i + 1},"kind":"kv","event":"post","bytes":{i}}}' for i in range(400)
    ]
    at = 0
    out = []
    for i, r in enumerate(rows):
        if at + len(r) + 1 > block - 40 and not out[-1].startswith("{{"):
            out.append("{{not json, at a cut point")
            at = 0
        out.append(r)
        at += len(r) + 1
    out.insert(len(out) // 2, "")
    out.insert(len(out) // 3, '{"cut":"' + "y" * (MAX_LINE_BYTES + 7) + '"}')
    path.write_text("\n".join(out) + "\n" + rows[0][:30])


@pytest.mark.native
def test_the_store_of_a_trace_in_blocks_on_workers_is_the_store_of_one_process(tmp_path):
    """Every table and view, by digest: the trace whole in one process against the same trace cut
    in ranges of a few KiB, parsed on two workers."""
    d = tmp_path / "in"
    d.mkdir()
    block = 5 << 10
    _trace(d / "kv.jsonl", n=4000, seed=3)
    _boundary_trace(d / "edge.jsonl", block)
    one = str(tmp_path / "one")
    res = pipeline.run([str(d)], one, pipeline.Options(jobs=1))
    assert sorted(r.status for r in res) == ["ingested"] * 2
    scan = Scan(block_bytes=block, small_input_bytes=1 << 10, pool_input_bytes=1 << 10)
    spread = str(tmp_path / "spread")
    res = pipeline.run([str(d)], spread, pipeline.Options(jobs=2, scan=scan))
    assert sorted(r.status for r in res) == ["ingested"] * 2
    # each input was written in parts, one a block
    assert len(glob.glob(f"{spread}/tables/transfer_events/*/*/part-*.parquet")) > 20
    want = store_digest(one)
    assert want["transfer_events"]["rows"] > 4000 and want["unparsed"]["rows"] > 20
    assert store_digest(spread) == want


def test_a_block_that_fails_in_a_worker_fails_its_input(tmp_path):
    """The error reaches the trace's parse (ingest then records the input as failed, alone), once
    the blocks still in flight have ended."""
    p = tmp_path / "t.jsonl"
    _trace(p, n=400)

    pool = FailingAtPart2()
    with pytest.raises(OSError, match="No space left"):
        _parse(str(p), pool, Scan(block_bytes=2000))
    assert 2 not in pool.parts and len(pool.parts) > 2  # the blocks after it ran, into a folder then removed


def test_a_signal_in_the_wait_for_a_block_leaves_no_block_running(tmp_path):
    """The block whose wait a signal cut short is still running: the parse waits for it, as for the
    others, before the input's folder is removed (else its worker writes the folder back)."""
    p = tmp_path / "t.jsonl"
    _trace(p, n=400)
    pool = SignalledInWait()
    with pytest.raises(Signalled):
        _parse(str(p), pool, Scan(block_bytes=2000))
    assert len(pool.submitted) == pool.workers + 2 and pool.abandoned() == 0
