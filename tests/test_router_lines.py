"""The sgl-router's lines, in a request's span or not (docs/formats/OTHER_ENGINES.md, "sgl-router"):
a router 5xx or a "no available workers" is a failed request of the span's request id, joined with
the servers' lines where the client's id is the servers' rid; outside a span it is a signal of the
router's host. A server's 5xx access line is a signal of its own. Written from the router's tracing
format and uvicorn's access format, not from our generator."""

from __future__ import annotations

import json

from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import sql

SPAN = 'http_request{{method=POST uri=/v1/chat/completions version=HTTP/1.1 module="smg" request_id="{rid}"{more}}}'
PD = "smg::routers::http::pd_router: src/routers/http/pd_router.rs:590: "


def _line(t: str, level: str, rid: str, target: str, msg: str, more: str = "") -> str:
    return f"2026-02-26 {t} {level:>5} {SPAN.format(rid=rid, more=more)}: {target}{msg}\n"


# the client sent x-request-id: the router's request id is the servers' rid
SHARED = "a6f0c2d4e8b14f3aa1c2d3e4f5a6b7c8"
ROUTER = (
    _line("13:00:12", "INFO", SHARED, "smg::request: src/middleware.rs:310: ", "started processing request")
    + _line(
        "13:00:14",
        "ERROR",
        SHARED,
        PD,
        "Decode server returned error status decode_url=http://10.0.0.12:30001 status=500 Internal Server Error",
    )
    + _line(
        "13:00:14",
        "ERROR",
        SHARED,
        "smg::response: src/middleware.rs:340: ",
        "request failed with server error",
        ' status_code=500 latency="2.104s"',
    )
    # the router's own id: one request, two failure lines
    + _line("13:01:02", "INFO", "chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D", "smg::request: src/middleware.rs:310: ", "started")
    + _line(
        "13:01:03",
        "ERROR",
        "chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D",
        PD,
        "Failed to select PD pair error=No prefill workers available. Please check if prefill servers are "
        "configured and healthy.",
    )
    + _line(
        "13:01:03",
        "ERROR",
        "chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D",
        "smg::response: src/middleware.rs:340: ",
        "request failed with server error",
        " status_code=503",
    )
    # a 4xx is the client's fault: no failure
    + _line(
        "13:01:05",
        " WARN",
        "chatcmpl-Zz1",
        "smg::response: src/middleware.rs:336: ",
        "request failed with client error",
        " status_code=400",
    )
    # outside a span: a signal of the router's host
    + "2026-02-26 13:01:09 ERROR smg::routers::http::pd_router: src/routers/http/pd_router.rs:612: Prefill server "
    "returned error status prefill_url=http://10.0.0.8:30000 status=503 body=overloaded\n"
)
ROOM = 7718293045561728391
DECODE = (
    "[2026-02-26 13:00:10 DP0 TP0] Decode batch, #running-req: 4, #token: 9000, token usage: 0.10, "
    "gen throughput (token/s): 310.00, #queue-req: 0\n"
    f"[2026-02-26 13:00:13 DP0 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='{SHARED}' "
    f"decode_req.req.bootstrap_room={ROOM} with exception KVTransferError(bootstrap_room={ROOM}): "
    "Failed to get kvcache from prefill instance, it might be dead\n"
    f"[2026-02-26 13:00:13 DP1 TP1] Decode transfer failed for request rank=1 decode_req.req.rid='{SHARED}' "
    f"decode_req.req.bootstrap_room={ROOM} with exception KVTransferError(bootstrap_room={ROOM}): "
    "Failed to get kvcache from prefill instance, it might be dead\n"
    '[2026-02-26 13:00:14] INFO:     10.0.0.2:51234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
    '[2026-02-26 13:00:15] INFO:     10.0.0.2:51236 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
)


def _ingest(tmp_path) -> str:
    dump = tmp_path / "dump"
    (dump / "gw").mkdir(parents=True)
    (dump / "decode-0").mkdir(parents=True)
    (dump / "gw" / "out.log").write_text(ROUTER)  # no role in its name: its lines say router
    (dump / "decode-0" / "sglang.log").write_text(DECODE)
    store = str(tmp_path / "store")
    r = CliRunner().invoke(main, ["ingest", str(dump), "--store", store])
    assert r.exit_code == 0, r.output
    return store


