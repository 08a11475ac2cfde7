"""SGLang's own PD warnings are warnings (docs/formats/SGLANG.md, "Warnings about requests in trouble"): the warn-once timeout texts,
printed once per rank, cut or glued behind other output, and the other lines a PD server prints
when its requests are in trouble. Each is an `events` row with severity warning or above and a
normalised reason; the host-level ones name no request (NULL room, NULL rid)."""

from __future__ import annotations

import re

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics.core import schema
from forensics.core.inputs import Scan
from forensics.parsers import native, server_log
from tests.helpers import parse_text

BOOT = (
    "Some requests timed out when bootstrapping, which means prefill instances fail to receive the KV indices "
    "from the decode instance of this request. If a greater mean TTFT is acceptable, you can 'export "
    "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=600' (10 minutes) to relax the timeout condition. "
)
WAIT = (
    "Some requests fail to receive KV Cache transfer done signal after bootstrapping. If a greater mean TTFT "
    "is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to relax the "
    "timeout condition. "
)
ROOM = 3318809221076541172
RID = "0c4f7e2a9b1d4c3e8f6a5b2d1e0c9f8a"


def _events(text: str, **kw) -> pl.DataFrame:
    tables, ctx = parse_text(server_log, text, **kw)
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    return tables["events"]


def test_the_bootstrap_warning_of_every_dp_rank_is_one_warning_each():
    """Prefill prints it once per DP rank, all in the same second, then the per-request failures."""
    text = "".join(f"[2026-03-02 08:15:40 DP{r} TP{r} EP{r}] {BOOT}\n" for r in range(8))
    text += (
        f"[2026-03-02 08:15:40 DP3 TP3 EP3] Prefill transfer failed for request rank=3 req.rid='{RID}' "
        f"req.bootstrap_room={ROOM} with exception KVTransferError(bootstrap_room={ROOM}): Request {ROOM} timed "
        "out after 300.0s in KVPoll.Bootstrapping\n"
    )
    ev = _events(text, name="prefill.log")
    warn = ev.filter(pl.col("kind") == "pd_timeout")
    assert warn["dp_rank"].to_list() == list(range(8))
    assert set(warn["severity"]) == {"warning"} and set(warn["reason"]) == {"bootstrap_timeout"}
    assert warn["bootstrap_room"].null_count() == 8 and warn["rid"].null_count() == 8
    # the request's own line keeps its kind, room and rid
    fail = ev.filter(pl.col("kind") == "transfer_failed").row(0, named=True)
    assert (fail["reason"], fail["bootstrap_room"], fail["rid"]) == ("bootstrap_timeout", ROOM, RID)


@pytest.mark.parametrize("cut", [len("Some requests fail to receive KV"), 60, len(WAIT) - 30, len(WAIT)])
def test_a_cut_waiting_warning_still_says_which_timeout(cut):
    text = f"[2026-03-02 08:15:41 DP0 TP0] {WAIT[:cut]}"  # the excerpt ends mid-line
    row = _events(text, name="decode.log").row(0, named=True)
    assert (row["kind"], row["severity"], row["reason"]) == ("pd_timeout", "warning", "waiting_timeout")
    assert row["bootstrap_room"] is None and row["rid"] is None


@pytest.mark.parametrize(
    "line, prefix",
    [
        ("..........." + WAIT, "..........."),  # unittest dots, no sglang prefix
        (".[2026-03-02 08:15:41 TP2] " + WAIT, "."),
        ("100%|##########| 32/32 [00:04<00:00,  7.61it/s][2026-03-02 08:15:41 TP2] " + WAIT, None),
        ("2026-03-02T08:15:41.120034Z stdout F [2026-03-02 08:15:41 DP1 TP1] " + WAIT, None),
    ],
    ids=["dots", "dots_before_prefix", "tqdm_bar", "k8s_cri"],
)
def test_a_glued_warning_is_a_warning(line, prefix):
    ev = _events("[2026-03-02 08:15:40 TP0] Decode batch, #running-req: 3, #token: 900\n" + line + "\n")
    row = ev.filter(pl.col("kind") == "pd_timeout").row(0, named=True)
    assert (row["severity"], row["reason"], row["source"]) == ("warning", "waiting_timeout", "sglang")
    assert row["message"] == WAIT.rstrip()
    if prefix is not None:
        assert row["prefix"] == prefix


