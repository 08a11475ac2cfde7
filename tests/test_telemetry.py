"""NIXL telemetry ring buffers of every format version, written here and read back (docs/formats/NIXL.md, "Telemetry ring-buffer file")."""

import hashlib
import os

import pytest

from forensics.parsers import nixl_telemetry as nt
from tests.conftest import ingest_paths, sql
from tests.helpers import parse_text

V1 = [
    (1764765296104297, 5, "agent_xfer_post_time", 41),
    (1764765296104302, 1, "agent_tx_bytes", 603979776),
    (1764765296318990, 4, "NIXL_ERR_BACKEND", 1),
]


def _read(data: bytes, name="8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7"):
    tables, ctx = parse_text(nt, data, name=name)
    return tables.get("telemetry"), ctx


@pytest.mark.parametrize(
    "version,events,expect",
    [
        (
            1,
            V1,
            [
                ("PERFORMANCE", "agent_xfer_post_time", 41),
                ("TRANSFER", "agent_tx_bytes", 603979776),
                ("ERROR", "NIXL_ERR_BACKEND", 1),
            ],
        ),
        (
            2,
            [(1, 0, 603979776), (5, 6, 1873), (4, 17, 1)],
            [
                ("TRANSFER", "agent_tx_bytes", 603979776),
                ("PERFORMANCE", "agent_xfer_time", 1873),
                ("ERROR", "agent_err_remote_disconnect", 1),
            ],
        ),
        (
            3,
            [(4, 1 << 30), (2, 1), (10, 1)],
            [
                ("MEMORY", "agent_memory_registered", 1 << 30),
                ("TRANSFER", "agent_tx_requests_num", 1),
                ("ERROR", "agent_err_backend", 1),
            ],
        ),
        (
            4,
            [(0, 4096), (20, 12), (20, 5)],
            [
                ("TRANSFER", "agent_tx_bytes", 4096),
                ("SYSTEM", "agent_telemetry_events_dropped", 12),
                ("SYSTEM", "agent_telemetry_events_dropped", 5),
            ],
        ),
    ],
)
def test_each_version_round_trips(version, events, expect):
    df, ctx = _read(nt.build(version, events, capacity=8, read_pos=6))  # wraps around the ring end
    assert [(r["category"], r["event"], r["value"]) for r in df.iter_rows(named=True)] == expect
    assert df["slot"].to_list() == [6, 7, 0]
    assert set(df["version"]) == {version}
    assert df["ts"].is_null().all() == (version > 1)
    assert df["dropped_events"].to_list() == ([17] * 3 if version == 4 else [None] * 3)
    assert any("dropped" in n for n in ctx.notes)
    assert ctx.parsed_lines == 3 == ctx.lines


def test_v1_timestamps_and_stale_slots_are_salvaged():
    stale = [(1764765290000000, 1, "agent_tx_bytes", 7)]
    df, _ = _read(nt.build(1, V1, capacity=8, stale=stale))
    assert df["ts"][0].isoformat() == "2025-12-03T12:34:56.104297+00:00"
    assert df.filter(~df["stale"])["event"].to_list() == [e[2] for e in V1]
    assert df.filter(df["stale"])["value"].to_list() == [7]


def test_full_ring_is_flagged_and_empty_ring_yields_nothing():
    full, ctx = _read(nt.build(3, [(0, i) for i in range(7)], capacity=8))
    assert full.height == 7 and full["buffer_full"].all()
    assert any("FULL" in n for n in ctx.notes)
    empty, _ = _read(nt.build(2, [], capacity=8, read_pos=5))
    assert empty is None


def test_truncated_copy_reads_the_slots_present():
    data = nt.build(1, V1, capacity=8)
    df, ctx = _read(data[: 40 + 2 * 56 + 10])
    assert df.height == 2
    assert any("header implies" in n for n in ctx.notes)


def test_ingest_detects_it_and_never_consumes_it(tmp_path):
    d = tmp_path / "dump" / "node-p0"
    d.mkdir(parents=True)
    f = d / "8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7"
    f.write_bytes(nt.build(4, [(0, 4096), (20, 3)], capacity=16))
    before = hashlib.sha256(f.read_bytes()).hexdigest(), os.stat(f).st_mtime_ns
    res = ingest_paths([tmp_path / "dump"], tmp_path / "store")
    assert [r.format for r in res] == ["nixl_telemetry"]
    assert (hashlib.sha256(f.read_bytes()).hexdigest(), os.stat(f).st_mtime_ns) == before
    out = sql(tmp_path / "store", "SELECT agent, host, event, dropped_events FROM telemetry ORDER BY seq")
    assert out.rows() == [
        ("8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7", "node-p0", "agent_tx_bytes", 3),
        ("8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7", "node-p0", "agent_telemetry_events_dropped", 3),
    ]


def test_bad_header_is_not_telemetry():
    assert nt.sniff(b"\0" * 40, "x") == 0.0
    bad_mask = bytearray(nt.build(1, V1, capacity=8))
    bad_mask[32] = 5
    assert nt.sniff(bytes(bad_mask), "x") == 0.0
