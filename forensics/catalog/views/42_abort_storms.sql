-- name: abort_storm_intervals
-- description: table macro that finds abort storms; queries/abort_storms.sql calls it with its
--   parameters
-- inputs: events, replies, wedge_intervals
-- parameters:
--   abort_storm_intervals(window_s DOUBLE = 5, min_aborts INTEGER = 20, aftermath_s DOUBLE = 60)
-- columns: see queries/abort_storms.sql

CREATE OR REPLACE MACRO abort_storm_intervals(window_s := 5, min_aborts := 20, aftermath_s := 60) AS TABLE
-- an abort is an abort line or a failure whose reason is an abort (Aborted by AbortReq.)
WITH aborts AS (
    SELECT host, ts FROM events WHERE ts IS NOT NULL AND (kind = 'abort' OR reason = 'aborted')
),
-- aborts closer than window_s to the previous one belong to the same burst
marked AS (
    SELECT host, ts,
           CASE WHEN epoch(ts - lag(ts) OVER w) <= window_s THEN 0 ELSE 1 END AS new_burst
    FROM aborts WINDOW w AS (PARTITION BY host ORDER BY ts)
),
bursts AS (
    SELECT host, ts, sum(new_burst) OVER (PARTITION BY host ORDER BY ts ROWS UNBOUNDED PRECEDING) AS burst
    FROM marked
),
per_burst AS (
    SELECT host, min(ts) AS t_start, max(ts) AS t_end, count(*) AS n_aborts FROM bursts GROUP BY host, burst
),
storms AS (SELECT * FROM per_burst WHERE n_aborts >= min_aborts),
-- computed once here, not once per storm inside the subquery below
wedges AS (SELECT host, t_start FROM wedge_intervals())
SELECT s.host, s.t_start, s.t_end, s.n_aborts,
       round(s.n_aborts / greatest(epoch(s.t_end - s.t_start), 1), 2) AS aborts_per_s,
       (SELECT count(*) FROM events e WHERE e.host = s.host AND e.ts > s.t_end
          AND e.ts <= s.t_end + to_microseconds(CAST(aftermath_s * 1e6 AS BIGINT))
          AND e.severity IN ('error', 'fatal')) AS errors_after,
       (SELECT count(*) FROM replies r WHERE r.corrupted AND r.t_start >= s.t_start
          AND r.t_start <= s.t_end + to_microseconds(CAST(aftermath_s * 1e6 AS BIGINT))) AS corrupted_replies_after,
       (SELECT min(w.t_start) FROM wedges w WHERE w.host = s.host AND w.t_start >= s.t_start) AS next_wedge
FROM storms s;
