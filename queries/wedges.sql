-- name: wedges
-- description: wedges: a host silent far beyond its normal interval while requests wait on it or
--   transfers are pending, ranks that stop while others go on, and threads that died
-- inputs: batches, events, transfers, rooms (through wedge_intervals)
-- parameters:
--   min_gap_s DOUBLE = 60: shortest silence that can be a wedge
--   factor DOUBLE = 10: a silence must also last this many times the host's median line interval
--   max_gap_s DOUBLE = 21600: longer silences are gaps in what was captured, not wedges
-- columns:
--   host: host that went silent
--   kind: 'silence' (the whole host) | 'rank_stopped' (one DP rank) | 'dead_thread'
--   dp_rank: the rank, for rank_stopped and dead_thread
--   t_start: last line before the silence (UTC)
--   t_end: first line after it, or the end of the host's log
--   silent_s: length of the silence in seconds
--   typical_s: the host's usual interval between lines (90th percentile)
--   in_flight: requests running or queued for transfer on the host's last stats lines before it
--   pending_transfers: transfer units posted before the silence and neither done nor failed when it ended
--   n_rooms: bootstrap rooms of the host (or rank) left open through the whole silence
--   rooms: those rooms (as text: 63-bit)
--   ended_by: the first error once the host spoke again (e.g. transfer_failed (waiting_timeout)), else resumed
SELECT * FROM wedge_intervals(min_gap_s := CAST($min_gap_s AS DOUBLE), factor := CAST($factor AS DOUBLE),
                              max_gap_s := CAST($max_gap_s AS DOUBLE))
ORDER BY t_start, host, kind