HOST_WARNINGS = [
    ("[2026-03-02 08:16:02 TP0] Attempting to reconnect to 10.20.0.7:8998...", "heartbeat_failed", "heartbeat"),
    (
        "[2026-03-02 08:16:04 TP0] Lost connection with prefill instance (bootstrap_addr: 10.20.0.7:8998), "
        "14 requests affected",
        "bootstrap_failed",
        "node_failure",
    ),
    ("[2026-03-02 08:16:05 TP4] Session 10.20.0.7:16211 failed.", "transfer_failed", "transport"),
    (
        "[2026-03-02 08:16:06 TP1] Error fetching prefill parallel info from bootstrap: HTTPConnectionPool("
        "host='10.20.0.7', port=8998): Max retries exceeded with url: /route (Caused by NewConnectionError("
        "'Failed to establish a new connection: [Errno 111] Connection refused'))",
        "bootstrap_failed",
        "bootstrap_unreachable",
    ),
    (
        "[2026-03-02 08:16:07 TP0] Prefill register attempt 3/5 failed: 503 Service Unavailable",
        "bootstrap_failed",
        "bootstrap_register",
    ),
    (
        "[2026-03-02 08:16:08 TP0] Could not fetch prefill parallel info from 10.20.0.7:8998 after 10 attempts",
        "bootstrap_failed",
        "bootstrap_info",
    ),
    ("[2026-03-02 08:16:09 TP2] NIXL peer 3a9f disconnected", "peer_disconnect", "remote_disconnect"),
    (
        "[2026-03-02 08:16:10 DP1 TP1] Eviction insufficient: needed 4096 tokens, available 512 after evicting 64",
        "kv_pool_full",
        "kv_pool_full",
    ),
    (
        "[2026-03-02 08:16:11 DP1 TP1] KV cache pool is full. Retract requests. #retracted_reqs: 4, "
        "#new_token_ratio: 0.3000 -> 0.6000",
        "retract",
        "kv_pool_full",
    ),
    ("[2026-03-02 08:16:12] Mooncake Transfer Engine initialization failed.", "mooncake_error", "engine_init"),
    ("[2026-03-02 08:16:13 TP0] Incomplete ABORT_ACK received", "abort", "aborted"),
    ("[2026-03-02 08:16:14 TP0] Request waiting timeout reached.", "abort", "request_timeout"),
    (
        "[1772439374.552101] [node-d0:7711 :1]         ud_ep.c:278  UCX  ERROR   ud_ep 0x55d0: unhandled timeout "
        "error: Endpoint timeout",
        "ucx_error",
        "transport",
    ),
    (
        "[1772439374.552101] [node-d0:7711 :0]    rc_mlx5_iface.c:178 UCX  ERROR   ep 0x7f: Connection reset by "
        "remote peer",
        "ucx_error",
        "transport",
    ),
]


@pytest.mark.parametrize("line, kind, reason", HOST_WARNINGS, ids=[k + ":" + r for _, k, r in HOST_WARNINGS])
def test_host_level_pd_warnings_have_a_kind_a_severity_and_a_reason(line, kind, reason):
    row = _events(line + "\n").row(0, named=True)
    assert (row["kind"], row["reason"]) == (kind, reason)
    assert row["severity"] in ("warning", "error", "fatal")
    assert row["bootstrap_room"] is None and row["rid"] is None


