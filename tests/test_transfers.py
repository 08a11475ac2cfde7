"""Transfer traces, the `transfers` and `rooms` views, and NIXL connector lines in server logs."""

import json
import re

import polars as pl
import pytest
from click.testing import CliRunner

from forensics.catalog import model
from forensics.cli import main
from forensics.parsers import server_log, transfer_trace
from tests.bundle import write_bundle
from tests.conftest import ingest_paths, missing, sql
from tests.helpers import parse_text

# ten lines of the scenario of docs/formats/TRANSFER_TRACE.md, "Example: two rooms": two rooms, one clean, one failed and corrupted
SPEC_EXAMPLE = """\
{"ts":1793354400.512301,"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3,"room":4127750395128840213,"rid":"7d1c0c8f3a9e4f0a9b2d6c1e5f4a3b21","kind":"kv","chunk":0,"is_last":true,"event":"checksum","bytes":603979776,"checksum":"9a41c07e55d2b3f1","checksum_algo":"xxh64"}
{"ts":1793354400.512840,"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3,"room":4127750395128840213,"rid":"7d1c0c8f3a9e4f0a9b2d6c1e5f4a3b21","kind":"kv","chunk":0,"is_last":true,"event":"post","bytes":603979776,"peer":"def7d2f1-d482-4cd2-b6de-f238da5a9c70"}
{"ts":1793354400.514713,"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3,"room":4127750395128840213,"kind":"kv","chunk":0,"is_last":true,"event":"done","status":"NIXL_SUCCESS","peer":"def7d2f1-d482-4cd2-b6de-f238da5a9c70"}
{"ts":"2026-10-30T10:00:00.514950Z","host":"node-d1","pid":90412,"side":"decode","engine_rank":3,"room":"4127750395128840213","rid":"0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b","kind":"kv","chunk":0,"is_last":true,"event":"notif","peer":"8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7"}
{"ts":"2026-10-30T10:00:00.533102+00:00","host":"node-d1","pid":90412,"side":"decode","engine_rank":3,"room":"4127750395128840213","kind":"kv","chunk":0,"is_last":true,"event":"checksum","bytes":603979776,"checksum":"0x9A41C07E55D2B3F1","checksum_algo":"xxh64"}
{"ts":1793354401.201877,"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3,"room":6593551520068383758,"rid":"c3a81f0e6b2d4f57a9e0d1c2b3a49586","kind":"index_k","event":"checksum","bytes":4194304,"checksum":"3f0c9be1d27a4456","checksum_algo":"xxh64"}
{"ts":1793354401.202315,"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3,"room":6593551520068383758,"rid":"c3a81f0e6b2d4f57a9e0d1c2b3a49586","kind":"kv","chunk":0,"is_last":true,"event":"post","bytes":603979776,"peer":"def7d2f1-d482-4cd2-b6de-f238da5a9c70"}
{"ts":1793354401.418990,"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3,"room":6593551520068383758,"kind":"kv","chunk":0,"is_last":true,"event":"fail","status":"NIXL_ERR_BACKEND","peer":"def7d2f1-d482-4cd2-b6de-f238da5a9c70","error":"getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND"}
{"ts":1793354401.240512,"host":"node-d1","pid":90412,"side":"decode","engine_rank":3,"room":6593551520068383758,"kind":"index_k","event":"checksum","bytes":4194304,"checksum":"c51e07a2990b13d8","checksum_algo":"xxh64"}
{"ts":1793354406.425733,"host":"node-d1","pid":90412,"side":"decode","engine_rank":3,"room":6593551520068383758,"rid":"51f0a9c3d2e84b7f9a6c5e4d3b2a1908","kind":"kv","event":"abort","error":"KVTransferError(bootstrap_room=6593551520068383758): NIXL transfer encountered ERR room=6593551520068383758"}
"""


@pytest.fixture(scope="module")
def spec_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("spec")
    (d / "dump").mkdir()
    (d / "dump" / "kvtrace-example.jsonl").write_text(SPEC_EXAMPLE)
    res = ingest_paths([d / "dump"], d / "store")
    assert [r.format for r in res] == ["transfer_trace"]
    return d / "store"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundle")
    truth = write_bundle(d / "dump")
    ingest_paths([d / "dump"], d / "store")
    return d / "store", truth


