"""User SQL reads the store and nothing else: every attack is a usage error and the store stays byte-identical."""

import hashlib
import shutil
import threading
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import seed as suite_seed


def _digest(root: Path) -> dict[str, str]:
    """Every file and folder of the store with its content hash; .tmp is DuckDB's scratch space, not the store."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] == ".tmp":
            continue
        out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


@pytest.fixture(scope="module")
def store(sample_store, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("readonly") / "store"
    shutil.copytree(sample_store, root)
    # reports write the derived-view cache before the connection is locked; do it once up front
    r = CliRunner().invoke(main, ["evidence", "--store", str(root)])
    assert r.exit_code == 0, r.output
    return root


@pytest.fixture(scope="module")
def pristine(store) -> dict[str, str]:
    return _digest(store)


@pytest.fixture
def outside(tmp_path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    return d


def _sql(store, query, *opts):
    # `--` first: a query may start with a comment, which is not an option
    return CliRunner().invoke(main, ["sql", "--store", str(store), *opts, "--", query])


def _batches_file(store: Path) -> str:
    return str(sorted(store.glob("tables/batches/*/*/part-*.parquet"))[0])


# (id, SQL, what the error line says); {store}, {batches} (a store Parquet file) and {out} (a folder
# outside the store) are filled in per test
ATTACKS = [
    ("drop", "DROP VIEW replies", "DROP is not allowed"),
    ("drop-lower", "drop view replies", "DROP is not allowed"),
    ("drop-after-comments", "-- a note\n/* why */ DrOp VIEW replies", "DROP is not allowed"),
    ("drop-second-statement", "SELECT 1; DROP VIEW x", "DROP is not allowed"),
    ("drop-after-select-and-comment", "SELECT 1;\n-- then\ndrop view replies;", "DROP is not allowed"),
    ("create-view", "CREATE VIEW v AS SELECT 1", "CREATE is not allowed"),
    ("replace-store-view", "CREATE OR REPLACE VIEW replies AS SELECT 1 AS x", "CREATE is not allowed"),
    ("create-table", "create table t as select 1", "CREATE is not allowed"),
    ("create-secret", "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')", "CREATE is not allowed"),
    ("alter", "ALTER VIEW replies RENAME TO r", "ALTER is not allowed"),
    ("comment-on", "COMMENT ON VIEW replies IS 'x'", "COMMENT is not allowed"),
    ("insert", "INSERT INTO clock_offsets VALUES ('decode-0', 9)", "INSERT is not allowed"),
    ("update", "update clock_offsets set offset_s = 1", "UPDATE is not allowed"),
    ("delete", "DELETE FROM clock_offsets", "DELETE is not allowed"),
    ("truncate", "TRUNCATE clock_offsets", "TRUNCATE is not allowed"),
    ("delete-in-cte", "WITH x AS (DELETE FROM clock_offsets RETURNING *) SELECT * FROM x", "DELETE is not allowed"),
    (
        "insert-in-subquery-cte",
        "SELECT * FROM range(3) WHERE range IN (WITH q AS (INSERT INTO clock_offsets VALUES ('h', 1) RETURNING 1) "
        "SELECT * FROM q)",
        "INSERT is not allowed",
    ),
    (
        "copy-over-store-parquet",
        "COPY (SELECT 1) TO '{batches}'",
        "COPY is not allowed: results go to a file only through -o",
    ),
    ("copy-over-store-parquet-no-tmp", "COPY (SELECT 1) TO '{batches}' (USE_TMP_FILE false)", "COPY is not allowed"),
    ("copy-over-clocks", "copy (select 1) to '{store}/clocks.json'", "COPY is not allowed"),
    ("copy-table-out", "COPY batches TO '{out}/b.csv'", "COPY is not allowed"),
    ("copy-from", "COPY clock_offsets FROM '{batches}'", "COPY is not allowed"),
    ("copy-in-cte", "WITH x AS (COPY (SELECT 1) TO '{batches}' (USE_TMP_FILE false)) SELECT 1", "COPY is not allowed"),
    (
        "copy-in-nested-cte",
        "SELECT * FROM (WITH x AS (COPY (SELECT 1) TO '{batches}' (USE_TMP_FILE false)) SELECT 1)",
        "COPY is not allowed",
    ),
    (
        "copy-in-scalar-subquery",
        "SELECT (WITH x AS (COPY (SELECT 1) TO '{out}/s.csv') SELECT 1)",
        "COPY is not allowed",
    ),
    ("explain-analyze-copy", "EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}/e.csv'", "COPY is not allowed"),
    ("export", "EXPORT DATABASE '{out}/exp'", "EXPORT is not allowed"),
    ("import", "IMPORT DATABASE '{out}'", "IMPORT is not allowed"),
    ("attach-file", "ATTACH '{out}/evil.db' AS evil", "ATTACH is not allowed"),
    ("attach-memory", "ATTACH ':memory:' AS m", "ATTACH is not allowed"),
    ("detach", "DETACH memory", "DETACH is not allowed"),
    ("use", "USE memory", "USE is not allowed"),
    ("install", "INSTALL httpfs", "INSTALL is not allowed"),
    ("load", "load httpfs", "LOAD is not allowed"),
    ("force-install", "FORCE INSTALL httpfs", "FORCE INSTALL is not allowed"),
    ("update-extensions", "UPDATE EXTENSIONS", "UPDATE is not allowed"),
    ("set-external-access", "SET enable_external_access = true", "SET enable_external_access is not allowed"),
    ("unlock", "SET lock_configuration = false", "SET lock_configuration is not allowed"),
    ("reset-allowed-paths", "RESET allowed_paths", "RESET allowed_paths is not allowed"),
    ("set-global", "SET GLOBAL threads = 1", "SET threads is not allowed"),
    ("pragma-setting", "PRAGMA memory_limit = '1GB'", "PRAGMA memory_limit is not allowed"),
    ("pragma-profiling", "PRAGMA enable_profiling", "PRAGMA enable_profiling is not allowed"),
    ("pragma-import", "PRAGMA import_database('{out}')", "PRAGMA import_database is not allowed"),
    ("explain-analyze-drop", "EXPLAIN ANALYZE DROP VIEW replies", "DROP is not allowed"),
    ("prepare", "PREPARE p AS COPY (SELECT 1) TO '{out}/p.csv'", "PREPARE is not allowed"),
    ("transaction", "BEGIN", "BEGIN is not allowed"),
    ("checkpoint", "CHECKPOINT", "CHECKPOINT is not allowed"),
    ("vacuum", "VACUUM", "VACUUM is not allowed"),
    ("read-text-etc", "SELECT * FROM read_text('/etc/passwd')", "reading /etc/passwd is not allowed"),
    ("read-csv-etc", "select * from READ_CSV('/etc/passwd', sep = ':')", "reading /etc/passwd is not allowed"),
    ("read-json-etc", "SELECT * FROM read_json('/etc/passwd')", "reading /etc/passwd is not allowed"),
    ("read-json-auto-etc", "SELECT * FROM read_json_auto('/etc/hostname')", "reading /etc/hostname is not allowed"),
    ("read-blob-etc", "SELECT * FROM read_blob('/etc/passwd')", "reading /etc/passwd is not allowed"),
    ("glob-etc", "SELECT * FROM glob('/etc/*')", "reading /etc/* is not allowed"),
    ("sniff-etc", "SELECT * FROM sniff_csv('/etc/passwd')", "reading /etc/passwd is not allowed"),
    ("file-url", "SELECT * FROM read_text('file:///etc/passwd')", "reading file:///etc/passwd is not allowed"),
    ("replacement-scan", "SELECT * FROM '/etc/passwd'", "reading /etc/passwd is not allowed"),
    ("replacement-scan-from-first", "FROM '/etc/passwd'", "reading /etc/passwd is not allowed"),
    ("replacement-scan-store-file", "SELECT count(*) FROM '{batches}'", "is not allowed"),
    ("store-clocks-as-text", "SELECT * FROM read_text('{store}/clocks.json')", "clocks.json is not allowed"),
    ("glob-the-store", "SELECT * FROM glob('{store}/tables/*/*/*/*')", "is not allowed"),
    ("parquet-outside", "SELECT * FROM read_parquet('{out}/*.parquet')", "is not allowed"),
    ("query-string", "SELECT * FROM query('DROP VIEW replies')", "table function query() is not allowed"),
    ("query-quoted-name", "SELECT * FROM \"QUERY\"('SELECT 1')", "table function query() is not allowed"),
    (
        "serialized-copy",
        "SELECT * FROM json_execute_serialized_sql(json_serialize_sql("
        "'WITH x AS (COPY (SELECT 43) TO ''{batches}'' (USE_TMP_FILE false)) SELECT 1'))",
        "table function json_execute_serialized_sql() is not allowed",
    ),
    (
        "enable-logging-to-file",
        "CALL enable_logging(storage = 'file', storage_path = '{out}/logs')",
        "table function enable_logging() is not allowed",
    ),
    ("call-query", "CALL query('SELECT 1')", "table function query() is not allowed"),
    ("raw-pointer-scan", "SELECT * FROM arrow_scan(1, 2, 3)", "table function arrow_scan() is not allowed"),
    ("extension-function", "SELECT * FROM read_xlsx('/etc/passwd')", "table function read_xlsx() is not allowed"),
    ("variable-from-query", "SET VARIABLE x = (SELECT count(*) FROM query('SELECT 1'))", "query() is not allowed"),
    (
        "temp-shadows-clocks",
        "CREATE TEMP VIEW clock_offsets AS SELECT 'decode-0' AS host, 1e6 AS offset_s",
        "clock_offsets is a store table or view",
    ),
    ("temp-shadows-view", "CREATE TEMP TABLE replies AS SELECT 1 AS x", "replies is a store table or view"),
    ("temp-shadows-function", "CREATE TEMP MACRO upper(s) AS 'x'", "upper is a function"),
    ("temp-qualified", "CREATE TEMP TABLE main.t AS SELECT 1", "plain name"),
    (
        "temp-macro-copy",
        "CREATE TEMP MACRO m() AS TABLE WITH x AS (COPY (SELECT 1) TO '{batches}') SELECT 1",
        "COPY is not allowed",
    ),
    ("temp-macro-query", "CREATE TEMP MACRO m() AS TABLE SELECT * FROM query('SELECT 1')", "query() is not allowed"),
    (
        "temp-table-from-etc",
        "CREATE TEMP TABLE t AS SELECT * FROM read_text('/etc/passwd')",
        "reading /etc/passwd is not allowed",
    ),
]


@pytest.mark.parametrize("sql,expected", [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_attack_is_a_usage_error_and_changes_nothing(store, pristine, outside, sql, expected):
    text = sql.format(store=store, batches=_batches_file(store), out=outside)
    r = _sql(store, text)
    assert r.exit_code == 2, (r.exit_code, r.output)
    lines = r.stderr.splitlines()
    assert lines[0].startswith("error: ") and expected in lines[0], r.stderr
    assert any(ln.startswith("  = help: ") for ln in lines), r.stderr
    assert "Traceback" not in r.output and r.stdout == ""
    assert _digest(store) == pristine
    assert list(outside.iterdir()) == []


def test_copy_names_the_way_out(store):
    r = _sql(store, "COPY (SELECT 1) TO 'x.csv'")
    assert r.stderr.splitlines() == [
        "error: COPY is not allowed: results go to a file only through -o",
        "  | COPY (SELECT 1) TO 'x.csv'",
        '  = help: forensics sql "SELECT ..." --format csv -o FILE',
    ]


def test_the_connection_itself_is_locked(store, outside):
    """Beneath the statement check: the connection every report and query uses reaches no file but the store's."""
    from forensics.catalog import connect
    from forensics.store import Store

    con = connect(Store(store))
    try:
        assert con.sql("SELECT current_setting('enable_external_access')").fetchall() == [(False,)]
        for sql in (
            "SET enable_external_access = true",
            "SET lock_configuration = false",
            "SET allowed_directories = ['/']",
            f"COPY (SELECT 1) TO '{outside}/x.csv'",
            "SELECT * FROM read_text('/etc/passwd')",
            f"ATTACH '{outside}/x.db' AS x",
            "LOAD httpfs",
        ):
            with pytest.raises(duckdb.Error):
                con.sql(sql).fetchall()
        assert con.sql("SELECT count(*) FROM batches").fetchall()[0][0] > 0
    finally:
        con.close()
    assert list(outside.iterdir()) == []


