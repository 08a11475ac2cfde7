"""Derived views brought up to a new store state from the last snapshot set (forensics.catalog.refresh).

The check that matters: a set extended from an earlier one holds exactly the rows a whole
computation over the same store gives, view by view, and in the same order where the view has one.
"""

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.conftest import ROOT, ingest_paths

INCIDENT = ROOT / "sample_logs" / "incident"
# each case ingests parts of the incident into a store of its own and computes its views twice
pytestmark = pytest.mark.slow


def _materialize(store: Path, memory=None) -> Path:
    from forensics import catalog
    from forensics.store import Store

    con = catalog.connect(Store(store), materialize=True, memory=memory)
    con.close()
    sets = [p for p in (store / "derived").iterdir() if re.fullmatch(r"[0-9a-f]{24}", p.name)]
    assert len(sets) == 1, sets
    return sets[0]


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "MANIFEST.json").read_text())


def _rows(path: Path) -> list:
    return duckdb.connect().execute(f"SELECT * FROM read_parquet('{path}')").fetchall()


def _assert_same_sets(extended: Path, whole: Path) -> None:
    from forensics.catalog import refresh

    for v in _manifest(whole)["views"]:
        got, want = _rows(extended / v["file"]), _rows(whole / v["file"])
        if refresh.ROOM_LOCAL.get(v["view"]):
            assert got == want, f"{v['view']}: rows or their order differ"
        else:
            assert sorted(map(repr, got)) == sorted(map(repr, want)), f"{v['view']}: rows differ"


def _cut(src: Path, dst: Path, share: float) -> None:
    """`src` copied to `dst` with each server log and trace cut to its first `share` of lines."""
    shutil.copytree(src, dst)
    for f in [*dst.glob("*/sglang.log"), *dst.glob("trace/*.jsonl")]:
        lines = f.read_bytes().splitlines(keepends=True)
        f.write_bytes(b"".join(lines[: int(len(lines) * share)]))


def _grow(src: Path, dst: Path) -> None:
    for f in [*dst.glob("*/sglang.log"), *dst.glob("trace/*.jsonl")]:
        full = (src / f.relative_to(dst)).read_bytes()
        have = f.read_bytes()
        assert full.startswith(have)
        with open(f, "ab") as fh:
            fh.write(full[len(have) :])


@pytest.fixture
def always_extend(monkeypatch):
    from forensics.catalog import refresh

    # the sample incident is small: its appended lines touch most of its rooms
    monkeypatch.setattr(refresh, "_MAX_SHARE", 1.0)


def test_a_room_grain_views_header_order_is_held_to_its_sql():
    """A merged snapshot is sorted by the header's `-- order:`: the model refuses one that is not the
    view's own ORDER BY, and reads the room-local views from the headers."""
    from forensics.catalog import headers, model, refresh
    from forensics.core.errors import ForensicsError

    assert refresh.ROOM_LOCAL["transfers"] == "bootstrap_room, kind, chunk NULLS FIRST, side, host, engine_rank"
    assert refresh.NEEDS_BOUNDS == {"room_failures", "rooms"} and set(refresh.ROOM_TABLES) == {
        "events",
        "transfer_events",
    }
    sql = "-- name: v\n-- kind: view\n-- grain: room\n-- order: {}\nCREATE OR REPLACE VIEW v AS SELECT 1 AS a, 2 AS b FROM t x\nORDER BY x.a, b;\n"
    for order in ("a, b", "b, a", "none", "a"):
        h = headers.parse("v", sql.format(order), "v.sql")
        if order == "a, b":
            model._check_grain(h, headers.body(sql.format(order)), "v.sql")
            continue
        with pytest.raises(ForensicsError, match="is not the view's ORDER BY"):
            model._check_grain(h, headers.body(sql.format(order)), "v.sql")


def test_grown_logs_extend_the_last_set(tmp_path, always_extend):
    grow = tmp_path / "incident"
    _cut(INCIDENT, grow, 2 / 3)
    store = tmp_path / "store"
    ingest_paths([grow], store)
    first = _materialize(store)
    _grow(INCIDENT, grow)
    ingest_paths([grow], store)
    extended = _materialize(store)
    m = _manifest(extended)
    assert m["extends"] == first.name
    assert 0 < m["rooms_recomputed"]

    whole_store = tmp_path / "whole"
    shutil.copytree(store, whole_store)
    shutil.rmtree(whole_store / "derived" / extended.name)
    whole = _materialize(whole_store)
    assert "extends" not in _manifest(whole)
    assert whole.name == extended.name
    _assert_same_sets(extended, whole)


