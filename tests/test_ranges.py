"""A large plain input's passes go to the workers as byte ranges of the file, which each worker
reads itself: the tables, the counts and the store (every table and view) are those of one process,
wherever the ranges are cut (inside a traceback, past a line cut to its first MiB, beside a k8s
partial record), and a compressed input still goes by its text."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys

import pytest

from forensics.core.errors import InputError
from forensics.core.inputs import Scan, open_source
from forensics.ingest import pipeline
from forensics.parsers import lines
from forensics.parsers.base import Source
from forensics.parsers.lines import MAX_LINE_BYTES, TextStream
from tests.test_pool import _InProcess, _parse, _same

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))

TRACEBACK = (
    "[2026-10-01 00:00:{s:02d}] Error in request: No tool calls but found tool output\n"
    "Traceback (most recent call last):\n"
    '  File "/x/serving_base.py", line 100, in handle_request\n'
    "    adapted_request = self._convert()\n"
    "ValueError: No tool calls but found tool output\n"
)
PARTIAL = (
    "2026-10-01T00:00:{s:02d}.864923140+00:00 stderr P [2026-10-01 00:00:{s:02d} DP1 TP1] Prefill out of "
    "memory, try to lower chunked prefill\n"
    "2026-10-01T00:00:{s:02d}.864923141+00:00 stderr F  size or max running requests\n"
)


def _awkward(path, seed: int, size: int = 192 << 10, cut_line: bool = True, partial: bool = True) -> None:
    """A decode log with a traceback, a k8s partial record or a crash dump every few KiB, and a
    line longer than MAX_LINE_BYTES three quarters in (the file's bytes after it are no longer
    what the parser reads, so their passes carry their text)."""
    import gen

    gen.write_log(str(path), "decode", size, seed)
    with open(path) as f:
        body = f.read().splitlines(keepends=True)
    out, at = [], 0
    for i, ln in enumerate(body):
        out.append(ln)
        at += len(ln)
        if i % 37 == 36:
            out.append((TRACEBACK if i % 2 or not partial else PARTIAL).format(s=i % 60))
        if cut_line and at > size * 3 // 4:
            out.append("[2026-10-01 00:00:00 DP0 TP0] " + "x" * (MAX_LINE_BYTES + 4096) + "\n")
            cut_line = False
    with open(path, "w") as f:
        f.writelines(out)


class _Sent(_InProcess):
    """Counts the text each pass sends to its worker."""

    def __init__(self):
        super().__init__()
        self.sent_text = self.ranges = 0

    def submit(self, part, fn, *args):
        for r in args[0]:
            self.sent_text += len(r.body)
            self.ranges += r.at is not None
        return super().submit(part, fn, *args)


def _plain(path: str) -> Source:
    """The file as ingest opens it: a plain file read from its start (`parse.Input`)."""
    src = Source(path="x.log", fs_path=path, size=os.path.getsize(path), mtime=os.path.getmtime(path))

    def opened():
        text = TextStream(open_source(src))
        text.plain_file = os.path.abspath(path)
        return text

    src = Source(**{f: getattr(src, f) for f in ("path", "fs_path", "size", "mtime")})
    src.open = opened  # type: ignore[method-assign]
    return src


@pytest.mark.native
@pytest.mark.parametrize("block", [pytest.param(4099, marks=pytest.mark.slow), 16 << 10, 61 << 10])
def test_ranges_read_by_the_workers_give_the_tables_of_one_process(tmp_path, block):
    p = tmp_path / "x.log"
    _awkward(p, 3)
    scan = Scan(block_bytes=block, group_blocks=1)
    pool = _same(str(p), scan, source=_plain(str(p)), pool=_Sent())
    size = os.path.getsize(p)
    assert pool.ranges >= 2
    # the text after the cut line goes with its passes; before it, a few hundred bytes a pass
    assert pool.sent_text < size - size * 3 // 4 + MAX_LINE_BYTES + pool.ranges * 2 * lines.SEEN


def test_a_file_changed_under_its_ranges_fails_its_input(tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(b"".join(b"[2026-10-01 00:00:%02d] line %d\n" % (i % 60, i) for i in range(2000)))
    raws = list(lines.read_raw_blocks(_plain(str(p)).open(), 8 << 10))
    sent = pickle.loads(pickle.dumps([lines.left_out(r) for r in raws]))
    assert all(r.at is not None and len(r.body) == 2 * lines.SEEN for r in sent)
    assert lines.load(sent[0]).body.startswith(b"[2026-10-01 00:00:00] line 0\n")
    p.write_bytes(p.read_bytes().replace(b"line", b"LINE"))
    with pytest.raises(InputError, match="changed while it was read"):
        lines.load(sent[1])


def test_a_stream_changed_by_its_reader_maps_no_range_past_the_change(tmp_path):
    """NULs dropped, or a line cut: what the parser reads from there on is not the file's bytes."""
    p = tmp_path / "x.log"
    p.write_bytes(b"a\n" * (1 << 20) + b"\0" * 64 + b"b\n" * 100)
    text = TextStream(open(p, "rb"))
    text.plain_file = str(p)
    got = text.read()
    assert text.file_range(0, 1 << 20) == (str(p), 0, 1 << 20)  # the changes are judged a read at a time
    assert text.file_range(0, len(got)) is None and len(got) == (2 << 20) + 200


