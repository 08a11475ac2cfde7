-- name: _crash_marks
-- description: the crashes of a window (a fatal signal, a native or Python crash dump), which the
--   charts draw as lines of their own: a crash ends what the host was doing, and a dump without a
--   clock is drawn where it was placed
-- inputs: events
-- parameters:
--   since TIMESTAMP = NULL: first instant (UTC), default the start of the data
--   before TIMESTAMP = NULL: end of the window (UTC, not included), default the end of the data
--   host VARCHAR = NULL: only this host
--   cap INTEGER = 200: crashes to keep, earliest first
-- columns:
--   ts: time of the crash line (UTC), placed where it has no clock
--   host: host the line came from
--   reason: what the crash was (sigsegv, sigabrt, ...)
--   ts_placed: how the time was placed (line_above, line_below, file_time); NULL for a line with a clock
SELECT ts, host, reason, ts_placed
FROM events
WHERE kind = 'crash' AND ts IS NOT NULL
  AND (CAST($since AS TIMESTAMPTZ) IS NULL OR ts >= CAST($since AS TIMESTAMPTZ))
  AND (CAST($before AS TIMESTAMPTZ) IS NULL OR ts < CAST($before AS TIMESTAMPTZ))
  AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
ORDER BY ts, host, source_file, line_no
LIMIT $cap
