-- name: failure_signals
-- kind: view
-- description: failure lines of the server logs that name no request (no room, no rid): a host's
--   `Session <ip:port> failed.`, bootstrap info fetch errors, PD timeout warnings, transport errors,
--   crashes; one row per host, kind, severity, reason and minute, every rank's copy counted. They say
--   something went wrong on the host, never which request: reports count them apart from requests.
-- inputs: events (clock-corrected), is_failure_signal
-- parameters: none
-- columns:
--   minute TIMESTAMPTZ: start of the minute (UTC, corrected) of the lines; NULL for lines without a time
--   host VARCHAR: host that logged them
--   role VARCHAR: role of the host's file: 'prefill' | 'decode' | 'unified' | 'unknown'
--   kind VARCHAR: event kind (transfer_failed, bootstrap_failed, crash, health_check_failed, log, ...)
--   severity VARCHAR: 'warning' | 'error' | 'fatal' (or 'info' for a failure kind logged at info)
--   reason VARCHAR: normalised reason (events.reason), else the kind
--   n_lines BIGINT: lines of the group
--   n_ranks BIGINT: distinct rank tags among them (lines without any count as one)
--   t_first TIMESTAMPTZ: time of the first line
--   t_last TIMESTAMPTZ: time of the last line
--   first_message VARCHAR: text of the first line
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
  AND is_failure_signal(kind, severity)
GROUP BY ALL
ORDER BY minute NULLS LAST, host, kind, severity, reason;
