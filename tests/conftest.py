"""The suite's tiers, seed, shared stores and the needs a test may have.

- Markers (pyproject.toml): `slow`, `real_data`, `browser`, `native`. `make check` runs the tests
  that are none of slow, browser and real_data; `make test` runs them all.
- A test marked `native`, `browser` or `real_data` is skipped where that is missing, and under
  FORENSICS_CI=1 (.ci/run) fails instead: CI must not pass by skipping what it exists to run.
- One seed for everything random: each draw (`seed(default)`) has a fixed default, and hypothesis
  is derandomized; FORENSICS_TEST_SEED=N replays N in every one (hypothesis too),
  FORENSICS_TEST_SEED=random draws one for the session. A failure names the seed. Generated
  incidents whose checks are figures of their own draw (tools.samplegen and tools.pdincident
  seeds, tests/bundle.py, test_evidence_ranking's replies) keep their seeds: they are data, not draws.
- Stores that many tests read are built once per session, also across xdist workers (`shared`):
  the first worker builds, the others wait on a lock and read the same folder. A test that changes
  a store works on its own copy.
"""

import fcntl
import importlib
import os
import pathlib
import random
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _real_data() -> pathlib.Path:
    if env := os.environ.get("FORENSICS_REAL_DATA"):
        return pathlib.Path(env)
    # the excerpts sit beside the checkout, or beside the folder of worktrees the checkout is one of
    near = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    return next((p for p in near if (p / "real_logs").is_dir()), near[0])


REAL_DATA = _real_data()
REAL_LOGS = REAL_DATA / "real_logs"
REAL_TRANSCRIPTS = REAL_DATA / "real_transcripts"
CI = os.environ.get("FORENSICS_CI") == "1"


# --- needs -------------------------------------------------------------------------------------------


def missing(reason: str):
    """Skip for want of something the environment lacks; under FORENSICS_CI=1 fail instead."""
    if CI:
        pytest.fail(f"{reason} (FORENSICS_CI=1: CI must run this test, not skip it)", pytrace=False)
    pytest.skip(reason)


def chromium() -> str | None:
    return next(
        (p for n in ("chromium", "chromium-browser", "google-chrome", "chrome") if (p := shutil.which(n))), None
    )


def _native_problem() -> str | None:
    for mod in ("forensics.parsers._fastlog", "forensics.parsers._fasttrace"):
        try:
            importlib.import_module(mod)
        except ImportError as e:
            return f"{mod} does not import ({e}): not built (no C compiler at install)"
    if os.environ.get("FORENSICS_NATIVE") == "0":
        return "FORENSICS_NATIVE=0 switches the native scanner off"
    return None


def _real_data_problem() -> str | None:
    if not (REAL_LOGS.is_dir() and REAL_TRANSCRIPTS.is_dir()):
        return "the real excerpts are not present (set FORENSICS_REAL_DATA to the folder of real_logs/ and real_transcripts/)"
    return None


NEEDS = {
    "native": _native_problem,
    "browser": lambda: None if chromium() else "no chromium binary on PATH (apt-get install chromium)",
    "real_data": _real_data_problem,
}


@pytest.hookimpl(tryfirst=True)  # before the skip of an empty parameter set: no excerpts is a want of them
def pytest_runtest_setup(item):
    for mark, problem in NEEDS.items():
        if item.get_closest_marker(mark) and (why := problem()):
            missing(why)


@pytest.fixture
def real_logs():
    return REAL_LOGS


@pytest.fixture
def real_transcripts():
    return REAL_TRANSCRIPTS


# --- the seed ----------------------------------------------------------------------------------------

SEED_ENV = "FORENSICS_TEST_SEED"


def _seed_env() -> str:
    v = os.environ.get(SEED_ENV, "").strip()
    if v == "random":
        # drawn once, and kept in the environment: xdist workers and subprocesses get the same one
        v = str(random.SystemRandom().randrange(1 << 32))
        os.environ[SEED_ENV] = v
    if v and not v.isdigit():
        raise pytest.UsageError(f"{SEED_ENV}={v!r}: give a number, or random")
    return v


def seed(default: int) -> int:
    """The seed of one random draw in a test: `default`, or the one FORENSICS_TEST_SEED gives."""
    v = _seed_env()
    return int(v) if v else default


def seed_note() -> str:
    v = _seed_env()
    if v:
        return f"test seed {v} (replay with {SEED_ENV}={v})"
    return f"test seeds: the fixed defaults ({SEED_ENV}=N replays N everywhere, {SEED_ENV}=random draws one)"


def _hypothesis_profile() -> None:
    from hypothesis import settings

    # derandomized: a run judges the change, not the draw; no deadline: wall-clock time is not a test
    settings.register_profile("forensics", derandomize=True, deadline=None)
    settings.register_profile("forensics-seeded", derandomize=False, database=None, deadline=None)
    settings.load_profile("forensics-seeded" if _seed_env() else "forensics")


_hypothesis_profile()


def pytest_configure(config):
    _seed_env()  # before xdist starts its workers


def pytest_report_header(config):
    return seed_note()