def _count_parquet(store: Path, table: str) -> int:
    return sum(pl.read_parquet(p).height for p in store.glob(f"tables/{table}/*/*/part-*.parquet"))


def test_ordinary_queries_and_parameters(store, pristine):
    r = _sql(store, "SELECT count(*) AS n FROM batches", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["n", str(_count_parquet(store, "batches"))]
    host = pl.read_parquet(_batches_file(store), hive_partitioning=True)["host"][0]
    r = _sql(store, "SELECT count(*) > 0 AS any FROM batches WHERE host = $h", "--format", "csv", "-p", f"h={host}")
    assert r.exit_code == 0 and r.stdout.splitlines() == ["any", "true"], r.output
    assert _digest(store) == pristine


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 AS load, 2 AS \"copy\", 'DROP VIEW replies' AS text",  # words, names and strings, not statements
        "FROM replies LIMIT 2",
        "DESCRIBE batches",
        "SHOW TABLES",
        "SUMMARIZE SELECT 1 AS a",
        "PRAGMA show_tables",
        "PRAGMA table_info('batches')",
        "CALL pragma_version()",
        "EXPLAIN SELECT count(*) FROM batches",
        "EXPLAIN ANALYZE SELECT count(*) FROM batches",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
        "SELECT * FROM range(3) t(i) QUALIFY row_number() OVER (ORDER BY i) < 2",
        "PIVOT (SELECT host, 1 AS one FROM batches) ON host USING sum(one)",
        "SELECT * FROM wedge_intervals() LIMIT 1",
        "SELECT * FROM duckdb_settings() WHERE name = 'enable_external_access'",
        "SET VARIABLE n = 3; SELECT getvariable('n') AS n",
        "CREATE TEMP TABLE per_host AS SELECT host, count(*) AS n FROM batches GROUP BY ALL; "
        "SELECT * FROM per_host ORDER BY host",
        "CREATE TEMP VIEW busy AS SELECT * FROM batches WHERE running_req > 0; SELECT count(*) FROM busy",
        "CREATE TEMP MACRO plus1(x) AS x + 1; SELECT plus1(1) AS two",
        "CREATE TEMP MACRO few() AS TABLE SELECT 1 AS a; SELECT * FROM few()",
    ],
)
def test_reading_statements_run(store, pristine, sql):
    r = _sql(store, sql, "--format", "json")
    assert r.exit_code == 0, r.output
    assert _digest(store) == pristine


