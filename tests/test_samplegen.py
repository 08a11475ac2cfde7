"""tools.samplegen: determinism, and planted.json consistent with the files it describes (by value)."""

from __future__ import annotations

import collections
import datetime as dt
import gzip
import json
import pathlib
import re
import statistics

import pytest

from tools import samplegen

PREFIX_RE = re.compile(
    r"^\[(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?P<tags>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] (?P<msg>.*)$"
)
CRI_RE = re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z) stdout F (?P<line>.*)$")
STATS_RE = re.compile(r"^\[[^\]]+ DP(\d) TP\1 EP\1\] (Prefill|Decode) batch, ")
ROOM_RE = re.compile(r"bootstrap_room=(\d+)")
DSML = "<\uff5cDSML\uff5c"
CJK = re.compile(r"[\u4e00-\u9fff]")
SERVER_LOGS = ("prefill-0/sglang.log", "decode-0/sglang.log.1.gz", "decode-0/sglang.log", "decode-1/sglang.log")


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[(7, 1.0), (3, 0.4)], ids=["seed7-scale1", "seed3-scale0.4"])
def bundle(request, tmp_path_factory):
    seed, scale = request.param
    out = tmp_path_factory.mktemp(f"bundle-{seed}")
    planted = samplegen.generate(out, seed=seed, scale=scale)
    return out, planted


