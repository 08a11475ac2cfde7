"""Abort storms across hosts, and the header warning for a clock skew no offset corrects.

The incident is written here from the formats docs (docs/formats/SGLANG.md, "Request logs", "Aborts",
"PD transfer and bootstrap failures" and "Bootstrap, heartbeat and abort control"; docs/formats/TRANSFER_TRACE.md;
docs/formats/TRANSCRIPTS.md, "OpenAI-compatible proxy logs"): one prefill and two decode hosts, decode-1's clock 2.5 s ahead with no offset
set. An agent with 40 sessions is killed; every host writes its aborts within three seconds, most
requests in more than one line. Minutes later a second, smaller kill; between them aborts one by
one; at the end a mass timeout whose `Finish:` lines carry finish_reason abort (a failure, not an
abort).
"""

from __future__ import annotations

import datetime as dt
import html as html_text
import json
import random
import shlex
import shutil

import polars as pl
import pytest
from click.testing import CliRunner

from forensics.analysis import evidence, timeline
from forensics.catalog import named as queries
from forensics.catalog.sql import run_sql
from forensics.cli import main
from forensics.store import Store
from tests.conftest import ingest_paths, seed

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 10, 30, 10, 0, 0, tzinfo=UTC)
SKEW = {"prefill-0": 0.0, "decode-0": 0.0, "decode-1": 2.5}  # how far each host's clock runs ahead
DECODES = ("decode-0", "decode-1")
KILL1 = T0 + dt.timedelta(seconds=120.4)  # 40 sessions: 20 rooms on each decode host
KILL2 = T0 + dt.timedelta(seconds=420.7)  # 15 sessions, all on decode-0
SCATTER = [T0 + dt.timedelta(seconds=200 + 9 * i) for i in range(16)]  # one abort every 9 s
TIMEOUTS = T0 + dt.timedelta(seconds=700)  # 24 requests of decode-0 time out at once


class Host:
    """One server's log lines, stamped on its own clock."""

    def __init__(self, name: str):
        self.name, self.lines = name, []

    def log(self, t: dt.datetime, msg: str, tags: str = " TP0") -> None:
        local = t + dt.timedelta(seconds=SKEW[self.name])
        self.lines.append((local, f"[{local:%Y-%m-%d %H:%M:%S}{tags}] {msg}"))

    def request_log(self, t: dt.datetime, msg: str) -> None:
        self.log(t, msg, tags="")

    def write(self, d):
        d.mkdir(parents=True, exist_ok=True)
        (d / "sglang.log").write_text("".join(line + "\n" for _, line in sorted(self.lines, key=lambda x: x[0])))


def _receive(rid: str, room: int) -> str:
    return (
        f"Receive: obj=GenerateReqInput(rid='{rid}', text=None, stream=True, bootstrap_host='10.0.0.1', "
        f"bootstrap_port=8998, bootstrap_room={room}, bootstrap_pair_key=None, decode_tp_size=None, "
        "routed_dp_rank=None, data_parallel_rank=None, disagg_prefill_dp_rank=None)"
    )


def _finish(rid: str, room: int, reason: str) -> str:
    return (
        f"Finish: obj=GenerateReqInput(rid='{rid}', bootstrap_host='10.0.0.1', bootstrap_port=8998, "
        f"bootstrap_room={room}), out={{'meta_info': {{'id': '{rid}', 'finish_reason': {reason}, "
        "'prompt_tokens': 8192, 'completion_tokens': 0, 'cached_tokens': 0, 'e2e_latency': 4.2}}"
    )


ABORTED = "{'type': 'abort', 'message': 'Aborted by AbortReq.', 'status_code': None, 'err_type': None}"


