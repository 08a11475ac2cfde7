-- name: reply_features
-- description: every reply with the conditions it was served under: prefill load when its request
--   was prefilled, its transfer, failures on its decode host just before, concurrency, host and rank
-- inputs: replies, rooms, transfers, batches, events
-- parameters:
--   window_s DOUBLE = 10: half-width of the window around the prefill instant, in whole seconds (sglang stamps seconds)
--   lookback_s DOUBLE = 60: how far back failures and aborts on the same decode host are counted
-- columns:
--   source: transcript source
--   session_id: session of the turn
--   turn_id: the turn
--   t_start: when the request went out (UTC)
--   corrupted: the reply is corrupted
--   corruption_class: clean | parse_leak | incoherent | empty | config | transfer_error
--   bootstrap_room: room of the linked server request (as text: 63-bit)
--   decode_host: decode host that served it (from its room, else from its link)
--   decode_rank: decode rank that served it
--   prefill_queue_req: peak prefill waiting queue (summed over ranks) around the prefill instant
--   prefill_new_tokens_per_s: prefill input tokens per second around the prefill instant
--   transfer_ms: longest transfer unit of its room
--   failures_before: transfer / bootstrap failures on its decode host in the lookback before its KV arrived
--   aborts_before: aborts on its decode host in the same window (both NULL when the host is unknown)
--   concurrency: replies in flight when it started
--   decode_running_req: running requests on its decode host at its start (last stats line, summed over ranks)
--   minutes_since_start: minutes since the first reply of the store
WITH r AS (
    SELECT source, session_id, turn_id, t_start, coalesce(t_end, t_start) AS t_end, corrupted, corruption_class,
           server_host, coalesce(server_bootstrap_room, bootstrap_room) AS room
    FROM replies WHERE t_start IS NOT NULL
),
-- the prefill instant: the room's first transfer or bootstrap, else when the request went out;
-- the KV arrival: its last transfer, the moment a failure just before could have hurt it
placed AS (
    SELECT r.*, rm.decode_host AS room_decode_host, rm.decode_rank,
           coalesce(rm.t_first_transfer, rm.t_bootstrapped, rm.t_received, r.t_start) AS t_prefill,
           coalesce(rm.t_last_transfer, rm.t_first_transfer, r.t_start) AS t_arrival,
           coalesce(rm.decode_host, r.server_host) AS dhost
    FROM r LEFT JOIN rooms rm ON rm.bootstrap_room = r.room
),
-- prefill load per second, then each reply's window as a list of seconds: a hash join on the
-- second instead of a range join of every reply against every stats line
prefill_seconds AS (
    SELECT CAST(floor(epoch(ts)) AS BIGINT) AS sec, sum(new_token) AS new_token, max(queue_req) AS queue_req
    FROM batches WHERE kind = 'prefill' AND ts IS NOT NULL GROUP BY sec
),
reply_seconds AS (
    SELECT source, session_id, turn_id, unnest(range(
               CAST(floor(epoch(t_prefill) - CAST($window_s AS DOUBLE)) AS BIGINT),
               CAST(floor(epoch(t_prefill) + CAST($window_s AS DOUBLE)) AS BIGINT) + 1)) AS sec
    FROM placed
),
prefill_load AS (
    SELECT r.source, r.session_id, r.turn_id,
           sum(b.new_token) / (2 * CAST($window_s AS DOUBLE)) AS new_tok_s, max(b.queue_req) AS peak_queue
    FROM reply_seconds r JOIN prefill_seconds b USING (sec)
    GROUP BY ALL
),
room_transfer AS (
    SELECT bootstrap_room, max(duration_ms) AS transfer_ms FROM transfers GROUP BY bootstrap_room
),
-- failures and aborts are told apart: an abort storm is clients leaving, a failure is the transfer path
bad AS (
    SELECT host, ts, (kind = 'abort' OR reason = 'aborted') AS is_abort FROM events
    WHERE ts IS NOT NULL AND (kind IN ('transfer_failed', 'bootstrap_failed', 'abort') OR reason = 'aborted')
),
-- failures and aborts on each host up to each instant (ties included): a reply's lookback count is
-- a difference of two of them, where a join on the host alone pairs every reply with every line
bad_upto AS (
    SELECT DISTINCT host, ts,
           count(*) FILTER (WHERE NOT is_abort) OVER w AS n,
           count(*) FILTER (WHERE is_abort) OVER w AS n_abort
    FROM bad
    WINDOW w AS (PARTITION BY host ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
before AS (
    SELECT p.source, p.session_id, p.turn_id,
           coalesce(hi.n, 0) - coalesce(lo.n, 0) AS n, coalesce(hi.n_abort, 0) - coalesce(lo.n_abort, 0) AS n_abort
    FROM (SELECT source, session_id, turn_id, dhost, t_arrival,
                 t_arrival - to_microseconds(CAST(CAST($lookback_s AS DOUBLE) * 1e6 AS BIGINT)) AS t_from
          FROM placed WHERE dhost IS NOT NULL AND t_arrival IS NOT NULL) p
    ASOF LEFT JOIN bad_upto hi ON hi.host = p.dhost AND p.t_arrival >= hi.ts
    ASOF LEFT JOIN bad_upto lo ON lo.host = p.dhost AND p.t_from > lo.ts
),
-- replies in flight at each start = starts so far minus ends so far: a sweep with window counts
-- and an ASOF join, instead of a self range join (quadratic on a large incident)
starts AS (
    SELECT source, session_id, turn_id, t_start,
           count(*) OVER (ORDER BY t_start RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n_started
    FROM r
),
ends AS (
    SELECT t_end, count(*) OVER (ORDER BY t_end RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n_ended
    FROM r WHERE t_end > t_start
),
conc AS (
    SELECT s.source, s.session_id, s.turn_id, s.n_started - coalesce(e.n_ended, 0) AS n
    FROM starts s ASOF LEFT JOIN ends e ON s.t_start >= e.t_end
),
-- decode load at the start: each rank's last stats line, summed
decode_lines AS (
    SELECT host, coalesce(dp_rank, -1) AS rank_key, ts, running_req FROM batches WHERE kind = 'decode' AND ts IS NOT NULL
),
probe AS (
    SELECT p.source, p.session_id, p.turn_id, p.dhost, p.t_start, k.rank_key
    FROM placed p JOIN (SELECT DISTINCT host, rank_key FROM decode_lines) k ON k.host = p.dhost
),
running AS (
    SELECT q.source, q.session_id, q.turn_id, sum(d.running_req) AS running
    FROM probe q ASOF JOIN decode_lines d ON d.host = q.dhost AND d.rank_key = q.rank_key AND q.t_start >= d.ts
    GROUP BY ALL
)
SELECT p.source, p.session_id, p.turn_id, p.t_start, p.corrupted, p.corruption_class,
       CAST(p.room AS VARCHAR) AS bootstrap_room, p.dhost AS decode_host, p.decode_rank,
       pl.peak_queue AS prefill_queue_req, round(pl.new_tok_s, 1) AS prefill_new_tokens_per_s,
       -- unknown (not 0) when the decode host is unknown
       t.transfer_ms, CASE WHEN p.dhost IS NOT NULL THEN coalesce(bf.n, 0) END AS failures_before,
       CASE WHEN p.dhost IS NOT NULL THEN coalesce(bf.n_abort, 0) END AS aborts_before, coalesce(c.n, 0) AS concurrency,
       rn.running AS decode_running_req,
       round(epoch(p.t_start - min(p.t_start) OVER ()) / 60, 2) AS minutes_since_start
FROM placed p
LEFT JOIN prefill_load pl USING (source, session_id, turn_id)
LEFT JOIN room_transfer t ON t.bootstrap_room = p.room
LEFT JOIN before bf USING (source, session_id, turn_id)
LEFT JOIN conc c USING (source, session_id, turn_id)
LEFT JOIN running rn USING (source, session_id, turn_id)
ORDER BY p.t_start, p.source, p.session_id, p.turn_id
