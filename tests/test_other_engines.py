"""Other engines' inputs are named, not counted as nothing, and every report says what it did not read.

The lines here are written for these tests after the engines' public logger formats
(docs/formats/OTHER_ENGINES.md, "Telling the writer of a line"), not taken from the generator.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from forensics.cli import main
from forensics.parsers import engines
from tests.conftest import ROOT

# vLLM's engine core dying: its process prefix, `LEVEL MM-DD HH:MM:SS [file:line]` heads repeated on
# every traceback line, and the API server's EngineDeadError after it
VLLM_FATAL = """\
INFO 09-17 16:23:10 [core.py:123] Automatically detected platform cuda.
(APIServer pid=100) INFO 09-17 16:23:11 [api_server.py:1800] vLLM API server version 0.10.2
(EngineCore_0 pid=123) INFO 09-17 16:23:12 [core.py:71] Initializing a V1 LLM engine (v0.10.2) with config: model='m'
(EngineCore_0 pid=123) ERROR 09-17 16:23:13 [core.py:712] EngineCore encountered a fatal error.
(EngineCore_0 pid=123) ERROR 09-17 16:23:13 [core.py:712] Traceback (most recent call last):
(EngineCore_0 pid=123) ERROR 09-17 16:23:13 [core.py:712]   File "/opt/vllm/v1/engine/core.py", line 703, in run_engine_core
(EngineCore_0 pid=123) ERROR 09-17 16:23:13 [core.py:712]     engine_core.run_busy_loop()
(EngineCore_0 pid=123) ERROR 09-17 16:23:13 [core.py:712] RuntimeError: CUDA error: an illegal memory access was encountered
(APIServer pid=100) ERROR 09-17 16:23:14 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
"""

# what vLLM's process prefix wraps besides its logger's lines: print() and library output, not read
VLLM_PRINTS = """\
(EngineCore_0 pid=123) Loading safetensors checkpoint shards:   0% Completed | 0/8 [00:00<?, ?it/s]
(EngineCore_0 pid=123) Loading safetensors checkpoint shards: 100% Completed | 8/8 [00:41<00:00,  5.20s/it]
(EngineCore_0 pid=123) *** SIGSEGV received at time=1757000000 on cpu 3 ***
"""

# a build no grammar knows: every line unparsed, no engine named
UNKNOWN = """\
<<frame 1 begin>> worker=7 state=stalled
<<frame 2 begin>> worker=7 state=stalled
<<frame 3 begin>> worker=7 state=dead
"""

# SGLang's own lines, as its logger prints them (docs/formats/SGLANG.md)
SGLANG = """\
[2025-09-17 16:23:13 DP0 TP0] Decode batch. #running-req: 3, #token: 1200, token usage: 0.01, gen throughput (token/s): 95.12, #queue-req: 0,
[2025-09-17 16:23:14 DP0 TP0] Decode batch. #running-req: 3, #token: 1230, token usage: 0.01, gen throughput (token/s): 96.40, #queue-req: 0,
"""


def run(*args) -> tuple[str, str]:
    r = CliRunner(env={"COLUMNS": "200", "TZ": "UTC"}).invoke(main, [str(a) for a in args])
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    assert r.exit_code == 0, r.output
    return r.stdout, r.stderr


def _store(tmp_path, files: dict[str, str]):
    dump = tmp_path / "dump"
    dump.mkdir()
    for name, text in files.items():
        (dump / name).write_text(text, encoding="utf-8")
    store = tmp_path / "store"
    out, err = run("ingest", *(dump / n for n in files), "--store", store)
    return store, out + err


def _blocks() -> list[str]:
    text = (ROOT / "docs" / "formats" / "OTHER_ENGINES.md").read_text(encoding="utf-8")
    return re.findall(r"(?ms)^```text\n(.*?)^```$", text)


def test_the_pages_examples_name_their_engines():
    blocks = _blocks()
    # the last: the sgl-router section's own examples
    assert [engines.recognise(b.splitlines()) for b in blocks] == [
        "vllm",
        "trtllm",
        "dynamo",
        "sgl_router",
        "lmcache",
        "sgl_router",
    ]
    for block in blocks:
        assert all(engines.line_engine(ln) for ln in block.splitlines()), block


def test_sglang_lines_name_no_engine():
    from forensics.parsers.server_log import samples

    lines = [s if isinstance(s, str) else getattr(s, "line", "") for s in getattr(samples, "SAMPLES", [])]
    lines += SGLANG.splitlines()
    assert [ln for ln in lines if isinstance(ln, str) and engines.line_engine(ln)] == []


def test_wrapped_and_coloured_lines_are_named():
    assert engines.line_engine("2025-09-17T16:23:13.1Z stdout F INFO 09-17 16:23:13 [core.py:1] x") == "vllm"
    assert engines.line_engine("\x1b[32mINFO\x1b[0m 09-17 16:23:13 [core.py:1] x") == "vllm"
    assert (
        engines.line_engine("(EngineCore_DP0 pid=3) [2025-11-19 23:10:25,072] LMCache INFO: x (a.py:1:b)") == "lmcache"
    )


def test_a_vllm_fatal_error_is_read_and_named_vllm_in_ingest_summary_and_evidence(tmp_path):
    store, ingested = _store(tmp_path, {"engine.log": VLLM_FATAL})
    flat = ingested.replace("\n", " ")
    assert "vLLM log: 5 records read as vLLM's (times, levels" in flat
    said = "vLLM log: read as vLLM's (times, levels, process ranks, tracebacks, NIXL and Mooncake connector failures); 0% unparsed"
    text, _ = run("summary", "--store", store)
    assert not text.startswith("warning") and said in text
    doc = json.loads(run("summary", "--store", store, "--format", "json")[0])
    assert doc["inputs"]["lower_bound"] is False

    md, _ = run("evidence", "--store", store)
    assert said in md and "lower bound" not in md
    # the engine core's death and the front end's error after it: two signals, its traceback one record
    assert "| exception | error | other | 2 |" in md and "EngineCore encountered a fatal error." in md
    ev = json.loads(run("evidence", "--store", store, "--format", "json")[0])
    (inp,) = ev["coverage"]["inputs"]
    assert inp["engine"] == "vllm" and inp["read"] == said and inp["engine_read"] is True
    rows = run(
        "sql", "SELECT line_no, kind, exc_type FROM events ORDER BY line_no", "--store", store, "--format", "json"
    )
    assert [(r["line_no"], r["kind"], r["exc_type"]) for r in json.loads(rows[0])] == [
        (1, "vllm_log", None),
        (2, "vllm_log", None),
        (3, "vllm_log", None),
        (4, "exception", "RuntimeError"),
        (9, "exception", None),
    ]


def test_vllm_lines_it_does_not_read_are_named_vllm(tmp_path):
    store, ingested = _store(tmp_path, {"engine.log": VLLM_PRINTS})
    said = "vLLM log: lines outside its logger's format not read; 100% unparsed"
    assert said in ingested.replace("\n", " ")
    text, _ = run("summary", "--store", store)
    first = text.splitlines()[0]
    assert first.startswith("warning: counts are lower bounds") and "engine.log" in first and said in first
    doc = json.loads(run("summary", "--store", store, "--format", "json")[0])
    assert doc["warnings"][0].startswith("warning: counts are lower bounds") and said in doc["warnings"][0]
    (most,) = doc["inputs"]["most_unparsed"]
    assert most["engine"] == "vllm" and most["read"] == said
    ev = json.loads(run("evidence", "--store", store, "--format", "json")[0])
    (inp,) = ev["coverage"]["inputs"]
    assert inp["engine"] == "vllm" and inp["read"] == said and inp["engine_read"] is False


def test_an_all_unparsed_input_makes_evidence_say_lower_bound_first(tmp_path):
    store, _ = _store(tmp_path, {"worker.log": UNKNOWN})
    md, _ = run("evidence", "--store", store)
    lines = [ln for ln in md.splitlines() if ln.strip()]
    assert lines[0] == "## Evidence"
    # before any count: the lead, naming the input it could not read
    assert lines[1].startswith("> **warning: counts are lower bounds") and "worker.log (100% unparsed)" in lines[1]
    assert "_no failed request in the server logs_" not in md
    assert "no failed request in the lines read; a lower bound" in md
    assert json.loads(run("evidence", "--store", store, "--format", "json")[0])["coverage"]["lower_bound"] is True


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_the_timeline_says_it_first_in_every_format(tmp_path, fmt):
    store, _ = _store(tmp_path, {"engine.log": VLLM_PRINTS})
    out, err = run("timeline", "--store", store, "--format", fmt)
    if fmt == "json":
        cov = json.loads(out)["coverage"]
        assert cov["lower_bound"] and cov["inputs"][0]["engine"] == "vllm"
        return
    head = (err if fmt == "csv" else out).lstrip("> *").splitlines()[0]
    assert head.startswith("warning: counts are lower bounds") and "vLLM log" in head


def test_the_exports_say_it_at_the_top(tmp_path):
    store, _ = _store(tmp_path, {"engine.log": VLLM_PRINTS})
    run("timeline", "--store", store, "-o", tmp_path / "t.html")
    assert "counts are lower bounds" in (tmp_path / "t.html").read_text(encoding="utf-8")


def test_a_store_read_whole_says_its_share_and_no_lower_bound(tmp_path):
    store, _ = _store(tmp_path, {"decode.log": SGLANG})
    md, _ = run("evidence", "--store", store)
    assert "lower bound" not in md
    assert "coverage: 0 of 2 input lines unparsed (0%) in 1 input" in md
    assert "_no failed request in the server logs_" in md
    text, _ = run("summary", "--store", store)
    assert not text.startswith("warning")
    out, _ = run("timeline", "--store", store)
    assert "coverage: 0 of 2 input lines unparsed (0%) in 1 input" in out and "lower bound" not in out
