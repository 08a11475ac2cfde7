-- name: _mark_pick
-- description: the failure, abort and error lines the HTML page draws one by one when there are too many:
--   failures first, then aborts, then errors, each class taken bucket by bucket
-- inputs: event_marks
-- over: event_marks
-- parameters:
--   lo_us BIGINT = 0: the window's start, microseconds since the epoch (UTC)
--   bucket_us BIGINT = 60000000: bucket width in microseconds
--   cap INTEGER = 20: lines to keep
-- columns:
--   t_us: time of the line, microseconds since the epoch (UTC)
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
SELECT * EXCLUDE (prio, k, rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY prio, k ORDER BY t_us, host, rank, kind, room, rid, message) AS rn
    FROM (SELECT epoch_us(ts) AS t_us, * EXCLUDE (ts), CASE mark WHEN 'failure' THEN 0 WHEN 'abort' THEN 1 ELSE 2 END AS prio,
                 (epoch_us(ts) - $lo_us) // $bucket_us AS k FROM q)
    ORDER BY prio, rn, t_us
    LIMIT $cap
)
ORDER BY t_us, host, rank, kind, room, rid, message