def write_incident(root) -> dict:
    """The dump; returns the per-host counts of the two kills."""
    rng = random.Random(seed(17))
    hosts = {h: Host(h) for h in SKEW}
    pre = hosts["prefill-0"]
    trace = []
    rooms = iter(range(4_000_000_000_000_000_001, 4_000_000_000_000_100_000, 97))

    def request(t: dt.datetime, decode: str) -> tuple[str, int, str]:
        """A request's normal start: decode registers it, prefill bootstraps it and posts its KV."""
        room = next(rooms)
        rid_d, rid_p = f"{rng.getrandbits(128):032x}", f"{rng.getrandbits(128):032x}"
        hosts[decode].request_log(t, _receive(rid_d, room))
        pre.request_log(t + dt.timedelta(seconds=0.02), _receive(rid_p, room))
        pre.log(t + dt.timedelta(seconds=0.05), f"room={room} is bootstrapped")
        for side, host, dt_s, event in (("prefill", "prefill-0", 0.1, "post"), ("decode", decode, 0.13, "notif")):
            ts = (t + dt.timedelta(seconds=dt_s + SKEW[host])).timestamp()
            trace.append(
                (
                    host,
                    {
                        "ts": round(ts, 6),
                        "host": host,
                        "pid": 100,
                        "side": side,
                        "engine_rank": 0,
                        "room": room,
                        "rid": rid_p if side == "prefill" else rid_d,
                        "kind": "kv",
                        "chunk": 0,
                        "is_last": True,
                        "event": event,
                        "bytes": 1 << 20,
                    },
                )
            )
        return rid_d, room, rid_p

    # steady traffic: the pairs the clock estimate reads
    for i in range(60):
        request(T0 + dt.timedelta(seconds=2 * i + rng.random()), DECODES[i % 2])

    def kill(t_kill: dt.datetime, per_decode: dict[str, int]) -> dict:
        """Every in-flight request aborted: prefill finishes each with an abort (and logs the decode's
        abort notification for some), decode fails the transfer with `Aborted by AbortReq.` and then
        finishes it (two lines for one request)."""
        counts = {"prefill-0": 0, **{h: 0 for h in per_decode}}
        for decode, n in per_decode.items():
            for _ in range(n):
                rid_d, room, rid_p = request(t_kill - dt.timedelta(seconds=20 + 10 * rng.random()), decode)
                t = t_kill + dt.timedelta(seconds=2.5 * rng.random())
                hosts[decode].log(
                    t,
                    f"Decode transfer failed for request rank=0 decode_req.req.rid='{rid_d}' "
                    f"decode_req.req.bootstrap_room={room} with exception "
                    f"KVTransferError(bootstrap_room={room}): Aborted by AbortReq.",
                )
                hosts[decode].request_log(t, _finish(rid_d, room, ABORTED))
                hosts[decode].log(t, f"Sent abort notification for room {room} to 10.0.0.1:17000")
                tp = t_kill + dt.timedelta(seconds=0.3 + 1.5 * rng.random())
                pre.request_log(tp, _finish(rid_p, room, ABORTED))
                if rng.random() < 0.5:
                    pre.log(tp, f"Received abort notification for room {room}, marked as Failed")
                counts[decode] += 1
                counts["prefill-0"] += 1
        return counts

    storm1 = kill(KILL1, {"decode-0": 20, "decode-1": 20})
    storm2 = kill(KILL2, {"decode-0": 15})
    for i, t in enumerate(SCATTER):
        rid_d, room, _ = request(t - dt.timedelta(seconds=30), DECODES[i % 2])
        hosts[DECODES[i % 2]].request_log(t, _finish(rid_d, room, ABORTED))
    for _ in range(24):
        rid_d, room, _ = request(TIMEOUTS - dt.timedelta(seconds=300), "decode-0")
        why = f"Request {room} timed out after 300.0s in KVPoll.WaitingForInput"
        hosts["decode-0"].log(
            TIMEOUTS,
            f"Decode transfer failed for request rank=0 decode_req.req.rid='{rid_d}' "
            f"decode_req.req.bootstrap_room={room} with exception "
            f"KVTransferError(bootstrap_room={room}): {why}",
        )
        hosts["decode-0"].request_log(
            TIMEOUTS,
            _finish(
                rid_d,
                room,
                f"{{'type': 'abort', 'message': 'KVTransferError(bootstrap_room={room}): {why}', "
                "'status_code': 500, 'err_type': None}",
            ),
        )
    for name, h in hosts.items():
        h.write(root / name)
    (root / "trace").mkdir()
    for host in SKEW:
        (root / "trace" / f"kvtrace-{host}-100-20261030T100000Z.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for h, r in sorted(trace, key=lambda x: x[1]["ts"]) if h == host)
        )
    write_agent(root / "agent" / "proxy.jsonl", 40, KILL1)
    return {"storm1": storm1, "storm2": storm2}


