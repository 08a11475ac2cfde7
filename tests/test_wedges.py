"""Wedges by scheduler progress, on incidents written from the formats docs (docs/formats/SGLANG.md,
"Line prefix", "Uvicorn and access lines", "Stats lines", "PD transfer and bootstrap failures",
"Timeouts", "Health checks and watchdogs" and "What a wedge looks like in the log").

A wedged PD server is rarely silent: uvicorn goes on answering /health (503 once the detokenizer
heartbeat is stale, or 200 when the hang is in a collective), `Health check failed` repeats, and
minutes later the watchdog or the PD timeouts fire for every request that was in flight. What
stops is scheduler progress: stats lines and transfers. Each host below is one case; an idle
server, a capture gap of days and a busy server with its ordinary cadence are the hard negatives.
"""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from forensics.analysis import evidence, timeline
from forensics.catalog import named as queries
from forensics.reports import text as text_reports
from forensics.store import Store
from tests.conftest import ingest_paths

UTC = dt.timezone.utc
DAY = dt.datetime(2026, 3, 2, tzinfo=UTC)


def at(h: int, m: int, s: float = 0) -> dt.datetime:
    return DAY + dt.timedelta(hours=h, minutes=m, seconds=s)


def prefix(t: dt.datetime, tags: str = "") -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S}{tags}]"


def decode_line(t, tags="", running=8, transfer=0, prealloc=0, queue=0) -> str:
    # 0.5.9+ PD decode template (docs/formats/SGLANG.md, "Decode stats eras")
    return (
        f"{prefix(t, tags)} Decode batch, #running-req: {running}, #token: {running * 1500}, token usage: 0.19, "
        f"pre-allocated usage: 0.00, #prealloc-req: {prealloc}, #transfer-req: {transfer}, #retracted-req: 0, "
        f"cuda graph: True, gen throughput (token/s): {running * 30:.2f}, #queue-req: {queue}"
    )


def prefill_line(t, tags="", queue=0, bootstrap=0, inflight=1) -> str:
    # 0.5.9 PD prefill template (docs/formats/SGLANG.md, "Prefill stats eras"): #prealloc-req is the prefill bootstrap queue there
    return (
        f"{prefix(t, tags)} Prefill batch, #new-seq: 1, #new-token: 4096, #cached-token: 128, token usage: 0.03, "
        f"#running-req: 0, #queue-req: {queue}, #prealloc-req: {bootstrap}, #inflight-req: {inflight}, "
        f"input throughput (token/s): 9120.44, cuda graph: False"
    )


def health(t, status=200) -> str:
    reason = {200: "OK", 503: "Service Unavailable"}[status]
    return f'{prefix(t)} INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" {status} {reason}'


def health_failed(t, since) -> str:
    return (
        f"{prefix(t)} Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        f"tic start time: {t - dt.timedelta(seconds=20):%H:%M:%S}. last_heartbeat time: {since:%H:%M:%S}"
    )


def post(t, status=200) -> str:
    reason = {200: "OK", 500: "Internal Server Error"}[status]
    return f'{prefix(t)} INFO:     10.0.3.7:51622 - "POST /generate HTTP/1.1" {status} {reason}'


def room(n: int) -> int:
    return 4793981895866140836 + 7919 * n


def rid(n: int) -> str:
    return f"{n:032x}"


def waiting_timeout(t, n, tags="", rank=0) -> str:
    r = room(n)
    return (
        f"{prefix(t, tags)} Decode transfer failed for request rank={rank} decode_req.req.rid='{rid(n)}' "
        f"decode_req.req.bootstrap_room={r} with exception KVTransferError(bootstrap_room={r}): "
        f"Request {r} timed out after 300.0s in KVPoll.WaitingForInput"
    )


def bootstrap_timeout(t, n, tags="", rank=0) -> str:
    r = room(n)
    return (
        f"{prefix(t, tags)} Prefill bootstrap failed for request rank={rank} req.rid='{rid(n)}' "
        f"req.bootstrap_room={r} with exception KVTransferError(bootstrap_room={r}): "
        f"Request {r} timed out after 300.0s in KVPoll.Bootstrapping"
    )


