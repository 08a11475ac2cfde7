-- name: abort_storms
-- description: abort storms: many aborts within seconds on one host, with their count and aftermath
-- inputs: events, replies (through abort_storm_intervals)
-- parameters:
--   window_s DOUBLE = 5: aborts closer than this to the previous one belong to the same burst
--   min_aborts INTEGER = 20: smallest burst reported as a storm
--   aftermath_s DOUBLE = 60: how long after the storm errors and corrupted replies are counted
-- columns:
--   host: host that logged the aborts
--   t_start: first abort of the storm (UTC)
--   t_end: last abort of the storm
--   n_aborts: aborts in the storm (abort lines and failures whose reason is an abort)
--   aborts_per_s: n_aborts over the storm's length (at least 1 s)
--   errors_after: error lines on the host in the aftermath
--   corrupted_replies_after: corrupted replies that started during the storm or its aftermath
--   next_wedge: start of the next wedge on the host, if any
SELECT * FROM abort_storm_intervals(window_s := CAST($window_s AS DOUBLE), min_aborts := CAST($min_aborts AS INTEGER),
                                    aftermath_s := CAST($aftermath_s AS DOUBLE))
ORDER BY t_start, host