_DIGEST_RUN = [sys.executable, "-c", "import sys; from tools.digest import _DIGEST; exec(_DIGEST)"]


@pytest.mark.slow
@pytest.mark.native
def test_the_store_from_ranges_on_workers_is_the_store_of_one_process(tmp_path):
    """Every table and view, by digest: a plain input cut into ranges the workers read, a .gz
    parsed on the workers from its text, and a small input parsed whole in a worker."""
    import gen

    d = tmp_path / "in"
    d.mkdir()
    # no k8s partial records here: a store of them cut in 13 KiB blocks fails its write
    # (ArrowInvalid: Map cannot contain NULL valued keys) whatever the workers
    _awkward(d / "decode-0.log", 5, partial=False)
    _awkward(d / "decode-1.log", 6, cut_line=False, partial=False)
    with open(d / "decode-1.log", "rb") as f, gzip.open(d / "decode-1.log.gz", "wb") as g:
        g.write(f.read())
    os.remove(d / "decode-1.log")
    gen.write_log(str(d / "prefill-0.log"), "prefill", 32 << 10, 7)
    scan = Scan(block_bytes=13 << 10, small_input_bytes=48 << 10, pool_input_bytes=64 << 10)
    digests = {}
    for jobs in (1, 2):
        store = str(tmp_path / f"store{jobs}")
        res = pipeline.run([str(d)], store, pipeline.Options(jobs=jobs, scan=scan))
        assert sorted(r.status for r in res) == ["ingested"] * 3
        root = os.path.dirname(HERE)
        out = subprocess.run([*_DIGEST_RUN, store], capture_output=True, text=True, check=True, cwd=root)
        digests[jobs] = json.loads(out.stdout.strip().splitlines()[-1])
    assert digests[1]["events"]["rows"] > 100 and digests[1]["batches"]["rows"] > 1000
    assert digests[2] == digests[1]


def test_parse_with_a_source_of_its_own(tmp_path):
    """`_parse` reads the source it is given (the ranges' tests open the file as ingest does)."""
    p = tmp_path / "x.log"
    p.write_text(
        "[2026-10-01 00:00:00 DP0 TP0] Decode batch, #running-req: 1, #token: 3, token usage: 0.1, #queue-req: 0\n"
    )
    tables, ctx, _ = _parse(str(p), source=_plain(str(p)))
    assert tables["batches"].height == 1 and ctx.lines == 1
