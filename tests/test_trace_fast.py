"""The transfer trace's field splitter (parsers/_fasttrace.c) against the DuckDB reference path.

Both must give the same tables, row for row and value for value, and the same line accounting, on
the fixtures and on generated lines that walk every field through
the forms docs/formats/TRANSFER_TRACE.md, "Reader rules" accepts and the ones it rejects. Where the splitter hands a line back, the reference
path parses it: the tests also check that the splitter takes the clean lines itself, so a
splitter that handed everything back would fail here rather than pass by doing nothing.
"""

from __future__ import annotations

import json
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics.parsers import transfer_trace
from tests.conftest import ROOT, seed
from tests.helpers import parse_text
from tests.test_transfers import SPEC_EXAMPLE

pytestmark = pytest.mark.native

CTX_FIELDS = (
    "lines",
    "parsed_lines",
    "continuation_lines",
    "unparsed_lines",
    "first_ts",
    "last_ts",
    "inferred_role",
    "inferred_host",
    "notes",
)


def both(monkeypatch, data: bytes, name: str = "t.jsonl"):
    """(fast tables, ctx), (reference tables, ctx) for one input."""
    monkeypatch.setenv("FORENSICS_NATIVE", "1")
    fast = parse_text(transfer_trace, data, name=name)
    monkeypatch.setenv("FORENSICS_NATIVE", "0")
    ref = parse_text(transfer_trace, data, name=name)
    monkeypatch.delenv("FORENSICS_NATIVE")
    return fast, ref


def assert_same(monkeypatch, data: bytes, name: str = "t.jsonl") -> dict:
    (ft, fc), (rt, rc) = both(monkeypatch, data, name)
    assert sorted(ft) == sorted(rt)
    for table in rt:
        assert_frame_equal(ft[table], rt[table], check_exact=True)
    for f in CTX_FIELDS:
        assert getattr(fc, f) == getattr(rc, f), f
    return rt


def split(data: bytes) -> dict:
    """What the splitter makes of `data` on its own: rows taken, lines handed back, lines cut."""
    body = data[:-1] if data.endswith(b"\n") else data
    return transfer_trace._fasttrace.scan(body, 1, body.count(b"\n") + 1)


# -- fixtures -----------------------------------------------------------------------------------


def test_spec_example_is_taken_whole_and_identical(monkeypatch):
    data = SPEC_EXAMPLE.encode()
    d = split(data)
    assert (d["n"], d["fb.n"], d["bad.n"]) == (10, 0, 0)
    assert assert_same(monkeypatch, data)["transfer_events"].height == 10


@pytest.mark.parametrize("sample", transfer_trace.samples, ids=lambda s: s.name)
def test_parser_samples_identical(monkeypatch, sample):
    assert_same(monkeypatch, sample.text.encode() if isinstance(sample.text, str) else sample.text)


TRACES = sorted((ROOT / "sample_logs").rglob("kvtrace-*.jsonl"))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_sample_log_traces_identical(monkeypatch, path):
    data = path.read_bytes()
    d = split(data)
    assert d["n"] > 0.9 * data.count(b"\n"), "the splitter hands back most of a clean trace"
    assert_same(monkeypatch, data, path.name)


