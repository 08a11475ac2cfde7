import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Real excerpts are inputs the tests read when they are present (they are not part of the
# repository): a reference folder beside the checkout, or beside the folder of worktrees. Every
# test reads them through these two paths.
_REFERENCE = next(
    (p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()),
    ROOT.parent / "shared",
)
REAL_LOGS = _REFERENCE / "real_logs"
REAL_TRANSCRIPTS = _REFERENCE / "real_transcripts"


@pytest.fixture(autouse=True)
def _utc(monkeypatch):
    # goldens are reproducible only with a fixed zone
    monkeypatch.setenv("TZ", "UTC")


@pytest.fixture
def real_logs():
    if not REAL_LOGS.is_dir():
        pytest.skip(f"the real log excerpts are not present ({REAL_LOGS})")
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
