"""The native scanner (parsers/_fastlog.c) gives exactly the tables of the polars path.

It only takes lines it is sure of and leaves the rest to polars, so every case here parses the
same input both ways and compares whole tables, dtypes included.
"""

from __future__ import annotations

import glob
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from forensics.core import schema
from forensics.core.inputs import Scan
from forensics.parsers import lines, native, server_log
from forensics.parsers.server_log import grammar, passes, scanner
from tests.conftest import REAL_LOGS
from tests.helpers import parse_text

pytestmark = pytest.mark.native
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REAL = str(REAL_LOGS)


def _tables(data: bytes, use_native: bool, monkeypatch, **kw) -> tuple[dict, tuple]:
    monkeypatch.setenv("FORENSICS_NATIVE", "1" if use_native else "0")
    tables, ctx = parse_text(server_log, data, **kw)
    conformed = {t: schema.conform(t, df) for t, df in tables.items()}
    return conformed, (ctx.lines, ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines, ctx.notes)


def assert_same(data: bytes, monkeypatch, **kw) -> dict:
    want, want_acct = _tables(data, False, monkeypatch, **kw)
    got, got_acct = _tables(data, True, monkeypatch, **kw)
    assert got_acct == want_acct
    assert sorted(got) == sorted(want)
    for t in want:
        assert_frame_equal(got[t], want[t], check_exact=True)
    return got