def test_spec_example_rows_are_exact(spec_store):
    ev = sql(
        spec_store,
        "SELECT line_no, bootstrap_room, ts, ts_naive, event, checksum, checksum_int "
        "FROM transfer_events ORDER BY line_no",
    )
    assert ev.height == 10
    assert ev["bootstrap_room"].to_list()[:5] == [4127750395128840213] * 5  # number and string forms agree
    assert ev["ts"][0].isoformat() == "2026-10-30T10:00:00.512301+00:00"
    assert ev["checksum"][0] == ev["checksum"][4] == "9a41c07e55d2b3f1"
    assert ev["checksum_int"][0] == str(0x9A41C07E55D2B3F1)


def test_spec_example_transfers(spec_store):
    t = sql(
        spec_store,
        "SELECT bootstrap_room, kind, chunk, side, status, nixl_status, duration_ms, error "
        "FROM transfers ORDER BY bootstrap_room, kind",
    )
    rows = {(r["bootstrap_room"], r["kind"]): r for r in t.iter_rows(named=True)}
    clean = rows[(4127750395128840213, "kv")]
    assert (clean["side"], clean["status"], clean["chunk"]) == ("prefill", "done", 0)
    assert clean["duration_ms"] == pytest.approx(1.873)
    bad = rows[(6593551520068383758, "kv")]
    assert (bad["status"], bad["nixl_status"]) == ("failed", "NIXL_ERR_BACKEND")
    assert "NIXL_ERR_BACKEND" in bad["error"]


def test_spec_example_rooms(spec_store):
    r = sql(
        spec_store,
        "SELECT bootstrap_room, outcome, checksum_verdict, checksum_match, mismatched_units, "
        "checksum_prefill, checksum_decode, sides_seen, rid_prefill, rid_decode FROM rooms",
    )
    by = {x["bootstrap_room"]: x for x in r.iter_rows(named=True)}
    ok, bad = by[4127750395128840213], by[6593551520068383758]
    assert (ok["outcome"], ok["checksum_verdict"], ok["checksum_match"]) == ("ok", "verified", True)
    assert (bad["outcome"], bad["checksum_verdict"], bad["checksum_match"]) == ("transfer_failed", "corrupted", False)
    assert bad["mismatched_units"] == "index_k:"
    assert (bad["checksum_prefill"], bad["checksum_decode"]) == ("3f0c9be1d27a4456", "c51e07a2990b13d8")
    assert ok["rid_prefill"] != ok["rid_decode"] and ok["sides_seen"] == "prefill+decode"


def test_checksum_rules_latest_per_rank_and_unequal_rank_sets(tmp_path):
    def line(ts, side, rank, room, ck, chunk=0):
        return (
            json.dumps(
                {
                    "ts": ts,
                    "host": side[0],
                    "side": side,
                    "engine_rank": rank,
                    "room": room,
                    "kind": "kv",
                    "chunk": chunk,
                    "event": "checksum",
                    "checksum": ck,
                }
            )
            + "\n"
        )

    text = (
        # room 1: rank 0 re-checksummed on decode; only the latest value counts -> verified
        line(1.0, "prefill", 0, 1, "aa")
        + line(2.0, "decode", 0, 1, "bb")
        + line(3.0, "decode", 0, 1, "0xAA")
        # room 2: same rank sets, rank 1 swapped values -> corrupted even though the value sets agree
        + line(1.0, "prefill", 0, 2, "01")
        + line(1.0, "prefill", 1, 2, "02")
        + line(2.0, "decode", 0, 2, "02")
        + line(2.0, "decode", 1, 2, "01")
        # room 3: different rank sets: each decode value must be some prefill value -> verified
        + line(1.0, "prefill", 0, 3, "01")
        + line(1.0, "prefill", 1, 3, "02")
        + line(2.0, "decode", 5, 3, "2")
        # room 4: one side only -> unverified, checksum_match NULL
        + line(1.0, "prefill", 0, 4, "01")
    )
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "t.jsonl").write_text(text)
    ingest_paths([tmp_path / "d"], tmp_path / "s")
    r = sql(tmp_path / "s", "SELECT bootstrap_room, checksum_verdict, checksum_match FROM rooms ORDER BY 1")
    assert r.rows() == [(1, "verified", True), (2, "corrupted", False), (3, "verified", True), (4, "unverified", None)]


