"""The labelled transcript corpus, ingested with the real `forensics ingest` path and read back via SQL.

Prints the confusion matrix (run `pytest -s` to see it) and holds the detectors to the issue's
bar: precision >= 0.97 and recall >= 0.95 on `corrupted`, >= 0.9 on each class.
"""

import json
import pathlib

import pytest

from forensics.analysis.detectors import CLASSES, CORRUPTED_CLASSES
from tests.conftest import ingest_paths, sql

CORPUS = pathlib.Path(__file__).parent / "corpus"
LABELS = json.loads((CORPUS / "transcript_labels.json").read_text())


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    store = tmp_path_factory.mktemp("corpus") / "store"
    # jobs=1: forking after polars has run in this process can deadlock the workers
    results = ingest_paths(sorted((CORPUS / "transcripts").iterdir()), store, jobs=1)
    assert all(r.status == "ingested" for r in results), [(r.path, r.error) for r in results]
    got = sql(
        store, "SELECT source, session_id, turn_id, corruption_class, corrupted, signatures, evidence FROM replies"
    )
    return store, results, {(r["source"], r["session_id"], r["turn_id"]): r for r in got.iter_rows(named=True)}


def _matrix(pairs):
    m = {a: {b: 0 for b in CLASSES} for a in CLASSES}
    for truth, pred in pairs:
        m[truth][pred] += 1
    return m


def _pr(pairs, positive):
    tp = sum(1 for t, p in pairs if positive(t) and positive(p))
    fp = sum(1 for t, p in pairs if not positive(t) and positive(p))
    fn = sum(1 for t, p in pairs if positive(t) and not positive(p))
    return tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0, tp + fn


def test_every_source_is_recognised_without_flags(scored):
    _store, results, rows = scored
    formats = {r.format for r in results}
    assert formats == {"openai_proxy", "claude_code", "opencode", "outputs_dir"}
    assert {k[0] for k in rows} == formats
    for r in results:
        assert r.lines == r.parsed + r.continuation + r.unparsed, r.path


def test_every_labelled_turn_is_a_row(scored):
    _store, _results, rows = scored
    assert len(LABELS) >= 200
    missing = [lab for lab in LABELS if (lab["source"], lab["session_id"], lab["turn_id"]) not in rows]
    assert not missing, missing[:5]
    assert len(rows) == len(LABELS)


def test_confusion_matrix_and_scores(scored):
    _store, _results, rows = scored
    pairs = [
        (lab["label"], rows[(lab["source"], lab["session_id"], lab["turn_id"])]["corruption_class"]) for lab in LABELS
    ]
    m = _matrix(pairs)
    width = max(map(len, CLASSES)) + 2
    print(f"\n{len(pairs)} turns; rows = label, columns = predicted")
    print("".ljust(width) + "".join(c[:10].rjust(12) for c in CLASSES))
    for a in CLASSES:
        print(a.ljust(width) + "".join(str(m[a][b]).rjust(12) for b in CLASSES))
    p, r, n = _pr(pairs, lambda c: c in CORRUPTED_CLASSES)
    print(f"corrupted: precision {p:.3f} recall {r:.3f} (n={n})")
    scores = {}
    for cls in CLASSES:
        scores[cls] = _pr(pairs, lambda c, cls=cls: c == cls)
        print(f"{cls:16} precision {scores[cls][0]:.3f} recall {scores[cls][1]:.3f} (n={scores[cls][2]})")
    wrong = [
        (lab, rows[(lab["source"], lab["session_id"], lab["turn_id"])])
        for lab in LABELS
        if rows[(lab["source"], lab["session_id"], lab["turn_id"])]["corruption_class"] != lab["label"]
    ]
    for lab, row in wrong:
        print(
            "MISS",
            lab["label"],
            "->",
            row["corruption_class"],
            lab["source"],
            lab["turn_id"],
            row["signatures"],
            (row["evidence"] or "")[:160],
        )
    assert p >= 0.97 and r >= 0.95
    for cls, (cp, cr, n) in scores.items():
        assert n >= 10, f"too few {cls} turns in the corpus to measure it"
        assert cp >= 0.9 and cr >= 0.9, f"{cls}: precision {cp:.3f} recall {cr:.3f}"
