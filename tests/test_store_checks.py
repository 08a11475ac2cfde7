"""A store that checks itself: each kind of damage gives one clear error naming the file (or a
recomputed snapshot), never an internal error or a wrong answer; `forensics verify [--repair]`;
clock offsets finite and within a day; unstorable log values as NULL; snapshots never removed under
a reader."""

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import ROOT, ingest_paths, seed, sql

INCIDENT = ROOT / "sample_logs" / "incident"


@pytest.fixture(scope="module")
def built(incident_store):
    """sample_logs/incident ingested, with its derived snapshots; copied by each test, never changed."""
    from forensics.catalog import connect
    from forensics.store import Store

    con = connect(Store(incident_store), materialize=True)
    rooms = con.sql("SELECT count(*) FROM rooms").fetchall()[0][0]
    del con
    return incident_store, rooms


@pytest.fixture
def store(built, tmp_path):
    dst = tmp_path / "store"
    shutil.copytree(built[0], dst)
    return dst


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _data_file(store: Path, table: str) -> Path:
    return sorted(store.glob(f"tables/{table}/*/*/part-*-00000.parquet"))[0]


def _snapshots(store: Path) -> Path:
    folders = [p for p in (store / "derived").iterdir() if p.is_dir() and p.name != "verdicts"]
    assert len(folders) == 1, folders
    return folders[0]


def _assert_damage_error(res, path: Path, fix: str = "forensics verify --repair"):
    assert res.exit_code == 1, res.output
    assert "internal error" not in res.output
    assert res.stderr.startswith("error: "), res.stderr
    assert str(path) in res.stderr
    assert fix in res.stderr


# -- data files --------------------------------------------------------------------------------------


def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garbage(p: Path, n: int = 3000):
    p.write_bytes(random.Random(seed(3000)).randbytes(n))


def _bad_footer(p: Path):
    # the frame is intact (magic at both ends, a length that fits), the footer inside is not Thrift
    raw = p.read_bytes()
    n = int.from_bytes(raw[-8:-4], "little")
    p.write_bytes(raw[: len(raw) - 8 - n] + b"\xff" * n + raw[-8:])


def _empty(p: Path):
    p.write_bytes(b"")


@pytest.mark.parametrize("damage", [_truncate, _garbage, _bad_footer, _empty], ids=lambda f: f.__name__[1:])
def test_damaged_data_file_is_one_error_naming_it(store, damage):
    bad = _data_file(store, "batches")
    damage(bad)
    _assert_damage_error(_cli("sql", "SELECT count(*) FROM batches", "--store", store), bad)
    _assert_damage_error(_cli("timeline", "--store", store, "--format", "csv"), bad)
    res = _cli("verify", "--store", store)
    assert res.exit_code == 1 and f"broken: {bad}" in res.output


