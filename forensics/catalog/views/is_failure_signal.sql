-- name: is_failure_signal
-- kind: macro
-- description: whether a server-log line that names no request (no room, no rid) says a host was in
--   trouble: a failure kind at any severity, one of the warnings PD servers print about requests in
--   trouble, or any error or fatal line; used by failure_signals and the timeline
-- inputs: none
-- parameters:
--   kind VARCHAR: the line's event kind (events.kind)
--   severity VARCHAR: its severity (events.severity)
-- returns: BOOLEAN: true for a failure signal; false for ordinary info and for warnings of other
--   kinds (uvicorn's `Invalid HTTP request received.`, deprecation notes), which say nothing of requests

-- The warning kinds are docs/formats/SGLANG.md, "Warnings about requests in trouble": the PD
-- timeout warn-once lines, lost heartbeats, peers gone, a full KV pool, retractions, refusals;
-- and the transfer libraries' warnings of docs/formats/NIXL.md, "Transport warnings".
CREATE OR REPLACE MACRO is_failure_signal(kind, severity) AS
    kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected', 'checksum_mismatch',
             'watchdog_timeout', 'health_check_failed', 'collective_timeout', 'exception', 'nixl_error',
             'ucx_error', 'mooncake_error', 'crash', 'router_failure',
             'pd_timeout', 'heartbeat_failed', 'peer_disconnect', 'kv_pool_full', 'retract', 'request_rejected',
             'transport_warning', 'hang_dump')
    OR severity IN ('error', 'fatal');