HDR = "[2026-10-30 10:00:05 DP1 TP1 EP1] "
EDGE = [
    HDR + "Decode batch, #running-req: 41, #token: 151946, token usage: 0.37, pre-allocated usage: 0.09, "
    "#prealloc-req: 0, #transfer-req: 2, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 4123.11, #queue-req: 0, ",
    "[2025-10-15 14:44:32 DP14 TP14 EP14] Prefill batch. #new-seq: 2, #new-token: 68, #cached-token: 0, token usage: 0.01, "
    "#unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 1, input throughput (token/s): 1326.00, ",
    "[2024-11-29 10:28:29 TP0] Prefill batch. #new-seq: 2, #new-token: 2048, cache hit rate: 0.00%, #running-req: 69",
    "[11-29 10:28:29 TP0] Prefill batch. #new-seq: 2, cache hit rate: 12.5%, #queue-req: 130",  # MM-DD
    "[02-29 10:28:29 TP0] Decode batch. #running-req: 1",  # no Feb 29 in the file's year
    "[2026-02-30 10:28:29] Decode batch. #running-req: 1",
    "[2026-10-30 24:00:00] Decode batch. #running-req: 1",
    "[2026-10-30 23:59:60] Decode batch. #running-req: 1",
    "[2026-10-30 10:00:07.482 PP1 TP3] Decode batch, #full token: 120000, full token usage: 0.45, #swa token: 4000, npu graph: True",
    "[2026-10-30 10:00:07.482123 TP3] Decode batch, #running-req: 1",
    "[2026-10-30 10:00:07 ATTN_CP2 MOE_DP3 TP1 DP0] Decode batch, #running-req: 1",
    "[2026-10-30 10:00:07 XX1] Decode batch, #running-req: 1",
    "[2026-10-30 10:00:07 DP99999999999 TP1000000000] Decode batch, #running-req: 1",
    "[2026-10-30 10:00:07 DP99999999999] a garbled rank tag",
    "[2026-10-30 10:00:07 DP1 DP2] Decode batch, #running-req: 1, #running-req: 2, #token: x, #token: 5",
    "[2026-10-30 10:00:07 DP1] Decode batch, #token: 5, #token: x",
    "[2026-10-30 10:00:07] Decode batch [1234], #running-req: 1",
    "[2026-10-30 10:00:07] Decode batch #running-req: 1",
    "[2026-10-30 10:00:07] Decode batch.#running-req: 1",
    "[2026-10-30 10:00:07] Decode batch,",
    "[2026-10-30 10:00:07] Decode batch, ",
    "[2026-10-30 10:00:07] Decode batch, #running-req: 1\r",
    "[2026-10-30 10:00:07] Decode batch, #running-req: 1 \t, ",
    "[2026-10-30 10:00:07] Decode batch, #running-req: 1,, #token: 2",
    "[2026-10-30 10:00:07] Decode batch, #running-req: 1,#token: 2",
    "[2026-10-30 10:00:07] Decode batch, #running-req:1",
    "[2026-10-30 10:00:07] Decode batch, #running-req: ",
    "[2026-10-30 10:00:07] Decode batch, odd key: , other: x y z",
    "[2026-10-30 10:00:07] Decode batch, #running-req: 1: 2",
    "[2026-10-30 10:00:07] Decode batch, no colon here",
    "[2026-10-30 10:00:07] Decode batch,  #running-req: 1,  #token: 2",
    *[
        f"[2026-10-30 10:00:07] Decode batch, #running-req: {v}, token usage: {v}, cuda graph: {v}, cache hit rate: {v}"
        for v in [
            "-1",
            "007",
            "0",
            "-0",
            "1e3",
            "nan",
            "inf",
            "1.",
            ".5",
            "5%",
            "5 %",
            "True",
            "true",
            " 5 ",
            "+3",
            "1.25",
            "99999999999999999999",
            "123456789012345678",
            "0.1000000000000000055511151231257827",
        ]
    ],
    "[2026-10-30 10:00:07] Prefill batch, #prealloc-req: 3, #transfer-req: 4, #inflight-req: 5",
    "[2026-10-30 10:00:07] Decode batch, #prealloc-req: 3, #unbootstrapped-req: 4, #transfer-req: 5",
    "[2026-10-30 10:00:07] Decode batch, cuda graph: False, npu graph: True, musa graph: x",
    "2026-01-14T05:32:17.632471128Z stdout F [2026-01-14 05:32:17 DP0 TP0] Decode batch, #running-req: 3, #token: 9",
    "2026-01-14T05:32:17+08:00 stderr F[2026-01-14 05:32:17] Decode batch, #running-req: 3",
    "2026-01-14T05:32:17+0800 stderr F [2026-01-14 05:32:17] Decode batch, #running-req: 3",
    "2026-13-14T05:32:17Z stderr F [2026-01-14 05:32:17] Decode batch, #running-req: 3",
    "[2026-10-30 10:00:07] Decode batch, #running-req: 1, caf\u00e9: 2",
    "[2026-10-30 10:00:07] Decode batch, #running-req: \u0661",
    "[2026-10-30 10:00:07] Decode batch, #running-req: 1\x00",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "ValueError: after a stats line",
    "[2026-10-30 10:00:08] Scheduler hit an exception",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "ValueError: boom",
    "",
    '[2026-10-30 10:00:09] INFO:     10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
    "[2026-10-30 10:00:09] Decode batch, #running-req: 1, #token: 2",
]
# other lines with a sglang prefix (taken by the scanner's header path) and near misses
SGLANG = [
    "[2026-10-30 10:00:07] ",
    "[2026-10-30 10:00:07]",
    "[2026-10-30 10:00:07]x",
    "[2026-10-30 10:00:07]  two spaces",
    "[2026-10-30 10:00:07] trailing \t\r",
    "[2026-10-30 10:00:07][x.py:1][INFO]: custom config",
    "[2026-10-30 10:00:07,123][x.py:1][WARNING] custom config",
    "[2026-10-30 10:00:07 TP1 encode_server] encoder",
    "[2026-10-30 10:00:07.12] short ms",
    "[2026-10-30 10:00:07 TP1][x] bracket after tags",
    "[10-30 10:00:07 DP2 TP2] MM-DD Receive: obj=GenerateReqInput(rid='a1', bootstrap_room=77)",
    '[2026-10-30 10:00:07] INFO:     10.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK',
    "[2026-10-30 10:00:07] caf\u00e9 \u4f60\u597d message",
    "[2026-02-29 10:00:07] not a leap year",
    "2026-01-14T05:32:17.632471128Z stdout F [2026-01-14 05:32:17 DP0 TP0] Scheduler hit an exception",
    "2026-01-14T05:32:17.632471128Z stdout F",
    "2026-01-14T05:32:17Z stdout F [2026-01-14 05:32:17] Decode transfer failed for request rank=0 "
    "decode_req.req.rid='x' decode_req.req.bootstrap_room=5 with exception KVTransferError(bootstrap_room=5): Aborted",
    "Traceback (most recent call last):",
    '  File "y.py", line 2, in f',
    "KeyError: 'k'",
    '{"log":"[2026-10-30 10:00:07] in docker json\\n","stream":"stderr","time":"2026-10-30T10:00:07.1Z"}',
    "\u2588\u2588 50%|[2026-10-30 10:00:07] glued to a tqdm bar",
    "May 16, 2026 @ 20:44:55.560    [2026-05-16 12:44:55 DP2 TP2] behind Kibana",
    # uvicorn access lines: the canonical shape is taken whole, anything near it left to polars
    *[
        f"[2026-10-30 10:00:07] {m}"
        for m in [
            'INFO:     10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
            'INFO:\t10.0.0.1:5000 - "GET /health HTTP/1.1" 503 Service Unavailable',
            'INFO:     10.0.0.1:5000 - "GET /v1/requests?rid=abc HTTP/1.1" 200 OK',
            'INFO:     10.0.0.1:5000 - "GET /x?room=5 HTTP/1.1" 200 OK',
            'INFO:     10.0.0.1:5000 - "GET /x?rank=5 HTTP/1.1" 404 Not Found',
            'INFO:     10.0.0.1:5000 - "GET /a"b HTTP/1.1" 200 OK',
            'INFO:     10.0.0.1:5000 - "GET /caf\u00e9 HTTP/1.1" 200 OK',
            'INFO:     10.0.0.1:5000 - "GET - " 200',
            'INFO:     10.0.0.1:5000 - "GET - "POST /y HTTP" 200',
            'INFO:     10.0.0.1:5000 - "GET /x HTTP/1.1" 20 OK',
            'INFO:     10.0.0.1:5000 - "GET /x HTTP/1.1 \u00e9" 200 OK \u00e9',
            'INFO:     10.0.0.1:5000 - "GET  /x HTTP/1.1" 200 OK',
            'INFO:     - - "GET /x HTTP/1.1" 200 OK',
            'INFO: 10.0.0.1:5000 - "PUT /x HTTP/2" 201',
            'WARNING:  10.0.0.1:5000 - "GET /x HTTP/1.1" 200 OK',
            'INFO:     10.0.0.1:5000 - "GET /x HTTP/1.1" 200 OK finish_reason',
            '10.0.0.1 - - [30/Oct/2026:10:00:07 +0000] "GET /x HTTP/1.1" 200 12',
        ]
    ],
    # request logs: taken when every field is found the way the regexes find it
    *[
        f"[2026-10-30 10:00:08 DP1] {m}"
        for m in [
            "Receive: obj=GenerateReqInput(rid='R1', stream=True, bootstrap_host='10.0.0.21', bootstrap_port=8998, "
            "bootstrap_room=4454661513852788700, sampling_params={'max_new_tokens': 512})",
            "Receive OpenAI: obj=GenerateReqInput(rid='R2', bootstrap_room=None, data_parallel_rank=None)",
            "Receive: obj=GenerateReqInput(rid='R3', bootstrap_room=None, x=1, bootstrap_room: '77')",
            "Receive: obj=GenerateReqInput(rid='R4', bootstrap_room=99999999999999999999)",
            "Receive: obj=GenerateReqInput(rid='R5', bootstrap_room=9223372036854775808)",
            "Receive: obj=GenerateReqInput(rid='R6', bootstrap_room=0000000000000000000000042)",
            'Receive: {"rid": "R7", "bootstrap_room": 12}',
            "Receive: obj=GenerateReqInput(rid='', bootstrap_room=5)",
            "Receive: obj=GenerateReqInput(rid='R8 no closing quote",
            "Receive: obj=GenerateReqInput(rid='R9', bootstrap_room=5, rank=3, dp_rank=4)",
            "Receive: obj=GenerateReqInput(rid='R9', bootstrap_room=5, xrank=3, rank=99999999999)",
            "Receive: obj=GenerateReqInput(rid='R10', bootstrap_room=6) sent to 10.0.0.1:80",
            'Receive: obj=GenerateReqInput(rid=\'R11\', bootstrap_room=6) "event": "request.finished"',
            "Receive: obj=GenerateReqInput(rid='caf\u00e9', bootstrap_room=6)",
            "Receive: obj=GenerateReqInput(rid='R12', room=7)",
            "Receive: obj=GenerateReqInput(rid='R13', req=abc)",
            "Finish: obj=GenerateReqInput(rid='R1', bootstrap_room=4454661513852788700), out={'meta_info': {'id': 'R1', "
            "'finish_reason': {'type': 'stop', 'matched': 1}, 'prompt_tokens': 8192, 'completion_tokens': 509, "
            "'cached_tokens': 007, 'e2e_latency': 14.21}}",
            'Finish: obj=GenerateReqInput(rid=\'R2\'), out={"finish_reason": {"type": "length"}, '
            "\"prompt_tokens\": 12345678901234567890, 'e2e_latency': 1.2.3}",
            "Finish: obj=GenerateReqInput(rid='R3'), out={'finish_reason': {'type': 'abort', 'message': 'x'}, "
            "'status_code': 4000, 'e2e_latency': .5, 'prompt_tokens': x, 'prompt_tokens': 3}",
            "Finish: obj=GenerateReqInput(rid='R4'), out={'finish_reason': None, 'finish_reason': {'type': ''}, "
            "'e2e_latency': 5., 'cached_tokens_details': 3}",
            "Finish: obj=GenerateReqInput(rid='R5'), out={'finish_reason': {\"type': 'stop_str'}, 'status_code': 503}",
        ]
    ],
    "[2026-10-30 10:00:09 TP2] Decode transfer failed for request rank=2 decode_req.req.rid='R1' with exception x",
    "[2026-10-30 10:00:09] Decode transfer failed for request rank=2 decode_req.req.rid='R12' with exception y",
]
EDGE = EDGE + SGLANG


