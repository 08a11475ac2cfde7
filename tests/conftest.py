import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
REAL_LOGS = ROOT.parent / "shared" / "real_logs"


@pytest.fixture(autouse=True)
def _utc(monkeypatch):
    # goldens are reproducible only with a fixed zone
    monkeypatch.setenv("TZ", "UTC")


@pytest.fixture
def real_logs():
    if not REAL_LOGS.is_dir():
        pytest.skip("../shared/real_logs is not present")
    return REAL_LOGS


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


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory):
    """sample_logs/ ingested once for the whole session."""
    from tests.goldens import sample_store as build

    return build(tmp_path_factory.mktemp("sample") / "store")