def write_agent(path, sessions: int, t_kill: dt.datetime) -> None:
    """An agent proxy log (docs/formats/TRANSCRIPTS.md, "OpenAI-compatible proxy logs"): normal replies, then the kill cuts every session's
    stream (no [DONE]) at once; some the proxy logged as 499, the client having closed the request."""
    path.parent.mkdir(parents=True)
    lines = []

    def rec(**kw):
        lines.append(json.dumps(kw))

    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": int(t_kill.timestamp()),
        "model": "deepseek-v3.2",
        "choices": [{"index": 0, "delta": {"content": "Reading"}, "finish_reason": None}],
    }
    for s in range(sessions):
        start = t_kill - dt.timedelta(seconds=60 - s * 0.5)
        conn = f"c-{s:03d}"
        body = {
            "model": "deepseek-v3.2",
            "stream": True,
            "user": f"session-{s:02d}",
            "messages": [{"role": "user", "content": "go on"}],
        }
        rec(ts=start.isoformat().replace("+00:00", "Z"), dir="req", conn=f"{conn}a", body=body)
        done = {**chunk, "choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}
        rec(
            ts=(start + dt.timedelta(seconds=20)).isoformat().replace("+00:00", "Z"),
            dir="resp",
            conn=f"{conn}a",
            status=200,
            raw=["data: " + json.dumps(done), "data: [DONE]"],
        )
        rec(
            ts=(start + dt.timedelta(seconds=30)).isoformat().replace("+00:00", "Z"),
            dir="req",
            conn=f"{conn}b",
            body=body,
        )
        end = (t_kill + dt.timedelta(seconds=0.2)).isoformat().replace("+00:00", "Z")
        if s % 4 == 0:
            rec(ts=end, dir="resp", conn=f"{conn}b", status=499, body={"object": "error", "message": "client closed"})
        else:
            rec(ts=end, dir="resp", conn=f"{conn}b", status=200, raw=["data: " + json.dumps(chunk)])
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def incident(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("storms")
    planted = write_incident(tmp / "dump")
    store = tmp / "store"
    for name in SKEW:
        ingest_paths(
            [tmp / "dump" / name], store, host=name, role="prefill" if name.startswith("prefill") else "decode"
        )
    ingest_paths([tmp / "dump" / "trace", tmp / "dump" / "agent"], store)
    return {"store": Store(store), "planted": planted}


def _storms(store: Store) -> pl.DataFrame:
    return queries.run(store, "abort_storms")


def test_one_kill_is_one_storm_across_hosts_with_per_host_counts(incident):
    storms = _storms(incident["store"])
    assert storms.height == 2, storms
    s = storms.row(0, named=True)
    per_host = {h["host"]: h["n_aborts"] for h in s["per_host"]}
    # each request once per host, though decode wrote three lines and prefill one or two for each
    assert per_host == incident["planted"]["storm1"] == {"prefill-0": 40, "decode-0": 20, "decode-1": 20}
    # the storm's count is requests: a room aborted on prefill and on its decode host is one
    assert s["n_aborts"] == 40 and s["host_aborts"] == 80 and s["n_hosts"] == 3
    assert set(s["hosts"]) == set(SKEW)
    # the start on the clocks in force: prefill and decode-0 are right, so within a log second of the kill
    assert abs((s["t_start"] - KILL1).total_seconds()) <= 1.0
    # decode-1's share sits 2.5 s late on its uncorrected clock; it was grouped on the estimate
    d1 = next(h for h in s["per_host"] if h["host"] == "decode-1")
    assert 1.5 <= d1["unapplied_skew_s"] <= 3.0
    assert (d1["t_start"] - KILL1).total_seconds() >= 1.5  # 2.5 s late, less the truncated fraction
    assert "decode-1 20 (clock +" in s["host_counts"] and "not corrected" in s["host_counts"]
    assert s["host_counts"].startswith("decode-0 20") or s["host_counts"].startswith("prefill-0 40")


def test_a_second_kill_minutes_later_is_a_storm_of_its_own(incident):
    s = _storms(incident["store"]).row(1, named=True)
    assert {h["host"]: h["n_aborts"] for h in s["per_host"]} == incident["planted"]["storm2"]
    assert s["n_aborts"] == 15 and s["host_aborts"] == 30
    assert abs((s["t_start"] - KILL2).total_seconds()) <= 1.0
    assert s["agent_aborts"] == 0  # no agent run was killed then


def test_scattered_aborts_and_a_mass_timeout_are_no_storm(incident):
    storms = _storms(incident["store"])
    for t in (*SCATTER, TIMEOUTS):
        assert (
            storms.filter(
                (pl.col("t_start") <= t + dt.timedelta(seconds=5)) & (pl.col("t_end") >= t - dt.timedelta(seconds=5))
            ).height
            == 0
        ), t
    # the same scattered aborts at a lower density threshold still chain into nothing of 20
    loose = queries.run(incident["store"], "abort_storms", {"min_near": "1", "window_s": "5"})
    assert loose.height == 2


def test_the_storm_links_the_agent_side_burst(incident):
    s = _storms(incident["store"]).row(0, named=True)
    # every session's cut stream or 499 at the kill; the replies that finished before it are not counted
    assert s["agent_aborts"] == 40 and s["agent_sessions"] == 40
    assert abs((s["agent_t_start"] - KILL1).total_seconds()) <= 1.0


def _warning_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if "no offset is set" in ln]


@pytest.mark.slow
def test_every_report_header_warns_of_the_unset_offset_until_it_is_set(incident, tmp_path):
    store = incident["store"]
    runner = CliRunner()
    s = str(store.root)

    def run(*args):
        res = runner.invoke(main, [*args, "--store", s])
        assert res.exit_code == 0, res.output
        # a JSON document is stdout alone: notes about the window go to stderr
        return res.stdout if "json" in args else res.output

    model = timeline.build(store)
    [w] = model["clock_warnings"]
    assert w.startswith("warning: decode-1's clock runs about 2.") and "ahead of prefill-0's" in w
    command = w.split("Set it: ", 1)[1]
    argv = shlex.split(command)
    assert argv[:4] == ["forensics", "clocks", "set", "decode-1"] and argv[-2:] == ["--store", s]
    assert 2.0 <= float(argv[4]) <= 3.0
    assert evidence.build(store)["clock_warnings"] == [w]
    room = str(run_sql(store, "SELECT min(bootstrap_room) AS r FROM rooms")["r"][0])
    outputs = {
        "timeline table": run("timeline"),
        "timeline markdown": run("timeline", "--format", "markdown"),
        "timeline json": json.loads(run("timeline", "--format", "json"))["clock_warnings"][0],
        "evidence": run("evidence"),
        "evidence json": json.loads(run("evidence", "--format", "json"))["clock_warnings"][0],
        "replies": run("replies"),
        "room": run("room", room),
        # compare wants two runs: the store and a copy of it
        "compare": runner.invoke(main, ["compare", s, str(shutil.copytree(s, tmp_path / "copy"))]).output,
    }
    html = tmp_path / "t.html"
    run("timeline", "--format", "html", "-o", str(html))
    outputs["html"] = html.read_text()
    outputs["html"] = html_text.unescape(outputs["html"])
    for name, out in outputs.items():
        assert "decode-1's clock runs about" in out, name
        # the command is there to copy, whole and unwrapped
        assert command in out, name
    assert _warning_lines(outputs["timeline markdown"])[0].startswith("> **warning:")

    # set the offset with the very command the header gave: every warning goes
    res = runner.invoke(main, argv[1:])
    assert res.exit_code == 0, res.output
    assert store.clocks() == {"decode-1": pytest.approx(float(argv[4]))}
    assert timeline.build(store)["clock_warnings"] == []
    for args in (("timeline",), ("timeline", "--format", "markdown"), ("evidence",), ("replies",), ("room", room)):
        assert not _warning_lines(run(*args)), args
    # with the offset in force the storm is the same, and decode-1's share no longer needs the estimate
    after = _storms(store)
    assert after.height == 2
    s0 = after.row(0, named=True)
    assert {h["host"]: h["n_aborts"] for h in s0["per_host"]} == incident["planted"]["storm1"]
    d1 = next(h for h in s0["per_host"] if h["host"] == "decode-1")
    assert abs(d1["unapplied_skew_s"]) < 1.0 and abs((d1["t_start"] - KILL1).total_seconds()) <= 3.0
    assert "not corrected" not in s0["host_counts"]