def test_a_new_host_touches_only_its_rooms(tmp_path, always_extend):
    """Another decode server's log added later: the rooms it names are computed again, no others."""
    store = tmp_path / "store"
    first_inputs = [INCIDENT / "prefill-0", INCIDENT / "decode-0", INCIDENT / "trace"]
    ingest_paths(first_inputs, store)
    first = _materialize(store)
    covered = _manifest(first)["inputs"]
    ingest_paths([INCIDENT / "decode-1"], store)
    extended = _materialize(store)
    m = _manifest(extended)
    assert m["extends"] == first.name
    touched = (
        duckdb.connect()
        .execute(
            f"SELECT count(DISTINCT bootstrap_room) FROM read_parquet('{store}/tables/events/*/*/*.parquet', filename = true) "
            "WHERE bootstrap_room <> 0 AND split_part(parse_filename(filename), '-', 2) NOT IN "
            f"(SELECT unnest(?::VARCHAR[]))",
            [list(covered)],
        )
        .fetchone()[0]
    )
    assert m["rooms_recomputed"] == touched

    whole_store = tmp_path / "whole"
    shutil.copytree(store, whole_store)
    shutil.rmtree(whole_store / "derived" / extended.name)
    _assert_same_sets(extended, _materialize(whole_store))


def test_other_clock_offsets_compute_everything(tmp_path, always_extend):
    from forensics.store import Store

    store = tmp_path / "store"
    ingest_paths([INCIDENT / "prefill-0", INCIDENT / "decode-0"], store)
    _materialize(store)
    Store(store).set_clock("decode-0", 0.25)
    ingest_paths([INCIDENT / "decode-1"], store)
    assert "extends" not in _manifest(_materialize(store))


def test_a_lost_input_computes_everything(tmp_path, always_extend):
    """A set that covers an input the store no longer has (a replaced piece) is not a base."""
    store = tmp_path / "store"
    ingest_paths([INCIDENT / "prefill-0", INCIDENT / "decode-0"], store)
    first = _materialize(store)
    from forensics.store import Store, commits

    commits.drop(Store(store), sorted(Store(store).committed())[0])
    ingest_paths([INCIDENT / "decode-1"], store)
    assert "extends" not in _manifest(_materialize(store))
    assert not first.exists()


def test_bounds_that_move_too_many_rooms_recompute_failures_whole(tmp_path, always_extend, monkeypatch):
    """When the new clock bounds touch too many rooms, room_failures and rooms are computed whole."""
    from forensics.catalog import refresh

    monkeypatch.setattr(refresh.Incremental, "follow_bounds", lambda self, path: False)
    written = []
    real = refresh.Incremental.write
    monkeypatch.setattr(
        refresh.Incremental,
        "write",
        lambda self, name, path, done: (written.append(name), real(self, name, path, done)),
    )
    store = tmp_path / "store"
    ingest_paths([INCIDENT / "prefill-0", INCIDENT / "decode-0", INCIDENT / "trace"], store)
    _materialize(store)
    ingest_paths([INCIDENT / "decode-1"], store)
    extended = _materialize(store)
    assert sorted(written) == ["room_events", "transfers"]  # build order: ties break by name
    whole_store = tmp_path / "whole"
    shutil.copytree(store, whole_store)
    shutil.rmtree(whole_store / "derived" / extended.name)
    _assert_same_sets(extended, _materialize(whole_store))