def pytest_collection_modifyitems(config, items):
    # slow by measurement (tests/slow.txt, from `python -m tests.slowlist`), unless that list is
    # being measured anew; read from beside this file, which a probe may copy alone
    listing = pathlib.Path(__file__).with_name("slow.txt")
    slow = frozenset()
    if listing.exists() and not os.environ.get("FORENSICS_NO_SLOW_LIST"):
        lines = (s.strip() for s in listing.read_text(encoding="utf-8").splitlines())
        slow = frozenset(s for s in lines if s and not s.startswith("#"))
    for item in items:
        # a test that asks for the excerpts reads them: real_data whether or not it says so
        if {"real_logs", "real_transcripts"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real_data)
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    _longest_modules_first(items)
    if not (v := _seed_env()):
        return
    from hypothesis import is_hypothesis_test
    from hypothesis import seed as hypothesis_seed

    for item in items:
        fn = getattr(item, "function", None)
        if fn is not None and is_hypothesis_test(fn):
            hypothesis_seed(int(v))(fn)


def _longest_modules_first(items) -> None:
    """The modules in the order of their measured seconds (tests/weights.txt), longest first: xdist
    hands modules out in this order (loadscope), and a long module handed out last keeps one worker
    busy after the others are done."""
    listing = pathlib.Path(__file__).with_name("weights.txt")  # read as slow.txt is, from beside this file
    weights = {}
    if listing.exists():
        for line in listing.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                seconds, module = line.split(None, 1)
                weights[module.strip()] = float(seconds)
    items[:] = modules_by_weight(items, weights)


def modules_by_weight(items, weights: dict[str, float]) -> list:
    """`items` with the modules longest first, each module's tests in their own order; a module
    not in `weights` (new since they were measured) goes first."""
    rank = {}
    for i, item in enumerate(items):
        module = item.nodeid.split("::")[0]
        rank.setdefault(module, (-weights.get(module, float("inf")), i))
    return sorted(items, key=lambda item: rank[item.nodeid.split("::")[0]])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        report.sections.append(("seed", seed_note()))
    return report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if exitstatus or _seed_env():
        terminalreporter.write_line(seed_note())


# --- stores built once -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _utc(monkeypatch):
    # goldens are reproducible only with a fixed zone
    monkeypatch.setenv("TZ", "UTC")


def shared(tmp_path_factory, name: str, build) -> pathlib.Path:
    """The folder `name`, filled by `build(folder)` once per session: under xdist the first worker
    builds it while the others wait on its lock, then every worker reads the same folder."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder, done = root / "shared" / name, root / "shared" / f"{name}.done"
    folder.parent.mkdir(exist_ok=True)
    with open(root / "shared" / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed in another worker
            folder.mkdir()
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("TZ", "UTC")  # as every test runs (_utc)
                build(folder)
            done.touch()
    return folder


def _state(store: pathlib.Path) -> list:
    """Every file of a store, with its size and time: a shared store is read, never written."""
    return sorted((str(p.relative_to(store)), p.stat().st_size, p.stat().st_mtime_ns) for p in store.rglob("*"))


def shared_store(tmp_path_factory, name: str, build):
    """`shared`, for a store: yields its path, and fails the session's last reader if a test changed it."""
    store = shared(tmp_path_factory, name, lambda d: build(d / "store")) / "store"
    before = _state(store)
    yield store
    assert _state(store) == before, f"a test changed the shared store {name}: copy it first"


def ingest_paths(paths, store, **opts):
    """Ingest as `forensics ingest` does: the inputs, then the verdicts of their turns."""
    from forensics.analysis import verdicts
    from forensics.ingest import pipeline as ingest
    from forensics.store import Store

    results = ingest.run([str(p) for p in paths], str(store), ingest.Options(**opts))
    verdicts.ensure(Store(store))
    return results


def sql(store, q, **params):
    from forensics.catalog.sql import run_sql
    from forensics.store import Store

    return run_sql(Store(store), q, params or None)


def _materialize(store) -> None:
    """The derived views computed and snapshot, as `forensics ingest` leaves a store."""
    from forensics.catalog import connect
    from forensics.store import Store

    connect(Store(store), materialize=True).close()


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory):
    """sample_logs/ ingested once for the whole session (read it; copy it to change it)."""
    from tests.goldens import sample_store as ingest

    def build(store):
        ingest(store)
        _materialize(store)  # here, not in the first report that reads it

    for store in shared_store(tmp_path_factory, "sample", build):
        yield str(store)  # as tests.goldens.sample_store gives it


@pytest.fixture(scope="session")
def server_store(tmp_path_factory):
    """The incident's server logs and traces alone, no transcripts (tests.goldens.SERVER_INPUTS; read it)."""
    from tests.goldens import server_store as ingest

    def build(store):
        ingest(store)
        _materialize(store)

    for store in shared_store(tmp_path_factory, "server", build):
        yield str(store)


INCIDENT = ROOT / "sample_logs" / "incident"


def _build_incident(store) -> None:
    from click.testing import CliRunner

    from forensics.cli import main

    # through the command line: ingest, verdicts, then the derived views its summary computes
    r = CliRunner().invoke(main, ["ingest", str(INCIDENT), "--store", str(store)])
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="session")
def incident_store(tmp_path_factory):
    """sample_logs/incident alone, as `make demo` ingests it: no clock offset set (read it; copy it to change it)."""
    yield from shared_store(tmp_path_factory, "incident", _build_incident)


@pytest.fixture(scope="session")
def planted_store(tmp_path_factory, incident_store):
    """sample_logs/incident with the clock offset its planted.json names set (read it; copy it to change it)."""
    import json

    from forensics.store import Store

    def build(store):
        shutil.copytree(incident_store, store)
        off = json.loads((INCIDENT / "planted.json").read_text())["clock_offset"]
        Store(store).set_clock(off["host"], off["offset_s"])
        _materialize(store)

    yield from shared_store(tmp_path_factory, "planted", build)
