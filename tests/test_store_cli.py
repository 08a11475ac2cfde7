"""The store contract (dedup, growth, compression, archives) and the CLI surface."""

import gzip
import io
import re
import subprocess
import sys
import tarfile

import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import ROOT, ingest_paths, sql

LOG = (
    "[2026-10-30 10:00:07 DP0 TP0] Decode batch, #running-req: 64, #token: 120000, token usage: 0.45, "
    "cuda graph: True, gen throughput (token/s): 2450.12, #queue-req: 0\n"
    "[2026-10-30 10:00:08 DP0 TP0] Decode batch, #running-req: 60, #token: 110000, token usage: 0.41, "
    "cuda graph: True, gen throughput (token/s): 2400.00, #queue-req: 2\n"
)


def test_same_content_twice_adds_nothing_and_more_files_add(tmp_path):
    (tmp_path / "dump" / "decode-0").mkdir(parents=True)
    (tmp_path / "dump" / "decode-0" / "sglang.log").write_text(LOG)
    store = tmp_path / "store"
    r1 = ingest_paths([tmp_path / "dump"], store)
    assert [r.status for r in r1] == ["ingested"]
    r2 = ingest_paths([tmp_path / "dump"], store)
    assert [r.status for r in r2] == ["duplicate"]
    # the same content under another (rotated, compressed) name is still a duplicate
    with gzip.open(tmp_path / "dump" / "decode-0" / "sglang.log.1.gz", "wt") as f:
        f.write(LOG)
    assert [r.status for r in ingest_paths([tmp_path / "dump" / "decode-0" / "sglang.log.1.gz"], store)] == [
        "duplicate"
    ]
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 2
    # new content adds to the store
    import zstandard

    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "decode-1.log.zst").write_bytes(
        zstandard.ZstdCompressor().compress(LOG.replace("DP0", "DP1").encode())
    )
    ingest_paths([tmp_path / "more"], store)
    df = sql(store, "SELECT host, role, count(*) n FROM batches GROUP BY ALL ORDER BY host")
    # no PD fields in the lines, so the role comes from the names (decode-0/, decode-1.log.zst)
    assert df.rows() == [("decode-0", "decode", 2), ("decode-1", "decode", 2)]


