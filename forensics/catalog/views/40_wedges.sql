-- name: wedge_intervals
-- description: table macro that finds wedges; queries/wedges.sql and queries/timeline.sql call it
--   with their parameters
-- inputs: batches, events, transfers, rooms
-- parameters:
--   wedge_intervals(min_gap_s DOUBLE = 60, factor DOUBLE = 10, max_gap_s DOUBLE = 21600)
-- columns: see queries/wedges.sql

CREATE OR REPLACE MACRO wedge_intervals(min_gap_s := 60, factor := 10, max_gap_s := 21600) AS TABLE
-- every timestamped line of every host: a wedged server stops writing all of them
WITH lines AS (
    SELECT host, dp_rank, ts FROM batches WHERE ts IS NOT NULL
    UNION ALL
    SELECT host, dp_rank, ts FROM events WHERE ts IS NOT NULL
),
gaps AS (
    SELECT host, lag(ts) OVER (PARTITION BY host ORDER BY ts) AS t_prev, ts AS t_next FROM lines
),
-- a host's normal interval: decode logs every 40 steps, so "silent" is relative to the host; the
-- 90th percentile, because with whole-second stamps most gaps are 0
typical AS (
    SELECT host, quantile_cont(epoch(t_next - t_prev), 0.9) AS typical_s FROM gaps WHERE t_prev IS NOT NULL
    GROUP BY host
),
silences AS (
    SELECT g.host, CAST(NULL AS INTEGER) AS dp_rank, 'silence' AS kind, g.t_prev AS t_start, g.t_next AS t_end,
           t.typical_s
    FROM gaps g JOIN typical t USING (host)
    WHERE epoch(g.t_next - g.t_prev) >= greatest(min_gap_s, factor * t.typical_s)
      -- days without a line are a gap in what was captured, not a wedge
      AND epoch(g.t_next - g.t_prev) <= max_gap_s
),
-- a DP rank that stops while the other ranks of its host go on
rank_last AS (
    SELECT host, dp_rank, max(ts) AS last_ts FROM lines WHERE dp_rank IS NOT NULL GROUP BY ALL
),
host_last AS (SELECT host, max(ts) AS last_ts FROM lines GROUP BY host),
stopped AS (
    SELECT r.host, r.dp_rank, 'rank_stopped' AS kind, r.last_ts AS t_start, h.last_ts AS t_end, t.typical_s
    FROM rank_last r JOIN host_last h USING (host) JOIN typical t USING (host)
    WHERE epoch(h.last_ts - r.last_ts) >= greatest(min_gap_s, factor * t.typical_s)
      AND epoch(h.last_ts - r.last_ts) <= max_gap_s
),
-- threads that died say so once; requests to their rank then time out
dead AS (
    SELECT host, coalesce(dp_rank, tp_rank) AS dp_rank, 'dead_thread' AS kind, ts AS t_start,
           (SELECT max(l.ts) FROM lines l WHERE l.host = e.host) AS t_end, NULL AS typical_s
    FROM events e
    WHERE message LIKE '%thread died%' OR message LIKE '%bootstrap_thread%died%'
),
cand AS (SELECT * FROM silences UNION ALL SELECT * FROM stopped UNION ALL SELECT * FROM dead),
-- what was in flight when it went quiet: each rank's last stats line before the silence
ranks AS (SELECT DISTINCT host, coalesce(dp_rank, -1) AS rank_key FROM batches),
stats AS (SELECT *, coalesce(dp_rank, -1) AS rank_key FROM batches WHERE ts IS NOT NULL),
probe AS (SELECT c.host, c.kind, c.t_start, r.rank_key FROM cand c JOIN ranks r USING (host)),
load_before AS (
    SELECT p.host, p.kind, p.t_start,
           CAST(sum(coalesce(b.running_req, 0) + coalesce(b.transfer_req, 0) + coalesce(b.prealloc_req, 0)
                    + coalesce(b.inflight_req, 0) + coalesce(b.bootstrap_req, 0)) AS BIGINT) AS in_flight
    FROM probe p ASOF JOIN stats b ON p.host = b.host AND p.rank_key = b.rank_key AND p.t_start >= b.ts
    GROUP BY ALL
),
-- rooms of the host (of the rank, for a stopped rank) left open through the whole silence: requests
-- that were waiting on it, as opposed to a server that was simply idle
affected AS (
    SELECT c.host, c.kind, c.t_start,
           list(DISTINCT CAST(r.bootstrap_room AS VARCHAR) ORDER BY CAST(r.bootstrap_room AS VARCHAR)) AS rooms,
           count(DISTINCT r.bootstrap_room) AS n_rooms
    FROM cand c JOIN rooms r
      ON ((r.decode_host = c.host AND (c.kind = 'silence' OR r.decode_rank = c.dp_rank))
          OR (r.prefill_host = c.host AND (c.kind = 'silence' OR r.prefill_rank = c.dp_rank)))
     AND coalesce(r.t_received, r.t_first_transfer) <= c.t_start
     AND (r.t_finished IS NULL OR r.t_finished >= c.t_end)
    GROUP BY ALL
),
-- transfer units posted before the silence and neither done nor failed when it ended
pending AS (
    SELECT c.host, c.kind, c.t_start, count(*) AS pending_transfers
    FROM cand c JOIN transfers t
      ON t.host = c.host AND t.t_post <= c.t_start
     AND ((t.t_done IS NULL AND t.status NOT IN ('failed', 'aborted', 'timeout')) OR t.t_done > c.t_end)
    GROUP BY ALL
)
SELECT c.host, c.kind, c.dp_rank, c.t_start, c.t_end,
       round(epoch(c.t_end - c.t_start), 3) AS silent_s, round(c.typical_s, 3) AS typical_s,
       coalesce(l.in_flight, 0) AS in_flight, coalesce(p.pending_transfers, 0) AS pending_transfers,
       coalesce(a.n_rooms, 0) AS n_rooms, coalesce(a.rooms, []) AS rooms,
       -- how it ended: the first error on the host once it spoke again, else it just resumed
       coalesce((SELECT arg_min(e.kind || coalesce(' (' || e.reason || ')', ''), e.ts) FROM events e
                 WHERE e.host = c.host AND e.ts >= c.t_end AND e.ts <= c.t_end + INTERVAL 60 SECOND
                   AND e.severity IN ('error', 'fatal')),
                CASE WHEN c.kind = 'silence' THEN 'resumed' ELSE 'end of log' END) AS ended_by
FROM cand c
LEFT JOIN load_before l USING (host, kind, t_start)
LEFT JOIN affected a USING (host, kind, t_start)
LEFT JOIN pending p USING (host, kind, t_start)
WHERE c.kind = 'dead_thread' OR coalesce(p.pending_transfers, 0) + coalesce(a.n_rooms, 0) > 0;