def test_read_parquet_of_a_store_file_is_the_raw_view(store):
    """read_parquet works on the exact files the views read: the same rows as raw_<table>, nothing new."""
    f = _batches_file(store)
    r = _sql(store, f"SELECT count(*) AS n FROM read_parquet('{f}')", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["n", str(pl.read_parquet(f).height)]


def test_results_go_to_a_file_through_o(store, pristine, outside):
    out = outside / "hosts.csv"
    q = "SELECT host, count(*) AS n FROM batches GROUP BY host ORDER BY host"
    r = _sql(store, q, "--format", "csv", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert out.read_text() == _sql(store, q, "--format", "csv").stdout
    r = CliRunner().invoke(
        main, ["query", "run", "wedges", "--store", str(store), "--format", "json", "-o", str(outside / "w.json")]
    )
    assert r.exit_code == 0 and (outside / "w.json").read_text().startswith("["), r.output
    for target in (store / "clocks.json", Path(_batches_file(store)), store / "tables" / "new.csv"):
        r = _sql(store, q, "-o", str(target))
        assert r.exit_code == 2 and "is inside the store" in r.stderr, r.output
    assert _digest(store) == pristine


@pytest.mark.slow
def test_named_queries_and_reports_still_work(store, pristine, outside):
    for args in (
        ["query", "run", "wedges"],
        ["query", "run", "timeline", "-p", "bucket_s=60"],
        ["evidence"],
        ["timeline", "--format", "json"],
        ["replies", "--format", "csv"],
    ):
        r = CliRunner().invoke(main, [*args, "--store", str(store)])
        assert r.exit_code == 0, (args, r.output)
    assert _digest(store) == pristine


@pytest.mark.slow
def test_reports_still_write_the_derived_cache(sample_store, tmp_path):
    """The snapshots are written before the lock: a store without them gets them from its first report."""
    root = tmp_path / "s"
    shutil.copytree(sample_store, root)
    for d in (root / "derived").iterdir():
        if d.name != "verdicts":
            shutil.rmtree(d)
    r = CliRunner().invoke(main, ["evidence", "--store", str(root)])
    assert r.exit_code == 0, r.output
    snapshots = [
        p.name
        for p in (root / "derived").glob("*/*.parquet")
        if p.parent.name != "verdicts" and p.parent.parent.name == "derived"
    ]
    assert {"rooms.parquet", "replies.parquet", "transfers.parquet"} <= set(snapshots)


@pytest.mark.slow
def test_spilling_to_the_temp_directory_works_under_the_lock(store):
    """A query bigger than memory spills to <store>/.tmp/duckdb on the locked connection."""
    from forensics import catalog
    from forensics.catalog.sql import run_sql
    from forensics.store import Store

    con = catalog.connect(Store(store), memory=catalog.Memory(query="48MB"))
    tmp = store / ".tmp" / "duckdb"
    peak, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], sum(f.stat().st_size for f in tmp.iterdir() if f.is_file()))
            except OSError:
                pass
            time.sleep(0.01)

    w = threading.Thread(target=watch)
    w.start()
    try:
        # a full sort of ~60 MB of text under a 48 MB limit
        df = run_sql(
            Store(store),
            "SELECT max(rn) AS n FROM (SELECT row_number() OVER (ORDER BY s) AS rn FROM "
            "(SELECT md5(i::VARCHAR) || md5((i + 7)::VARCHAR) AS s FROM range(800000) t(i)))",
            con=con,
        )
    finally:
        done.set()
        w.join()
        con.close()
    assert df["n"].to_list() == [800000]
    assert peak[0] > 0


