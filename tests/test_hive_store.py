"""The store in Hive partitions: its layout, its commit, its migration, its compaction, and the
readers other than ours (docs/STORE.md)."""

import os
import re
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.conftest import sql

PART = re.compile(
    r"^(?P<table>[a-z_]+)/host=(?P<host>[^/]+)/date=(?P<date>[^/]+)/part-(?P<key>[0-9a-f]{32})-\d{5}\.parquet$"
)
HIVE = "hive_partitioning = true, hive_types = {'host': VARCHAR, 'date': DATE}"


def _parts(store: Path) -> list[str]:
    return sorted(str(p.relative_to(store / "tables")) for p in (store / "tables").rglob("*.parquet"))


def _base_tables(store: Path) -> list[str]:
    from forensics.core import schema

    return [t.name for t in schema.TABLES.values() if not t.view and (store / "tables" / t.name).is_dir()]


def _digest(store) -> dict:
    """Every base table, row by row, as tools.digest reads them (which does the views too, outside the suite)."""
    from forensics import catalog
    from forensics.core import schema
    from forensics.store import Store

    con = catalog.connect(Store(store))
    out = {}
    for name in sorted(t.name for t in schema.TABLES.values() if not t.view):
        cols = [c for c in con.sql(f'SELECT * FROM "{name}"').columns if c not in ("ingested_at", "data_files")]
        out[name] = con.sql(
            f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{name}" ORDER BY ALL'
        ).fetchall()
    con.close()
    return out


def test_every_part_is_in_its_partition_with_the_schema_less_the_path(incident_store):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from forensics.core import schema
    from forensics.store import Store, hive

    parts = _parts(incident_store)
    assert {PART.match(p)["table"] for p in parts} >= {"files", "events", "batches", "transfer_events", "turns"}
    committed = Store(incident_store).committed()
    for rel in parts:
        m = PART.match(rel)
        assert m, rel
        assert m["key"] in committed
        t = schema.TABLES[m["table"]]
        arrow = pq.read_schema(incident_store / "tables" / rel)
        assert arrow.names == [c.name for c in t.stored if c.name != "host"], rel  # the full schema, host in the path
        for f in arrow:
            if pa.types.is_timestamp(f.type):
                assert (f.type.unit, f.type.tz) == ("us", "UTC"), (rel, f)  # Spark reads no nanoseconds
        if "host" not in {c.name for c in t.columns}:
            assert m["host"] == hive.DEFAULT


def test_partition_values_round_trip_through_the_path():
    from forensics.store import hive

    for v in ["decode-0", "a/b=c:d%e", "tab\there", "é", hive.DEFAULT, "_x", "."]:
        seg = hive.escape(v)
        assert "/" not in seg and seg != hive.DEFAULT
        assert hive.unescape(seg) == v
    assert hive.escape(None) == hive.escape("") == hive.DEFAULT and hive.unescape(hive.DEFAULT) is None


def _counts_by_host(store: Path, tables: tuple[str, ...]) -> dict[str, dict]:
    """table -> host -> rows, as `forensics sql` counts them (one connection)."""
    from forensics import catalog
    from forensics.store import Store

    con = catalog.connect(Store(store))
    try:
        return {t: dict(con.execute(f"SELECT host, count(*) FROM {t} GROUP BY ALL").fetchall()) for t in tables}
    finally:
        con.close()


def test_duckdb_polars_and_pyarrow_read_the_tables_as_forensics_does(incident_store):
    import pyarrow.dataset as ds

    tables = ("events", "batches", "transfer_events", "files")
    counts = _counts_by_host(incident_store, tables)
    for table in tables:
        want = counts[table]
        root = incident_store / "tables" / table
        duck = dict(
            duckdb.sql(
                f"SELECT host, count(*) FROM read_parquet('{root}/**/*.parquet', {HIVE}) GROUP BY ALL"
            ).fetchall()
        )
        scanned = pl.scan_parquet(
            f"{root}/**/*.parquet", hive_partitioning=True, hive_schema={"host": pl.String, "date": pl.Date}
        )
        polars = dict(scanned.group_by("host").len().collect().iter_rows())
        hosts = ds.dataset(root, format="parquet", partitioning="hive").to_table(columns=["host"])
        arrow = {r["host"]: r["count_all"] for r in hosts.group_by("host").aggregate([([], "count_all")]).to_pylist()}
        assert duck == want and polars == want and arrow == want, table
    # the date is the UTC day of ts
    days = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{incident_store}/tables/events/**/*.parquet', {HIVE}) "
        "WHERE ts IS NOT NULL AND date <> CAST(ts AT TIME ZONE 'UTC' AS DATE)"
    ).fetchall()[0][0]
    assert days == 0


