"""Acceptance on incidents the detectors were not written with (tools/pdincident, one per seed).

Each seed is generated into tmp_path, ingested with the CLI, and read back only through the CLI's
output interface (`forensics sql`, `evidence --format json`). Truth rows
are matched to store rows by stable identifiers (turn ids, bootstrap rooms), never by order. Every
test prints what it measured, so `pytest -s` gives the figures per seed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import shared

ROOT = Path(__file__).resolve().parent.parent
# each seed generates an 18-minute incident and ingests it through the CLI
pytestmark = pytest.mark.slow
# one seed per wedge kind: health_503, tp_desync, dead_bootstrap_thread (seed % 3)
SEEDS = (3, 4, 5)
MINUTES = 18  # long enough for startup, a slam, an idle lull, the storm and a 5-minute wedge
WEDGE_TOL_S = 15.0
STORM_TOL_S = 5.0


def cli(*args: str) -> str:
    exe = Path(sys.executable).parent / "forensics"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "forensics.cli"]
    p = subprocess.run(cmd + list(args), capture_output=True, text=True, env=dict(os.environ, TZ="UTC"), timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"forensics {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return p.stdout


def sql(store: Path, q: str) -> list[dict]:
    return json.loads(cli("sql", "--store", str(store), "--format", "json", q) or "[]")


def try_sql(store: Path, q: str) -> list[dict] | None:
    try:
        return sql(store, q)
    except RuntimeError:
        return None


def ts(s) -> float:
    return dt.datetime.fromisoformat(str(s).replace("Z", "+00:00")).timestamp()


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: f"seed{s}")
def incident(request, tmp_path_factory):
    """The seed's incident generated, ingested and read back once for the session (tests/conftest.py: shared),
    however the tests of one seed are spread over xdist workers."""
    seed = request.param
    inc = json.loads((shared(tmp_path_factory, f"unseen-{seed}", lambda d: _build(seed, d)) / "inc.json").read_text())
    return inc | {"dump": Path(inc["dump"]), "store": Path(inc["store"])}


def _build(seed: int, base: Path) -> None:
    dump = base / "dump"
    subprocess.run(
        [sys.executable, "-m", "tools.pdincident", str(dump), "--seed", str(seed), "--minutes", str(MINUTES)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    truth = json.loads((base / "truth.json").read_text())
    store = base / "store"
    cli("ingest", str(dump), "--store", str(store))
    inc = {
        "seed": seed,
        "dump": dump,
        "truth": truth,
        "store": store,
        "evidence": json.loads(cli("evidence", "--store", str(store), "--format", "json")),
    }
    # one CLI call for every table the checks read: each call pays the process start and the views
    parts = {
        "replies": "SELECT list({'source': source, 'turn_id': turn_id, 'corrupted': corrupted, "
        "'room': CAST(server_bootstrap_room AS VARCHAR)}) FROM replies",
        "rooms": "SELECT list({'room': CAST(bootstrap_room AS VARCHAR), 'outcome': outcome}) FROM rooms",
        "files": "SELECT list({'path': path, 'format': format, 'lines': lines, 'parsed_lines': parsed_lines, "
        "'continuation_lines': continuation_lines, 'unparsed_lines': unparsed_lines}) FROM files "
        "WHERE status = 'ingested'",
        "unparsed": "SELECT list({'source_file': source_file, 'line_no': line_no, 'reason': reason, 'line': line} "
        "ORDER BY source_file, line_no) FROM unparsed",
    }
    # the cross-host incident views when this build has them, else the per-host rows the reports carry
    views = {
        "wedges": "SELECT list(w) FROM incident_wedges w",
        "abort_storms": "SELECT list(s) FROM incident_abort_storms s",
    }
    q = lambda d: "SELECT " + ", ".join(f"({v}) AS {k}" for k, v in d.items())  # noqa: E731
    row = try_sql(store, q(parts | views))
    if row is None:
        row = sql(store, q(parts))
    row = row[0]
    for k in parts:
        inc[k] = row[k] or []
    for k in views:
        inc[k] = (views[k].split()[-2], row[k] or []) if k in row else (f"evidence.{k}", inc["evidence"][k])
    (base / "inc.json").write_text(json.dumps(inc | {"dump": str(dump), "store": str(store)}))


def wedge_rows(inc) -> tuple[str, list[dict]]:
    return inc["wedges"]


def storm_rows(inc) -> tuple[str, list[dict]]:
    return inc["abort_storms"]


def report(inc, point: str, **figures) -> None:
    print(f"\n[seed {inc['seed']}] {point}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))


def test_wedge_start_and_end(incident):
    w = incident["truth"]["wedge"]
    src, rows = wedge_rows(incident)
    t0, t1 = ts(w["start"]), ts(w["end"])
    on_host = [r for r in rows if r.get("host") == w["host"]]
    best = min(on_host, key=lambda r: abs(ts(r["t_start"]) - t0) + abs(ts(r["t_end"]) - t1), default=None)
    d_start = None if best is None else round(ts(best["t_start"]) - t0, 1)
    d_end = None if best is None or best.get("t_end") is None else round(ts(best["t_end"]) - t1, 1)
    report(
        incident,
        "wedge",
        kind=w["kind"],
        host=w["host"],
        rank=w["rank"],
        source=src,
        rows=len(rows),
        rows_on_host=len(on_host),
        start_error_s=d_start,
        end_error_s=d_end,
        found_kind=None if best is None else best.get("kind"),
        found_rank=None if best is None else best.get("dp_rank", best.get("rank")),
    )
    assert best is not None, f"no wedge on {w['host']} ({w['kind']}); {src} has {rows}"
    assert abs(d_start) <= WEDGE_TOL_S and abs(d_end) <= WEDGE_TOL_S, (
        f"wedge on {w['host']}: start off by {d_start} s, end off by {d_end} s (truth {w['start']} .. {w['end']})"
    )


def test_no_wedge_where_none_was(incident):
    """The idle lull the generator plants, and every host but the wedged one, hold no wedge."""
    w = incident["truth"]["wedge"]
    _, rows = wedge_rows(incident)
    idle = [(ts(p["start"]), ts(p["end"])) for p in incident["truth"].get("idle_periods", [])]
    false = [
        r
        for r in rows
        if r.get("host") != w["host"] or any(ts(r["t_start"]) < b and ts(r["t_end"]) > a for a, b in idle)
    ]
    report(incident, "false wedges", n=len(false), rows=[(r["host"], r["kind"], r["t_start"]) for r in false])
    assert not false, f"{len(false)} wedges where none was planted: {false}"


def test_stuck_rooms_take_the_first_failure_as_outcome(incident):
    w = incident["truth"]["wedge"]
    want = w["stuck_room_outcome"]
    rows = incident["rooms"]
    outcome = {r["room"]: r["outcome"] for r in rows}
    stuck = w["stuck_rooms"]
    got = [outcome.get(room) for room in stuck]
    share = sum(o == want for o in got) / len(stuck)
    seen = {o: got.count(o) for o in set(got)}
    report(incident, "stuck rooms", expected=want, stuck=len(stuck), share=round(share, 3), outcomes=seen)
    assert stuck, "the generator planted no stuck room"
    assert share >= 0.95, f"{share:.0%} of {len(stuck)} stuck rooms have outcome {want!r}; got {seen}"


def test_abort_storm_start_and_count(incident):
    s = incident["truth"]["abort_storm"]
    src, rows = storm_rows(incident)
    t0, n = ts(s["start"]), s["count"]
    best = min(rows, key=lambda r: abs(ts(r["t_start"]) - t0), default=None)
    near = [r for r in rows if abs(ts(r["t_start"]) - t0) <= 30]
    d_start = None if best is None else round(ts(best["t_start"]) - t0, 2)
    report(
        incident,
        "abort storm",
        source=src,
        storms=len(rows),
        storms_within_30s=len(near),
        truth_count=n,
        found_count=None if best is None else best.get("n_aborts"),
        start_error_s=d_start,
        per_host={r.get("host"): r.get("n_aborts") for r in near},
    )
    assert best is not None, f"no abort storm; {src} is empty"
    assert abs(d_start) <= STORM_TOL_S, f"storm start off by {d_start} s"
    assert len(near) == 1, f"one agent's kill shows as {len(near)} storms: {near}"
    assert abs(best["n_aborts"] - n) <= 0.10 * n, f"storm counts {best['n_aborts']} aborts, {n} requests were aborted"


def test_corruption_precision_recall_and_hard_negatives(incident):
    t = incident["truth"]
    rows = incident["replies"]
    flagged = {(r["source"], r["turn_id"]): bool(r["corrupted"]) for r in rows}
    key = lambda x: (x["source"], x["turn_id"])  # noqa: E731 - turn ids are unique within a source
    pos = [key(x) for x in t["replies"]["corrupted"]]
    hard = [key(x) for x in t["replies"]["hard_negatives"]]
    neg = (
        hard
        + [key(x) for x in t["replies"]["clean"]]
        + [key(x) for x in t["replies"]["errors"]]
        + [key(x) for x in t["abort_storm"]["killed_turns"]]
    )
    missing = [k for k in pos + neg if k not in flagged]
    tp = sum(flagged.get(k, False) for k in pos)
    fp = sum(flagged.get(k, False) for k in neg)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / len(pos)
    hard_rate = sum(flagged.get(k, False) for k in hard) / len(hard)
    by_kind = {}
    for x in t["replies"]["corrupted"]:
        by_kind.setdefault(x["kind"], [0, 0])
        by_kind[x["kind"]][0] += flagged.get(key(x), False)
        by_kind[x["kind"]][1] += 1
    hard_fp = {}
    for x in t["replies"]["hard_negatives"]:
        if flagged.get(key(x), False):
            hard_fp[x["kind"]] = hard_fp.get(x["kind"], 0) + 1
    report(
        incident,
        "corruption",
        positives=len(pos),
        negatives=len(neg),
        tp=tp,
        fp=fp,
        precision=round(precision, 3),
        recall=round(recall, 3),
        hard_negatives=len(hard),
        hard_flagged_rate=round(hard_rate, 3),
        hard_flagged_by_kind=hard_fp,
        recall_by_kind={k: f"{a}/{b}" for k, (a, b) in by_kind.items()},
        missing_turns=len(missing),
    )
    assert not missing, f"{len(missing)} generated replies are not in the store, e.g. {missing[:3]}"
    assert precision >= 0.97 and recall >= 0.95, f"precision {precision:.3f}, recall {recall:.3f}"
    assert hard_rate <= 0.01, f"{hard_rate:.1%} of hard negatives flagged: {hard_fp}"


def test_error_replies_link_to_their_room(incident):
    errors = incident["truth"]["replies"]["errors"]
    rows = incident["replies"]
    room = {(r["source"], r["turn_id"]): r["room"] for r in rows}
    linked = [e for e in errors if room.get((e["source"], e["turn_id"])) == e["room"]]
    wrong = [
        (e["source"], e["turn_id"], e["room"], room.get((e["source"], e["turn_id"]))) for e in errors if e not in linked
    ]
    report(
        incident,
        "error replies",
        errors=len(errors),
        linked_to_their_room=len(linked),
        by_source={s: sum(e["source"] == s for e in errors) for s in {e["source"] for e in errors}},
        unlinked_example=wrong[:2],
    )
    assert errors, "the generator planted no error reply"
    assert len(linked) == len(errors), (
        f"{len(errors) - len(linked)} of {len(errors)} error replies not linked: {wrong[:3]}"
    )


def heavy_bucket(rows: list[dict]) -> dict | None:
    """The top-load bucket of one dimension: 'above X', else the largest lower bound."""

    def low(b: str) -> float:
        for tok in str(b).replace(",", " ").split():
            try:
                return float(tok)
            except ValueError:
                continue
        return float("-inf")

    above = [r for r in rows if str(r["bucket"]).startswith("above")]
    if above:
        return above[0]
    return max(rows, key=lambda r: low(r["bucket"]), default=None)


def test_prefill_load_effect_found(incident):
    comps = incident["evidence"]["comparisons"]
    dims = {}
    for c in comps:
        if "prefill" in (c["dimension"] + " " + (c.get("column") or "")).lower():
            dims.setdefault(c["dimension"], []).append(c)
    found = []
    for dim, rows in dims.items():
        h = heavy_bucket(rows)
        if h is None:
            continue
        rr = float("inf") if h["risk_ratio"] == "inf" else (h["risk_ratio"] or 0.0)
        sig = h.get("q_value", h.get("p_value"))
        found.append((dim, h["bucket"], round(rr, 2), sig, "q" if "q_value" in h else "p"))
    p = incident["truth"]["prefill_load_effect"]
    report(
        incident,
        "prefill-load effect",
        planted=f"{p['heavy_corrupted']}/{p['heavy_replies']} heavy vs "
        f"{p['light_corrupted']}/{p['light_replies']} light",
        heavy_buckets=found,
        comparisons=len(comps),
    )
    ok = [f for f in found if f[2] > 1 and f[3] is not None and f[3] < 0.05]
    assert ok, f"no prefill-load dimension whose heaviest bucket raises the risk significantly: {found}"


def file_lines(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def test_no_line_lost_and_unparsed_small(incident):
    dump = incident["dump"]
    files = incident["files"]
    bad, total, unparsed = [], 0, 0
    for f in files:
        if f["lines"] != f["parsed_lines"] + f["continuation_lines"] + f["unparsed_lines"]:
            bad.append(f)
        p = Path(f["path"])
        if f["format"] in ("server_log", "transfer_trace") and p.exists() and file_lines(p) != f["lines"]:
            bad.append(dict(f, on_disk=file_lines(p)))
        if f["format"] == "server_log":
            total += f["lines"]
            unparsed += f["unparsed_lines"]
    logs = sorted(p for p in dump.rglob("*.log"))
    ingested = {Path(f["path"]).resolve() for f in files}
    not_read = [str(p) for p in logs if p.resolve() not in ingested]
    rows = incident["unparsed"]
    share = unparsed / total if total else 0.0
    report(
        incident,
        "lines",
        server_log_lines=total,
        unparsed=unparsed,
        unparsed_share=round(share, 4),
        files_with_mismatch=len(bad),
        logs_not_ingested=not_read,
    )
    for r in rows[:40]:
        print(
            f"    unparsed {Path(r['source_file']).relative_to(dump) if str(r['source_file']).startswith(str(dump)) else r['source_file']}:"
            f"{r['line_no']} [{r['reason']}] {r['line'][:160]}"
        )
    assert not bad, f"line counts do not add up: {bad[:3]}"
    assert not not_read, f"server logs not ingested: {not_read}"
    assert share <= 0.002, f"{unparsed} of {total} server-log lines unparsed ({share:.2%})"