# writes and reads outside the store that can stand where a query does (a CTE, a subquery), and
# statements that can only stand alone; the generator below dresses them up differently each run
_QUERY_PAYLOADS = [
    "COPY (SELECT 1) TO '{batches}' (USE_TMP_FILE false)",
    "COPY (SELECT 42 AS x) TO '{store}/clocks.json'",
    "INSERT INTO clock_offsets VALUES ('decode-0', 1e6) RETURNING *",
    "DELETE FROM clock_offsets RETURNING *",
    "UPDATE clock_offsets SET offset_s = 1 RETURNING *",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM query('SELECT 1')",
    "SELECT * FROM glob('{store}/*')",
]
_STATEMENT_PAYLOADS = [
    "DROP VIEW replies",
    "CREATE OR REPLACE VIEW rooms AS SELECT 1 AS x",
    "ATTACH '{out}/x.db' AS x",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "EXPORT DATABASE '{out}/e'",
    "DETACH memory",
]
_QUERY_WRAPPERS = [
    "{p}",
    "WITH x AS ({p}) SELECT count(*) FROM x",
    "WITH a AS (SELECT 1), x AS MATERIALIZED ({p}) SELECT * FROM a, x",
    "SELECT * FROM (WITH x AS ({p}) SELECT * FROM x)",
    "SELECT (WITH x AS ({p}) SELECT count(*) FROM x) AS v",
    "SELECT * FROM range(2) WHERE range IN (WITH x AS ({p}) SELECT count(*) FROM x)",
    "EXPLAIN ANALYZE {p}",
    "CREATE TEMP TABLE t AS WITH x AS ({p}) SELECT * FROM x",
    "SELECT 1; {p}",
]
_STATEMENT_WRAPPERS = ["{p}", "SELECT 1; {p}", "SELECT 1;\n{p};\nSELECT 2"]