def test_edge_lines_both_ways(monkeypatch):
    data = "\n".join(EDGE).encode() + b"\n"
    got = assert_same(data, monkeypatch)
    assert got["batches"].height > 40


@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai", "America/New_York"])
def test_time_zones_and_a_cut_last_line(monkeypatch, tz):
    data = ("\n".join(EDGE[:12]) + "\n" + EDGE[0][:80]).encode()
    assert_same(data, monkeypatch, tz=tz)


def test_invalid_utf8_is_escaped_like_python(monkeypatch):
    bad = [
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xf0\x80\x80\x80",
        b"\xf4\x90\x80\x80",
        b"\xc0\xaf",
        b"\xe0\x80\xaf",
        b"\xf0\x9f\x98",
        b"\x80abc",
        "é€😀".encode(),
    ]
    rows = []
    for x in bad:
        rows += [
            b"[2026-10-30 10:00:07] Decode batch, #running-req: 1, k" + x + b": 2",
            b"[2026-10-30 10:00:07] odd " + x + b" text",
            x,
        ]
    got = assert_same(b"\n".join(rows) + b"\n", monkeypatch)
    assert any("\\xff" in v for v in got["unparsed"]["line"])


def test_partial_records_fall_back_to_polars(monkeypatch):
    data = (
        "2026-03-24T12:06:11.864923140+08:00 stderr P [2026-03-24 12:06:11] Decode batch, #run\n"
        "2026-03-24T12:06:11.864923140+08:00 stderr F ning-req: 3\n" + "\n".join(EDGE[:5]) + "\n"
    ).encode()
    assert_same(data, monkeypatch)