def test_router_failures_are_failed_requests_joined_by_request_id(tmp_path):
    store = _ingest(tmp_path)
    assert sql(store, "SELECT count(*) FROM unparsed").item() == 0
    assert sql(store, "SELECT DISTINCT role FROM events WHERE host = 'gw'").rows() == [("router",)]
    got = sql(
        store,
        "SELECT request_key, hosts, sides, outcome, first_host, first_reason, n_lines::INT, n_hosts::INT "
        "FROM failed_requests ORDER BY request_key",
    ).rows()
    assert got == [
        # the router's own id: its two lines are one request; the client's id joins the router's two lines
        # to the decode ranks' room, whose first failure is the decode's
        ("rid:chatcmpl-Q2w8Rk3mZt7Yp1Lx9Vb4Nc6D", ["gw"], "unknown", "no_workers", "gw", "no_workers", 2, 1),
        (f"room:{ROOM}", ["decode-0", "gw"], "decode", "transfer_failed", "decode-0", "node_failure", 4, 2),
    ]


def test_router_lines_outside_a_span_and_server_5xx_answers_are_signals(tmp_path):
    store = _ingest(tmp_path)
    got = sql(store, "SELECT host, kind, sum(n_lines)::INT FROM failure_signals GROUP BY ALL ORDER BY 1, 2").rows()
    assert got == [("decode-0", "http_access", 1), ("gw", "router_failure", 1)]
    assert sql(store, "SELECT reason FROM failure_signals WHERE kind = 'http_access'").item() == "server_error"
    peer = sql(store, "SELECT peer, http_status FROM events WHERE kind = 'router_failure' AND rid IS NULL").rows()
    assert peer == [("http://10.0.0.8:30000", 503)]
    doc = json.loads(CliRunner().invoke(main, ["summary", "--store", store, "--format", "json"]).stdout)
    assert doc["failures"]["requests"] == 2 and doc["failures"]["signals"] == 2


def _pair(tmp_path, router: str, decode: str) -> str:
    dump = tmp_path / "dump"
    for host, text in (("gw", router), ("decode-0", decode)):
        (dump / host).mkdir(parents=True, exist_ok=True)
        (dump / host / "out.log").write_text(text)
    store = str(tmp_path / "store")
    r = CliRunner().invoke(main, ["ingest", str(dump), "--store", store])
    assert r.exit_code == 0, r.output
    return store


def _decode_failure(t: str, rid: str, room: int) -> str:
    return (
        f"[2026-02-26 {t} DP0 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='{rid}' "
        f"decode_req.req.bootstrap_room={room} with exception KVTransferError(bootstrap_room={room}): "
        "Failed to get kvcache from prefill instance, it might be dead\n"
    )


# the router made its own id (no x-request-id from the client): no server logs it
OWN_ID = _line(
    "13:00:14",
    "ERROR",
    "chatcmpl-Own1",
    PD,
    "Decode server returned error status decode_url=http://10.0.0.12:30001 status=500",
)


def test_a_router_failure_without_the_servers_id_joins_the_one_failed_request_of_its_second(tmp_path):
    store = _pair(tmp_path, OWN_ID, _decode_failure("13:00:13", "b7" * 16, ROOM))
    got = sql(store, "SELECT request_key, hosts, first_host, n_lines::INT FROM failed_requests").rows()
    assert got == [(f"room:{ROOM}", ["decode-0", "gw"], "decode-0", 2)]


def test_two_failed_requests_in_that_second_leave_the_router_failure_its_own(tmp_path):
    decode = _decode_failure("13:00:13", "b7" * 16, ROOM) + _decode_failure("13:00:13", "c8" * 16, ROOM + 1)
    store = _pair(tmp_path, OWN_ID, decode)
    keys = sql(store, "SELECT request_key FROM failed_requests ORDER BY 1").rows()
    assert keys == [("rid:chatcmpl-Own1",), (f"room:{ROOM}",), (f"room:{ROOM + 1}",)]


def test_a_workers_failed_health_check_is_a_signal_naming_the_worker(tmp_path):
    router = (
        "2025-08-31 07:32:09  WARN sglang_router_rs::core::worker: src/core/worker.rs:402: "
        "Worker http://10.0.0.9:30000 health check failed\n"
    )
    store = _pair(tmp_path, router, _decode_failure("13:00:13", "b7" * 16, ROOM))
    got = sql(store, "SELECT host, kind, severity, reason FROM failure_signals").rows()
    assert got == [("gw", "health_check_failed", "warning", "health_check")]
    assert sql(store, "SELECT peer FROM events WHERE kind = 'health_check_failed'").item() == "http://10.0.0.9:30000"
