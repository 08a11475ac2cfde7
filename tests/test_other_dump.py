"""An ingest into a store that holds another dump's inputs (no host in common, more than a day apart)
says so at the end of its summary, naming them and how to start a fresh store; the ingest goes on.
A second host of the same incident, the same dump again, or the same host days later say nothing
(forensics/analysis/other_dump.py)."""

from __future__ import annotations

import shutil
import zlib

from click.testing import CliRunner

from forensics.analysis import after_ingest
from forensics.cli import main
from forensics.ingest import pipeline
from forensics.store import Store
from tests.conftest import ROOT

NOTE = "of another dump"


def _log(path, day: str, hour: int, minutes: int = 3) -> str:
    """A few stats lines of one SGLang server, `minutes` long from `day` `hour`:00 UTC; its tokens
    differ by its path (the same bytes are one input, whatever their name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f"[{day} {hour:02d}:{m:02d}:00 TP0] Decode batch. #running-req: {m + 1}, #token: {100 * m + zlib.crc32(str(path).encode()) % 1_000_003 * 1000}, "
        f"token usage: 0.0{m}, gen throughput (token/s): 50.0, #queue-req: 0"
        for m in range(minutes)
    ]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _dump(root, hosts, day: str, hour: int = 10):
    for h in hosts:
        _log(root / h / "sglang.log", day, hour)
    return root


def _ingest(store, *paths) -> str:
    r = CliRunner().invoke(main, ["ingest", "--store", str(store), *map(str, paths)])
    assert r.exit_code == 0, r.output
    return r.stderr


def test_a_dump_days_after_another_names_the_held_inputs_and_a_fresh_store(tmp_path):
    store = tmp_path / "store"
    a = _dump(tmp_path / "a", ["prefill-0", "decode-0", "decode-1", "decode-2"], "2025-06-02")
    assert NOTE not in _ingest(store, a)
    b = _dump(tmp_path / "b", ["node-7", "node-8"], "2025-06-09")
    err = _ingest(store, b)
    note = err[err.index("warning: the store already held") :].splitlines()
    assert note[0].startswith("warning: the store already held 4 inputs of another dump (hosts decode-0, decode-1, ")
    assert "2025-06-02 10:00 to 2025-06-02 10:02 UTC" in note[0] and "at least 6 days from them" in note[0]
    held = sorted(str(a / h / "sglang.log") for h in ("decode-0", "decode-1", "decode-2", "prefill-0"))
    assert note[1] == f"  | {', '.join(held[:3])} and 1 more"
    assert note[2].startswith("  = help: ") and "--store NEWDIR" in note[2]
    # nothing refused: both dumps are in the store
    hosts = {h for m in Store(store).manifests().values() for h in _hosts(m)}
    assert {"prefill-0", "node-7", "node-8"} <= hosts


def _hosts(m):
    return {p["file"].split("/")[1].removeprefix("host=") for p in m["parts"]}


def test_the_library_returns_the_note_as_a_model(tmp_path):
    store = tmp_path / "store"
    a = _dump(tmp_path / "a", ["prefill-0"], "2025-06-02")
    b = _dump(tmp_path / "b", ["prefill-9"], "2025-06-20")
    for dump in (a, b):
        done = after_ingest.finish(Store(store), pipeline.run([str(dump)], str(store), pipeline.Options()))
    assert done.other_dump is not None
    assert done.other_dump.held == [str(a / "prefill-0" / "sglang.log")]
    assert done.other_dump.hosts == ["prefill-0"] and done.other_dump.apart.days == 17


def test_a_second_host_of_the_same_incident_or_the_same_dump_again_says_nothing(tmp_path):
    store = tmp_path / "store"
    a = _dump(tmp_path / "a", ["prefill-0", "decode-0"], "2025-06-02")
    assert NOTE not in _ingest(store, a / "prefill-0")
    assert NOTE not in _ingest(store, a / "decode-0")  # another host, the same hours
    assert NOTE not in _ingest(store, a)  # the same dump again: nothing new
    # a host of the same day, hours later, and one past midnight less than a day after
    assert NOTE not in _ingest(store, _dump(tmp_path / "c", ["decode-5"], "2025-06-02", 22))
    assert NOTE not in _ingest(store, _dump(tmp_path / "d", ["decode-6"], "2025-06-03", 9))


def test_the_same_host_days_later_says_nothing(tmp_path):
    """A rerun on the same machine may belong with the first: a shared host weakens the days between
    to no proof (the issue asks for no host in common), so it says nothing."""
    store = tmp_path / "store"
    _ingest(store, _dump(tmp_path / "a", ["prefill-0"], "2025-06-02"))
    assert NOTE not in _ingest(store, _dump(tmp_path / "b", ["prefill-0", "decode-3"], "2025-06-12"))


def test_the_next_day_is_judged_by_timestamps(tmp_path):
    """Inputs a date apart by their folders may lie within a day: their first and last timestamps say."""
    store = tmp_path / "store"
    _ingest(store, _dump(tmp_path / "a", ["prefill-0"], "2025-06-02", 2))
    err = _ingest(store, _dump(tmp_path / "b", ["prefill-1"], "2025-06-03", 8))
    assert (
        "held 1 input of another dump (host prefill-0; " in err and "at least 29 hours from them" in err
    )  # 02:02 to 08:00 the next day


def _untimed(root, host: str):
    """A server log of uvicorn access lines alone: no line has a time."""
    path = root / host / "sglang.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'INFO:     10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK\n# {host}\n')
    return root


def test_inputs_without_timestamps_say_nothing(tmp_path):
    """An input without a timestamp cannot be judged by time, and hosts alone are no proof: held or new."""
    store = tmp_path / "store"
    _ingest(store, _untimed(tmp_path / "a", "prefill-0"))
    assert NOTE not in _ingest(store, _dump(tmp_path / "b", ["prefill-1"], "2025-06-12"))
    other = tmp_path / "other"
    _ingest(other, _dump(tmp_path / "c", ["prefill-2"], "2025-06-02"))
    assert NOTE not in _ingest(other, _untimed(tmp_path / "d", "prefill-3"))


def test_the_eras_after_the_sample_incident_name_the_incidents_inputs(tmp_path, incident_store):
    store = tmp_path / "store"
    shutil.copytree(incident_store, store)
    err = _ingest(store, ROOT / "sample_logs" / "eras")
    assert "warning: the store already held " in err and NOTE in err
    line = next(x for x in err.splitlines() if x.startswith("  | "))
    assert "sample_logs/incident/" in line and line.endswith(" more")
    assert "--store NEWDIR" in err
