"""Verdicts are an analysis step over stored turns: the raw rows hold no verdict, a new detector
version needs no re-ingest, and the public `turns` view is what the detectors in ingest gave."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics.analysis import detectors, evidence, verdicts
from forensics.analysis.replies import list_replies
from forensics.analysis.session import Session
from forensics.core import schema
from forensics.core.turns import frame
from forensics.ingest import pipeline
from forensics.parsers import transcript
from forensics.store import Store
from tests.conftest import REAL_TRANSCRIPTS, ROOT, ingest_paths, sql

CORPUS = ROOT / "tests" / "corpus" / "transcripts"
REAL = REAL_TRANSCRIPTS
VERDICT_COLUMNS = [c.name for c in schema.TURNS.columns if c.analysis]


def _old_in_ingest_frame(turns) -> pl.DataFrame:
    """What ingest stored before the verdicts moved: `frame()` with the detectors run on the parsed Turns."""
    by_session: dict = {}
    for t in turns:
        by_session.setdefault((t.source, t.session_id), []).append(t)
    found = []
    for session in by_session.values():
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        session = sorted(session, key=lambda t: (t.t_start or t.t_end or epoch, t.line_no or 0))
        found += detectors.assess_session(session, detectors.DEFAULT)
    rows = frame(turns)
    return rows.with_columns(
        pl.Series("signatures", [v.signatures for v in found], dtype=pl.List(pl.Utf8)),
        pl.Series("corruption_class", [v.corruption_class for v in found], dtype=pl.Utf8),
        pl.Series("corrupted", [v.corrupted for v in found], dtype=pl.Boolean),
        pl.Series("evidence", [v.evidence for v in found], dtype=pl.Utf8),
        pl.Series("degraded_markup", [v.degraded for v in found], dtype=pl.Boolean),
    ).select([c.name for c in schema.TURNS.columns])


@pytest.mark.parametrize(
    "inputs", [CORPUS, pytest.param(REAL, marks=pytest.mark.real_data)], ids=["corpus", "real_transcripts"]
)
@pytest.mark.slow
def test_turns_view_equals_the_old_in_ingest_path(tmp_path, monkeypatch, inputs):
    expected = []
    real_frame = transcript.frame

    def recording_frame(turns):
        expected.append(_old_in_ingest_frame(list(turns)))
        return real_frame(turns)

    monkeypatch.setattr(transcript, "frame", recording_frame)
    ingest_paths([inputs], tmp_path / "store", jobs=1)  # one job: every input parsed in this process
    key = ["source_file", "source", "session_id", "seq"]
    want = pl.concat(expected).sort(key)
    got = sql(tmp_path / "store", "SELECT * FROM turns").sort(key)
    assert want.height > 0 and got.columns == want.columns
    assert_frame_equal(got, want, check_dtypes=False)
    # the join key names one row: the view has exactly the raw rows
    n_raw = sql(tmp_path / "store", "SELECT count(*) AS n FROM raw_turns")["n"][0]
    assert got.height == n_raw == got.select(key).unique().height


def test_raw_turns_hold_the_detector_inputs_and_no_verdict(tmp_path):
    ingest_paths([CORPUS / "proxy"], tmp_path / "store", jobs=1)
    raw = sql(tmp_path / "store", "SELECT * FROM raw_turns LIMIT 0").columns
    assert raw == [c.name for c in schema.TURNS.stored]
    assert not set(VERDICT_COLUMNS) & set(raw)
    assert {"user_text", "tools_offered", "offered_tool_params"} <= set(raw)
    view = sql(tmp_path / "store", "SELECT * FROM turns LIMIT 0").columns
    assert view == [c.name for c in schema.TURNS.columns]
    assert not {c.name for c in schema.TURNS.stored_only} & set(view)


def test_turns_before_the_analysis_step_have_null_verdicts(tmp_path):
    pipeline.run([str(CORPUS / "proxy")], str(tmp_path / "store"), pipeline.Options(jobs=1))
    got = sql(tmp_path / "store", "SELECT count(*) AS n, count(corruption_class) AS judged FROM turns")
    assert got["n"][0] > 0 and got["judged"][0] == 0
    verdicts.ensure(Store(tmp_path / "store"))
    got = sql(tmp_path / "store", "SELECT count(*) AS n, count(corruption_class) AS judged FROM turns")
    assert got["judged"][0] == got["n"][0]


@pytest.mark.slow
def test_a_new_threshold_needs_no_reingest(tmp_path, monkeypatch):
    store = Store(tmp_path / "store")
    ingest_paths([CORPUS / "proxy"], store.root, jobs=1)
    before = evidence.build(store)["summary"]
    data = sorted((p.name, p.stat().st_mtime_ns) for p in store.tables.rglob("*"))

    # every reply of a word or more now reads as a repetition loop (S12): a session with those thresholds
    loose = dataclasses.replace(detectors.DEFAULT, words_min=1, words_max_distinct=1.01)
    monkeypatch.setattr(pipeline, "run", lambda *a, **k: pytest.fail("a new threshold must not re-ingest"))
    assert verdicts.version(loose) != verdicts.DETECTOR_VERSION
    with Session.open(store, thresholds=loose) as session:
        after = evidence.build(session)["summary"]

    assert after["corrupted"] > before["corrupted"]  # the cached replies of the old version are not read
    assert sorted((p.name, p.stat().st_mtime_ns) for p in store.tables.rglob("*")) == data
    assert (store.root / "derived" / "verdicts" / "CURRENT").read_text().strip() == verdicts.version(loose)
    assert (store.root / "derived" / "verdicts" / verdicts.DETECTOR_VERSION).is_dir()  # kept for a way back
    # back to the defaults: the old verdicts are read again, not recomputed
    assert evidence.build(store)["summary"]["corrupted"] == before["corrupted"]


def test_a_store_that_cannot_be_written_still_gets_verdicts(tmp_path):
    root = tmp_path / "store"
    pipeline.run([str(CORPUS / "proxy")], str(root), pipeline.Options(jobs=1))
    shutil.rmtree(root / "derived", ignore_errors=True)
    (root / "derived").write_text("not a folder: nothing can be written under it")
    rows = list_replies(Store(root))
    assert rows.height > 0 and rows["corruption_class"].null_count() == 0
    assert (root / "derived").is_file()


def test_apply_gives_the_public_columns_in_row_order():
    turns = pl.DataFrame(
        {
            "source": ["openai_proxy"] * 2,
            "session_id": ["s", "s"],
            "turn_id": ["b", "a"],
            "seq": [1, 0],
            "content": ["", "Fine."],
            "finish_reason": ["stop", "stop"],
            "completion_tokens": [12, 3],
        }
    )
    out = verdicts.apply(schema.conform("turns", turns))
    assert out.columns == [c.name for c in schema.TURNS.columns]
    assert out["turn_id"].to_list() == ["b", "a"]
    assert out["corruption_class"].to_list() == ["empty", "clean"]
