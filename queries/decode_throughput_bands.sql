-- name: decode_throughput_bands
-- description: decode throughput by concurrency band (running_req per DP rank), the before/after
--   table of a performance fix at low and high concurrency
-- inputs: batches, files
-- parameters:
--   low_max INTEGER = 8: running_req up to this is the low-concurrency band
--   high_min INTEGER = 32: running_req from this is the high-concurrency band
-- columns:
--   run: run label given at ingest (--run), else 'default'
--   band: 'low' | 'mid' | 'high'
--   stats_lines: decode stats lines in the band
--   running_req_mean: mean running requests per rank in the band
--   gen_throughput_p50: median gen throughput (token/s) per rank
--   gen_throughput_mean: mean gen throughput per rank
--   per_request_tok_s: mean gen throughput divided by running requests
WITH d AS (
    SELECT coalesce(f.run, 'default') AS run, b.running_req, b.gen_throughput,
           CASE WHEN b.running_req <= CAST($low_max AS INTEGER) THEN 'low'
                WHEN b.running_req >= CAST($high_min AS INTEGER) THEN 'high' ELSE 'mid' END AS band
    FROM batches b LEFT JOIN files f ON f.path = b.source_file
    WHERE b.kind = 'decode' AND b.gen_throughput IS NOT NULL AND b.running_req > 0
)
SELECT run, band, count(*) AS stats_lines, round(avg(running_req), 2) AS running_req_mean,
       round(median(gen_throughput), 2) AS gen_throughput_p50, round(avg(gen_throughput), 2) AS gen_throughput_mean,
       round(avg(gen_throughput / running_req), 2) AS per_request_tok_s
FROM d GROUP BY run, band
ORDER BY run, CASE band WHEN 'low' THEN 1 WHEN 'mid' THEN 2 ELSE 3 END
