-- name: room_spans
-- description: each bootstrap room as two spans, the prefill side sending and the decode side
--   receiving, with its transfer units, first error and outcome
-- inputs: transfer_events, transfers, rooms
-- parameters:
--   since TIMESTAMP = NULL: first instant (UTC) a room may start at, default the start of the data
--   before TIMESTAMP = NULL: rooms starting before this instant (UTC), default the end of the data
--   host VARCHAR = NULL: only rooms with this host as their prefill or decode side
-- columns:
--   room: bootstrap room (as text: 63-bit)
--   prefill_host: host of the prefill side
--   prefill_rank: lowest engine rank of the prefill side
--   t0: start of the prefill side (first event or first posted unit)
--   t1: end of the prefill side (last event or last unit done)
--   units: transfer units posted for the room
--   bytes: bytes in those units
--   error: the first unit's error, if any
--   decode_host: host of the decode side
--   decode_rank: lowest engine rank of the decode side
--   recv_t0: first event of the decode side
--   recv_t1: last event of the decode side
--   outcome: the room's outcome (rooms view), unknown when the room is not there
--   checksum_verdict: the room's checksum verdict (rooms view)

-- each side's span of the room in the trace, over every event: a room aborted before its first
-- post still shows, as the aborts of the planted storm do
WITH te AS (
    SELECT bootstrap_room, side, min(host) AS host, min(engine_rank) AS rank, min(ts) AS t0,
           max(ts) AS t1
    FROM transfer_events
    WHERE bootstrap_room <> 0 AND NOT unknown_enum
    GROUP BY bootstrap_room, side
),
-- the units (trace, or `sending kvcache` debug lines when there is no trace): post to completion
units AS (
    SELECT bootstrap_room, min(host) AS host, min(engine_rank) AS rank, min(t_post) AS t0,
           max(coalesce(t_done, t_post)) AS t1, count(*) AS units, CAST(sum(bytes) AS BIGINT) AS bytes,
           arg_min(error, t_post) FILTER (WHERE error IS NOT NULL) AS error
    FROM transfers
    WHERE side = 'prefill' AND t_post IS NOT NULL
    GROUP BY bootstrap_room
),
-- a room seen by either source
keys AS (SELECT bootstrap_room FROM te UNION SELECT bootstrap_room FROM units),
-- the prefill span covers both sources; the decode side and the outcome come from the trace and rooms
joined AS (
    SELECT k.bootstrap_room, coalesce(p.host, u.host) AS prefill_host, coalesce(p.rank, u.rank) AS prefill_rank,
           coalesce(least(p.t0, u.t0), p.t0, u.t0) AS t0, coalesce(greatest(p.t1, u.t1), p.t1, u.t1) AS t1,
           coalesce(u.units, 0) AS units, u.bytes, u.error,
           coalesce(d.host, r.decode_host) AS decode_host, coalesce(d.rank, r.decode_rank) AS decode_rank,
           d.t0 AS recv_t0, d.t1 AS recv_t1, coalesce(r.outcome, 'unknown') AS outcome, r.checksum_verdict
    FROM keys k
    LEFT JOIN te p ON p.bootstrap_room = k.bootstrap_room AND p.side = 'prefill'
    LEFT JOIN te d ON d.bootstrap_room = k.bootstrap_room AND d.side = 'decode'
    LEFT JOIN units u ON u.bootstrap_room = k.bootstrap_room
    LEFT JOIN rooms r ON r.bootstrap_room = k.bootstrap_room
)
SELECT CAST(bootstrap_room AS VARCHAR) AS room, * EXCLUDE (bootstrap_room)
FROM joined
WHERE (CAST($since AS TIMESTAMPTZ) IS NULL OR coalesce(t0, recv_t0) >= CAST($since AS TIMESTAMPTZ))
  AND (CAST($before AS TIMESTAMPTZ) IS NULL OR coalesce(t0, recv_t0) < CAST($before AS TIMESTAMPTZ))
  AND (CAST($host AS VARCHAR) IS NULL OR $host IN (prefill_host, decode_host))
ORDER BY coalesce(t0, recv_t0), room
