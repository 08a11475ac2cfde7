-- name: event_marks
-- description: the abort, transfer or bootstrap failure, and error lines, each as one mark; an
--   abort is what abort_storm_intervals counts (an abort line or a failure whose reason is an
--   abort), so the marks and the storm bands agree
-- inputs: events, excerpt
-- parameters:
--   since TIMESTAMP = NULL: first instant (UTC), default the start of the data
--   before TIMESTAMP = NULL: end of the window (UTC, not included), default the end of the data
--   host VARCHAR = NULL: only this host
-- columns:
--   ts: time of the line (UTC)
--   host: host the line came from
--   rank: its DP rank, else TP rank, else attention CP rank
--   mark: 'abort' | 'failure' (transfer or bootstrap failed) | 'error' (any other error or fatal line)
--   kind: event kind of the line
--   reason: normalised failure reason
--   severity: severity of the line
--   room: bootstrap room (as text: 63-bit)
--   rid: request id
--   message: the message, cut at 300 characters
--   ts_placed: how the line's time was placed, having no clock of its own (line_above, line_below, file_time); NULL otherwise
SELECT ts, host, coalesce(dp_rank, tp_rank, attn_cp_rank) AS rank,
       CASE WHEN kind = 'abort' OR reason = 'aborted' THEN 'abort'
            WHEN kind IN ('transfer_failed', 'bootstrap_failed') THEN 'failure'
            ELSE 'error' END AS mark,
       kind, reason, severity, CAST(bootstrap_room AS VARCHAR) AS room, rid, excerpt(message, 300) AS message,
       ts_placed
FROM events
WHERE (CAST($since AS TIMESTAMPTZ) IS NULL OR ts >= CAST($since AS TIMESTAMPTZ))
  AND (CAST($before AS TIMESTAMPTZ) IS NULL OR ts < CAST($before AS TIMESTAMPTZ))
  AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
  AND (kind IN ('abort', 'transfer_failed', 'bootstrap_failed') OR reason = 'aborted'
       OR severity IN ('error', 'fatal'))
ORDER BY ts, host, source_file, line_no