@pytest.mark.parametrize("group", [1, 2, 5])
@pytest.mark.slow
def test_block_boundaries(monkeypatch, group):
    """Small blocks: every line is some block's first or last line, tracebacks cross blocks."""
    data = "\n".join(EDGE * 3).encode() + b"\n"
    assert_same(data, monkeypatch, scan=Scan(block_bytes=300, group_blocks=group))


def test_the_scanner_takes_plain_stats_lines():
    """Guard against a silent fallback: plain lines must be taken natively, odd ones left."""
    body = "\n".join(
        [
            EDGE[0],
            EDGE[1],
            "[2026-10-30 10:00:07] Decode batch [1], #running-req: 1",
            "I0801 15:40:05.041554    1049 nixl_agent.cpp:92] x",
            '[2026-10-30 10:00:07] INFO:     10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
            "[2026-10-30 10:00:07] Receive: obj=GenerateReqInput(rid='R1', bootstrap_room=42)",
            EDGE[0],
        ]
    ).encode()
    cfg = scanner.config()
    raw = lines.RawBlock(body, 1, 7, False, True)
    d = native.scan(cfg, raw, 2026)
    assert d["st.n"] == 3  # plain stats lines, the block's last one included: a newline ended it
    sg = native.sglang_frame(d)
    assert sg["line_no"].to_list() == [3, 5, 6]  # other sglang-prefixed lines
    assert sg["_acc_status"].to_list() == [None, "200", None]  # an access line, read whole
    assert sg["_req_room"].to_list() == [None, None, 42]  # a request line, read whole
    assert native.rest_frame(d, raw)["line_no"].to_list() == [4]  # a glog line
    # a last line with no newline is a file's cut end: the polars path judges it
    cut = lines.RawBlock(body, 1, 7, True, True)
    d = native.scan(cfg, cut, 2026)
    assert d["st.n"] == 2
    assert native.rest_frame(d, cut)["line_no"].to_list() == [4, 7]