def every(start, end, step_s):
    t = start
    while t < end:
        yield t
        t += dt.timedelta(seconds=step_s)


# --- the cases ---------------------------------------------------------------------------------------
# A: decode-0's scheduler stops at 09:12:05 with 20 running and 4 in transfer; /health answers 503
# every 10 s and `Health check failed` repeats every 30 s; at 09:17:05 the 24 rooms time out in
# KVPoll.WaitingForInput, and prefill-0's bootstrap of the same rooms 2 s later.
A_START, A_END = at(9, 12, 5), at(9, 17, 5)
A_FAILED = list(every(A_START + dt.timedelta(seconds=30), A_END + dt.timedelta(seconds=1), 30))
A_503 = list(every(A_START + dt.timedelta(seconds=25), A_END, 10))
# decode-5 wedges with it, 3 s later in true time; its clock runs 3 s ahead (offset set below)
E_OFFSET = 3.0
B_START, B_WATCHDOG = at(10, 5, 0), at(10, 10, 0)  # decode-1 DP2 stops, its peers go on
C_DEATH, C_TIMEOUTS = at(11, 0, 0), at(11, 5, 0)  # prefill-1's bootstrap thread dies


def case_decode0() -> list[tuple]:
    lines = [
        (t, decode_line(t, running=20, transfer=4)) for t in every(at(9, 0, 1), A_START + dt.timedelta(seconds=1), 2)
    ]
    lines += [(t, health(t)) for t in every(at(9, 0, 3), A_START, 10)]
    lines += [(t, health(t, 503)) for t in A_503]
    lines += [(t, health_failed(t, A_START)) for t in A_FAILED]
    lines += [(A_END, waiting_timeout(A_END, n)) for n in range(24)]
    lines += [(A_END, post(A_END, 500)) for _ in range(24)]
    back = A_END + dt.timedelta(seconds=15)
    lines += [(t, decode_line(t, running=2)) for t in every(back, at(9, 25), 2)]
    lines += [(t, health(t)) for t in every(back, at(9, 25), 10)]
    return lines


def case_prefill0() -> list[tuple]:
    # serves both decode hosts and goes on throughout; its own bootstrap of decode-0's rooms times out
    lines = [(t, prefill_line(t, inflight=2)) for t in every(at(8, 59), at(9, 25), 3)]
    lines += [(t, health(t)) for t in every(at(8, 59, 4), at(9, 25), 10)]
    lines += [
        (A_END + dt.timedelta(seconds=2), bootstrap_timeout(A_END + dt.timedelta(seconds=2), n)) for n in range(24)
    ]
    return lines


def case_decode5() -> list[tuple]:
    skew = dt.timedelta(seconds=E_OFFSET)
    start, end = A_START + dt.timedelta(seconds=3), A_END + dt.timedelta(seconds=3)
    lines = [(t + skew, decode_line(t + skew, running=6)) for t in every(at(9, 0), start + dt.timedelta(seconds=1), 2)]
    lines += [(t + skew, health(t + skew, 503)) for t in every(start + dt.timedelta(seconds=25), end, 10)]
    lines += [(end + skew, waiting_timeout(end + skew, 100 + n)) for n in range(6)]
    lines += [(t + skew, decode_line(t + skew, running=2)) for t in every(end + dt.timedelta(seconds=20), at(9, 25), 2)]
    return lines


def case_prefill2() -> list[tuple]:
    # serves only decode-5: no new work once it wedged, and its bootstrap of decode-5's rooms times out
    # 2 s after decode-5's wait; a consequence, not a wedge of its own
    start, end = A_START + dt.timedelta(seconds=3), A_END + dt.timedelta(seconds=3)
    lines = [(t, prefill_line(t, bootstrap=1, inflight=2)) for t in every(at(9, 0), start, 3)]
    lines += [
        (end + dt.timedelta(seconds=2), bootstrap_timeout(end + dt.timedelta(seconds=2), 100 + n)) for n in range(6)
    ]
    lines += [(t, prefill_line(t, inflight=1)) for t in every(end + dt.timedelta(seconds=20), at(9, 25), 3)]
    return lines


