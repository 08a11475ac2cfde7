-- name: host_load
-- description: each host's load per time bucket: queues and throughput per rank, then summed over
--   the host's ranks (timeline.sql makes the same sums over all hosts of a role)
-- inputs: batches
-- parameters:
--   bucket_s DOUBLE = 10: bucket width in seconds
--   since TIMESTAMP = NULL: first instant (UTC), default the start of the data
--   before TIMESTAMP = NULL: end of the window (UTC, not included), default the end of the data
--   host VARCHAR = NULL: only this host
-- columns:
--   host: host the stats lines came from
--   role: the kind of its stats lines: prefill or decode
--   bucket_start: start of the bucket (UTC)
--   queue_req: waiting queue, summed over ranks (mean within the bucket)
--   running_req: running requests, summed over ranks
--   bootstrap_req: requests waiting for their bootstrap, summed over ranks
--   inflight_req: transfers in flight, summed over ranks
--   transfer_req: requests waiting for their KV transfer, summed over ranks
--   throughput: tokens per second: prefill input tokens computed, or decode gen_throughput summed over ranks

-- every stats line placed in its bucket, inside the window
WITH b AS (
    SELECT time_bucket(to_microseconds(CAST($bucket_s * 1e6 AS BIGINT)), ts) AS bucket_start, host, kind, dp_rank,
           queue_req, running_req, bootstrap_req, inflight_req, transfer_req, new_token, gen_throughput
    FROM batches
    WHERE (CAST($since AS TIMESTAMPTZ) IS NULL OR ts >= CAST($since AS TIMESTAMPTZ))
      AND (CAST($before AS TIMESTAMPTZ) IS NULL OR ts < CAST($before AS TIMESTAMPTZ))
      AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
),
-- ranks first: each DP rank reports its own queues, so they are averaged per rank before the sum;
-- in DECIMAL, so the sums do not depend on the order DuckDB adds the rows in; TRY_CAST, as a value
-- past DECIMAL's range (a 1e300 throughput in a log) is no load figure and must not fail the report
per_rank AS (
    SELECT bucket_start, host, kind, dp_rank, TRY_CAST(avg(queue_req) AS DECIMAL(18, 6)) AS queue_req,
           TRY_CAST(avg(running_req) AS DECIMAL(18, 6)) AS running_req, TRY_CAST(avg(bootstrap_req) AS DECIMAL(18, 6)) AS bootstrap_req,
           TRY_CAST(avg(inflight_req) AS DECIMAL(18, 6)) AS inflight_req, TRY_CAST(avg(transfer_req) AS DECIMAL(18, 6)) AS transfer_req,
           sum(new_token) AS new_token, TRY_CAST(avg(TRY_CAST(gen_throughput AS DECIMAL(18, 3))) AS DECIMAL(18, 6)) AS gen_throughput
    FROM b GROUP BY ALL
)
SELECT host, kind AS role, bucket_start,
       round(sum(queue_req), 1)::DOUBLE AS queue_req, round(sum(running_req), 1)::DOUBLE AS running_req,
       round(sum(bootstrap_req), 1)::DOUBLE AS bootstrap_req, round(sum(inflight_req), 1)::DOUBLE AS inflight_req,
       round(sum(transfer_req), 1)::DOUBLE AS transfer_req,
       -- rounded in each branch: a CASE of DOUBLE and DECIMAL is DOUBLE, where 103.55 is 103.5499...
       CASE WHEN kind = 'prefill' THEN round(sum(new_token) / $bucket_s, 1)
            ELSE round(sum(gen_throughput), 1)::DOUBLE END AS throughput
FROM per_rank
GROUP BY host, kind, bucket_start
ORDER BY host, kind, bucket_start