def test_bundle_checksum_query_lists_exactly_the_mismatching_rooms(bundle):
    store, truth = bundle
    res = CliRunner().invoke(
        main,
        ["sql", "SELECT bootstrap_room FROM rooms WHERE NOT checksum_match", "--store", str(store), "--format", "csv"],
    )
    assert res.exit_code == 0, res.output
    assert {int(x) for x in res.output.split()[1:]} == truth.mismatched


def test_bundle_rooms_join_both_sides_with_different_rids(bundle):
    store, truth = bundle
    r = sql(store, "SELECT * FROM rooms")
    assert set(r["bootstrap_room"]) == set(truth.rooms)  # room 0 (warmup) excluded, decode-only kept
    by = {x["bootstrap_room"]: x for x in r.iter_rows(named=True)}
    for room in truth.rooms:
        row = by[room]
        if room in truth.decode_only:
            assert (row["sides_seen"], row["outcome"], row["rid_prefill"]) == ("decode", "waiting_timeout", None)
            continue
        assert (row["rid_prefill"], row["rid_decode"]) == truth.rids[room]
        assert (row["prefill_host"], row["decode_host"], row["sides_seen"]) == ("node-p0", "node-d1", "prefill+decode")
        assert row["outcome"] == ("transfer_failed" if room in truth.failed else "ok"), room
        assert row["t_bootstrapped"] is not None and row["t_first_transfer"] is not None


def test_views_return_exactly_their_documented_columns(bundle):
    store, _ = bundle
    for name in ("transfers", "rooms", "room_events"):
        got = sql(store, f"SELECT * FROM {name} LIMIT 0").columns
        assert got == [c.name for c in model.tables()[name].columns], name
    assert sql(store, "SELECT count(*) AS n FROM transfers WHERE bootstrap_room = 0")["n"][0] == 0


def test_room_is_exact_through_every_json_form():
    room = 9223372036854775807  # 2^63 - 1: a float would round it to 2^63
    lines = [
        json.dumps(
            {"ts": 1.0, "host": "h", "side": "prefill", "engine_rank": 0, "room": r, "kind": "kv", "event": "post"}
        )
        for r in (room, str(room))
    ]
    tables, _ = parse_text(transfer_trace, "\n".join(lines) + "\n", name="t.jsonl")
    assert tables["transfer_events"]["bootstrap_room"].to_list() == [room, room]


@pytest.mark.parametrize(
    "hexval",
    [
        "0",
        "0x0",
        "000",
        "1",
        "0xFF",
        "ffffffffffffffff",
        "0000ffffffffffffffff",
        "10000000000000000",
        "0x1ffffffffffffffff",
        "9a41c07e55d2b3f1" * 2,
        "f" * 32,
        "0" * 8 + "f" * 32,
        "1" + "0" * 32,
        "f" * 64,
    ],
)
def test_checksum_int_is_the_unsigned_value_at_every_width(hexval):
    # 64-bit values take a cheaper cast than wider ones: the two meet at 16 significant digits
    line = json.dumps(
        {
            "ts": 1.0,
            "host": "h",
            "side": "prefill",
            "engine_rank": 0,
            "room": 1,
            "kind": "kv",
            "event": "checksum",
            "checksum": hexval,
        }
    )
    tables, _ = parse_text(transfer_trace, line + "\n", name="t.jsonl")
    assert tables["transfer_events"]["checksum_int"].to_list() == [str(int(hexval, 16))]