def _dress(rng, sql: str) -> str:
    """Random case for keywords (strings and names untouched), comments and line breaks between tokens."""
    toks = duckdb.tokenize(sql)
    ends = [p for p, _ in toks[1:]] + [len(sql)]
    out = [rng.choice(["", "-- why not\n", "/* a */ ", "\n\n"])]
    for (pos, kind), end in zip(toks, ends):
        text = sql[pos:end].rstrip()
        if kind == duckdb.token_type.keyword:
            text = "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)
        out.append(text + rng.choice([" ", " ", "\n", " /* x */ ", "\t"]))
    return "".join(out)


def test_attacks_in_random_wrappers_and_dress(store, pristine, outside):
    """Payloads in random wrappers and random dress (the suite's seed: FORENSICS_TEST_SEED=random draws
    fresh ones): every one is refused before it runs; the seed is in the message."""
    import random

    from forensics.catalog import connect
    from forensics.catalog.sql import run_sql
    from forensics.core.errors import UsageError
    from forensics.store import Store

    seed = suite_seed(0x5EED)
    rng = random.Random(seed)
    fill = {"store": store, "batches": _batches_file(store), "out": outside}
    con = connect(Store(store))
    try:
        for _ in range(60):
            if rng.random() < 0.65:
                wrapper, payload = rng.choice(_QUERY_WRAPPERS), rng.choice(_QUERY_PAYLOADS)
            else:
                wrapper, payload = rng.choice(_STATEMENT_WRAPPERS), rng.choice(_STATEMENT_PAYLOADS)
            sql = _dress(rng, wrapper.replace("{p}", payload).format(**fill))
            with pytest.raises(UsageError, match="is not allowed"):
                run_sql(Store(store), sql, con=con)
                pytest.fail(f"seed {seed}: ran {sql!r}")
    finally:
        con.close()
    assert _digest(store) == pristine, f"seed {seed}"
    assert list(outside.iterdir()) == [], f"seed {seed}"