def case_decode1() -> list[tuple]:
    # DP attention, 4 ranks; DP2 stops in a collective at 10:05:00, the others go on; /health says 200
    lines = []
    for dp in range(4):
        tags = f" DP{dp} TP{dp}"
        stop = B_START + dt.timedelta(seconds=1) if dp == 2 else at(10, 20)
        lines += [(t, decode_line(t, tags, running=8)) for t in every(at(9, 50, dp * 0.5), stop, 2)]
    lines += [(t, health(t)) for t in every(at(9, 50, 1), at(10, 20), 10)]
    lines += [
        (
            B_WATCHDOG,
            f"{prefix(B_WATCHDOG, ' DP2 TP2')} Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
        )
    ]
    return lines


def case_prefill1() -> list[tuple]:
    # the NIXL prefill bootstrap thread dies; nothing bootstraps, so no batch forms; requests pile up
    # and time out 300 s after they arrived, one every 5 s
    tags = " TP0"
    lines = [(t, prefill_line(t, tags, bootstrap=2, inflight=1)) for t in every(at(10, 50), C_DEATH, 2)]
    lines.append(
        (
            C_DEATH,
            f"{prefix(C_DEATH, tags)} prefill bootstrap_thread died on engine_rank=0; requests to "
            "this rank will time out in KVPoll.Bootstrapping",
        )
    )
    lines += [(t, post(t)) for t in every(C_DEATH + dt.timedelta(seconds=1), C_DEATH + dt.timedelta(seconds=60), 5)]
    lines += [(t, health(t)) for t in every(at(10, 50, 1), at(11, 10), 10)]
    lines += [
        (t, bootstrap_timeout(t, 200 + i, tags))
        for i, t in enumerate(every(C_TIMEOUTS, C_TIMEOUTS + dt.timedelta(seconds=60), 5))
    ]
    return lines