def test_each_scan_reads_the_configuration_it_is_given():
    """A configuration is an object passed to each scan, never process state: scans on many threads
    with two configurations at once (the GIL released while they run) each keep their own."""
    from concurrent.futures import ThreadPoolExecutor

    raw = lines.RawBlock("\n".join(EDGE[:3]).encode(), 1, 3, False, True)
    types = "".join(t[0] for _, t in scanner.COLUMNS)
    full = scanner.config()
    # without `#running-req` among the known keys, its items go to `extra`
    fewer = native.config(
        [k for k in scanner.keys() if k[0] != "#running-req"],
        types,
        grammar.RANK_TAGS,
        scanner.literals(),
        scanner.leaders(),
    )
    want = {id(c): native.scan(c, raw, 2026)["st.extra_n"] for c in (full, fewer)}
    assert want[id(fewer)] == want[id(full)] + 2  # two of the lines have one
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: (id(c), native.scan(c, raw, 2026)["st.extra_n"]), [full, fewer] * 100))
    assert all(n == want[c] for c, n in got)
    with pytest.raises(ValueError, match="rank tag 1"):  # the scanner tells tags apart by their first letter
        native.config(scanner.keys(), types, ("TP", "TX"), scanner.literals(), scanner.leaders())


def _files():
    found = sorted(glob.glob(os.path.join(ROOT, "sample_logs", "eras", "*.log")))
    found += sorted(glob.glob(os.path.join(ROOT, "sample_logs", "incident", "*", "sglang.log*")))
    real = sorted(glob.glob(os.path.join(REAL, "*.log")))
    return [*found, *(pytest.param(p, marks=pytest.mark.real_data) for p in real)]


@pytest.mark.parametrize("path", _files(), ids=os.path.basename)
def test_sample_and_real_logs_both_ways(monkeypatch, path):
    import gzip

    data = open(path, "rb").read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    assert_same(data, monkeypatch, name=os.path.basename(path).removesuffix(".gz"))


