"""Ingest refuses what is not a log: notes, summaries, tables, images and empty files are listed in
`files` as skipped with the reason, never parsed into events; `--parser` still forces a parser."""

from __future__ import annotations

import json
import os
import pathlib
import struct
import zlib

import pytest
from click.testing import CliRunner

from forensics.cli import main
from forensics.core.inputs import Source
from forensics.ingest.sniff import NotALog, choose_parser
from forensics.parsers import openai_proxy, server_log
from tests.conftest import ROOT, sql

LOG = (
    "[2026-10-30 10:00:01 DP0 TP0] Decode batch, #running-req: 64, #token: 1200, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
    "[2026-10-30 10:00:02 DP0 TP0] Decode batch, #running-req: 60, #token: 1100, token usage: 0.09, "
    "cuda graph: True, gen throughput (token/s): 99.00, #queue-req: 2\n"
)
QUOTED = "[2026-10-30 10:00:0%d TP0] Decode transfer failed for request rank=0 bootstrap_room=%d with exception x"


def _png() -> bytes:
    """A 1x1 grey PNG, written here so that no binary fixture is committed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
        + chunk(b"IEND", b"")
    )


def _dump(root):
    """An incident folder as people share it: the logs, and the notes they took beside them."""
    (root / "decode-0").mkdir(parents=True)
    (root / "decode-0" / "sglang.log").write_text(LOG)
    quoted = "\n".join(QUOTED % (i, 1000 + i) for i in range(6))
    (root / "README.md").write_text(f"# Incident 2026-10-30\n\nThe decode side failed:\n\n```\n{quoted}\n```\n")
    (root / "NOTES.md").write_text("- restarted decode-0 at 10:05\n- " + QUOTED % (3, 7) + "\n")
    (root / "expected.json").write_text(
        json.dumps(
            {"rooms": [1000, 1001], "first_failure": QUOTED % (0, 1000), "lines": [QUOTED % (i, i) for i in range(4)]},
            indent=2,
        )
    )
    (root / "rooms.csv").write_text(
        "room,line\n" + "".join(f'{1000 + i},"{QUOTED % (i, 1000 + i)}"\n' for i in range(4))
    )
    (root / "cluster.yaml").write_text("decode:\n  replicas: 2\n  last_line: '" + QUOTED % (1, 1) + "'\n")
    (root / "screenshot.png").write_bytes(_png())
    (root / "stderr.log").write_bytes(b"")
    return root


@pytest.mark.slow
def test_a_dump_of_notes_yields_events_only_from_its_log(tmp_path):
    dump = _dump(tmp_path / "dump")
    store = tmp_path / "store"
    res = CliRunner().invoke(main, ["ingest", str(dump), "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert (
        "skipped 7 files that are not logs: 2 markdown, 1 csv, 1 empty, 1 image, 1 json, 1 yaml (see `files`"
        in res.output
    ), res.output
    assert sql(store, "SELECT DISTINCT source_file FROM batches")["source_file"].to_list() == [
        str(dump / "decode-0" / "sglang.log")
    ]
    for table in ("events", "unparsed"):
        assert sql(store, f"SELECT count(*) n FROM {table}")["n"][0] == 0, table
    files = {r["path"].rsplit("/", 1)[1]: r for r in sql(store, "SELECT * FROM files").iter_rows(named=True)}
    assert {n: (r["status"], r["skip_kind"]) for n, r in files.items()} == {
        "sglang.log": ("ingested", None),
        "README.md": ("skipped", "markdown"),
        "NOTES.md": ("skipped", "markdown"),
        "expected.json": ("skipped", "json"),
        "rooms.csv": ("skipped", "csv"),
        "cluster.yaml": ("skipped", "yaml"),
        "screenshot.png": ("skipped", "image"),
        "stderr.log": ("skipped", "empty"),
    }
    for name, r in files.items():
        if r["status"] == "skipped":
            # listed, not read: no parser, no host or role, no line counted as parsed or unparsed
            assert r["skip_reason"] and r["sha256"] and r["bytes"] == os.path.getsize(r["path"]), r
            assert (r["format"], r["host"], r["lines"], r["parsed_lines"], r["unparsed_lines"]) == (
                None,
                None,
                None,
                None,
                None,
            ), r
    assert files["README.md"]["skip_reason"] == "a Markdown document (.md), not a log"
    assert files["sglang.log"]["lines"] == files["sglang.log"]["parsed_lines"] == 2
    # the same dump again: every note is listed once, not once per ingest
    CliRunner().invoke(main, ["ingest", str(dump), "--store", str(store)])
    assert sql(store, "SELECT count(*) n FROM files")["n"][0] == 8


def test_a_forced_parser_reads_a_markdown_file(tmp_path):
    p = tmp_path / "NOTES.md"
    p.write_text("# pasted from the decode pod\n" + LOG)
    for flag in ("--parser", "--format"):  # --format: the old name, kept for one release
        store = tmp_path / flag.strip("-")
        res = CliRunner().invoke(main, ["ingest", str(p), "--store", str(store), flag, "server_log"])
        assert res.exit_code == 0, res.output
        assert ("deprecated" in res.output) == (flag == "--format")
        assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 2
        row = sql(store, "SELECT format, status, lines, unparsed_lines FROM files").row(0, named=True)
        assert row == {"format": "server_log", "status": "ingested", "lines": 3, "unparsed_lines": 1}
    res = CliRunner().invoke(main, ["ingest", str(p), "--store", str(tmp_path / "x"), "--parser", "nope"])
    assert res.exit_code == 2 and "unknown parser 'nope'" in res.output


def _src(p):
    return Source(path=str(p), fs_path=str(p), size=p.stat().st_size)


@pytest.mark.parametrize(
    "name,data,kind",
    [
        ("notes.txt", b"we restarted the decode pod at 10:05 and it came back\n", "text"),
        ("core.1234", bytes(range(256)) * 40, "binary"),
        ("summary", b'{"rooms": [1, 2]}\n', "json"),
        ("blank.log", b"\n\n  \n", "empty"),
        ("page.html", b"<html><body>[2026-10-30 10:00:01 TP0] Decode batch, #token: 1</body></html>\n", "html"),
    ],
)
def test_each_kind_that_is_not_a_log(tmp_path, name, data, kind):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(NotALog) as e:
        choose_parser(_src(p), None)
    assert e.value.kind == kind and e.value.reason


def test_a_log_with_a_wrapper_or_a_comment_first_is_still_a_log(tmp_path):
    docker = "".join(
        json.dumps({"log": ln + "\n", "stream": "stderr", "time": "2026-10-30T10:00:01.5Z"}) + "\n"
        for ln in LOG.splitlines()
    )
    tail = "    req_conns = self.disagg_decode_prealloc_queue.pop_preallocated()\n                ^^^^^^^^^^^^\n"
    for name, text in (("docker.log", docker), ("cut.log", tail + LOG), ("pod.log", "# decode pod\n" + LOG)):
        p = tmp_path / name
        p.write_text(text)
        assert choose_parser(_src(p), None) is server_log, name


def test_a_capture_quoting_log_lines_is_a_capture(tmp_path, monkeypatch):
    chunk = {
        "id": "chatcmpl-q",
        "object": "chat.completion.chunk",
        "created": 1793354401,
        "choices": [{"index": 0, "delta": {"content": LOG * 5}, "finish_reason": None}],
    }
    sse = "event: message\n" + "".join(f"data: {json.dumps(chunk)}\n\n" for _ in range(3)) + "data: [DONE]\n"
    jsonl = "".join(json.dumps(chunk) + "\n" for _ in range(3))
    for name, text in (("capture.sse", sse), ("capture.jsonl", jsonl)):
        p = tmp_path / name
        p.write_text(text)
        assert server_log.sniff(p.read_bytes(), str(p)) == 0.0, name  # JSON and SSE lines carry no log marker
        assert choose_parser(_src(p), None) is openai_proxy, name
    # a tie goes to the parser that reads structure, not to the first listed (the server log)
    monkeypatch.setattr(server_log, "sniff", lambda head, path: 1.0)
    assert openai_proxy.sniff((tmp_path / "capture.sse").read_bytes(), "x") == 1.0
    assert choose_parser(_src(tmp_path / "capture.sse"), None) is openai_proxy


def _every_file(root):
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            yield os.path.join(d, f)


def test_every_real_excerpt_keeps_its_parser(real_logs):
    seen = 0
    for path in _every_file(real_logs):
        p = pathlib.Path(path)
        if path.endswith(".log"):
            assert choose_parser(_src(p), None) is server_log, path
            seen += 1
        elif path.endswith(".md"):  # MANIFEST.md quotes log lines in its table
            with pytest.raises(NotALog) as e:
                choose_parser(_src(p), None)
            assert e.value.kind == "markdown"
    assert seen > len(list(real_logs.glob("*.log")))  # the mooncake_incident/ folder too


def test_the_sample_bundle_keeps_its_parsers_and_lists_its_notes():
    from forensics.ingest.sources import discover

    want = {".log": "server_log", ".gz": "server_log", ".jsonl": None, ".json": "opencode"}
    for src in discover([str(ROOT / "sample_logs")]):
        name = os.path.basename(src.path)
        if name in ("README.md", "planted.json"):
            with pytest.raises(NotALog) as e:
                choose_parser(src, None)
            assert e.value.kind == name.rsplit(".", 1)[1].replace("md", "markdown")
            continue
        got = choose_parser(src, None).name
        ext = os.path.splitext(name)[1]
        if want[ext]:
            assert got == want[ext], src.path
        else:
            assert got == ("openai_proxy" if name == "proxy.jsonl" else "transfer_trace"), src.path


@pytest.mark.parametrize(
    "name,data,kind",
    [
        ("sglang.log", b"x7=q,; zz\n" * 2000, None),  # garbage: read, its lines in unparsed
        ("stdout", b"Segmentation fault (core dumped)\n  frame #0: 0x1 in ncclProxy()\n", None),
        ("worker.err", b"#\n# A fatal error has been detected:\n#\n#  SIGSEGV (0xb) at pc=0x1\n", None),
        ("engine.log.3", b"[engine] step 1 done, queue=3\n" * 40, None),
        ("app.out", b'{"level": "info", "msg": "started"}\n{"level": "warn", "msg": "x"}\n', None),
        ("notes.log", b"# What we saw\n\n- the pod died\n- restarted\n", "markdown"),
        ("cluster.log", b"---\ndecode:\n  replicas: 2\n", "yaml"),
        ("rooms.log", b"room,host,line\n1,a,ok\n2,b,failed\n", "csv"),
        ("repro.log", b"#!/usr/bin/env python3\nimport os\n", "python"),
        ("train.py", b"import os\nimport sys\n", "python"),
        ("expected.log", b'{\n  "rooms": [1, 2]\n}\n', "json"),
        ("crash.log", bytes(range(256)) * 40, "binary"),
    ],
)
def test_a_file_named_a_log_is_refused_only_by_what_it_is(tmp_path, name, data, kind):
    p = tmp_path / name
    p.write_bytes(data)
    if kind is None:
        parser = choose_parser(_src(p), None)
        assert parser.name == "server_log" and "its name says so" in parser.note
        return
    with pytest.raises(NotALog) as e:
        choose_parser(_src(p), None)
    assert e.value.kind == kind