def test_bench_generator_trace_identical(monkeypatch, tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    import gen

    p = tmp_path / "kvtrace.jsonl"
    gen.write_trace(str(p), 3 << 20, 21)
    data = p.read_bytes()
    d = split(data)
    assert d["fb.n"] == 0 and d["bad.n"] > 0, "the generator's cut lines are told apart by the splitter"
    assert_same(monkeypatch, data)


# -- generated lines ----------------------------------------------------------------------------

BASE = {
    "ts": 1793354400.512301,
    "host": "node-p0",
    "pid": 1842217,
    "side": "prefill",
    "engine_rank": 3,
    "dp_rank": 3,
    "room": 4127750395128840213,
    "rid": "7d1c0c8f",
    "kind": "kv",
    "chunk": 0,
    "is_last": True,
    "event": "checksum",
    "bytes": 603979776,
    "status": "NIXL_SUCCESS",
    "peer": "def7d2f1-d482",
    "checksum": "9a41c07e55d2b3f1",
    "error": "getXferStatus: backend 'UCX' returned NIXL_ERR_BACKEND",
}

# forms each field may take: the ones "Reader rules" accepts, the ones it rejects, and JSON the splitter leaves
TS = [
    1793354400.512301,
    1793354400,
    1793354400.5,
    0.5,
    1e3,
    1793354400.123456789,
    -5,
    -5.5,
    12345678901234567,
    1793354400.0000005,
    1793354400.0000015,
    1793354400.9999995,
    12345.123456789,
    12345.1234567895,
    1.0000000005,
    123456789012.12345,
    17933544.001234567,
    "1793354400.50",
    1793354400.000001,
    17933544001.25,
    0,
    2**63,
    True,
    None,
    [1],
    {"a": 1},
    "2026-10-30T10:00:00.514950Z",
    "2026-10-30T10:00:00.533102+00:00",
    "2026-10-30T10:00:00",
    "2026-10-30 10:00:00Z",
    "2026-10-30T10:00:00.5",
    "2026-10-30T10:00:00.1234567Z",
    "2024-02-29T23:59:59.999999Z",
    "2023-02-29T00:00:00Z",
    "2026-10-30T10:00:00-01:00",
    "2026-10-30T10:00:00+05:30",
    "2026-10-30T10:00:00+0530",
    "2026-10-30T10:00:00+05",
    "2026-10-30T10:00:00z",
    "2026-13-01T00:00:00Z",
    "2026-10-30T24:00:00Z",
    "2026-10-30T10:00:60Z",
    "0999-01-01T00:00:00Z",
    "2026-10-30",
    "yesterday",
    "",
    "2026-10-30T10:00:00.Z",
    "1999-12-31T23:59:59.000001-23:59",
]
INTS = [
    0,
    1,
    -1,
    3,
    2**31 - 1,
    2**31,
    -(2**31),
    2**40,
    2**63 - 1,
    2**63,
    2**64,
    10**20,
    3.0,
    3.5,
    -0.0,
    "3",
    "",
    True,
    False,
    None,
    [],
    {},
    1e300,
]
ROOMS = [
    0,
    1,
    4127750395128840213,
    2**63 - 1,
    2**63,
    2**64 + 1,
    -1,
    1.5,
    1e3,
    3.0,
    "4127750395128840213",
    "007",
    "",
    "12a",
    "-1",
    "9223372036854775808",
    "99999999999999999999",
    None,
    True,
    [1],
]
STRS = [
    "node-p0",
    "",
    "x y",
    "caf\u00e9",
    "tab\there",
    'quote"d',
    "back\\slash",
    "slash/ok",
    "\u2028",
    "\U0001f600",
    "nul\u0000",
    5,
    5.5,
    True,
    None,
    [1, "a"],
    {"k": "v"},
]
SIDES = ["prefill", "decode", "router", "Prefill", "", 1, None]
KINDS = ["kv", "aux", "state", "index_k", "mamba", "", 3, None]
EVENTS = ["post", "done", "fail", "notif", "abort", "checksum", "retry", "", 1, None]
BOOLS = [True, False, 0, 1, 2, -1, 1.0, "true", None, [], "1"]
BYTES = [0, 603979776, -5, 2**62, 2**63, 1.0, 1.5, "12", "007", "", "-12", "1e3", "9" * 19, "9" * 18, None, True]
STATUS = ["NIXL_SUCCESS", "NIXL_ERR_BACKEND", 0, 1, -3, -12, -13, 2, 5, -0.0, 2.5, 2**63, True, None, "", {"x": 1}]
CHECKSUMS = [
    "9a41c07e55d2b3f1",
    "0x9A41C07E55D2B3F1",
    "0X00ff",
    "0",
    "00",
    "0x",
    "0x0",
    "xyz",
    "",
    "f" * 32,
    "1" + "0" * 32,
    "f" * 64,
    "0" * 40 + "1",
    "ABCDEF",
    " 0xff",
    12,
    None,
    True,
]
EXTRAS = [
    ("checksum_algo", "xxh64"),
    ("notif", "5:kv:0"),
    ("src_rank", 3),
    ("attempt", -1),
    ("part", 0),
    ("f", 1.5),
    ("neg0", -0.0),
    ("big", 10**19),
    ("huge", 10**25),
    ("nested", {"a": [1, 2]}),
    ("list", [1]),
    ("flag", True),
    ("nothing", None),
    ("esc", 'a"b'),
    ("uni", "\u00e9"),
    ("", "empty key"),
    ("Ts", 1),
    ("h\u00e9", 1),
]
FIELDS = {
    "ts": TS,
    "host": STRS,
    "pid": INTS,
    "side": SIDES,
    "engine_rank": INTS,
    "dp_rank": INTS,
    "room": ROOMS,
    "rid": STRS,
    "kind": KINDS,
    "chunk": INTS,
    "is_last": BOOLS,
    "event": EVENTS,
    "bytes": BYTES,
    "status": STATUS,
    "peer": STRS,
    "checksum": CHECKSUMS,
    "error": STRS,
}

# what is not one JSON object per line: what a shipper, a crash or an editor leaves
NOT_OBJECTS = [
    "",
    "   ",
    "\t",
    "not json",
    "[1, 2]",
    "5",
    '"text"',
    "null",
    "{}",
    "{,}",
    '{"ts":1,}',
    '2026-10-30T10:00:00Z stdout F {"ts":1}',
    '\ufeff{"ts":1}',
    '{"a":NaN}',
    '{"a":Infinity}',
    "{'ts': 1}",
    '{"ts":01}',
    "}",
    "{",
    '{"a":1} x',
    '{"a":1}{"b":2}',
    "\x0b",
    "\u3000",
    "\r",
    '{"a":1} ...[line of 2000000 bytes cut to its first 1048576]',
]


def _value(rng: random.Random, forms: list):
    if forms is TS and rng.random() < 0.3:
        # what `json.dumps(time.time())` writes: the double's shortest form, 16-17 digits
        return 1793354400 + rng.random() * rng.choice([1, 1000, 10**6])
    return rng.choice(forms)


def _line(rng: random.Random) -> str:
    obj = dict(BASE)
    for _ in range(rng.randint(0, 4)):
        field = rng.choice(list(FIELDS))
        if rng.random() < 0.15:
            obj.pop(field, None)
        else:
            obj[field] = _value(rng, FIELDS[field])
    for key, value in rng.sample(EXTRAS, rng.randint(0, 3)):
        obj[key] = value
    items = list(obj.items())
    if rng.random() < 0.3:
        rng.shuffle(items)
    ensure_ascii = rng.random() < 0.5
    sep = rng.choice([(",", ":"), (", ", ": "), (",", ":"), (" ,\t", " : ")])
    body = sep[0].join(
        json.dumps(k, ensure_ascii=ensure_ascii) + sep[1] + json.dumps(v, ensure_ascii=ensure_ascii) for k, v in items
    )
    text = "{" + body + "}"
    r = rng.random()
    if r < 0.03:
        text = text[: rng.randrange(len(text))]  # cut by a crash
    elif r < 0.05:
        k = rng.choice(list(obj))  # a duplicate key
        text = text[:-1] + "," + json.dumps(k) + ":" + json.dumps(BASE.get(k, 1)) + "}"
    elif r < 0.07:
        text = text[:-1] + ",}"  # a trailing comma, which DuckDB's reader takes
    elif r < 0.09:
        text = rng.choice([" ", "\t", "  \t"]) + text + rng.choice(["", " ", "\t"])
    elif r < 0.12:
        text = rng.choice(NOT_OBJECTS)
    elif r < 0.13:
        text = text.replace(":", ": ", 1).replace("1793354400", "1793354400.0")
    return text


@pytest.mark.parametrize("draw", range(8))
def test_generated_lines_identical(monkeypatch, draw):
    rng = random.Random(seed(0) + draw)
    lines = [_line(rng) for _ in range(1500)]
    ends = [rng.choice(["\n", "\n", "\n", "\r\n"]) for _ in lines]
    data = "".join(ln + e for ln, e in zip(lines, ends))
    if draw % 2:
        data = data.rstrip("\r\n")  # the last line without its newline: a truncated file
    raw = data.encode("utf-8", "surrogatepass")
    if draw % 4 == 3:
        raw = raw.replace(b"caf\xc3\xa9", b"caf\xe9", 3)  # latin-1 text in a UTF-8 file
    d = split(raw)
    assert d["n"] > 150 and d["fb.n"] > 30 and d["bad.n"] > 0, "both paths and the cut-line rule run"
    assert_same(monkeypatch, raw)


@pytest.mark.slow
def test_block_boundaries_identical(monkeypatch):
    # more lines than one block holds (MAX_BLOCK_LINES): handed-back lines on both sides of a cut
    rng = random.Random(seed(99))
    lines = [_line(rng) for _ in range(70_000)]
    assert_same(monkeypatch, ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))