def test_unknown_fields_go_to_extra_and_every_line_is_accounted():
    text = (
        '{"ts":1,"host":"h","side":"decode","engine_rank":0,"room":5,"kind":"kv","event":"notif",'
        '"notif":"5_kv_0_1_3","src_rank":3,"weird":{"a":[1,2]}}\n\n   \n{"ts":1}\n'
    )
    tables, ctx = parse_text(transfer_trace, text, name="t.jsonl")
    assert json.loads(tables["transfer_events"]["extra"][0]) == {
        "notif": "5_kv_0_1_3",
        "src_rank": 3,
        "weird": {"a": [1, 2]},
    }
    assert tables["unparsed"]["reason"].to_list() == ["schema:host"]
    assert (ctx.lines, ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines) == (4, 1, 2, 1)


def _python_calls(fn):
    """`fn()` and how many Python function calls it made, in every thread: Python run per line is a call a line."""
    import sys
    import threading

    calls = [0]

    def count(frame, event, arg):
        calls[0] += event == "call"

    threading.setprofile(count)  # the splitter's thread and any other the parse starts
    sys.setprofile(count)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return out, calls[0]


@pytest.mark.parametrize("native", ["1", "0"], ids=["splitter", "reference"])
@pytest.mark.slow
def test_trace_with_a_million_lines_is_vectorised(monkeypatch, native):
    """Counted, not timed: 200k lines are parsed in a few thousand Python calls, on either path."""
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    line = (
        '{"ts":1793354400.512301,"host":"node-p0","side":"prefill","engine_rank":3,"room":4127750395128840213,'
        '"kind":"kv","chunk":0,"event":"post","bytes":603979776}\n'
    )
    parse_text(transfer_trace, line * 1000, name="warm.jsonl")  # what is imported on first use is not the parse
    (tables, ctx), calls = _python_calls(lambda: parse_text(transfer_trace, line * 200_000, name="big.jsonl"))
    assert tables["transfer_events"].height == 200_000 == ctx.parsed_lines
    assert calls < 200_000 // 20, f"{calls} Python calls for 200k lines: a per-line Python path"


FAILURE_TEXT = re.compile(
    r"transfer failed|Transfer for room|transfer worker error|NIXL transfer|bootstrap failed|handshake failed"
    r"|KVTransferError|abort notification|KVSender (?:failed|transfer)",
    re.I,
)


def test_every_real_transfer_or_bootstrap_failure_line_has_its_room(real_logs, tmp_path):
    files = sorted(p for p in real_logs.iterdir() if p.suffix == ".log")
    ingest_paths(files, tmp_path / "store", format="server_log")
    ev = sql(tmp_path / "store", "SELECT source_file, line_no, kind, bootstrap_room, message FROM events")
    checked = 0
    for f in files:
        for no, text in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if not FAILURE_TEXT.search(text):
                continue
            row = ev.filter((pl.col("source_file") == str(f)) & (pl.col("line_no") == no))
            assert row.height == 1, f"{f.name}:{no} not in events"
            assert row["kind"][0] in ("transfer_failed", "bootstrap_failed", "abort"), (f.name, no, row["kind"][0])
            assert row["bootstrap_room"][0] is not None, f"{f.name}:{no} has no room: {text[:120]}"
            checked += 1
    assert checked >= 4


def test_real_prefill_and_decode_of_one_room_join_despite_different_rids(real_logs, tmp_path):
    f = real_logs / "nixl_05_llmd2433_sglang_nixl_transfer_worker_error.log"
    if not f.exists():
        missing(f"{f.name} is not among the real excerpts")
    ingest_paths([f], tmp_path / "store")
    r = sql(tmp_path / "store", "SELECT * FROM rooms WHERE bootstrap_room = 1788380104266545413")
    row = r.row(0, named=True)
    assert row["sides_seen"] == "prefill+decode"
    assert row["rid_prefill"] == "5b02aee35dae49aba98a333ce89964e6"
    assert row["rid_decode"] == "a1af5d2d90324da292ed07c52b30467b"
    assert row["outcome"] == "transfer_failed"


def test_server_log_nixl_samples_hit_every_new_kind():
    kinds = {k for s in server_log.samples for rows in s.expect.get("events", []) for k in [rows.get("kind")]}
    assert {"peer_register", "peer_disconnect", "peer_reconnect", "transfer_notif", "bootstrapped"} <= kinds
