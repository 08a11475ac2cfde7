-- name: _room_pick
-- description: the rooms the HTML page draws one by one when there are too many: failed or suspect ones first,
--   then the slowest, each class taken bucket by bucket (the first of every bucket, then the second, ...)
-- inputs: room_spans
-- over: room_spans
-- parameters:
--   lo_us BIGINT = 0: the window's start, microseconds since the epoch (UTC)
--   bucket_us BIGINT = 60000000: bucket width in microseconds
--   cap INTEGER = 20: rooms to keep
-- columns:
--   room: bootstrap room (as text: 63-bit)
--   prefill_host: host of the prefill side
--   prefill_rank: lowest engine rank of the prefill side
--   t0: start of the prefill side (first event or first posted unit), microseconds since the epoch
--   t1: end of the prefill side (last event or last unit done), microseconds since the epoch
--   units: transfer units posted for the room
--   bytes: bytes in those units
--   error: the first unit's error, if any
--   decode_host: host of the decode side
--   decode_rank: lowest engine rank of the decode side
--   recv_t0: first event of the decode side, microseconds since the epoch
--   recv_t1: last event of the decode side, microseconds since the epoch
--   outcome: the room's outcome (rooms view), unknown when the room is not there
--   checksum_verdict: the room's checksum verdict (rooms view)
SELECT * EXCLUDE (prio, k, dur, rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY prio, k ORDER BY dur DESC, room) AS rn
    FROM (SELECT *, CASE WHEN (outcome NOT IN ('ok', 'unknown') OR checksum_verdict = 'corrupted') THEN 0 ELSE 1 END AS prio,
                 (coalesce(t0, recv_t0) - $lo_us) // $bucket_us AS k,
                 greatest(coalesce(t1 - t0, 0), coalesce(recv_t1 - recv_t0, 0)) AS dur
          FROM (SELECT * REPLACE (epoch_us(t0) AS t0, epoch_us(t1) AS t1, epoch_us(recv_t0) AS recv_t0, epoch_us(recv_t1) AS recv_t1) FROM q))
    ORDER BY prio, rn, dur DESC, room
    LIMIT $cap
)
ORDER BY coalesce(t0, recv_t0), room
