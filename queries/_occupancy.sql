-- name: _occupancy
-- description: where the timeline's rows lie: per bucket and host, the stats lines, events and timed replies, with
--   their first and last times; a default window of mostly empty buckets is cut to where most of them are
-- inputs: batches, events, replies
-- parameters:
--   bucket_s DOUBLE = 10: bucket width in seconds
--   since TIMESTAMP = NULL: first instant (UTC), default the start of the data
--   until TIMESTAMP = NULL: last instant (UTC), default the end of the data
--   host VARCHAR = NULL: only this host's lines and the replies it served
-- columns:
--   bucket_start: start of the bucket (UTC)
--   host: host of the rows (a reply's server host; NULL for a reply linked to none)
--   n: rows
--   t_first: the first row's time
--   t_last: the last row's time
SELECT time_bucket(to_microseconds(CAST($bucket_s * 1e6 AS BIGINT)), t) AS bucket_start, host, count(*) AS n,
       min(t) AS t_first, max(t) AS t_last
FROM (SELECT ts AS t, host FROM batches UNION ALL SELECT ts, host FROM events
      UNION ALL SELECT t_start, server_host FROM replies) x
WHERE t IS NOT NULL
  AND (CAST($since AS TIMESTAMPTZ) IS NULL OR t >= CAST($since AS TIMESTAMPTZ))
  AND (CAST($until AS TIMESTAMPTZ) IS NULL OR t <= CAST($until AS TIMESTAMPTZ))
  AND (CAST($host AS VARCHAR) IS NULL OR x.host = $host)
GROUP BY ALL
ORDER BY bucket_start, host NULLS LAST