@pytest.mark.parametrize(
    "line",
    [
        "[2026-03-02 08:17:00] Some requests were served from the prefix cache; none timed out",
        "[2026-03-02 08:17:00 TP0] Request timed out waiting for a free slot is retried by the client, info only",
        "[2026-03-02 08:17:00] client http read timed out after 30s, reconnecting",
        "[2026-03-02 08:17:00 TP0] Some requests fail fast when the queue is full (max_queued_requests=512)",
    ],
)
def test_lines_that_merely_mention_a_timeout_stay_info(line):
    row = _events(line + "\n").row(0, named=True)
    assert (row["kind"], row["severity"], row["reason"]) == ("log", "info", None)


def test_a_warning_quoted_in_a_traceback_is_not_a_warning():
    """The source line of a frame quotes the text: it is part of the traceback, not a line of its own."""
    text = (
        "[2026-03-02 08:17:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/srt/disaggregation/mooncake/conn.py", line 1701, in poll\n'
        '    "Some requests timed out when bootstrapping, "\n'
        "RuntimeError: boom\n"
    )
    ev = _events(text)
    assert ev["kind"].to_list() == ["exception"]


def _both(data: bytes, monkeypatch, name: str = "pd.log", scan: Scan | None = None) -> dict:
    out = []
    for flag in ("0", "1"):
        monkeypatch.setenv("FORENSICS_NATIVE", flag)
        tables, ctx = parse_text(server_log, data, name=name, **({"scan": scan} if scan else {}))
        out.append(({t: schema.conform(t, df) for t, df in tables.items()}, (ctx.lines, ctx.parsed_lines)))
    (want, wa), (got, ga) = out
    assert wa == ga and sorted(want) == sorted(got)
    for t in want:
        assert_frame_equal(got[t], want[t], check_exact=True)
    return got


@pytest.mark.skipif(not native.enabled(), reason="native scanner not built (no C compiler at install)")
@pytest.mark.parametrize("block_bytes", [None, 400])
def test_both_engines_agree_on_pd_warnings(monkeypatch, block_bytes):
    text = "".join(f"[2026-03-02 08:15:40 DP{r} TP{r}] {BOOT}\n" for r in range(4))
    text += "[2026-03-02 08:15:41 DP0 TP0] Decode batch, #running-req: 3, #token: 900, #queue-req: 0\n"
    text += "...." + WAIT[:70] + "\n" + "\n".join(line for line, _, _ in HOST_WARNINGS) + "\n"
    text += "[2026-03-02 08:17:00] Some requests were served from the prefix cache; none timed out\n"
    scan = Scan(block_bytes=block_bytes, group_blocks=3) if block_bytes else None
    got = _both(text.encode(), monkeypatch, scan=scan)
    assert got["events"].filter(pl.col("kind") == "pd_timeout").height == 5


# the texts of PD trouble in the mooncake incident (docs/formats/SGLANG.md, "PD transfer and bootstrap failures" and "What real dumps carry")
PD_TROUBLE = re.compile(
    r"Some requests (?:timed out|fail to receive)|transfer failed|bootstrap failed|Session \S+ failed"
    r"|Error fetching prefill|Could not fetch|Attempting to reconnect|Lost connection|might be dead|is not alive"
)


def test_pd_warnings_of_the_real_mooncake_incident_are_warnings(real_logs):
    folder = real_logs / "mooncake_incident"
    if not folder.is_dir():
        pytest.skip("real_logs/mooncake_incident is not present")
    seen = 0
    for path in sorted(folder.glob("*.log")):
        tables, _ = parse_text(server_log, path.read_bytes(), name=path.name)
        if "events" not in tables:  # a file of stats lines only
            continue
        ev = tables["events"].filter(pl.col("message").str.contains(PD_TROUBLE.pattern))
        for row in ev.iter_rows(named=True):
            seen += 1
            where = (path.name, row["line_no"])
            assert row["severity"] in ("warning", "error", "fatal"), where
            assert row["reason"] not in (None, "other"), where
            if not re.search(r"bootstrap_room|rid=", row["message"]):
                # a line that names no request is about the host: no room or rid is lent to it
                assert row["bootstrap_room"] is None and row["rid"] is None, where
    assert seen >= 50
