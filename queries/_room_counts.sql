-- name: _room_counts
-- description: each room of the window counted per host, side, bucket and outcome: the HTML page's transfer lanes
--   and the chart's transfers per bucket (a bucket index: the times before the window's start have none)
-- inputs: room_spans
-- over: room_spans
-- parameters:
--   lo_us BIGINT = 0: the window's start, microseconds since the epoch (UTC)
--   bucket_us BIGINT = 60000000: bucket width in microseconds
-- columns:
--   prefill_host: host of the prefill side
--   decode_host: host of the decode side
--   outcome: the room's outcome
--   k_sent: bucket index of the prefill side's start (NULL before the window or without one)
--   k_received: bucket index of the decode side's start (NULL before the window or without one)
--   has_sent: the prefill side was seen
--   has_received: the decode side was seen
--   n: rooms
SELECT prefill_host, decode_host, outcome,
       CASE WHEN t0 >= $lo_us THEN (t0 - $lo_us) // $bucket_us END AS k_sent,
       CASE WHEN recv_t0 >= $lo_us THEN (recv_t0 - $lo_us) // $bucket_us END AS k_received,
       t0 IS NOT NULL AS has_sent, recv_t0 IS NOT NULL AS has_received, count(*) AS n
-- the exports' grid is in microseconds
FROM (SELECT * REPLACE (epoch_us(t0) AS t0, epoch_us(t1) AS t1, epoch_us(recv_t0) AS recv_t0, epoch_us(recv_t1) AS recv_t1) FROM q) GROUP BY ALL