def test_a_failed_extension_computes_the_whole_store(tmp_path, always_extend, monkeypatch, capsys):
    """DuckDB failing while a set is extended (out of memory, say) leaves a whole set, and says so."""
    from forensics.catalog import refresh

    store = tmp_path / "store"
    ingest_paths([INCIDENT / "prefill-0", INCIDENT / "decode-0", INCIDENT / "trace"], store)
    first = _materialize(store)

    def fail(self, name, path, done):
        raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")

    monkeypatch.setattr(refresh.Incremental, "write", fail)
    ingest_paths([INCIDENT / "decode-1"], store)
    capsys.readouterr()
    extended = _materialize(store)
    err = capsys.readouterr().err
    assert f"extending the derived-view snapshots of {first.name} failed (Out of Memory Error" in err
    assert "computing them for the whole store" in err
    m = _manifest(extended)
    assert "extends" not in m and "rooms_recomputed" not in m
    monkeypatch.undo()
    whole_store = tmp_path / "whole"
    shutil.copytree(store, whole_store)
    shutil.rmtree(whole_store / "derived" / extended.name)
    _assert_same_sets(extended, _materialize(whole_store))


def test_moved_bounds_add_the_rooms_whose_failure_hosts_they_pair(tmp_path):
    """A room is computed again when the bounds of an ordered pair of its own failure hosts moved,
    and only then: a pair that appears with ahead_s 0 moves nothing."""
    from forensics.catalog import refresh

    base = tmp_path / "base"
    base.mkdir()
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT * FROM (VALUES ('a', 'b', 0.0), ('b', 'a', 0.0), ('a', 'c', 0.5), ('c', 'a', -0.5))
                      t(host_a, host_b, ahead_s)) TO '{base}/clock_bounds.parquet'""")
    con.execute(f"""COPY (SELECT * FROM (VALUES (1, 'a'), (1, 'b'), (2, 'a'), (3, 'a'), (3, 'b'), (4, 'a'), (4, 'c'),
                          (5, 'b'), (5, 'd'))
                      t(bootstrap_room, host)) TO '{base}/room_failures.parquet'""")
    con.execute(f"COPY (SELECT range AS bootstrap_room FROM range(1, 7)) TO '{base}/rooms.parquet'")
    new = tmp_path / "clock_bounds.parquet"
    # a -> b moved; a <-> c as before; b <-> d is new with ahead_s 0
    con.execute(f"""COPY (SELECT * FROM (VALUES ('a', 'b', 1.5), ('b', 'a', 0.0), ('a', 'c', 0.5), ('c', 'a', -0.5),
                          ('b', 'd', 0.0), ('d', 'b', 0.0))
                      t(host_a, host_b, ahead_s)) TO '{new}'""")
    new_input = tmp_path / "events.parquet"
    con.execute(f"COPY (SELECT 3 AS bootstrap_room) TO '{new_input}'")
    inc = refresh.Incremental(con, base, [str(new_input)])
    assert inc.touched == 1
    assert inc.follow_bounds(new)
    assert sorted(r[0] for r in con.execute("SELECT bootstrap_room FROM _touched").fetchall()) == [1, 3]
    assert inc.touched == 2


def test_a_view_that_does_not_fit_gets_the_query_limit_back(tmp_path, capsys):
    """DuckDB out of memory in one view (an operator that cannot spill) costs memory, not the set."""
    from forensics import catalog

    store = tmp_path / "store"
    ingest_paths([INCIDENT / "prefill-0", INCIDENT / "decode-0", INCIDENT / "trace"], store)
    capsys.readouterr()
    got = _materialize(store, catalog.Memory(views="1MB"))
    err = capsys.readouterr().err
    assert "note: derived view transfers did not fit in 1MB (Out of Memory Error" in err
    assert "computed again within 4GB" in err
    whole_store = tmp_path / "whole"
    shutil.copytree(store, whole_store)
    shutil.rmtree(whole_store / "derived" / got.name)
    _assert_same_sets(got, _materialize(whole_store))


def test_new_lines_naming_most_rooms_compute_everything(tmp_path):
    """Past half of the last set's rooms, the whole store is computed (at the real threshold).

    The same growth extends the set when the threshold is lifted (test_grown_logs_extend_the_last_set):
    its last third of lines names about 250 of the first two thirds' 437 rooms.
    """
    grow = tmp_path / "incident"
    _cut(INCIDENT, grow, 2 / 3)
    store = tmp_path / "store"
    ingest_paths([grow], store)
    assert len(_rows(_materialize(store) / "rooms.parquet")) > 0
    _grow(INCIDENT, grow)
    ingest_paths([grow], store)
    m = _manifest(_materialize(store))
    assert "extends" not in m and "rooms_recomputed" not in m