def test_tar_members_are_read_in_memory(tmp_path):
    buf = io.BytesIO(LOG.encode())
    with tarfile.open(tmp_path / "incident.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("../evil/decode-9/sglang.log")
        info.size = len(LOG)
        tf.addfile(info, buf)
    store = tmp_path / "store"
    ingest_paths([tmp_path / "incident.tar.gz"], store)
    df = sql(store, "SELECT DISTINCT host, source_file FROM batches")
    assert df["host"][0] == "decode-9"
    assert df["source_file"][0].endswith("incident.tar.gz!../evil/decode-9/sglang.log")
    assert not (tmp_path.parent / "evil").exists()


def test_role_and_host_options(tmp_path):
    p = tmp_path / "x.log"
    p.write_text(LOG)
    res = CliRunner().invoke(
        main, ["ingest", str(p), "--store", str(tmp_path / "s"), "--host", "h1", "--role", "decode"]
    )
    assert res.exit_code == 0, res.output
    assert sql(tmp_path / "s", "SELECT DISTINCT host, role FROM batches").rows() == [("h1", "decode")]


def test_sql_errors_are_one_line_and_exit_1(tmp_path):
    p = tmp_path / "x.log"
    p.write_text(LOG)
    r = CliRunner().invoke(main, ["ingest", str(p), "--store", str(tmp_path / "s")])
    assert r.exit_code == 0
    res = CliRunner().invoke(main, ["sql", "--store", str(tmp_path / "s"), "SELECT nope FROM batches"])
    assert res.exit_code == 1
    assert res.output.startswith("error: ")
    assert "Traceback" not in res.output


def test_sql_formats_and_params(tmp_path):
    p = tmp_path / "x.log"
    p.write_text(LOG)
    s = str(tmp_path / "dir with 'quote")
    CliRunner().invoke(main, ["ingest", str(p), "--store", s])
    res = CliRunner().invoke(
        main,
        [
            "sql",
            "--store",
            s,
            "--format",
            "csv",
            "SELECT running_req FROM batches WHERE queue_req = $q::INT",
            "-p",
            "q=2",
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == ["running_req", "60"]
    res = CliRunner().invoke(main, ["sql", "--store", s, "--format", "json", "SELECT 4793981895866140836::BIGINT AS r"])
    assert '"4793981895866140836"' in res.output  # 63-bit rooms do not fit a JSON double


def test_missing_store_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(main, ["sql", "--store", str(tmp_path / "none"), "SELECT 1"])
    assert res.exit_code == 1 and "no store at" in res.output and "help:" in res.output


def test_usage_error_exit_2(tmp_path):
    res = CliRunner().invoke(main, ["ingest", str(tmp_path), "--clock-offset", "nonsense"])
    assert res.exit_code == 2


def _commands(group, prefix=()):
    import click

    for name, cmd in group.commands.items():
        yield prefix + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))


def test_every_command_has_help_and_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for path, cmd in _commands(main):
        assert (cmd.help or "").strip(), f"{' '.join(path)} has no help text"
        assert re.search(rf"forensics {' '.join(path)}\b", readme), f"`forensics {' '.join(path)}` is not in README.md"
        res = CliRunner().invoke(main, [*path, "--help"])
        assert res.exit_code == 0


def test_tables_prints_every_table():
    from forensics.catalog import model

    res = CliRunner().invoke(main, ["tables", "--format", "markdown"])
    assert res.exit_code == 0
    for t in [*model.tables(), "clock_offsets", *model.macros()]:
        assert f"### `{t}`" in res.output
    # the raw_<table> views `forensics sql` reads: one line names them all, each has its own page
    stored = [t.name for t in model.tables().values() if not t.view]
    (line,) = [ln for ln in res.output.splitlines() if ln.startswith("raw_<table> (views): ")]
    assert line.endswith(": " + ", ".join(f"raw_{t}" for t in stored))
    for t in stored:
        one = CliRunner().invoke(main, ["tables", f"raw_{t}"])
        assert one.exit_code == 0 and f"raw_{t} (view): `{t}` as stored, before clock offsets" in one.output


@pytest.mark.slow
def test_package_ships_one_import_name_with_parsers_and_queries(tmp_path):
    """parsers/ and queries/ install inside forensics: no generic top-level names in site-packages."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    import zipfile

    whl = next(tmp_path.glob("sglang_forensics-*.whl"))
    names = zipfile.ZipFile(whl).namelist()
    assert {n.split("/")[0] for n in names} == {"forensics", whl.name.split("-")[0] + "-0.1.0.dist-info"}
    assert "forensics/parsers/__init__.py" in names
    assert "forensics/queries/__init__.py" in names
    # tools/ (the demo-data generator and its line shapes) stays in the checkout
    assert not [n for n in names if "/tools/" in n or n.rsplit("/", 1)[-1] in ("samplegen.py", "loglines.py")]
    for f in sorted(p.name for p in (ROOT / "parsers").glob("*.py")):
        assert f"forensics/parsers/{f}" in names
    for f in sorted(p.name for p in (ROOT / "queries").glob("*.sql")):
        assert f"forensics/queries/{f}" in names
    for f in sorted(p.name for p in (ROOT / "forensics" / "catalog" / "views").glob("*.sql")):
        assert f"forensics/catalog/views/{f}" in names
    # the timeline page's HTML, CSS and script; the Perfetto export's SQL is queries/_perfetto_counters.sql
    for f in sorted(p.name for p in (ROOT / "forensics" / "reports" / "assets").iterdir()):
        assert f"forensics/reports/assets/{f}" in names
    assert "forensics/queries/_perfetto_counters.sql" in names


@pytest.mark.slow
def test_derived_view_snapshots_follow_the_store(tmp_path):
    """Reports cache transfers/rooms/replies; a new input or a new offset makes a new snapshot."""
    from forensics.catalog import named as queries
    from forensics.store import Store

    def snapshots():  # derived/verdicts holds the verdicts of turns, not a snapshot
        return sorted(p for p in (store / "derived").iterdir() if p.name != "verdicts")

    p = tmp_path / "decode-0.log"
    p.write_text(LOG)
    store = tmp_path / "s"
    ingest_paths([p], store)
    queries.run(Store(store), "wedges")
    first = snapshots()
    assert len(first) == 1 and (first[0] / "rooms.parquet").exists()
    Store(store).set_clock("decode-0", 1.5)
    queries.run(Store(store), "wedges")
    second = snapshots()
    assert len(second) == 1 and second != first  # the old snapshot is gone, not reused
    q = tmp_path / "decode-1.log"
    q.write_text(LOG.replace("DP0", "DP1"))
    ingest_paths([q], store)
    assert sql(store, "SELECT count(*) n FROM batches")["n"][0] == 4
    queries.run(Store(store), "wedges")
    assert snapshots() != second


def test_files_sharing_a_header_are_not_duplicates(tmp_path):
    """A parser that reads only a head and then opens the file by path (SQLite) must not make two
    different files hash alike."""
    import shutil
    import sqlite3

    src = ROOT / "tests" / "corpus" / "transcripts" / "opencode_db" / "opencode.db"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / "opencode.db")
    con = sqlite3.connect(tmp_path / "b" / "opencode.db")
    con.execute("CREATE TABLE forensics_test_marker (x)")
    con.commit()
    con.close()
    store = tmp_path / "s"
    assert [r.status for r in ingest_paths([tmp_path / "a" / "opencode.db"], store)] == ["ingested"]
    assert [r.status for r in ingest_paths([tmp_path / "b" / "opencode.db"], store)] == ["ingested"]
    assert [r.status for r in ingest_paths([tmp_path / "a" / "opencode.db"], store)] == ["duplicate"]
    shas = sql(store, "SELECT sha256 FROM files ORDER BY path")["sha256"].to_list()
    assert len(set(shas)) == 2


def test_same_content_committed_by_another_input_in_between_is_a_duplicate(tmp_path, monkeypatch):
    # two inputs of one content (the same log under two names, in two ingest workers) both pass
    # the exists() check; the second link then meets a committed manifest
    import os

    import polars as pl

    from forensics.store import Store

    store = Store(tmp_path / "store").init()
    first, second = store.writer("k1"), store.writer("k2")
    for w in (first, second):
        w.write("files", pl.DataFrame({"path": ["a.log"]}))
        w.key = "samekey"
    real_link = os.link

    def link_after_the_other(src, dst):
        monkeypatch.setattr(os, "link", real_link)
        assert first.commit()
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link_after_the_other)
    assert second.commit() is False
    assert store.committed() == {"samekey"} and not second.dir.exists()


def test_parquet_encodings_follow_the_column_kinds(tmp_path):
    """Repeating strings are dictionaries, integers and times deltas, floats plain; DuckDB reads all back."""
    import pyarrow.parquet as pq

    (tmp_path / "decode.log").write_text(LOG * 20)  # a dictionary needs a string to repeat
    store = tmp_path / "store"
    ingest_paths([tmp_path / "decode.log"], store)
    (path,) = (store / "tables").glob("batches/*/*/part-*.parquet")
    meta = pq.ParquetFile(path).metadata.row_group(0)
    enc = {meta.column(i).path_in_schema: set(meta.column(i).encodings) for i in range(meta.num_columns)}
    for col in ("line_no", "ts", "running_req", "dp_rank"):
        assert "DELTA_BINARY_PACKED" in enc[col], (col, enc[col])
    for col in ("kind", "source_file"):  # the host is the path's (host=...), not a column of the file
        assert "RLE_DICTIONARY" in enc[col], (col, enc[col])
    assert "host" not in enc
    assert not {"DELTA_BINARY_PACKED", "RLE_DICTIONARY"} & enc["token_usage"]  # floats: plain
    df = sql(store, "SELECT line_no, running_req, queue_req, ts FROM batches ORDER BY line_no")
    assert df["line_no"].to_list() == list(range(1, 41))
    assert df["running_req"].to_list() == [64, 60] * 20 and df["queue_req"].to_list() == [0, 2] * 20
    assert [str(t) for t in df["ts"][:2]] == ["2026-10-30 10:00:07+00:00", "2026-10-30 10:00:08+00:00"]


def test_inputs_in_this_process_finish_while_the_next_is_parsed(tmp_path, monkeypatch):
    """On one core large inputs go one after another in this process; each one's last writes and
    commit overlap the next one's parse, and a failure, early or in a last write, stays with its
    own input."""
    import threading

    from forensics import store
    from forensics.core.inputs import Scan
    from forensics.ingest import parse

    names = ["a.log", "b.bin", "c.log", "d.log", "e.log"]
    for i, n in enumerate(names):
        body = b"\x00\x01\x02" * 4000 if n.endswith(".bin") else LOG.replace("DP0", f"DP{i}").encode()
        (tmp_path / n).write_bytes(body)
    events, lock = [], threading.Lock()

    def note(what):
        with lock:
            events.append(what)

    parse_one, commit, write = parse.parse_one, parse.commit, store.InputWriter.write
    b_started = threading.Event()

    def parse_noted(st, src, *a):
        note(("parse", src.path))
        if src.path.endswith("b.bin"):
            b_started.set()
        return parse_one(st, src, *a)

    def commit_noted(st, w, res, *a):
        # the first input can only commit once the second started: one after the other, this waits in vain
        note(("commit", res.path, res.path.endswith("a.log") and b_started.wait(10)))
        return commit(st, w, res, *a)

    monkeypatch.setattr(parse, "parse_one", parse_noted)
    monkeypatch.setattr(parse, "commit", commit_noted)

    def failing_write(self, table, df):
        if table == "batches" and df["source_file"][0].endswith("d.log"):
            raise OSError("No space left on device")
        return write(self, table, df)

    monkeypatch.setattr(store.InputWriter, "write", failing_write)
    # every input in this process, none in workers
    results = ingest_paths([tmp_path / n for n in names], tmp_path / "store", jobs=1, scan=Scan(small_input_bytes=0))
    assert [(r.path.rsplit("/", 1)[1], r.status) for r in results] == [
        ("a.log", "ingested"),
        ("b.bin", "skipped"),
        ("c.log", "ingested"),
        ("d.log", "failed"),
        ("e.log", "ingested"),
    ]
    assert "No space left on device" in results[3].error and results[1].skip_kind == "binary"
    order = [(e[0], e[1].rsplit("/", 1)[1]) for e in events]
    assert ("commit", tmp_path.joinpath("a.log").as_posix(), True) in events  # finished while b was parsed
    # and before the input after the next one starts
    assert order.index(("parse", "c.log")) < order.index(("commit", "c.log")) < order.index(("parse", "e.log"))
    assert ("commit", "d.log") not in order
    assert not list((tmp_path / "store" / ".tmp").iterdir())  # the failed input left no parts behind
    df = sql(tmp_path / "store", "SELECT source_file, count(*) n FROM batches GROUP BY ALL ORDER BY ALL")
    assert [(p.rsplit("/", 1)[1], n) for p, n in df.rows()] == [("a.log", 2), ("c.log", 2), ("e.log", 2)]