def test_named_queries_of_base_tables_run_unchanged_in_duckdb_over_a_copy(incident_store, tmp_path):
    from forensics.catalog import named

    copy = tmp_path / "elsewhere"
    shutil.copytree(incident_store / "tables", copy / "tables")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    tables = _base_tables(incident_store)
    for t in tables:
        con.execute(
            f"CREATE VIEW {t} AS SELECT * EXCLUDE (date) FROM read_parquet('{copy}/tables/{t}/**/*.parquet', {HIVE})"
        )
    from forensics import catalog
    from forensics.catalog.sql import run_sql
    from forensics.store import Store

    store = Store(incident_store)
    mine = catalog.connect(store)
    ran = []
    for q in named.all_queries().values():
        if q.over or not set(q.inputs) <= set(tables) or "turns" in q.inputs:
            continue
        ours = run_sql(store, q.sql, q.bind(), con=mine)
        theirs = pl.from_arrow(con.sql(q.sql, params=q.bind() or None).to_arrow_table())
        assert theirs.columns == ours.columns, q.name
        assert sorted(map(repr, theirs.rows())) == sorted(map(repr, ours.rows())), q.name
        ran.append(q.name)
    assert len(ran) >= 3, ran


# --- the commit ------------------------------------------------------------------------------------


def _frame(n: int, host: str = "h1") -> pl.DataFrame:
    import datetime as dt

    t0 = dt.datetime(2026, 1, 1, 23, 59, 59, tzinfo=dt.timezone.utc)
    return pl.DataFrame(
        {
            "ts": [t0 + dt.timedelta(seconds=i) for i in range(n)],
            "host": [host] * n,
            "kind": ["x"] * n,
            "line_no": list(range(n)),
        }
    )


def _written(store, key: str, parts: int = 3):
    w = store.writer(key)
    for i in range(parts):
        w.write("events", _frame(2).with_columns(pl.col("line_no") + 10 * i))
    w.write("files", pl.DataFrame({"path": [f"{key}.log"], "host": ["h1"], "status": ["ingested"]}))
    return w


def test_a_kill_before_the_manifest_leaves_no_part_and_the_next_ingest_clears_it(tmp_path, monkeypatch):
    from forensics.store import Store

    store = Store(tmp_path / "store").init()
    w = _written(store, "a" * 32)

    def killed(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "link", killed)
    with pytest.raises(KeyboardInterrupt):
        w.commit()
    monkeypatch.undo()
    assert _parts(store.root) == [] and store.committed() == set()
    store.clear_tmp()
    assert list(store.tmp.iterdir()) == []
    assert _written(store, "a" * 32).commit() and not _written(store, "a" * 32).commit()  # a re-run adds nothing
    assert len(_parts(store.root)) == 7 and list(store.tmp.iterdir()) == []


def test_a_kill_after_the_manifest_is_read_whole_and_finished_by_the_next_ingest(tmp_path, monkeypatch):
    from forensics.store import Store, checks, commits

    store = Store(tmp_path / "store").init()
    monkeypatch.setattr(commits, "finish", lambda *a: None)  # killed right after the link
    assert _written(store, "b" * 32).commit()
    monkeypatch.undo()
    assert _parts(store.root) == []  # nothing renamed in yet: a globbing reader sees no part of it
    assert sql(store.root, "SELECT count(*) n FROM events")["n"][0] == 6  # ours read where the parts wait
    store.clear_tmp()
    assert len(_parts(store.root)) == 7 and list(store.tmp.iterdir()) == []  # 3 parts over 2 dates, files
    checks.require_complete(store)