def test_a_clean_line_in_every_field_form_the_splitter_takes_is_taken():
    forms = [
        {"ts": "2026-10-30T10:00:00Z"},
        {"ts": "2026-10-30T10:00:00.5+05:30"},
        {"ts": 1793354400},
        {"room": "42"},
        {"bytes": "12"},
        {"is_last": 0},
        {"status": -3},
        {"status": 7},
        {"checksum": "0X00FF"},
        {"checksum": "f" * 32},
        {"pid": None, "dp_rank": None, "chunk": None},
        {"kind": "mamba"},
        {"notif": "5:kv:0", "attempt": 2, "flag": False, "nothing": None},
    ]
    lines = [json.dumps({**BASE, **f}, separators=(",", ":")) for f in forms]
    d = split("\n".join(lines).encode())
    assert (d["n"], d["fb.n"], d["bad.n"]) == (len(forms), 0, 0)


def test_cut_lines_are_unparsed_with_their_line(monkeypatch):
    full = json.dumps(BASE, separators=(",", ":"))
    data = (full + "\n" + full[:40] + "\n" + full + "\n" + full[:70]).encode()
    rt = assert_same(monkeypatch, data)
    assert rt["unparsed"].select("line_no", "reason").rows() == [(2, "invalid_json"), (4, "truncated")]
    assert rt["unparsed"]["line"].to_list() == [full[:40], full[:70]]
    assert rt["transfer_events"]["line_no"].to_list() == [1, 3]