def test_damaged_data_pages_are_one_error_naming_the_file(store):
    # the footer is whole, the pages behind it are not: found when a query decodes them
    bad = max(store.glob("tables/events/*/*/part-*-00000.parquet"), key=lambda p: p.stat().st_size)
    raw = bytearray(bad.read_bytes())
    for i in range(200, len(raw) // 2, 7):
        raw[i] ^= 0x5A
    bad.write_bytes(bytes(raw))
    _assert_damage_error(_cli("sql", "SELECT max(message) FROM events", "--store", store), bad)
    _assert_damage_error(_cli("timeline", "--store", store, "--format", "csv"), bad)
    res = _cli("verify", "--store", store)
    assert res.exit_code == 1 and f"broken: {bad}" in res.output and "do not decode" in res.output


def test_a_file_of_another_table_is_refused_not_counted(store):
    bad = _data_file(store, "batches")
    shutil.copyfile(_data_file(store, "events"), bad)
    res = _cli("sql", "SELECT count(*) FROM batches", "--store", store)
    _assert_damage_error(res, bad)
    assert "columns that table batches does not have" in res.stderr
    assert "holds columns of another table" in _cli("verify", "--store", store).output


def test_repair_drops_the_broken_input_and_ingest_reads_it_again(store, built):
    before = sql(built[0], "SELECT count(*) n FROM batches")["n"][0]
    bad = _data_file(store, "batches")
    _truncate(bad)
    res = _cli("verify", "--repair", "--store", store)
    assert res.exit_code == 0, res.output
    assert "input dropped" in res.output and "dropped 1 input" in res.output
    assert "forensics ingest" in res.output and "sglang.log" in res.output
    assert not bad.exists()
    assert _cli("verify", "--store", store).exit_code == 0
    ingest_paths([INCIDENT], store)
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == before


def test_verify_on_a_sound_store_says_so(store):
    res = _cli("verify", "--store", store)
    assert res.exit_code == 0, res.output
    assert "nothing broken" in res.output and "inputs" in res.output


def test_garbage_verdicts_are_computed_again(store):
    bad = sorted(store.glob("derived/verdicts/*/*.parquet"))[0]
    _garbage(bad)
    assert f"broken: {bad}" in _cli("verify", "--store", store).output
    res = _cli("replies", "--store", store, "--format", "csv")
    assert res.exit_code == 0, res.output
    assert _cli("verify", "--store", store).exit_code == 0


# -- derived snapshots --------------------------------------------------------------------------------


def _rooms(store: Path, materialize=True) -> int:
    from forensics.catalog import connect
    from forensics.store import Store

    return connect(Store(store), materialize=materialize).sql("SELECT count(*) FROM rooms").fetchall()[0][0]


@pytest.mark.parametrize("materialize", [True, False])
def test_swapped_snapshot_is_recomputed_not_read(store, built, capfd, materialize):
    snap = _snapshots(store)
    shutil.copyfile(snap / "transfers.parquet", snap / "rooms.parquet")
    assert _rooms(store, materialize) == built[1]
    err = capfd.readouterr().err
    assert f"note: derived-view cache {snap}" in err and "rooms.parquet" in err
    assert _rooms(store) == built[1]
    capfd.readouterr()
    assert _rooms(store, materialize) == built[1]
    assert "note:" not in capfd.readouterr().err  # recomputed by the report that materializes, sound since


@pytest.mark.parametrize(
    "what", ["garbage_snapshot", "garbage_manifest", "no_manifest", "snapshot_gone", "manifest_of_other_views"]
)
@pytest.mark.slow
def test_garbage_in_the_cache_is_recomputed(store, built, capfd, what):
    snap = _snapshots(store)
    if what == "garbage_snapshot":
        _garbage(snap / "rooms.parquet")
    elif what == "garbage_manifest":
        _garbage(snap / "MANIFEST.json", 200)
    elif what == "no_manifest":
        (snap / "MANIFEST.json").unlink()
    elif what == "snapshot_gone":
        (snap / "rooms.parquet").unlink()
    else:
        m = json.loads((snap / "MANIFEST.json").read_text())
        m["views"] = m["views"][:2]
        (snap / "MANIFEST.json").write_text(json.dumps(m))
    res = _cli("sql", "SELECT count(*) AS n FROM rooms", "--store", store, "--format", "csv")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1] == str(built[1])
    assert "note: derived-view cache" in res.stderr
    assert _rooms(store) == built[1]
    assert _cli("verify", "--store", store).exit_code == 0


@pytest.mark.slow
def test_the_snapshots_of_another_store_state_are_not_read(store, built, capfd):
    # a whole set, manifest and all, moved under this state's key: its manifest names its own key
    snap = _snapshots(store)
    m = json.loads((snap / "MANIFEST.json").read_text())
    m["key"] = "0" * len(snap.name)
    (snap / "MANIFEST.json").write_text(json.dumps(m))
    assert _rooms(store) == built[1]
    assert "another store state" in capfd.readouterr().err
    assert _cli("verify", "--store", store).exit_code == 0


def test_same_size_tampering_is_caught_by_the_checksum(store):
    snap = _snapshots(store)
    p = snap / "rooms.parquet"
    raw = bytearray(p.read_bytes())
    raw[100] ^= 0xFF  # inside a data page: size, footer, rows and schema all unchanged
    p.write_bytes(bytes(raw))
    res = _cli("verify", "--store", store)
    assert res.exit_code == 1 and "checksum" in res.output
    res = _cli("verify", "--repair", "--store", store)
    assert res.exit_code == 0 and "repaired:" in res.output
    assert not snap.exists()