def test_a_replacing_manifest_hides_the_old_input_at_once(tmp_path, monkeypatch):
    from forensics.store import Store, commits

    store = Store(tmp_path / "store").init()
    assert _written(store, "c" * 32, parts=1).commit()
    monkeypatch.setattr(commits, "finish", lambda *a: None)
    assert _written(store, "d" * 32, parts=2).replace("c" * 32)
    monkeypatch.undo()
    assert store.committed() == {"d" * 32}
    assert sql(store.root, "SELECT count(*) n FROM events")["n"][0] == 4
    store.clear_tmp()  # the kill's leftovers: the renames done, the old input dropped
    assert {PART.match(p)["key"] for p in _parts(store.root)} == {"d" * 32}
    assert not commits.manifest_path(store, "c" * 32).exists()


@pytest.mark.slow  # writes a store, compacts it, reads it twice
def test_compact_merges_an_inputs_small_parts_and_changes_no_row(tmp_path):
    from click.testing import CliRunner

    from forensics.cli import main
    from forensics.store import Store

    store = Store(tmp_path / "store").init()
    assert _written(store, "e" * 32, parts=6).commit()
    before, n = _digest(store.root), len(_parts(store.root))
    run = CliRunner().invoke(main, ["compact", "--store", str(store.root)])
    assert run.exit_code == 0, run.output
    assert "compacted 1 input" in run.output
    assert len(_parts(store.root)) == 3 < n  # one part per day, and the files row
    assert _digest(store.root) == before
    assert CliRunner().invoke(main, ["verify", "--store", str(store.root)]).exit_code == 0


# --- the layout before -------------------------------------------------------------------------------


def _as_layout_before(store: Path) -> None:
    """`store` written back in the layout before: data/<key>/<table>-NNNNN.parquet, the host a column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from forensics.core import schema
    from forensics.store import Store, hive

    for key, m in Store(store).manifests().items():
        for p in m["parts"]:
            t = schema.TABLES[hive.table_of(p["file"])]
            at = pq.read_table(store / "tables" / p["file"])
            if "host" in {c.name for c in t.stored}:
                host = hive.values_of(p["file"])["host"]
                at = at.append_column("host", pa.array([host] * at.num_rows, pa.string()))
                at = at.select([c.name for c in t.stored])
            n = p["file"].rsplit("-", 1)[1]
            out = store / "data" / key / f"{t.name}-{n}"
            out.parent.mkdir(parents=True, exist_ok=True)
            if out.exists():  # one part over two partitions
                at = pa.concat_tables([pq.read_table(out), at])
            pq.write_table(at, out)
    shutil.rmtree(store / "tables")
    shutil.rmtree(store / "inputs")


@pytest.mark.slow  # rewrites a whole store
def test_a_store_of_the_layout_before_is_migrated_with_one_line_and_reads_the_same(incident_store, tmp_path):
    from click.testing import CliRunner

    from forensics.cli import main

    old = tmp_path / "old"
    shutil.copytree(incident_store, old)
    want = _digest(incident_store)
    _as_layout_before(old)
    run = CliRunner().invoke(main, ["sql", "SELECT count(*) AS n FROM files", "--store", str(old)])
    assert run.exit_code == 0, run.output
    notes = [ln for ln in run.stderr.splitlines() if "migrated" in ln]
    assert len(notes) == 1 and "layout before Hive partitions" in notes[0], run.stderr
    assert not (old / "data").exists() and _parts(old)
    assert _digest(old) == want
    assert CliRunner().invoke(main, ["verify", "--store", str(old)]).exit_code == 0


# --- Spark --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_spark_local_mode_reads_the_tables_as_forensics_does(incident_store):
    """Spark is optional (`pip install pyspark`, and Java 17): without it this test is skipped, in CI too."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.skip("pyspark is not installed (optional: pip install pyspark; needs Java 17)")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: Spark needs Java 17")
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .getOrCreate()
    )
    try:
        tables = ("events", "batches", "transfer_events", "files", "turns")
        counts = _counts_by_host(incident_store, tables[:4])
        for table in tables:
            df = spark.read.parquet(str(incident_store / "tables" / table))
            if table == "turns":  # no host column: every row in the default partition, read as NULL
                assert df.filter("host IS NOT NULL").count() == 0 and df.count() > 0
                continue
            got = {r["host"]: r["count"] for r in df.groupBy("host").count().collect()}
            assert got == counts[table], table
    finally:
        spark.stop()