@pytest.mark.parametrize("path", _files(), ids=os.path.basename)
def test_sample_and_real_logs_in_blocks_both_ways(monkeypatch, path):
    """About eight blocks a file: the native path reads them in groups (GROUP_BLOCKS) in one pass,
    the polars path one by one; folding, rooms lent and the Kibana offset must still stop at
    each block's edge."""
    import gzip

    data = open(path, "rb").read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    scan = Scan(block_bytes=max(1024, len(data) // 8), group_blocks=3)
    assert_same(data, monkeypatch, name=os.path.basename(path).removesuffix(".gz"), scan=scan)


KEYS = [k for k in grammar.KNOWN_STATS_KEYS] + ["#swa token", "odd key", "k"]
VALUES = ["0", "1", "-3", "12.5", "0.00%", "7%", "True", "False", "", " 4 ", "1e3", "x", "007", "2.", "\u0662", "\t9"]
item = st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES)).map(lambda kv: f"{kv[0]}: {kv[1]}")
head = st.sampled_from(
    [
        "[2026-10-30 10:00:05 DP1 TP1] ",
        "[10-30 10:00:05.123] ",
        "[2026-10-30 10:00:05 DP99] ",
        "2026-01-14T05:32:17.6Z stdout F [2026-01-14 05:32:17 TP2] ",
        "[2026-10-30 10:00:05]  ",
    ]
)
stats_line = st.tuples(
    head,
    st.sampled_from(["Decode batch, ", "Prefill batch. ", "Decode batch [3], ", "Prefill batch,"]),
    st.lists(item, max_size=8),
    st.sampled_from([", ", ",", ", , ", "  ", ""]),
    st.sampled_from(["", ", ", " \t", "\r"]),
).map(lambda t: t[0] + t[1] + t[3].join(t[2]) + t[4])
other = st.sampled_from(
    [
        "Traceback (most recent call last):",
        '  File "x.py", line 1',
        "ValueError: x",
        "",
        *SGLANG,
        "[2026-10-30 10:00:05] Receive: obj=GenerateReqInput(rid='abc', bootstrap_room=7)",
        "2026-03-24T12:06:11.8Z stderr P [2026-03-24 12:06:11] Decode",
        "\xff",
    ]
)


sg_line = st.tuples(head, st.text(max_size=40)).map("".join)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(stats_line, stats_line, other, sg_line), min_size=1, max_size=25), st.booleans())
@pytest.mark.slow
def test_random_stats_lines_both_ways(monkeypatch, ls, final_newline):
    data = ("\n".join(ls) + ("\n" if final_newline else "")).encode("utf-8", "surrogatepass")
    assert_same(data, monkeypatch)


def test_first_block_waits_alone_only_when_it_may_teach_the_kibana_offset():
    """`_mentions` reads a block's view of the read buffer: only the block's own bytes count."""
    kibana = b"May 16, 2026 @ 20:44:55.560    [2026-05-16 12:44:55] x"
    buf = b"[2026-05-16 12:44:55] plain\n" + kibana
    head = lines.RawBlock(memoryview(buf)[: buf.index(b"\n")], 1, 1, False, False)
    assert not passes._mentions(head, b" @ ")  # the Kibana line lies past the block's end
    assert passes._mentions(lines.RawBlock(memoryview(buf), 1, 2, True, True), b" @ ")
    assert passes._mentions(lines.RawBlock(kibana, 1, 1, True, True), b" @ ")


@pytest.mark.parametrize(
    "env, want", [({}, "1"), ({"FORENSICS_NATIVE": "0"}, None), ({"POLARS_MAX_THREADS": "2"}, "2")]
)
def test_ingest_gives_polars_one_thread_only_beside_the_native_scanner(env, want):
    # a fresh process: the setting only counts before polars loads, and must not leak into this one
    import subprocess
    import sys

    code = (
        "import os; from forensics.core import runtime; runtime.configure_ingest(); "
        "import sys; print(os.environ.get('POLARS_MAX_THREADS'), 'polars' in sys.modules)"
    )
    base = {k: v for k, v in os.environ.items() if k not in ("POLARS_MAX_THREADS", "FORENSICS_NATIVE")}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(want), "False"]


@pytest.mark.parametrize("sample", server_log.samples, ids=lambda s: s.name)
def test_every_grammar_sample_both_ways(monkeypatch, sample):
    """The samples hit every rule of the grammar (tests/test_grammar.py): so both engines agree on every rule."""
    assert_same(sample.text.encode(), monkeypatch, name=f"{sample.name}.log")