def test_a_snapshot_set_is_published_whole_with_its_manifest(store):
    from forensics.store import snapshots

    snap = _snapshots(store)
    m = json.loads((snap / "MANIFEST.json").read_text())
    files = sorted(p.name for p in snap.iterdir())
    assert files == sorted([e["file"] for e in m["views"]] + ["MANIFEST.json"])
    for e in m["views"]:
        assert e["size"] == (snap / e["file"]).stat().st_size
        assert e["sha256"] == snapshots.sha256(snap / e["file"])
        assert e["rows"] >= 0 and e["schema"]
    assert not list((store / "derived").glob(".build-*"))


def test_a_dead_builder_is_swept_a_live_one_is_not(store):
    from forensics.store import snapshots

    derived = store / "derived"
    keep = {"verdicts", _snapshots(store).name}
    # a live writer between its mkdir and its lock: its pid (1 lives as long as the machine) keeps it
    starting = derived / ".build-ghi-1-0"
    starting.mkdir()
    dead = derived / ".build-abc-999999999-0"
    dead.mkdir()
    (dead / "rooms.parquet").write_bytes(b"half")
    held = derived / f".build-def-{os.getpid()}-0"
    held.mkdir()
    fd = snapshots.hold(held)
    try:
        snapshots.sweep(derived, keep)
        assert not dead.exists()
        assert held.exists() and starting.exists()
    finally:
        os.close(fd)
    snapshots.sweep(derived, keep)
    assert not held.exists()


_READER = textwrap.dedent("""
    import sys
    from forensics.catalog import connect
    from forensics.store import Store
    con = connect(Store(sys.argv[1]), materialize=True)
    print(con.sql("SELECT count(*) FROM rooms").fetchall()[0][0], flush=True)
    sys.stdin.readline()
    print(con.sql("SELECT count(*) FROM rooms").fetchall()[0][0], flush=True)
""")


@pytest.mark.slow
def test_a_snapshot_is_never_removed_under_its_reader(store, built):
    from forensics.store import Store

    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout.readline().strip() == str(built[1])
        held = _snapshots(store)
        # the store changes (a new offset: a new cache key) and another report recomputes and sweeps
        Store(store).set_clock("decode-0", 0.25)
        assert _rooms(store) == built[1]
        assert held.exists() and (held / "rooms.parquet").exists()
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == str(built[1])
        assert reader.wait(timeout=120) == 0, reader.stderr.read()
    finally:
        reader.kill()
        reader.wait()
    # once the reader is gone, the next report sweeps its set
    assert _rooms(store) == built[1]
    assert not held.exists()


# -- clocks.json ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"",
        b"\xff\xfe\x00garbage",
        b"[1, 2]",
        b'"decode-0"',
        b'{"decode-0": "1.5"}',
        b'{"decode-0": NaN}',
        b'{"decode-0": Infinity}',
        b'{"decode-0": 1e999}',
        b'{"decode-0": 90000}',
        b'{"decode-0": true}',
        b'{"": 1}',
        b'{"decode-0": null}',
        b'{"decode-0": [1]}',
        b"[" * 100000 + b"]" * 100000,
    ],
    ids=[
        "text",
        "empty",
        "binary",
        "list",
        "string",
        "str_value",
        "nan",
        "infinity",
        "overflow",
        "beyond_a_day",
        "bool",
        "empty_host",
        "null",
        "list_value",
        "deep",
    ],
)
def test_bad_clocks_json_is_one_error_and_repair_keeps_the_valid_entries(store, content):
    clocks = store / "clocks.json"
    clocks.write_bytes(content)
    for args in (["sql", "SELECT count(*) FROM batches"], ["clocks"], ["timeline", "--format", "csv"]):
        _assert_damage_error(_cli(*args, "--store", store), clocks)
    res = _cli("verify", "--store", store)
    assert res.exit_code == 1 and f"broken: {clocks}" in res.output
    res = _cli("verify", "--repair", "--store", store)
    assert res.exit_code == 0, res.output
    assert (store / "clocks.json.broken").read_bytes() == content
    assert json.loads(clocks.read_text()) == {}
    assert _cli("sql", "SELECT count(*) FROM batches", "--store", store).exit_code == 0


