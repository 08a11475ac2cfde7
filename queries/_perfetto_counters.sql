-- name: _perfetto_counters
-- description: the Perfetto trace's counter tracks: each rank's stats lines per bucket of the timeline (the rank's
--   mean over the bucket, as host_load averages ranks before summing them), so --bucket sets how many samples the
--   trace carries. Internal: it is the batches table bucketed, and `forensics sql` already gives that.
-- inputs: batches
-- parameters:
--   bucket_s DOUBLE = 60: bucket width in seconds
--   since TIMESTAMP = NULL: first instant (UTC)
--   before TIMESTAMP = NULL: end of the window (UTC, not included)
--   host VARCHAR = NULL: only this host
-- columns:
--   t_us: bucket start, microseconds since the epoch (UTC)
--   host: host of the stats lines
--   rank: their DP rank
--   queue_req: mean #queue-req over the bucket
--   running_req: mean #running-req
--   bootstrap_req: mean prefill bootstrap queue
--   inflight_req: mean prefill transfers in flight
--   transfer_req: mean decode transfer queue
--   gen_throughput: mean gen throughput (token/s)
--   new_token: mean #new-token
SELECT epoch_us(time_bucket(to_microseconds(CAST($bucket_s * 1e6 AS BIGINT)), ts)) AS t_us, host, dp_rank AS rank,
       round(avg(queue_req), 3) AS queue_req, round(avg(running_req), 3) AS running_req,
       round(avg(bootstrap_req), 3) AS bootstrap_req, round(avg(inflight_req), 3) AS inflight_req,
       round(avg(transfer_req), 3) AS transfer_req, round(avg(gen_throughput), 3) AS gen_throughput,
       round(avg(new_token), 3) AS new_token
FROM batches
WHERE ts >= CAST($since AS TIMESTAMPTZ) AND ts < CAST($before AS TIMESTAMPTZ)
  AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
GROUP BY ALL
ORDER BY t_us, host, rank
