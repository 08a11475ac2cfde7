-- name: _placed_lines
-- description: the lines of a window whose time is not their own (`ts_placed`: a crash dump, a bare
--   message or stats line, placed at a line near it or at its file's time), and the lines that have
--   no time at all and so are in no bucket: what the timeline says it placed and what it left out
-- inputs: batches, events
-- parameters:
--   since TIMESTAMP = NULL: the window's start, default the data's first time
--   until TIMESTAMP = NULL: the window's end, default the data's last time
--   host VARCHAR = NULL: only this host's lines
-- columns:
--   what: 'placed' (a line of the window whose time was placed) | 'untimed' (a line without a time, in no window)
--   ts_placed: how a placed line's time was found (line_above, line_below, file_time); NULL for untimed lines
--   kind: the event's kind, 'stats line' for a scheduler stats line
--   n: lines
SELECT CASE WHEN ts IS NULL THEN 'untimed' ELSE 'placed' END AS what, ts_placed, kind, count(*) AS n
FROM (SELECT host, ts, ts_placed, kind FROM events UNION ALL SELECT host, ts, ts_placed, 'stats line' FROM batches)
WHERE (ts IS NULL
       OR (ts_placed IS NOT NULL
           AND (CAST($since AS TIMESTAMPTZ) IS NULL OR ts >= CAST($since AS TIMESTAMPTZ))
           AND (CAST($until AS TIMESTAMPTZ) IS NULL OR ts <= CAST($until AS TIMESTAMPTZ))))
  AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
GROUP BY ALL
ORDER BY what, n DESC, kind, ts_placed