def test_repair_keeps_valid_offsets_beside_bad_ones(store):
    (store / "clocks.json").write_text('{"decode-0": 1.5, "decode-1": NaN, "prefill-0": -2}')
    assert _cli("verify", "--repair", "--store", store).exit_code == 0
    assert json.loads((store / "clocks.json").read_text()) == {"decode-0": 1.5, "prefill-0": -2.0}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "90000", "-86400.5"])
def test_clocks_set_refuses_offsets_that_are_not_finite_or_beyond_a_day(store, value):
    res = _cli("clocks", "set", "decode-0", value, "--store", store)
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: clock offset for decode-0") and "internal error" not in res.output
    assert not (store / "clocks.json").exists()
    res = _cli("ingest", INCIDENT / "decode-0", "--store", store, "--clock-offset", f"decode-0={value}")
    assert res.exit_code == 2 and "--clock-offset" in res.stderr
    assert not (store / "clocks.json").exists()


def test_clocks_set_takes_a_day_at_most(store):
    assert _cli("clocks", "set", "decode-0", "-86400", "--store", store).exit_code == 0
    assert json.loads((store / "clocks.json").read_text()) == {"decode-0": -86400.0}


# -- values in logs ------------------------------------------------------------------------------------

_STATS = (
    "[2026-10-30 10:00:0{s} DP0 TP0] Decode batch, #running-req: {run}, #token: 120000, token usage: {use}, "
    "cuda graph: True, gen throughput (token/s): {gen}, #queue-req: {queue}\n"
)


def _log(tmp_path: Path, rows) -> Path:
    d = tmp_path / "dump" / "decode-0"
    d.mkdir(parents=True)
    (d / "sglang.log").write_text("".join(_STATS.format(s=i, **r) for i, r in enumerate(rows)))
    return tmp_path / "dump"


_GOOD = {"run": "64", "use": "0.45", "gen": "2450.12", "queue": "0"}


@pytest.mark.parametrize("native", ["1", "0"])
def test_unstorable_stats_values_are_null_with_their_text_kept(tmp_path, monkeypatch, native):
    monkeypatch.setenv("FORENSICS_NATIVE", native)
    dump = _log(
        tmp_path,
        [
            _GOOD,
            {"run": "64", "use": "inf", "gen": "1e999", "queue": "0"},
            {"run": "12345678901234567890123", "use": "nan", "gen": "-inf", "queue": "0"},
            {"run": "64", "use": "0.45", "gen": "2450.12", "queue": "99999999999999999999"},
            {"run": "64", "use": "Infinity", "gen": "1e300", "queue": "-0"},
        ],
    )
    store = tmp_path / "store"
    res = _cli("ingest", dump, "--store", store)
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())  # the summary wraps at the terminal's width
    assert "4 stats lines with a value not finite or past its column's range (first at line 2)" in said
    got = sql(
        store,
        "SELECT line_no, running_req, token_usage, gen_throughput, queue_req, extra FROM batches ORDER BY line_no",
    ).to_dicts()
    assert [r["line_no"] for r in got] == [1, 2, 3, 4, 5]  # every line a row
    assert got[0] == {
        "line_no": 1,
        "running_req": 64,
        "token_usage": 0.45,
        "gen_throughput": 2450.12,
        "queue_req": 0,
        "extra": {},
    }
    assert got[1]["token_usage"] is None and got[1]["gen_throughput"] is None
    assert got[1]["extra"] == {"token usage": "inf", "gen throughput (token/s)": "1e999"}
    assert got[2]["running_req"] is None and got[2]["extra"]["#running-req"] == "12345678901234567890123"
    assert got[3]["queue_req"] is None and got[3]["extra"] == {"#queue-req": "99999999999999999999"}
    # finite, if absurd, values are kept as written
    assert got[4]["gen_throughput"] == 1e300 and got[4]["extra"] == {"token usage": "Infinity"}
    for args in (["timeline", "--format", "csv"], ["query", "run", "host_load"], ["evidence", "--format", "json"]):
        res = _cli(*args, "--store", store)
        assert res.exit_code == 0, (args, res.output)


def test_sound_stats_lines_have_no_note(tmp_path):
    res = _cli("ingest", _log(tmp_path, [_GOOD, _GOOD]), "--store", tmp_path / "store")
    assert res.exit_code == 0 and "not finite" not in res.output
    assert sql(tmp_path / "store", "SELECT count(*) n FROM batches WHERE cardinality(extra) > 0")["n"][0] == 0
