"""`ingest --engine ray`: the task units as Ray tasks make the store the local engine makes, table by
table; a task killed mid-write leaves nothing in the committed store; Ray missing is a usage error.

The module shares one local Ray cluster (`cluster`), started the way the command line starts one,
from a folder that holds a decoy forensics/ package: Ray puts the driver's working directory first
on its workers' sys.path, so a worker that imported from there would fail every task here.
"""

from __future__ import annotations

import os
import sys

import pytest
from click.testing import CliRunner

from forensics.core import schema
from forensics.core.inputs import Scan
from forensics.ingest import engine, pipeline
from tests.conftest import INCIDENT, missing
from tests.test_ranges import _awkward
from tools.digest import store_digest

# blocks small enough that a few hundred KiB is cut into many passes, read by the workers as ranges
SCAN = Scan(block_bytes=16 << 10, group_blocks=1, small_input_bytes=48 << 10, pool_input_bytes=64 << 10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One local Ray cluster of two CPUs for the module, which every ingest here joins."""
    try:
        from forensics.ingest.rayengine import RayEngine
    except ImportError as e:
        missing(f"ray is not installed ({e}): pip install -e '.[test]' brings it")
    decoy = tmp_path_factory.mktemp("decoy")
    (decoy / "forensics").mkdir()
    (decoy / "forensics" / "__init__.py").write_text("raise ImportError('the decoy, not the installed package')\n")
    here = os.getcwd()
    os.chdir(decoy)
    try:
        eng = RayEngine(2)
    finally:
        os.chdir(here)
    yield eng
    eng.shutdown()


class _Counted:
    """The Ray engine, counting the tasks of each kind it was given."""

    def __init__(self, monkeypatch, wrap=None):
        from forensics.ingest.rayengine import RayEngine

        self.tasks: dict[str, int] = {}
        counted = self

        class Counting(RayEngine):
            def submit(self, fn, *args):
                counted.tasks[fn.__name__] = counted.tasks.get(fn.__name__, 0) + 1
                return super().submit(wrap(fn) if wrap else fn, *args)

        real = engine.engine_class
        monkeypatch.setattr(engine, "engine_class", lambda name: Counting if name == "ray" else real(name))


def _tables(store) -> dict:
    """The stored tables by digest: what an engine wrote (the views over them follow)."""
    return store_digest(store, tables=sorted(schema.TABLES))


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    """Two small logs, parsed whole in a task each, and a large one cut into passes; and the
    digest of the store the local engine makes of them."""
    import gen

    root = tmp_path_factory.mktemp("dump")
    _awkward(root / "decode-0.log", 5, partial=False)
    for i in range(2):
        gen.write_log(str(root / f"prefill-{i}.log"), "prefill", 32 << 10, 7 + i)
    local = tmp_path_factory.mktemp("local") / "store"
    pipeline.run([str(root)], str(local), pipeline.Options(jobs=1, scan=SCAN))
    return root, _tables(local)


def _committed(store) -> list[str]:
    return sorted(str(p.relative_to(store)) for p in (store / "data").rglob("*") if p.is_file())


@pytest.mark.slow
def test_workers_import_the_installed_package_not_the_drivers_folder(cluster):
    def where():
        import sys

        import forensics.parsers

        return sys.path, forensics.parsers.__name__

    path, name = cluster.submit(where).result(timeout=60)
    assert name == "forensics.parsers" and not any("decoy" in p for p in path)


@pytest.mark.slow
def test_the_incident_ingested_on_ray_is_the_local_store(cluster, incident_store, tmp_path, monkeypatch):
    counted = _Counted(monkeypatch)
    store = tmp_path / "store"
    res = pipeline.run([str(INCIDENT)], str(store), pipeline.Options(engine="ray"))
    assert {r.status for r in res} == {"ingested", "skipped"}  # planted.json is not a log
    assert counted.tasks.get("ingest_one", 0) >= 10  # every small input was a task
    assert _tables(store) == _tables(incident_store)


@pytest.mark.slow
def test_a_large_input_in_byte_ranges_on_ray_is_the_local_store(cluster, dump, tmp_path, monkeypatch):
    dump, local = dump
    counted = _Counted(monkeypatch)
    ray_store = tmp_path / "ray"
    res = pipeline.run([str(dump)], str(ray_store), pipeline.Options(engine="ray", scan=SCAN))
    assert sorted(r.status for r in res) == ["ingested"] * 3
    assert counted.tasks["pass_in_worker"] >= 10 and counted.tasks["ingest_one"] == 2
    assert _tables(ray_store) == local


def _dying(fn):
    """`fn` in a task whose first attempt of its kind dies in the middle of writing a part."""
    marker = os.path.join(os.environ["FORENSICS_TEST_KILLS"], fn.__name__)

    def run(*args):
        import forensics.ingest.pool as p
        import forensics.store as s
        import forensics.store.parts as parts

        real = parts.write_part
        where = [m for m in (p, s, parts) if getattr(m, "write_part", None) is real]

        def half_then_die(folder, table, n, df):
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return real(folder, table, n, df)
            # the part written by the store's own writer, wherever its layout puts it, then cut
            before = {os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs}
            real(folder, table, n, df)
            for new in {os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs} - before:
                os.truncate(new, os.path.getsize(new) // 2)
            os._exit(9)  # as the OOM killer ends a worker

        for m in where:
            m.write_part = half_then_die
        try:
            return fn(*args)
        finally:
            for m in where:
                m.write_part = real

    return run


@pytest.mark.slow
def test_a_task_killed_mid_write_leaves_no_part_committed(cluster, dump, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    dump, local = dump
    kills = tmp_path / "kills"
    kills.mkdir()
    store = tmp_path / "ray"
    with monkeypatch.context() as m:
        m.setenv("FORENSICS_TEST_KILLS", str(kills))
        _Counted(m, wrap=_dying)
        res = pipeline.run([str(dump)], str(store), pipeline.Options(engine="ray", scan=SCAN))
    assert sorted(os.listdir(kills)) == ["ingest_one", "pass_in_worker"]  # one of each died
    assert sorted(r.status for r in res) == ["ingested"] * 3  # and ran again
    for f in (store / "data").rglob("*.parquet"):
        pq.read_metadata(f)  # every committed part whole
    assert _tables(store) == local
    # the whole input's dead attempt left its folder in .tmp; the next ingest clears it, adds nothing
    assert any((store / ".tmp").iterdir())
    before = _committed(store)
    again = pipeline.run([str(dump)], str(store), pipeline.Options(engine="ray", scan=SCAN))
    assert sorted(r.status for r in again) == ["duplicate"] * 3
    assert _committed(store) == before and not any((store / ".tmp").iterdir())


def _raising(fn):
    def run(*args):
        if fn.__name__ == "ingest_one" and args[1].path.endswith("prefill-1.log"):
            raise RuntimeError("a bug in one task")
        return fn(*args)

    return run


@pytest.mark.slow
def test_a_failed_task_fails_its_input_alone(cluster, dump, tmp_path, monkeypatch):
    dump, _ = dump
    _Counted(monkeypatch, wrap=_raising)
    got = pipeline.run([str(dump)], str(tmp_path / "s"), pipeline.Options(engine="ray", scan=SCAN))
    res = {os.path.basename(r.path): r for r in got}
    assert res["prefill-1.log"].status == "failed" and "RuntimeError: a bug in one task" in res["prefill-1.log"].error
    assert res["prefill-0.log"].status == res["decode-0.log"].status == "ingested"


def test_engine_ray_without_ray_is_a_usage_error(tmp_path, monkeypatch):
    from forensics.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # as where it is not installed
    store = tmp_path / "store"
    r = CliRunner().invoke(main, ["ingest", str(INCIDENT), "--store", str(store), "--engine", "ray"])
    assert r.exit_code == 2
    assert r.output.splitlines() == [
        "error: --engine ray needs Ray, which is not installed: pip install 'sglang-forensics[ray]'"
    ]
    assert not store.exists()
    r = CliRunner().invoke(main, ["ingest", str(INCIDENT), "--store", str(store), "--address", "10.0.0.1:6379"])
    assert r.exit_code == 2 and r.output.startswith("error: --address joins a Ray cluster\n")
    assert not store.exists()


@pytest.mark.slow
def test_ctrl_c_on_a_joined_cluster_is_one_line_and_nothing_partial(cluster, tmp_path):
    """`--address` joins the module's cluster; a SIGINT mid-ingest ends it as the local engine's does."""
    import signal
    import subprocess

    import ray

    from tests.test_interrupts import _consistent, _dump, _wait_for_data

    dump, store = _dump(tmp_path / "dump", 4, 60_000), tmp_path / "store"
    address = ray.get_runtime_context().gcs_address
    cmd = [sys.executable, "-m", "forensics.cli", "ingest", str(dump), "--store", str(store), "--engine", "ray"]
    proc = subprocess.Popen(
        [*cmd, "--address", address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    _wait_for_data(store, proc)
    if proc.poll() is not None:
        pytest.skip("the ingest ended before the signal (a very fast machine)")
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    said = [ln for ln in err.decode().splitlines() if ln.strip()]
    assert len(said) == 1 and said[0].startswith("forensics: interrupted (SIGINT)"), said
    assert not any((store / ".tmp").iterdir())
    _consistent(store)
    assert ray.cluster_resources().get("CPU") == 2  # the cluster it joined is still there
