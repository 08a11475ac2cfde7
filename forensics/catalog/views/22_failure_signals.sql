-- name: failure_signals
-- description: failure lines of the server logs that name no request (no room, no rid): a host's
--   `Session <ip:port> failed.`, bootstrap info fetch errors, PD timeout warnings, transport errors,
--   crashes; one row per host, kind, severity, reason and minute, every rank's copy counted. They say
--   something went wrong on the host, never which request: reports count them apart from requests.
-- inputs: events (clock-corrected)
-- parameters: none
-- columns:
--   minute: start of the minute (UTC, corrected) of the lines; NULL for lines without a time
--   host: host that logged them
--   role: role of the host's file: 'prefill' | 'decode' | 'unified' | 'unknown'
--   kind: event kind (transfer_failed, bootstrap_failed, crash, health_check_failed, log, ...)
--   severity: 'warning' | 'error' | 'fatal' (or 'info' for a failure kind logged at info)
--   reason: normalised reason (events.reason), else the kind
--   n_lines: lines of the group
--   n_ranks: distinct rank tags among them (lines without any count as one)
--   t_first: time of the first line
--   t_last: time of the last line
--   first_message: text of the first line
CREATE OR REPLACE VIEW failure_signals AS
SELECT
    time_bucket(INTERVAL 1 minute, ts) AS minute,
    host,
    role,
    kind,
    severity,
    coalesce(reason, kind) AS reason,
    count(*) AS n_lines,
    count(DISTINCT {'dp': dp_rank, 'pp': pp_rank, 'cp': attn_cp_rank, 'moe': moe_dp_rank, 'tp': tp_rank,
                    'ep': ep_rank}) AS n_ranks,
    min(ts) AS t_first,
    max(ts) AS t_last,
    arg_min(message, (coalesce(ts, 'infinity'::TIMESTAMPTZ), source_file, line_no)) AS first_message
FROM events
WHERE bootstrap_room IS NULL AND rid IS NULL
  AND (kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected', 'checksum_mismatch',
                'watchdog_timeout', 'health_check_failed', 'collective_timeout', 'exception', 'nixl_error',
                'ucx_error', 'mooncake_error', 'crash')
       OR severity IN ('warning', 'error', 'fatal'))
GROUP BY ALL
ORDER BY minute NULLS LAST, host, kind, severity, reason;
