"""Bad input loses nothing and breaks nothing: the corpus of issue 6, run on every CI.

Each case is generated here; the test prints a table of case, outcome, lines in and lines accounted.
"""

from __future__ import annotations

import gzip
import io
import os
import random
import tarfile
import zlib

import pytest
import zstandard

from tests.conftest import ingest_paths, seed, sql

GOOD = (
    "[2026-10-30 10:00:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
)


def good(n: int, start: int = 0) -> str:
    return "".join(GOOD.format(s=(start + i) % 60, n=i) for i in range(n))


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def _readable_gzip(data: bytes) -> bytes:
    d = zlib.decompressobj(zlib.MAX_WBITS | 16)
    return d.decompress(data)


def _readable_zstd(data: bytes) -> bytes:
    out = io.BytesIO()
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as r:
            while chunk := r.read(1 << 16):
                out.write(chunk)
    except zstandard.ZstdError:
        pass
    return out.getvalue()


def build_cases(root):
    """Write each bad input under root/<case>/; return {case: (paths, expected outcome, lines in)}."""
    cases = {}

    def put(case, name, data: bytes, lines_in=None, outcome="ingested"):
        d = root / case
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
        cases[case] = ([d / name], outcome, _count_lines(data) if lines_in is None else lines_in)
        return d / name

    text = good(400).encode()
    gz = gzip.compress(text)
    cut = gz[: len(gz) * 6 // 10]
    put("truncated_gz", "decode.log.1.gz", cut, lines_in=_count_lines(_readable_gzip(cut)))
    zs = zstandard.ZstdCompressor().compress(text)
    cutz = zs[: len(zs) * 6 // 10]
    put("truncated_zst", "decode.log.zst", cutz, lines_in=_count_lines(_readable_zstd(cutz)))
    put("invalid_utf8", "decode.log", good(3).encode() + b"\xff\xfe broken \xc3(\n" + good(2).encode())
    put(
        "nul_bytes",
        "decode.log",
        good(2).encode() + b"\x00\x00\x00 crash\n" + GOOD.format(s=1, n=1).replace("Decode", "De\x00code").encode(),
    )
    put("huge_line_50mb", "decode.log", good(2).encode() + b"x" * (50 << 20) + b"\n" + good(2).encode())
    put("crlf_mixed", "decode.log", good(3).replace("\n", "\r\n").encode() + good(3).encode())
    put("empty", "decode.log", b"", outcome="skipped")  # listed in files as not a log, no lines counted
    rnd = random.Random(seed(1))
    put("binary", "core.1234", bytes(rnd.randrange(256) for _ in range(20000)), outcome="skipped")
    d = root / "unreadable"
    d.mkdir()
    os.symlink(d / "gone.log", d / "decode.log")
    cases["unreadable"] = ([d], "failed", 0)
    d = root / "symlink_loop"
    (d / "host-a").mkdir(parents=True)
    (d / "host-a" / "decode.log").write_text(good(5))
    os.symlink(d, d / "host-a" / "loop")
    cases["symlink_loop"] = ([d], "ingested", 5)
    back = good(3, start=30) + good(3, start=0)  # a clock step backwards mid-file
    put("timestamps_backwards", "decode.log", back.encode())
    d = root / "same_file_two_names"
    d.mkdir()
    (d / "decode.log").write_text(good(4))
    (d / "decode.log.bak").write_text(good(4))
    cases["same_file_two_names"] = ([d], "ingested+duplicate", 8)
    glued = good(1).rstrip("\n") + good(1, start=5)
    put("glued_lines", "decode.log", (good(2) + glued + good(2)).encode())
    d = root / "tar_traversal"
    d.mkdir()
    with tarfile.open(d / "incident.tar.gz", "w:gz") as tf:
        for i, name in enumerate(("../x/decode.log", "/etc/decode-abs.log")):
            data = good(3, start=10 * i).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    cases["tar_traversal"] = ([d / "incident.tar.gz"], "ingested", 6)
    return cases


@pytest.mark.slow
def test_bad_input_corpus(tmp_path, capsys):
    cases = build_cases(tmp_path / "in")
    report = []
    for case, (paths, expected, lines_in) in sorted(cases.items()):
        store = tmp_path / "stores" / case
        results = ingest_paths(paths, store, jobs=1)
        outcome = "+".join(
            sorted({r.status for r in results}, key=["ingested", "duplicate", "failed", "skipped"].index)
        )
        files = (
            sql(store, "SELECT sum(lines) l, sum(parsed_lines + continuation_lines + unparsed_lines) a FROM files")
            if (store / "inputs").exists()
            else None
        )
        accounted = int(files["a"][0] or 0) if files is not None else 0
        lines = int(files["l"][0] or 0) if files is not None else 0
        report.append((case, outcome, lines_in, accounted))
        assert outcome == expected, (case, [r.error for r in results])
        # a refused or skipped input adds no lines; a duplicate's lines are accounted once, under the first name
        want = {"failed": 0, "skipped": 0, "ingested+duplicate": lines_in // 2}.get(expected, lines_in)
        assert lines == accounted == want, case
        for r in results:
            if r.status == "failed":
                # one clear error naming the file and the fix
                assert (
                    r.error.startswith("error: ") and "help:" in r.error and os.path.basename(str(r.path)) in r.error
                ), r.error
        if files is not None:
            rows = sql(
                store,
                "SELECT (SELECT count(*) FROM batches) + (SELECT count(*) FROM events) "
                "+ (SELECT count(*) FROM unparsed) n, (SELECT coalesce(sum(parsed_lines + unparsed_lines), 0) "
                "FROM files) m",
            )
            assert rows["n"][0] == rows["m"][0], case
    with capsys.disabled():
        print("\n{:<22} {:<20} {:>9} {:>15}".format("case", "outcome", "lines in", "lines accounted"))
        for row in report:
            print("{:<22} {:<20} {:>9} {:>15}".format(*row))


def test_unparsed_keeps_raw_bytes_escaped(tmp_path):
    p = tmp_path / "decode.log"
    p.write_bytes(b"\xff\xfe broken \xc3(\n" + b"x" * (1 << 20) + b"\n")
    ingest_paths([p], tmp_path / "s", format="server_log")  # no log marker: only a forced parser reads it
    df = sql(tmp_path / "s", "SELECT line_no, line, reason FROM unparsed ORDER BY line_no")
    assert df["line"][0] == "\\xff\\xfe broken \\xc3("
    assert len(df["line"][1]) == 64 << 10 and df["line_no"][1] == 2


def test_notes_say_a_compressed_file_was_cut(tmp_path):
    gz = gzip.compress(good(300).encode())
    p = tmp_path / "decode.log.gz"
    p.write_bytes(gz[: len(gz) // 2])
    [r] = ingest_paths([p], tmp_path / "s")
    assert r.status == "ingested" and any("cut" in n for n in r.notes)


def test_damaged_zstd_keeps_the_frames_before_the_damage(tmp_path):
    good_part = zstandard.ZstdCompressor().compress(good(50).encode())
    damaged = zstandard.ZstdCompressor().compress(good(50, start=20).encode())
    p = tmp_path / "decode.log.zst"
    p.write_bytes(good_part + damaged[:12] + b"\xff" * 40 + damaged[52:])
    [r] = ingest_paths([p], tmp_path / "s")
    assert r.status == "ingested" and any("cut" in n for n in r.notes), (r.error, r.notes)
    assert sql(tmp_path / "s", "SELECT count(*) n FROM batches")["n"][0] == 50


@pytest.mark.parametrize("kill_after", [0.15, 0.5, 1.2, 2.5])
@pytest.mark.slow
def test_killed_ingest_leaves_a_consistent_store(tmp_path, kill_after):
    """SIGKILL mid-ingest: the store stays readable, and re-running completes it without duplicates."""
    import signal
    import subprocess
    import sys
    import time

    dump = tmp_path / "dump"
    for h in range(4):
        (dump / f"decode-{h}").mkdir(parents=True)
        (dump / f"decode-{h}" / "sglang.log").write_text(good(60000, start=h))
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "forensics.cli", "ingest", str(dump), "--store", str(store)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(kill_after)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if (store / "inputs").exists():
        seen = sql(store, "SELECT count(*) n, count(DISTINCT sha256) d, coalesce(sum(parsed_lines), 0) p FROM files")
        assert seen["n"][0] == seen["d"][0]
        assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == seen["p"][0]  # no partial input visible
    subprocess.run(cmd, check=True, capture_output=True)
    final = sql(store, "SELECT count(*) n, count(DISTINCT sha256) d FROM files")
    assert final["n"][0] == final["d"][0] == 4
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 4 * 60000
    assert not any((store / ".tmp").iterdir()) if (store / ".tmp").exists() else True