def _text(path: pathlib.Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode()


def _lines(path: pathlib.Path) -> list[str]:
    """Server-log lines with the k8s CRI wrapper stripped."""
    out = []
    for ln in _text(path).splitlines():
        m = CRI_RE.match(ln)
        out.append(m["line"] if m else ln)
    return out


def _host_log(out: pathlib.Path, host: str) -> list[str]:
    if host == "decode-0":
        return _lines(out / "decode-0/sglang.log.1.gz") + _lines(out / "decode-0/sglang.log")
    return _lines(out / f"{host}/sglang.log")


def _ts(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _pfx_epoch(line: str) -> float | None:
    m = PREFIX_RE.match(line)
    if not m:
        return None
    return dt.datetime.fromisoformat(f"{m['date']}T{m['time']}+00:00").timestamp()


def _trace(out: pathlib.Path) -> list[dict]:
    rows = []
    for f in sorted((out / "trace").glob("*.jsonl")):
        for ln in f.read_text().splitlines():
            o = json.loads(ln)
            o["ts"] = o["ts"] if isinstance(o["ts"], float) else _ts(o["ts"])
            o["room"] = int(o["room"])
            rows.append(o)
    return rows


def _replies(out: pathlib.Path) -> dict[str, dict]:
    """reply_id -> {content, reasoning, tool_calls, usage, status}."""
    res: dict[str, dict] = {}
    for ln in (out / "agent/proxy.jsonl").read_text().splitlines():
        o = json.loads(ln)
        if o["dir"] != "resp":
            continue
        if "raw" in o:
            content, reasoning, calls, usage = "", "", [], None
            assert o["raw"][-1] == "data: [DONE]"
            for sse in o["raw"][:-1]:
                c = json.loads(sse.removeprefix("data: "))
                usage = c.get("usage") or usage
                for ch in c["choices"]:
                    d = ch["delta"]
                    content += d.get("content") or ""
                    reasoning += d.get("reasoning_content") or ""
                    calls += d.get("tool_calls") or []
            res[o["conn"]] = dict(content=content, reasoning=reasoning, calls=calls, usage=usage, status=o["status"])
        elif o["status"] == 200:
            m = o["body"]["choices"][0]["message"]
            res[o["conn"]] = dict(
                content=m["content"] or "",
                reasoning=m["reasoning_content"] or "",
                calls=m["tool_calls"] or [],
                usage=o["body"]["usage"],
                status=200,
            )
        else:
            res[o["conn"]] = dict(content="", reasoning="", calls=[], usage=None, status=o["status"], body=o["body"])
    for f in sorted((out / "agent").glob("opencode-session-*.json")):
        doc = json.loads(f.read_text())
        for m in doc["messages"]:
            info = m["info"]
            if info["role"] != "assistant":
                continue
            parts = m["parts"]
            res[info["id"]] = dict(
                content="".join(p["text"] for p in parts if p["type"] == "text"),
                reasoning="".join(p["text"] for p in parts if p["type"] == "reasoning"),
                calls=[p for p in parts if p["type"] == "tool"],
                tokens=info["tokens"],
                info=info,
                status=500 if "error" in info else 200,
            )
    return res


# -- determinism ---------------------------------------------------------------------------------


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_files(tmp_path):
    a = samplegen.generate(tmp_path / "a", seed=7, scale=1.0)
    b = samplegen.generate(tmp_path / "b", seed=7, scale=1.0)
    ta, tb = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert sorted(ta) == sorted(tb)
    for k in ta:
        assert ta[k] == tb[k], k
    assert a == b
    assert json.loads(ta["planted.json"]) == json.loads(json.dumps(a))


def test_other_seed_differs(tmp_path):
    samplegen.generate(tmp_path / "a", seed=7, scale=0.3)
    samplegen.generate(tmp_path / "b", seed=8, scale=0.3)
    assert (tmp_path / "a/prefill-0/sglang.log").read_bytes() != (tmp_path / "b/prefill-0/sglang.log").read_bytes()


def test_cli(tmp_path, capsys):
    assert samplegen.main([str(tmp_path / "o"), "--seed", "5", "--scale", "0.25"]) == 0
    assert (tmp_path / "o/planted.json").is_file()
    assert "wrote" in capsys.readouterr().out


# -- layout ----------------------------------------------------------------------------------------


def test_layout_and_size(bundle):
    out, planted = bundle
    files = set(_tree(out))
    assert set(planted["files"]) | {"planted.json"} == files
    assert set(SERVER_LOGS) <= files
    assert len([f for f in files if f.startswith("trace/kvtrace-")]) == 12
    assert len([f for f in files if f.startswith("agent/opencode-session-ses_")]) == 2
    assert (out / "decode-0/sglang.log.1.gz").read_bytes()[:2] == b"\x1f\x8b"
    if planted["generator"]["scale"] == 1.0:
        assert sum(len(v) for v in _tree(out).values()) < 5_000_000


# -- server logs -----------------------------------------------------------------------------------


def test_line_and_stats_counts_match_planted(bundle):
    out, planted = bundle
    rules = [(k, re.compile(rx)) for k, rx in planted["line_kind_rules"]]
    for rel in SERVER_LOGS:
        lines = _lines(out / rel)
        info = planted["files"][rel]
        assert len(lines) == info["lines"]
        n_stats = sum(1 for ln in lines if STATS_RE.match(ln))
        assert n_stats == info["stats_lines"] == planted["stats_lines"][rel] > 0
        kinds = collections.Counter(next(k for k, rx in rules if rx.search(ln)) for ln in lines)
        assert dict(kinds) == info["kinds"], rel


def test_every_line_has_a_known_shape(bundle):
    out, planted = bundle
    for rel in SERVER_LOGS:
        raw = _text(out / rel).splitlines()
        if rel.startswith("decode-1"):
            assert all(CRI_RE.match(ln) for ln in raw)
        else:
            assert not any(CRI_RE.match(ln) for ln in raw)
        last = 0.0
        for ln in _lines(out / rel):
            t = _pfx_epoch(ln)
            if t is None:
                continue
            assert t >= last, (rel, ln[:80])
            last = t


def test_cri_outer_time_matches_inner(bundle):
    out, _ = bundle
    last = ""
    for ln in (out / "decode-1/sglang.log").read_text().splitlines():
        m = CRI_RE.match(ln)
        assert m["ts"] > last  # strictly increasing, as containerd writes them
        last = m["ts"]
        inner = _pfx_epoch(m["line"])
        if inner is not None:
            assert 0 <= _ts(m["ts"]) - inner < 1.01  # the shipper stamps the line a little after sglang does


def test_stats_fields_and_cadence(bundle):
    out, planted = bundle
    pre = [ln for ln in _host_log(out, "prefill-0") if " Prefill batch, " in ln]
    keys = [
        "#new-seq",
        "#new-token",
        "#cached-token",
        "token usage",
        "#running-req",
        "#queue-req",
        "#pending-token",
        "#bootstrap-req",
        "#inflight-req",
        "cuda graph",
        "input throughput (token/s)",
    ]
    for ln in pre:
        body = ln.split("] Prefill batch, ", 1)[1]
        assert [kv.split(": ")[0] for kv in body.split(", ")] == keys
    dkeys = [
        "#running-req",
        "#token",
        "token usage",
        "pre-allocated usage",
        "#prealloc-req",
        "#transfer-req",
        "#retracted-req",
        "cuda graph",
        "gen throughput (token/s)",
        "#queue-req",
    ]
    for host in ("decode-0", "decode-1"):
        per_rank = collections.defaultdict(list)
        for ln in _host_log(out, host):
            if " Decode batch, " in ln:
                body = ln.split("] Decode batch, ", 1)[1]
                assert [kv.split(": ")[0] for kv in body.split(", ")] == dkeys
                per_rank[PREFIX_RE.match(ln)["tags"]].append(_pfx_epoch(ln))
        assert len(per_rank) == 4
        for ts in per_rank.values():
            gaps = [b - a for a, b in zip(ts, ts[1:]) if b - a < 30]
            assert 1.5 <= statistics.median(gaps) <= 4.5


def test_rids_and_rooms(bundle):
    out, _ = bundle
    rid_re = re.compile(r"GenerateReqInput\(rid='([^']+)'.*?bootstrap_host='([^']+)'.*?bootstrap_room=(\d+)")
    by_room = collections.defaultdict(dict)
    health = 0
    for host in ("prefill-0", "decode-0", "decode-1"):
        for ln in _host_log(out, host):
            if "] Receive: obj=" not in ln:
                continue
            rid, bh, room = rid_re.search(ln).groups()
            room = int(room)
            if rid.startswith("HEALTH_CHECK_"):
                health += 1
                assert room == 0 and bh == "2.2.2.2" and re.fullmatch(r"HEALTH_CHECK_[0-9a-f]{32}", rid)
                continue
            assert re.fullmatch(r"[0-9a-f]{32}", rid) and bh == "10.0.0.2"
            assert 10**18 <= room < 2**63
            by_room[room][host if host == "prefill-0" else "decode"] = rid
    assert health > 20
    pairs = [v for v in by_room.values() if len(v) == 2]
    assert len(pairs) == len(by_room) > 100
    assert all(v["prefill-0"] != v["decode"] for v in pairs)


# -- planted incidents ---------------------------------------------------------------------------------


def test_slam(bundle):
    out, planted = bundle
    w = planted["windows"]["slam"]
    lo, hi = _ts(w["start"]), _ts(w["end"])
    rows = []
    for ln in _host_log(out, "prefill-0"):
        if " Prefill batch, " in ln:
            f = dict(kv.split(": ") for kv in ln.split("] Prefill batch, ", 1)[1].split(", "))
            rows.append((_pfx_epoch(ln), int(f["#queue-req"]), int(f["#new-token"])))
    t0 = _ts(planted["t0"])
    inside = [r for r in rows if lo <= r[0] < hi]
    before = [r for r in rows if t0 <= r[0] < lo]
    peak, base = max(q for _, q, _ in inside), max(q for _, q, _ in before)
    assert (peak, base) == (w["peak_queue_req"], w["baseline_peak_queue_req"])
    assert base <= 1 and peak >= 3 * max(base, 1)
    rate_in = sum(n for *_, n in inside) / (hi - lo)
    rate_before = sum(n for *_, n in before) / (lo - t0)
    assert rate_in > 5 * rate_before
    assert rate_in == pytest.approx(w["new_token_rate"], rel=0.02)


def test_abort_storm(bundle):
    out, planted = bundle
    w = planted["windows"]["storm"]
    assert w["host"] == "decode-0" and w["agent_sessions"] == 80
    aborted = {}
    for ln in _host_log(out, "decode-0"):
        if "Aborted by AbortReq." in ln:
            aborted.setdefault(int(ROOM_RE.search(ln).group(1)), _pfx_epoch(ln))
    assert sorted(aborted) == sorted(w["aborted_rooms"])
    assert len(aborted) == w["aborted_requests"] >= 30
    ts = sorted(aborted.values())
    # >= 30 aborts within 5 s (second-resolution prefixes)
    assert max(sum(1 for t in ts if a <= t < a + 5) for a in ts) >= 30
    assert int(_ts(w["start"])) <= ts[0] and ts[-1] <= _ts(w["end"])


DECODE_TIMEOUT_RE = re.compile(
    r"^\[[^\]]+ DP(\d) TP\1 EP\1\] Decode transfer failed for request rank=\1 decode_req\.req\.rid='([0-9a-f]{32})' "
    r"decode_req\.req\.bootstrap_room=(\d+) with exception KVTransferError\(bootstrap_room=\3\): "
    r"Request \3 timed out after 300\.0s in KVPoll\.WaitingForInput$"
)
PREFILL_BOOT_RE = re.compile(
    r"^\[[^\]]+ DP(\d) TP\1 EP\1\] Prefill bootstrap failed for request rank=\1 req\.rid='([0-9a-f]{32})' "
    r"req\.bootstrap_room=(\d+) with exception KVTransferError\(bootstrap_room=\3\): "
    r"Request \3 timed out after 300\.0s in KVPoll\.Bootstrapping$"
)
HEALTH_FAILED_RE = re.compile(
    r"^\[[^\]]+\] Health check failed\. Server couldn't get a response from detokenizer for last 20 seconds\. "
    r"tic start time: (\d\d:\d\d:\d\d)\. last_heartbeat time: (\d\d:\d\d:\d\d)$"
)
PROBE_RE = re.compile(r'^\[[^\]]+\] INFO:     (\d+\.\d+\.\d+\.\d+):\d+ - "GET /health HTTP/1\.1" (\d{3}) ')


def _hms(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%H:%M:%S")


def test_wedge_stops_the_scheduler_not_the_http_side(bundle):
    """decode-1's stats lines stop with requests in flight while probes, health-check errors and new
    requests go on being logged (docs/formats/SGLANG.md, "What a wedge looks like in the log")."""
    out, planted = bundle
    w = planted["windows"]["wedge"]
    assert w["host"] == "decode-1" and w["ended_by"] == "waiting_timeout"
    off = planted["hosts"]["decode-1"]["clock_offset_s"]
    lo, hi = _ts(w["start_host_clock"]), _ts(w["end_host_clock"])
    assert lo - _ts(w["start"]) == pytest.approx(off) and 290 <= hi - lo <= 320
    lines = _lines(out / "decode-1/sglang.log")
    stats = collections.defaultdict(list)
    for ln in lines:
        if " Decode batch, " in ln:
            f = dict(kv.split(": ") for kv in ln.split("] Decode batch, ", 1)[1].split(", "))
            stats[PREFIX_RE.match(ln)["tags"]].append((_pfx_epoch(ln), f))
    # no rank prints a stats line between the wedge's start and end, every rank prints one just
    # before, and that line is the one planted (the in-flight count is read from it)
    in_flight = 0
    for tags, rows in stats.items():
        d = re.search(r"DP(\d)", tags).group(1)
        assert not [t for t, _ in rows if lo < t < hi - 1], tags
        t_last, f = max((r for r in rows if r[0] <= lo), key=lambda r: r[0])
        want = w["last_stats_lines"][d]
        assert t_last == int(_ts(want["ts"]) + off) and lo - 2 <= t_last <= lo
        assert (int(f["#running-req"]), int(f["#transfer-req"]), int(f["#prealloc-req"]), int(f["#queue-req"])) == (
            want["running_req"],
            want["transfer_req"],
            0,
            0,
        )
        in_flight += int(f["#running-req"]) + int(f["#transfer-req"])
        assert min(t for t, _ in rows if t > lo) >= hi - 1
    assert len(stats) == 4 and in_flight == w["in_flight"] >= len(w["stuck_rooms"]) >= 20
    assert w["running_at_start"] == in_flight - len(w["stuck_rooms"]) >= 1
    # the HTTP side lives on: k8s probes answered 503 every few seconds ...
    probes = [(_pfx_epoch(ln), m[1], m[2]) for ln in lines if (m := PROBE_RE.match(ln))]
    h = w["health"]
    bad = [t for t, ip, code in probes if code == "503"]
    assert len(bad) == h["probes_503"] and all(ip == h["probe_ip"] for _, ip, code in probes if code == "503")
    assert all(lo <= t <= hi for t in bad)
    assert max(b - a for a, b in zip(bad, bad[1:])) <= h["probe_interval_s"] + 1
    assert [code for t, _, code in probes if t < lo - 30][-3:] == ["200"] * 3
    assert [code for t, _, code in probes if t > hi + 30][:3] == ["200"] * 3
    # ... the generate-based check fails every 30 s, naming the last heartbeat (the last stats line) ...
    fails = [(_pfx_epoch(ln), m) for ln in lines if (m := HEALTH_FAILED_RE.match(ln))]
    assert len(fails) == h["health_check_failed"] >= 8
    assert fails[0][0] == int(_ts(h["first_failed"]) + off) and fails[-1][0] == int(_ts(h["last_failed"]) + off)
    assert all(29 <= b[0] - a[0] <= 31 for a, b in zip(fails, fails[1:]))
    for t, m in fails:
        assert m[2] == _hms(lo) and abs(_ts(f"2026-11-20T{m[1]}Z") - (t - 20)) <= 1
    # ... and new requests keep arriving
    recv = [_pfx_epoch(ln) for ln in lines if "] Receive: obj=" in ln and "HEALTH_CHECK_" not in ln]
    assert sum(1 for t in recv if lo < t < hi) == w["arrivals_during"] >= 1


def test_wedge_ends_with_the_decode_timeouts_then_the_prefill_bootstrap_timeouts(bundle):
    out, planted = bundle
    w = planted["windows"]["wedge"]
    off = planted["hosts"]["decode-1"]["clock_offset_s"]
    end = _ts(w["end"])
    dec = {
        int(m[3]): (_pfx_epoch(ln) - off, int(m[1]), m[2])
        for ln in _lines(out / "decode-1/sglang.log")
        if (m := DECODE_TIMEOUT_RE.match(ln))
    }
    pre = {
        int(m[3]): (_pfx_epoch(ln), int(m[1]), m[2])
        for ln in _host_log(out, "prefill-0")
        if (m := PREFILL_BOOT_RE.match(ln))
    }
    assert sorted(dec) == sorted(w["stuck_rooms"])
    assert sorted(pre) == sorted(w["bootstrap_timeout_rooms"]) and len(pre) >= 0.75 * len(dec)
    # every stuck room times out on decode right at the end (second-resolution prefixes) ...
    assert all(int(end) - 1 <= t <= end + 2 for t, _, _ in dec.values())
    stuck = {s["room"]: s for s in w["stuck"]}
    assert set(stuck) == set(dec)
    for room, (t, rank, rid) in dec.items():
        s = stuck[room]
        assert (rank, rid, s["outcome"]) == (s["decode_rank"], s["decode_rid"], "waiting_timeout")
        assert abs(t - _ts(s["t_outcome"])) <= 1
        if room in pre:
            tp, prank, prid = pre[room]
            # ... and prefill's bootstrap timeout follows about two seconds later, as a consequence
            assert (prank, prid, s["later_failures"]) == (s["prefill_rank"], s["prefill_rid"], ["bootstrap_timeout"])
            assert 1.5 <= _ts(s["t_later"]) - _ts(s["t_outcome"]) <= 2.5 and 0 <= tp - t <= 4
        else:
            assert s["later_failures"] == []
    text = {h: "\n".join(_host_log(out, h)) for h in ("prefill-0", "decode-1")}
    assert text["decode-1"].count("Some requests fail to receive KV Cache transfer done signal") == 1
    assert text["prefill-0"].count("Some requests timed out when bootstrapping") == 1
    # the trace agrees: prefill never posted the rooms it was still bootstrapping; the others'
    # KV landed but decode never took the last notification; both sides record the end
    tr = _trace(out)
    for room in w["stuck_rooms"]:
        ev = [e for e in tr if e["room"] == room]
        ab = {e["side"]: e["error"] for e in ev if e["event"] == "abort"}
        assert "KVPoll.WaitingForInput" in ab["decode"]
        assert not any(e["side"] == "decode" and e["event"] == "notif" and e.get("is_last") for e in ev)
        if room in pre:
            assert "KVPoll.Bootstrapping" in ab["prefill"] and not any(e["event"] == "post" for e in ev)
        else:
            assert any(e["side"] == "prefill" and e["event"] == "done" and e.get("is_last") for e in ev)
    # the stuck requests' clients got the decode-side reason in their 500 bodies
    errs = {e["room"]: e for e in planted["error_replies"]}
    assert all(errs[r]["reason"] == "timeout" and "KVPoll.WaitingForInput" in errs[r]["error"] for r in dec)


def test_clock_offset_recoverable_from_trace(bundle):
    out, planted = bundle
    off = planted["clock_offset"]
    assert off == {**off, "host": "decode-1", "reference_host": "prefill-0", "offset_s": 2.5}
    tr = _trace(out)
    done = {
        (e["room"], e["kind"], e.get("chunk")): e["ts"] for e in tr if e["event"] == "done" and e["side"] == "prefill"
    }
    for host, expect in (("decode-0", 0.0), ("decode-1", 2.5)):
        d = [
            e["ts"] - done[(e["room"], e["kind"], e.get("chunk"))]
            for e in tr
            if e["host"] == host and e["event"] == "notif" and (e["room"], e["kind"], e.get("chunk")) in done
        ]
        assert len(d) > 50
        assert statistics.median(d) == pytest.approx(expect, abs=0.01)
        assert planted["hosts"][host]["clock_offset_s"] == expect


def test_checksum_mismatch_rooms(bundle):
    out, planted = bundle
    tr = _trace(out)
    groups = collections.defaultdict(dict)
    for e in tr:
        if e["event"] == "checksum":
            groups[(e["room"], e["kind"], e.get("chunk"))][e["side"]] = int(e["checksum"].removeprefix("0x"), 16)
    bad = {k[0] for k, v in groups.items() if len(v) == 2 and v["prefill"] != v["decode"]}
    rooms = planted["checksum_mismatch_rooms"]
    assert bad == {r["room"] for r in rooms} and 2 <= len(bad) <= 3
    assert sum(1 for v in groups.values() if len(v) == 2) > 100  # plenty of verified groups
    logs = {h: "\n".join(_host_log(out, h)) for h in ("decode-0", "decode-1")}
    for r in rooms:
        g = groups[(r["room"], "index_k", None)]
        assert g["prefill"] == int(r["prefill_checksum"], 16) and g["decode"] == int(r["decode_checksum"], 16)
        line = (
            f"KV checksum mismatch req={r['decode_rid']} bootstrap_room={r['room']} "
            f"expected=0x{r['prefill_checksum']} got=0x{r['decode_checksum']}"
        )
        assert line in logs[r["decode_host"]]
    corrupted_rooms = {c["room"]: c for c in planted["corrupted_replies"]}
    assert all(corrupted_rooms[r["room"]]["class"] == "incoherent" for r in rooms)


def test_transfer_failures_and_context_corruption(bundle):
    out, planted = bundle
    w = planted["windows"]["transfer_failures"]
    pre = _host_log(out, "prefill-0")
    dec = _host_log(out, w["host"])
    tr = _trace(out)
    for room in w["rooms"]:
        assert any(
            f"Prefill transfer failed for request rank={w['prefill_dp_rank']} " in ln
            and f"bootstrap_room={room} " in ln
            for ln in pre
        )
        assert any("Decode transfer failed" in ln and f"bootstrap_room={room} " in ln for ln in dec)
        assert any(e["room"] == room and e["event"] == "fail" and e["status"] == "NIXL_ERR_BACKEND" for e in tr)
    i = next(i for i, ln in enumerate(pre) if "Unexpected transfer worker error for room" in ln)
    assert pre[i].endswith(f"room {w['worker_error_room']}") and pre[i + 1].startswith("Traceback")
    assert sum(1 for ln in pre if "UCX  ERROR" in ln) == len(w["rooms"])
    c = planted["context_corruption"]
    assert any(
        f"Context corruption detected: Request {c['rid']} (bootstrap_room={c['room']}) received metadata from "
        f"bootstrap_room={c['metadata_room']}. Metadata buffer index: 17." in ln
        for ln in _host_log(out, c["host"])
    )
    assert c["metadata_room"] in w["rooms"]


# -- transcripts -----------------------------------------------------------------------------------


def test_reply_links_match_server_finish_lines(bundle):
    out, planted = bundle
    finish = {}
    recv = {}
    meta_re = re.compile(r"'id': '([0-9a-f]{32})'.*'prompt_tokens': (\d+),.*'completion_tokens': (\d+),")
    for host in ("decode-0", "decode-1"):
        off = planted["hosts"][host]["clock_offset_s"]
        for ln in _host_log(out, host):
            if "] Finish: obj=" in ln and (m := meta_re.search(ln)):
                finish[m.group(1)] = (int(m.group(2)), int(m.group(3)), _pfx_epoch(ln) - off)
            elif "] Receive: obj=" in ln:
                recv[re.search(r"rid='([^']+)'", ln).group(1)] = _pfx_epoch(ln) - off
    replies = _replies(out)
    agent_text = "".join(p.read_text() for p in (out / "agent").iterdir())
    # a reply may quote another request's log line to the user; that names the request, it is not
    # the reply's own id, so the quotes are left out of what must carry no rid
    for h in planted["hard_negatives"]:
        if h["kind"] == "quoted_log":
            quote = json.dumps(replies[h["reply_id"]]["content"], ensure_ascii=False)[1:-1]
            assert quote in agent_text
            agent_text = agent_text.replace(quote, "")
    assert len(planted["reply_links"]) == planted["replies"]["total"] == len(replies)
    for lk in planted["reply_links"]:
        rep = replies[lk["reply_id"]]
        assert lk["decode_rid"] not in agent_text and lk["prefill_rid"] not in agent_text
        t_req = _ts(lk["t_request"])
        assert t_req - 2 <= recv[lk["decode_rid"]] <= t_req + 2
        if lk["status"] != 200:
            assert rep["status"] == 500
            continue
        p, c, t_fin = finish[lk["decode_rid"]]
        assert (p, c) == (lk["prompt_tokens"], lk["completion_tokens"])
        assert t_fin - 2 <= _ts(lk["t_response"]) <= t_fin + 2
        if lk["source"] == "proxy":
            assert (rep["usage"]["prompt_tokens"], rep["usage"]["completion_tokens"]) == (p, c)
        else:
            tk = rep["tokens"]
            assert (tk["input"] + tk["cache"]["read"], tk["output"] + tk["reasoning"]) == (p, c)
            assert rep["info"]["time"]["created"] / 1000 <= t_req + 0.01


def _repeats(text: str) -> bool:
    return bool(re.search(r"(.{1,32}?)\1{7,}", text, re.S))


def test_corrupted_replies_and_hard_negatives(bundle):
    out, planted = bundle
    replies = _replies(out)
    corrupted = {c["reply_id"]: c for c in planted["corrupted_replies"]}
    hard = {h["reply_id"]: h for h in planted["hard_negatives"]}
    assert {c["class"] for c in corrupted.values()} == {"parse_leak", "incoherent"}
    assert all(c["signatures"] for c in corrupted.values())
    assert {h["kind"] for h in hard.values()} == {"fenced_markup", "chinese", "repeated_table_rows", "quoted_log"}
    for rid, c in corrupted.items():
        rep = replies[rid]
        text = rep["content"] + rep["reasoning"]
        assert rep["status"] == 200 and not rep["calls"]
        if c["class"] == "parse_leak":
            where = rep["reasoning"] if c["subtype"] == "dsml_in_reasoning" else rep["content"]
            assert DSML in where and "|DSML|" not in where  # exact U+FF5C, never the ASCII look-alike
            eos = "<\uff5cend\u2581of\u2581sentence\uff5c>"
            assert where.endswith(eos) if c["subtype"] == "dsml_with_eos" else "\u2581" not in where
        elif c["subtype"] == "repetition_loop":
            assert _repeats(rep["content"]) and len(rep["content"]) >= 200
        elif c["subtype"] == "script_switch":
            assert re.search(r"[A-Za-z]+ [\u4e00-\u9fff]{2,} [A-Za-z]+", rep["content"])
        else:
            toks = rep["content"].split()
            assert sum(1 for t in toks if len(t) <= 2) / len(toks) >= 0.4
        assert DSML not in text or c["class"] == "parse_leak"
    for rid, h in hard.items():
        rep = replies[rid]
        if h["kind"] == "fenced_markup":
            outside = re.sub(r"```.*?```", "", rep["content"], flags=re.S)
            assert DSML in rep["content"] and DSML not in outside
        elif h["kind"] == "chinese":
            assert len(CJK.findall(rep["content"])) > 50
        elif h["kind"] == "quoted_log":
            _check_quoted_log(out, rep, h)
        else:
            rows = [ln for ln in rep["content"].splitlines() if ln.startswith("|")]
            most = collections.Counter(rows).most_common(1)[0][1]
            assert 2 <= most < 5
    # every other successful reply is clean: no markup, no loops, no CJK outside the Chinese session
    zh_files = {h["file"] for h in hard.values() if h["kind"] == "chinese"}
    for lk in planted["reply_links"]:
        rid = lk["reply_id"]
        if rid in corrupted or rid in hard or lk["status"] != 200:
            continue
        rep = replies[rid]
        assert DSML not in rep["content"] + rep["reasoning"]
        assert not _repeats(rep["content"])
        if lk["file"] not in zh_files:
            assert not CJK.search(rep["content"])


def _check_quoted_log(out: pathlib.Path, rep: dict, h: dict) -> None:
    """The quoted lines are the incident's own, verbatim: a `>` quote of a line's message, and the
    fenced lines whole (prefix included), in the order the log has them."""
    text = rep["content"]
    assert rep["status"] == 200 and not rep["calls"] and h["source"] == "opencode"
    quotes = [q for q in h["quoted"] if q["how"] == "quote"]
    fenced = [q for q in h["quoted"] if q["how"] == "fence"]
    assert len(quotes) + len(fenced) == len(h["quoted"]) and len(quotes) >= 1
    logs = {q["file"]: _lines(out / q["file"]) for q in h["quoted"]}
    assert "\n".join(f"> {q['text']}" for q in quotes) in text
    for q in quotes:
        assert any(ln.endswith("] " + q["text"]) for ln in logs[q["file"]])
        assert q["text"].startswith("Decode transfer failed for request rank=1 ")
    fences = [f.splitlines() for f in re.findall(r"```\n(.*?)\n```", text, re.S)]
    assert len(fences) == len({q["file"] for q in fenced})
    for q in fenced:
        assert any(q["text"] in f for f in fences) and q["text"] in logs[q["file"]]
    for f in {q["file"] for q in fenced}:
        idx = [logs[f].index(q["text"]) for q in fenced if q["file"] == f]
        assert idx == sorted(idx)
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    assert DSML not in text and not CJK.search(text) and not _repeats(outside)


def test_the_sample_quotes_its_wedge_and_storm(bundle):
    out, planted = bundle
    q = [h for h in planted["hard_negatives"] if h["kind"] == "quoted_log"]
    assert len(q) == 1
    if planted["generator"]["seed"] == 7:
        # the committed sample's reply comes after the wedge and the link fault: it fences an excerpt
        # of each
        how = [(x["file"], x["how"]) for x in q[0]["quoted"]]
        assert how[:7] == [("decode-0/sglang.log.1.gz", "quote")] * 3 + [("decode-1/sglang.log", "fence")] * 4
        assert set(how[7:]) == {("prefill-0/sglang.log", "fence")}
        fenced = "\n".join(x["text"] for x in q[0]["quoted"][3:])
        for shape in (
            "Decode batch, ",
            "Health check failed. ",
            '"GET /health HTTP/1.1" 503 Service Unavailable',
            "KVPoll.WaitingForInput",
            "Unexpected transfer worker error for room ",
            "Traceback (most recent",
            "NIXL_ERR_BACKEND",
        ):
            assert shape in fenced


def test_corruption_rates(bundle):
    out, planted = bundle
    r = planted["corruption_rates"]
    assert r["baseline"]["rate"] < 0.12 and r["elevated"]["rate"] > 0.2
    assert r["elevated"]["rate"] > 3 * r["baseline"]["rate"]
    assert r["baseline"]["corrupted"] + r["elevated"]["corrupted"] == len(planted["corrupted_replies"])
    wins = planted["windows"]["elevated_corruption"]
    hosts = {w["host"] for w in wins}
    assert {"*", "decode-0"} <= hosts
    n_el = sum(1 for c in planted["corrupted_replies"] if c["elevated"])
    assert n_el == r["elevated"]["corrupted"]


def test_error_replies_carry_the_transfer_failure(bundle):
    out, planted = bundle
    replies = _replies(out)
    errs = planted["error_replies"]
    reasons = {e["reason"] for e in errs}
    assert {"timeout", "fail", "ctxcorrupt"} <= reasons
    for e in errs:
        rep = replies[e["reply_id"]]
        assert rep["status"] == 500
        if e["source"] == "proxy":
            assert rep["body"]["code"] == 500 and rep["body"]["message"] == e["error"]
        else:
            assert rep["info"]["error"]["data"]["statusCode"] == 500
        assert re.search(r"KVTransferError|bootstrap_room mismatch|KVPoll\.WaitingForInput", e["error"])


def test_trace_schema(bundle):
    out, planted = bundle
    for f in sorted((out / "trace").glob("*.jsonl")):
        info = planted["files"][f"trace/{f.name}"]
        lines = f.read_text().splitlines()
        assert len(lines) == info["lines"]
        ev = collections.Counter()
        rooms = set()
        for ln in lines:
            o = json.loads(ln)
            rooms.add(int(o["room"]))
            assert {"ts", "host", "side", "engine_rank", "room", "kind", "event"} <= set(o)
            assert o["host"] == info["host"] and o["pid"] == info["pid"] and f"-{o['pid']}-" in f.name
            if o["host"] == "decode-1":
                assert isinstance(o["ts"], str) and isinstance(o["room"], str)
            else:
                assert isinstance(o["ts"], float) and isinstance(o["room"], int)
            assert 0 <= int(o["room"]) < 2**63
            if o["event"] == "checksum":
                int(o["checksum"], 16)
            ev[o["event"]] += 1
        assert dict(ev) == info["events"] and len(rooms) == info["rooms"]


def test_dsml_code_points_are_exact(bundle):
    out, _ = bundle
    raw = (out / "agent/proxy.jsonl").read_bytes()
    assert "\uff5cDSML\uff5c".encode() in raw  # written as UTF-8, not \\u escapes
    assert b"|DSML|" not in raw