def test_frames_keep_file_order_when_lines_are_handed_back(monkeypatch):
    good = json.dumps(BASE, separators=(",", ":"))
    # an escape in an unknown field: extra is DuckDB's own JSON text, so the line goes back
    escaped = json.dumps({**BASE, "notif": 'say "x"'}, separators=(",", ":"))
    data = "\n".join([good, escaped, good, escaped, good]).encode()
    d = split(data)
    assert (d["n"], d["fb.n"]) == (3, 2)
    rt = assert_same(monkeypatch, data)
    assert rt["transfer_events"]["line_no"].to_list() == [1, 2, 3, 4, 5]
    assert rt["transfer_events"]["extra"][1] == '{"notif":"say \\"x\\""}'


def test_escapes_and_utf8_in_known_fields_are_taken(monkeypatch):
    values = ['KVTransferError("x")', "back\\slash/\ttab\nline", "caf\u00e9 \U0001f600", "\u2028"]
    lines = [
        json.dumps({**BASE, "error": v, "rid": v}, separators=(",", ":"), ensure_ascii=a)
        for v in values
        for a in (True, False)
    ]
    lines.append(json.dumps({**BASE, "h\u00e9": "caf\u00e9"}, separators=(",", ":"), ensure_ascii=False))
    data = "\n".join(lines).encode()
    d = split(data)
    assert (d["n"], d["fb.n"]) == (len(lines), 0)
    rt = assert_same(monkeypatch, data)
    assert rt["transfer_events"]["error"].to_list()[:-1] == [v for v in values for _ in (0, 1)]


def test_extra_is_the_unknown_fields_compact(monkeypatch):
    line = (
        '{ "ts" : 1793354400.5 , "host":"h","side":"decode","engine_rank":0,"room":5,"kind":"kv",'
        '"event":"notif", "notif" : "5:kv:0", "src_rank":3,"ok":true,"none":null }'
    )
    d = split(line.encode())
    assert d["n"] == 1
    rt = assert_same(monkeypatch, line.encode())
    assert rt["transfer_events"]["extra"].to_list() == ['{"notif":"5:kv:0","src_rank":3,"ok":true,"none":null}']
    assert pl.Series(rt["transfer_events"]["extra"]).null_count() == 0


@pytest.mark.slow
def test_numeric_ts_in_every_precision_identical(monkeypatch):
    # the µs value goes through a double in the reference query: the splitter must round as it does
    # (below 10^11 s: past the year 9999 both paths fail alike, on Python's datetime, for first_ts)
    rng = random.Random(seed(7))
    forms = []
    for _ in range(4000):
        ni, nf = rng.randint(1, 11), rng.randint(0, 10)
        ip = str(rng.randint(10 ** (ni - 1), 10**ni - 1))
        forms.append(
            ip
            + ("." + "".join(rng.choice("0123456789") for _ in range(nf)) if nf else "")
            + "0" * rng.choice([0, 0, 1, 3]) * bool(nf)
        )
        forms.append(repr(rng.uniform(1, 10 ** rng.randint(1, 11))))  # json.dumps of a float: its shortest form
        forms.append(repr(1793354400 + rng.random()))
    lines = [json.dumps({**BASE, "ts": 0}, separators=(",", ":")).replace('"ts":0', '"ts":' + f) for f in forms]
    data = ("\n".join(lines) + "\n").encode()
    d = split(data)
    assert d["n"] > 0.6 * len(lines)
    rt = assert_same(monkeypatch, data)
    assert rt["transfer_events"].height == len(lines)
