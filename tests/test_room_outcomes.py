"""Room outcomes: the first failure in corrected time decides, the later ones are listed beside it.

The fixtures are written from the formats docs: scheduler failure lines (docs/formats/SGLANG.md, "PD transfer
and bootstrap failures") with their KVTransferError reasons ("Failure reasons"), the abort control
lines ("Bootstrap, heartbeat and abort control"; docs/formats/NIXL.md, "Failure and abort texts"), request logs
("Request logs") and the transfer trace of docs/formats/TRANSFER_TRACE.md. Prefill is `node-p0`, decode `node-d1`; sglang
prefixes have whole seconds, the traces microseconds.
"""

import datetime as dt
import json
import random

import pytest
from click.testing import CliRunner

from forensics.analysis.room import room_story
from forensics.catalog import model
from forensics.cli import main
from forensics.store import Store
from tests.conftest import ingest_paths, seed, sql

PREFILL, DECODE = "node-p0", "node-d1"
DAY = "2026-10-30"

WEDGE, TIE, XFER, ABORT, GENERIC_AFTER, OK, FINISH_ONLY = (
    4793981895866140836,
    4127750395128840213,
    6593551520068383758,
    1188402291734905512,
    7301958270183740000,
    5550000000000000001,
    3141592653589793238,
)


def utc(hms: str, us: int = 0) -> dt.datetime:
    return dt.datetime.fromisoformat(f"{DAY}T{hms}+00:00").replace(microsecond=us)


def epoch(hms: str, frac: float = 0.0) -> float:
    return round(utc(hms).timestamp() + frac, 6)


def rid(side: str, room: int) -> str:
    return f"{side[0]}{room:031x}"[-32:]