def case_decode2_idle() -> list[tuple]:
    # bursts of traffic with 20 minutes of nothing between; the last line of a burst still shows a
    # running request (a decode line is only written while one runs)
    lines = []
    for s, e in ((at(12, 0), at(12, 5)), (at(12, 25), at(12, 30))):
        ts = list(every(s, e, 2))
        lines += [(t, decode_line(t, running=max(1, 6 - 6 * i // len(ts)))) for i, t in enumerate(ts)]
    lines += [(t, health(t)) for t in every(at(12, 0), at(12, 40), 10)]
    return lines


def case_decode3_capture_gap() -> list[tuple]:
    # five minutes captured, then nothing for three days, then five minutes again
    lines = []
    for s in (at(13, 0), at(13, 0) + dt.timedelta(days=3)):
        lines += [(t, decode_line(t, running=5, transfer=1)) for t in every(s, s + dt.timedelta(minutes=5), 2)]
        lines += [(t, health(t)) for t in every(s, s + dt.timedelta(minutes=5), 10)]
    return lines


def case_decode4_busy() -> list[tuple]:
    # an ordinary cadence with jitter (1-5 s) and one 40 s pause; /health 200 throughout
    lines, t, i = [], at(14, 0), 0
    while t < at(14, 30):
        lines.append((t, decode_line(t, running=12, transfer=i % 3)))
        i += 1
        t += dt.timedelta(seconds=40 if i == 300 else 1 + (i * 7) % 5)
    lines += [(t, health(t)) for t in every(at(14, 0), at(14, 30), 10)]
    return lines


G_FIRST, G_ALL, G_END = at(15, 0, 0), at(15, 1, 30), at(15, 5, 0)


def case_decode6_desync_then_all() -> list[tuple]:
    # DP1 stops in a collective first; DP0 goes on for 90 s, then needs DP1 and hangs too
    lines = []
    for dp, stop in ((0, G_ALL), (1, G_FIRST)):
        tags = f" DP{dp} TP{dp}"
        lines += [(t, decode_line(t, tags, running=4)) for t in every(at(14, 50), stop + dt.timedelta(seconds=1), 2)]
        lines += [
            (t, decode_line(t, tags, running=1)) for t in every(G_END + dt.timedelta(seconds=20 + dp), at(15, 10), 2)
        ]
    lines += [(t, health(t, 503)) for t in every(G_ALL + dt.timedelta(seconds=30), G_END, 10)]
    lines += [(G_END, waiting_timeout(G_END, 300 + n, " DP1 TP1", rank=1)) for n in range(4)]
    return lines


def case_decode7_lull_ended_by_arrivals() -> list[tuple]:
    # a burst, then three minutes with nothing to do; three requests arrive and the scheduler picks
    # them up two seconds later: the arrivals end the lull, they did not wait on a stuck server
    lines = [(t, decode_line(t, running=3)) for t in every(at(16, 0), at(16, 5), 2)]
    back = at(16, 8)
    for n in range(3):
        r = room(700 + n)
        lines.append(
            (
                back,
                f"{prefix(back)} Receive: obj=GenerateReqInput(rid='{rid(700 + n)}', text=None, "
                f"input_ids=[0, 128803, …], sampling_params={{'max_new_tokens': 8192}}, stream=False, "
                f"bootstrap_host='10.0.3.1', bootstrap_port=8998, bootstrap_room={r})",
            )
        )
    done = back + dt.timedelta(seconds=20)
    for n in range(3):
        lines.append(
            (
                done,
                f"{prefix(done)} Finish: obj=GenerateReqInput(rid='{rid(700 + n)}', text=None, …), "
                f"out={{'text': '…', 'meta_info': {{'id': '{rid(700 + n)}', 'finish_reason': "
                f"{{'type': 'stop', 'matched': 1}}, 'prompt_tokens': 4096, 'completion_tokens': 300, "
                f"'cached_tokens': 0, 'e2e_latency': 20.0}}}}",
            )
        )
    lines += [(t, decode_line(t, running=3)) for t in every(back + dt.timedelta(seconds=2), at(16, 12), 2)]
    lines += [(t, health(t)) for t in every(at(16, 0), at(16, 12), 10)]
    return lines


def case_decode8_excerpts_of_two_hours() -> list[tuple]:
    # a folder of excerpts pasted from a bug report: three minutes of startup and stats at 16:30,
    # then, two hours later, the failures of three rooms never seen before (mooncake's "Decode
    # instance could be dead"); nothing says those rooms were in flight when the stats stopped
    lines = [(t, decode_line(t, running=1)) for t in every(at(16, 30), at(16, 33), 2)]
    lines += [(t, health(t)) for t in every(at(16, 30), at(16, 33, 30), 10)]
    late = at(18, 39, 48)
    for n in range(3):
        r = room(800 + n)
        lines.append(
            (
                late,
                f"{prefix(late, ' TP0')} Decode transfer failed for request rank=0 "
                f"decode_req.req.rid='{rid(800 + n)}' decode_req.req.bootstrap_room={r} with exception "
                f"KVTransferError(bootstrap_room={r}): Failed to get kvcache from prefill instance, "
                "it might be dead",
            )
        )
    return lines


H_STOP, H_END = at(17, 0, 0), at(17, 5, 0)


def case_decode9_ties_in_its_last_second() -> list[tuple]:
    # the scheduler writes three stats lines in its last second, the load rising; 30 rooms then time out
    lines = [(t, decode_line(t, running=2)) for t in every(at(16, 50), H_STOP, 2)]
    lines += [(H_STOP, decode_line(H_STOP, running=n)) for n in (2, 9, 30)]
    lines += [(t, health(t, 503)) for t in every(H_STOP + dt.timedelta(seconds=30), H_END, 10)]
    lines += [(H_END, waiting_timeout(H_END, 900 + n)) for n in range(30)]
    return lines


CASES = {
    "decode-9": case_decode9_ties_in_its_last_second,
    "decode-0": case_decode0,
    "prefill-0": case_prefill0,
    "decode-5": case_decode5,
    "decode-1": case_decode1,
    "prefill-1": case_prefill1,
    "decode-2": case_decode2_idle,
    "decode-3": case_decode3_capture_gap,
    "decode-4": case_decode4_busy,
    "decode-6": case_decode6_desync_then_all,
    "prefill-2": case_prefill2,
    "decode-7": case_decode7_lull_ended_by_arrivals,
    "decode-8": case_decode8_excerpts_of_two_hours,
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("wedges")
    for host, make in CASES.items():
        (root / "logs" / host).mkdir(parents=True)
        rows = sorted(make(), key=lambda r: r[0])
        (root / "logs" / host / "server.log").write_text("".join(line + "\n" for _, line in rows))
    ingest_paths([root / "logs"], root / "store")
    s = Store(root / "store")
    s.set_clock("decode-5", E_OFFSET)
    return s


@pytest.fixture(scope="module")
def wedges(store):
    return queries.run(store, "wedges")


def one(wedges, host):
    rows = wedges.filter(pl.col("host") == host)
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def near(t, want, tol_s=2.0):
    return abs((t - want).total_seconds()) <= tol_s


def test_wedge_behind_live_health_checks(wedges):
    w = one(wedges, "decode-0")
    assert w["kind"] == "silence" and w["dp_rank"] is None and w["tp_rank"] is None
    assert near(w["t_start"], A_START) and near(w["t_end"], A_END)
    assert w["in_flight"] == 24
    assert w["n_rooms"] == 24 and sorted(w["rooms"]) == sorted(str(room(n)) for n in range(24))
    assert w["ended_by"] == "waiting_timeout"
    sig = w["signals"]
    assert "no stats 315 s" in sig
    assert f"health_check_failed x{len(A_FAILED)}" in sig
    assert f"/health 503 x{len(A_503)}" in sig
    assert "waiting_timeout x24" in sig
    assert "bootstrap_timeout x24 on prefill-0" in sig
    assert not any(s.startswith("/health 200") for s in sig)


def test_wedges_that_start_together_are_one_incident(wedges):
    a, e = one(wedges, "decode-0"), one(wedges, "decode-5")
    # decode-5's clock runs 3 s ahead: corrected, it stopped 3 s after decode-0
    assert near(e["t_start"], A_START + dt.timedelta(seconds=3)) and near(e["t_end"], A_END + dt.timedelta(seconds=3))
    assert e["in_flight"] == 6 and e["ended_by"] == "waiting_timeout"
    assert "bootstrap_timeout x6 on prefill-2" in e["signals"]
    assert a["incident"] == e["incident"]
    assert a["incident_hosts"] == ["decode-0", "decode-5"]
    others = wedges.filter(~pl.col("host").is_in(["decode-0", "decode-5"]))
    assert a["incident"] not in others["incident"].to_list()


def test_tp_desync_one_rank_stops_while_peers_go_on(wedges):
    w = one(wedges, "decode-1")
    assert w["kind"] == "rank_stopped" and w["dp_rank"] == 2 and w["tp_rank"] == 2
    assert near(w["t_start"], B_START) and near(w["t_end"], B_WATCHDOG)
    assert w["in_flight"] == 8 and w["ended_by"] == "watchdog"
    sig = w["signals"]
    assert "watchdog" in sig
    # the hang is invisible to /health: it kept saying 200 (every 10 s for the 300 s)
    assert "/health 200 x30" in sig
    assert any(s.startswith("peers went on (DP0,DP1,DP3") for s in sig)


def test_a_rank_that_stopped_first_starts_the_host_wedge(wedges):
    w = one(wedges, "decode-6")
    assert w["kind"] == "silence"
    assert near(w["t_start"], G_FIRST) and near(w["t_end"], G_END)
    assert w["ended_by"] == "waiting_timeout" and w["n_rooms"] == 4
    assert "DP1 stopped first, 90 s before the others" in w["signals"]
    # in flight when the host went quiet: DP0's last line; DP1's is 90 s older than that, past the
    # 60 s threshold, and says nothing about then
    assert w["in_flight"] == 4


def test_load_before_a_stop_is_the_last_line_of_its_second(wedges):
    # log prefixes are whole seconds: of the lines in the rank's last second, the one written last counts
    w = one(wedges, "decode-9")
    assert near(w["t_start"], H_STOP) and w["in_flight"] == 30


def test_dead_bootstrap_thread(wedges):
    w = one(wedges, "prefill-1")
    assert w["kind"] == "dead_thread"
    assert near(w["t_start"], C_DEATH) and near(w["t_end"], C_TIMEOUTS)
    assert w["in_flight"] == 3 and w["ended_by"] == "bootstrap_timeout"
    # every request that arrived for it timed out, the whole burst, one every 5 s
    assert w["n_rooms"] == 12
    assert "dead thread" in w["signals"] and "bootstrap_timeout x12" in w["signals"]


@pytest.mark.parametrize("host", ["decode-2", "decode-3", "decode-4", "decode-7", "decode-8", "prefill-0", "prefill-2"])
def test_no_wedge_without_stuck_work(wedges, host):
    """Idle between bursts, a capture gap of days, a busy server's ordinary cadence, a lull that the next
    requests end (they arrive, and progress resumes at once), excerpts of two hours side by side (rooms
    first seen failing after the stop), a prefill that serves a wedged decode host (busy with others, or
    idle and timing out on its rooms): none is a wedge."""
    assert wedges.filter(pl.col("host") == host).height == 0


@pytest.mark.slow
def test_thresholds_are_parameters(store):
    # with a 400 s floor the 300 s wedges are too short; the 40 s pause of decode-4 is one only
    # with a floor under it and evidence, which it has not
    assert queries.run(store, "wedges", {"min_gap_s": 400}).filter(pl.col("host") == "decode-0").height == 0
    assert queries.run(store, "wedges", {"min_gap_s": 20}).filter(pl.col("host") == "decode-4").height == 0


def test_timeline_and_evidence_show_the_wedge_once_per_incident(store):
    tl = timeline.build(store, "10s")
    rows = tl["rows"].filter(pl.col("wedged_hosts").list.contains("decode-0"))
    assert near(rows["bucket_start"].min(), A_START, 10) and near(rows["bucket_start"].max(), A_END, 10)
    assert set(tl["wedges"]["host"]) >= {"decode-0", "decode-5", "decode-1", "prefill-1"}
    import io

    out = io.StringIO()
    text_reports.render_timeline(tl, "markdown", out)
    md = out.getvalue()
    assert md.count("incident 1: decode-0, decode-5") == 1
    assert "health_check_failed x10" in md
    # rooms are shown as the first few and a count, never all 24
    assert "+21 more" in md and str(room(23)) not in md.split("### Wedges")[1].split("### Abort storms")[0]
    report = evidence.build(store)
    out = io.StringIO()
    text_reports.render_evidence(report, "markdown", out)
    assert out.getvalue().count("incident 1: decode-0, decode-5") == 1
    doc = text_reports.evidence_json(report)
    assert '"signals"' in doc and '"incident_hosts"' in doc


def test_no_wedge_in_the_real_excerpts(real_logs, tmp_path):
    """The real excerpts, ingested whole as a user would (the mooncake folder holds excerpts of several
    servers and hours): none of them is a wedge, and none ends a stop with rooms it never showed open."""
    ingest_paths([real_logs], tmp_path / "store")
    assert queries.run(Store(tmp_path / "store"), "wedges").height == 0