class Incident:
    """Server-log lines and trace events of both hosts, written as a dump folder per host."""

    def __init__(self):
        self.log = {PREFILL: [], DECODE: []}
        self.trace = {PREFILL: [], DECODE: []}

    def line(self, host: str, hms: str, text: str, ranks: str = " TP0") -> None:
        self.log[host].append(f"[{DAY} {hms}{ranks}] {text}")

    def receive(self, host: str, hms: str, room: int) -> None:
        side = "prefill" if host == PREFILL else "decode"
        self.line(
            host,
            hms,
            f"Receive: obj=GenerateReqInput(rid='{rid(side, room)}', bootstrap_host='10.0.0.1', "
            f"bootstrap_port=8998, bootstrap_room={room}, bootstrap_pair_key=None)",
            "",
        )

    def event(self, host: str, ts: float, room: int, event: str, kind: str = "kv", **kw) -> None:
        side = "prefill" if host == PREFILL else "decode"
        self.trace[host].append(
            {
                "ts": ts,
                "host": host,
                "side": side,
                "engine_rank": 0,
                "room": str(room),
                "kind": kind,
                "event": event,
                **kw,
            }
        )

    def write(self, root):
        for host in (PREFILL, DECODE):
            d = root / host
            d.mkdir(parents=True, exist_ok=True)
            name = "prefill.log" if host == PREFILL else "decode.log"
            (d / name).write_text("".join(x + "\n" for x in self.log[host]))
            if self.trace[host]:
                (d / f"kvtrace-{host}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in self.trace[host]))
        return root


def kvt(room: int, reason: str) -> str:
    return f"KVTransferError(bootstrap_room={room}): {reason}"


def waiting(room: int) -> str:
    return f"Request {room} timed out after 300.0s in KVPoll.WaitingForInput"


def bootstrapping(room: int) -> str:
    return f"Request {room} timed out after 300.0s in KVPoll.Bootstrapping"


def decode_failed(room: int, reason: str | None) -> str:
    tail = f" with exception {kvt(room, reason)}" if reason else ""
    return (
        f"Decode transfer failed for request rank=0 decode_req.req.rid='{rid('decode', room)}' "
        f"decode_req.req.bootstrap_room={room}{tail}"
    )


def prefill_failed(room: int, exc: str | None, template: str = "transfer") -> str:
    tail = f" with exception {exc}" if exc else ""
    return (
        f"Prefill {template} failed for request rank=0 req.rid='{rid('prefill', room)}' req.bootstrap_room={room}{tail}"
    )


def decode_wedge_room(inc: Incident, room: int, t_decode: str, t_prefill: str, frac: float = 0.41) -> None:
    """A room stuck in a decode wedge: decode's WaitingForInput timeout, its ABORT to prefill, and
    prefill's own Bootstrapping timeout, with the reason-less failure line that follows it."""
    inc.receive(PREFILL, "09:12:04", room)
    inc.receive(DECODE, "09:12:04", room)
    inc.line(DECODE, t_decode, decode_failed(room, waiting(room)))
    inc.line(DECODE, t_decode, f"Sent abort notification for room {room} to 10.0.0.1:17000")
    inc.event(DECODE, epoch(t_decode, frac), room, "abort", error=kvt(room, waiting(room)))
    inc.line(PREFILL, t_prefill, prefill_failed(room, kvt(room, bootstrapping(room)), "bootstrap"))
    inc.line(PREFILL, t_prefill, f"Received abort notification for room {room}, marked as Failed")
    inc.line(PREFILL, t_prefill, prefill_failed(room, None))
    inc.event(PREFILL, epoch(t_prefill, 0.2), room, "abort", error=kvt(room, bootstrapping(room)))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("outcomes")
    inc = Incident()
    # the shape: decode times out at 09:17:05, prefill's bootstrap two seconds later
    decode_wedge_room(inc, WEDGE, "09:17:05", "09:17:07")
    # the same in one log second: prefill's line is first in its file, and decode's ABORT explains it
    decode_wedge_room(inc, TIE, "09:17:05", "09:17:05", frac=0.93)
    # the pair of docs/formats/NIXL.md, "Failure and abort texts": the prefill transfer fails, the decode half is aborted in the same second,
    # and the decode trace aborts the room 5 s later (docs/formats/TRANSFER_TRACE.md, "Example: two rooms")
    inc.receive(PREFILL, "10:00:00", XFER)
    inc.receive(DECODE, "10:00:00", XFER)
    inc.event(PREFILL, epoch("10:00:01", 0.202315), XFER, "post", chunk=0, is_last=True, bytes=1 << 20)
    inc.event(
        PREFILL,
        epoch("10:00:01", 0.418990),
        XFER,
        "fail",
        chunk=0,
        is_last=True,
        status="NIXL_ERR_BACKEND",
        error="getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
    )
    inc.line(DECODE, "10:00:01", decode_failed(XFER, "Aborted by AbortReq."))
    inc.line(PREFILL, "10:00:01", prefill_failed(XFER, "KVSender transfer encountered an error."))
    inc.event(
        DECODE,
        epoch("10:00:06", 0.425733),
        XFER,
        "abort",
        error=kvt(XFER, f"NIXL transfer encountered ERR room={XFER}"),
    )
    # an abort, then reason-less failures of the room it tore down (one in the same second)
    inc.receive(PREFILL, "10:01:00", ABORT)
    inc.receive(DECODE, "10:01:00", ABORT)
    inc.line(DECODE, "10:01:00", decode_failed(ABORT, "Aborted by AbortReq."))
    inc.line(PREFILL, "10:01:00", prefill_failed(ABORT, None))
    inc.event(
        PREFILL,
        epoch("10:01:00", 0.7),
        ABORT,
        "fail",
        chunk=0,
        error=kvt(ABORT, "Failed due to an unknown reason from another rank"),
    )
    # a timeout, then a generic `transfer failed` line three seconds later: the timeout stays the cause
    inc.receive(DECODE, "10:02:00", GENERIC_AFTER)
    inc.line(DECODE, "10:07:00", decode_failed(GENERIC_AFTER, waiting(GENERIC_AFTER)))
    inc.line(PREFILL, "10:07:03", prefill_failed(GENERIC_AFTER, None))
    # a clean room: posted, done, notified, finished
    inc.receive(PREFILL, "10:03:00", OK)
    inc.receive(DECODE, "10:03:00", OK)
    inc.event(PREFILL, epoch("10:03:00", 0.5), OK, "post", chunk=0, is_last=True, bytes=1 << 20)
    inc.event(PREFILL, epoch("10:03:00", 0.51), OK, "done", chunk=0, is_last=True, status="NIXL_SUCCESS")
    inc.event(DECODE, epoch("10:03:00", 0.52), OK, "notif", chunk=0, is_last=True)
    inc.line(
        DECODE,
        "10:03:02",
        f"Finish: obj=GenerateReqInput(rid='{rid('decode', OK)}', bootstrap_room={OK}), "
        f"out={{'meta_info': {{'id': '{rid('decode', OK)}', 'finish_reason': {{'type': 'stop', "
        f"'matched': 1}}, 'prompt_tokens': 100, 'completion_tokens': 20, 'e2e_latency': 2.0}}}}",
        "",
    )
    # request logs only: the abort message of the `Finish:` line says why
    inc.receive(DECODE, "10:04:00", FINISH_ONLY)
    inc.line(
        DECODE,
        "10:09:00",
        f"Finish: obj=GenerateReqInput(rid='{rid('decode', FINISH_ONLY)}', "
        f"bootstrap_room={FINISH_ONLY}), out={{'meta_info': {{'id': '{rid('decode', FINISH_ONLY)}', "
        f"'finish_reason': {{'type': 'abort', 'message': '{kvt(FINISH_ONLY, waiting(FINISH_ONLY))}', "
        f"'status_code': 500}}, 'prompt_tokens': 100}}}}",
        "",
    )
    ingest_paths([inc.write(root / "dump")], root / "store")
    return root / "store"


@pytest.fixture(scope="module")
def rooms(store):
    return {r["bootstrap_room"]: r for r in sql(store, "SELECT * FROM rooms").iter_rows(named=True)}


def later(row) -> list[tuple]:
    return [(x["side"], x["host"], x["outcome"], x["reason"], x["ts"], x["n"]) for x in row["later_failures"]]


def test_views_return_exactly_their_documented_columns(store):
    for name in ("clock_bounds", "room_failures", "rooms"):
        assert sql(store, f"SELECT * FROM {name} LIMIT 0").columns == [c.name for c in model.tables()[name].columns]


def test_decode_timeout_decides_and_the_prefill_bootstrap_timeout_is_listed_after_it(rooms):
    r = rooms[WEDGE]
    assert (r["outcome"], r["outcome_side"], r["outcome_host"], r["outcome_reason"]) == (
        "waiting_timeout",
        "decode",
        DECODE,
        "waiting_timeout",
    )
    assert r["t_outcome"] == utc("09:17:05")
    assert "KVPoll.WaitingForInput" in r["first_error"] and r["first_error"].startswith("Decode transfer failed")
    assert later(r) == [
        ("decode", DECODE, "aborted", "aborted", utc("09:17:05"), 1),  # its ABORT to prefill
        ("prefill", PREFILL, "bootstrap_timeout", "bootstrap_timeout", utc("09:17:07"), 2),  # line + trace abort
        ("prefill", PREFILL, "aborted", "aborted", utc("09:17:07"), 1),
        ("prefill", PREFILL, "transfer_failed", "transfer_error", utc("09:17:07"), 1),
    ]


def test_within_one_log_second_the_timeout_comes_before_what_it_caused(rooms):
    r = rooms[TIE]
    assert (r["outcome"], r["outcome_side"], r["t_outcome"]) == ("waiting_timeout", "decode", utc("09:17:05"))
    assert ("prefill", PREFILL, "bootstrap_timeout", "bootstrap_timeout", utc("09:17:05"), 2) in later(r)


def test_prefill_transfer_failure_then_decode_abort_is_a_transfer_failure(rooms):
    r = rooms[XFER]
    assert (r["outcome"], r["outcome_side"], r["outcome_reason"], r["t_outcome"]) == (
        "transfer_failed",
        "prefill",
        "transport",
        utc("10:00:01"),
    )
    assert r["first_error"].endswith("KVSender transfer encountered an error.")
    assert later(r) == [
        ("decode", DECODE, "aborted", "aborted", utc("10:00:01"), 1),
        ("decode", DECODE, "transfer_failed", "transport", utc("10:00:06", 425733), 1),
    ]
    assert (r["n_fail"], r["n_abort"]) == (3, 1)


def test_abort_then_generic_failures_is_aborted(rooms):
    r = rooms[ABORT]
    assert (r["outcome"], r["outcome_side"], r["outcome_reason"]) == ("aborted", "decode", "aborted")
    assert later(r) == [("prefill", PREFILL, "transfer_failed", "transfer_error", utc("10:01:00"), 2)]


def test_a_generic_failure_after_a_timeout_does_not_override_it(rooms):
    r = rooms[GENERIC_AFTER]
    assert (r["outcome"], r["t_outcome"]) == ("waiting_timeout", utc("10:07:00"))
    assert later(r) == [("prefill", PREFILL, "transfer_failed", "transfer_error", utc("10:07:03"), 1)]


def test_a_room_without_failures_is_ok_with_an_empty_list(rooms):
    r = rooms[OK]
    assert (r["outcome"], r["later_failures"], r["t_outcome"], r["outcome_side"], r["first_error"]) == (
        "ok",
        [],
        None,
        None,
        None,
    )


def test_request_log_only_room_takes_its_outcome_from_the_abort_message(rooms):
    r = rooms[FINISH_ONLY]
    assert (r["outcome"], r["outcome_side"], r["t_outcome"], r["later_failures"]) == (
        "waiting_timeout",
        "decode",
        utc("10:09:00"),
        [],
    )


def test_room_failures_mark_exactly_one_first_failure_per_room(store, rooms):
    f = sql(store, "SELECT bootstrap_room, count(*) FILTER (WHERE first_failure) AS n FROM room_failures GROUP BY 1")
    assert dict(f.rows()) == {room: 1 for room in rooms if room != OK}
    first = sql(
        store,
        "SELECT source, what, outcome, cause_rank FROM room_failures WHERE first_failure AND bootstrap_room = $room",
        room=XFER,
    )
    assert first.rows() == [("sglang", "transfer_failed", "transfer_failed", 3)]


def skew_incident(root):
    """Decode aborts at 10:20:00 by its clock; prefill's transfer fails at 10:20:02 by its own."""
    inc = Incident()
    room = XFER
    inc.receive(PREFILL, "10:15:00", room)
    inc.receive(DECODE, "10:15:00", room)
    inc.line(DECODE, "10:20:00", decode_failed(room, "Aborted by AbortReq."))
    inc.line(PREFILL, "10:20:02", prefill_failed(room, "KVSender transfer encountered an error."))
    ingest_paths([inc.write(root / "dump")], root / "store")
    return root / "store", room


def test_a_clock_offset_that_reorders_the_events_changes_the_first_failure(tmp_path):
    store, room = skew_incident(tmp_path)
    q = "SELECT outcome, outcome_side, t_outcome, later_failures FROM rooms WHERE bootstrap_room = $room"
    raw = sql(store, q, room=room).row(0, named=True)
    assert (raw["outcome"], raw["outcome_side"], raw["t_outcome"]) == ("aborted", "decode", utc("10:20:00"))
    # decode's clock runs 3 s behind: corrected, its abort comes a second after prefill's failure
    res = CliRunner().invoke(main, ["clocks", "set", DECODE, "-3", "--store", str(store)])
    assert res.exit_code == 0, res.output
    fixed = sql(store, q, room=room).row(0, named=True)
    assert (fixed["outcome"], fixed["outcome_side"], fixed["t_outcome"]) == (
        "transfer_failed",
        "prefill",
        utc("10:20:02"),
    )
    assert [(x["side"], x["outcome"], x["ts"]) for x in fixed["later_failures"]] == [
        ("decode", "aborted", utc("10:20:03"))
    ]


def test_every_room_of_a_decode_wedge_gets_the_decode_timeout(tmp_path):
    """24 rooms stuck behind one decode wedge: decode's timeouts over two seconds, prefill's 1-3 s
    after (some in the same log second), the ABORTs, and prefill writes that fail once decode let go."""
    rnd = random.Random(seed(17))
    inc = Incident()
    rooms = [rnd.randrange(1, 1 << 63) for _ in range(24)]
    for i, room in enumerate(rooms):
        t_d = utc("09:17:05") + dt.timedelta(seconds=i // 12)
        t_p = t_d + dt.timedelta(seconds=rnd.choice((0, 1, 2, 2, 3)))
        decode_wedge_room(inc, room, t_d.strftime("%H:%M:%S"), t_p.strftime("%H:%M:%S"), frac=rnd.random())
        inc.event(
            PREFILL,
            round(t_d.timestamp() + rnd.random(), 6),
            room,
            "fail",
            chunk=0,
            status="NIXL_ERR_REMOTE_DISCONNECT",
            error="remote agent 'def7d2f1' was disconnected",
        )
    ingest_paths([inc.write(tmp_path / "dump")], tmp_path / "store")
    got = sql(tmp_path / "store", "SELECT bootstrap_room, outcome, outcome_side FROM rooms")
    assert sorted(got["bootstrap_room"]) == sorted(rooms)
    assert set(zip(got["outcome"], got["outcome_side"])) == {("waiting_timeout", "decode")}


def test_room_command_shows_the_cause_then_its_consequences(store):
    story = room_story(Store(store), WEDGE)
    marks = dict(zip(story.timeline["detail"], story.timeline["failure"]))
    assert marks[decode_failed(WEDGE, waiting(WEDGE))] == "waiting_timeout (first)"
    assert marks[prefill_failed(WEDGE, kvt(WEDGE, bootstrapping(WEDGE)), "bootstrap")] == "bootstrap_timeout"
    assert story.timeline.filter(story.timeline["what"] == "request_received")["failure"].is_null().all()
    res = CliRunner().invoke(main, ["room", str(WEDGE), "--store", str(store), "--format", "csv"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith(f"room {WEDGE}: "))
    assert "outcome=waiting_timeout" in lines[head]
    first = decode_failed(WEDGE, waiting(WEDGE))
    assert lines[head + 1] == (
        f"first failure: {DAY} 09:17:05 decode {DECODE} waiting_timeout (waiting_timeout): "
        + first[:50]
        + " … "
        + first[-100:]
    )
    assert lines[head + 1].endswith(f"): Request {WEDGE} timed out after 300.0s in KVPoll.WaitingForInput")
    assert lines[head + 2 : head + 6] == [
        f"  then +0.0 s  decode {DECODE} aborted (aborted)",
        f"  then +2.0 s  prefill {PREFILL} bootstrap_timeout (bootstrap_timeout) x2",
        f"  then +2.0 s  prefill {PREFILL} aborted (aborted)",
        f"  then +2.0 s  prefill {PREFILL} transfer_failed (transfer_error)",
    ]


def hms(t: float) -> str:
    # sglang prints whole seconds, truncated
    return dt.datetime.fromtimestamp(int(t), dt.timezone.utc).strftime("%H:%M:%S")


def test_an_unset_skew_the_rooms_show_is_allowed_for_and_no_clock_is_moved(tmp_path):
    """Decode's clock runs 2.5 s ahead and no offset is set: its timeout prints after prefill's
    bootstrap timeout that came 2 s later. Request logs bound the skew (a prefill request finishes only
    after decode registered it), and the failures are ordered within those bounds."""
    skew, t0 = 2.5, epoch("11:00:00")
    inc = Incident()
    for i in range(10):  # served rooms: decode registers, prefill finishes 0.3 s later
        room, t = 1000 + i, t0 + 10 * i + 0.1
        inc.line(
            DECODE,
            hms(t + skew),
            f"Receive: obj=GenerateReqInput(rid='{rid('decode', room)}', bootstrap_room={room})",
            "",
        )
        inc.line(
            PREFILL,
            hms(t + 0.3),
            f"Finish: obj=GenerateReqInput(rid='{rid('prefill', room)}', "
            f"bootstrap_room={room}), out={{'meta_info': {{'id': '{rid('prefill', room)}', "
            f"'finish_reason': {{'type': 'length', 'length': 1}}, 'prompt_tokens': 10}}}}",
            "",
        )
    t_timeout = t0 + 400.6  # decode prints 11:06:43, prefill 11:06:42
    inc.line(DECODE, hms(t_timeout + skew), decode_failed(WEDGE, waiting(WEDGE)))
    inc.line(PREFILL, hms(t_timeout + 2.0), prefill_failed(WEDGE, kvt(WEDGE, bootstrapping(WEDGE)), "bootstrap"))
    store = tmp_path / "store"
    ingest_paths([inc.write(tmp_path / "dump")], store)
    bounds = {(r["host_a"], r["host_b"]): r for r in sql(store, "SELECT * FROM clock_bounds").iter_rows(named=True)}
    ahead = bounds[(PREFILL, DECODE)]
    # decode's Receive prints at :x2, prefill's Finish at :x0 (up to :x1): decode is at least 1 s ahead
    assert (ahead["lower_s"], ahead["upper_s"], ahead["n_lower"], ahead["ahead_s"]) == (1.0, None, 10, 1.0)
    assert bounds[(DECODE, PREFILL)]["ahead_s"] == -1.0
    r = sql(store, "SELECT * FROM rooms WHERE bootstrap_room = $room", room=WEDGE).row(0, named=True)
    assert (r["outcome"], r["outcome_side"]) == ("waiting_timeout", "decode")
    # the times stay as the logs wrote them: the consequence shows before its cause
    assert r["t_outcome"] == utc("11:06:43")
    assert [(x["outcome"], x["ts"]) for x in r["later_failures"]] == [("bootstrap_timeout", utc("11:06:42"))]
    # with the offset set, the same order comes from the times themselves
    assert CliRunner().invoke(main, ["clocks", "set", DECODE, "2.5", "--store", str(store)]).exit_code == 0
    r = sql(store, "SELECT outcome, t_outcome FROM rooms WHERE bootstrap_room = $room", room=WEDGE).row(0)
    assert r == ("waiting_timeout", utc("11:06:40", 500000))
    assert set(sql(store, "SELECT ahead_s FROM clock_bounds")["ahead_s"]) == {0.0}


def test_clocks_the_rooms_do_not_contradict_are_trusted(store):
    b = sql(store, "SELECT host_a, host_b, ahead_s FROM clock_bounds")
    assert b.height == 2 and set(b["ahead_s"]) == {0.0}
