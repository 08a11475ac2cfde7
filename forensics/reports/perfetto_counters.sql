-- The Perfetto trace's counter tracks: every stats line as it was logged, one sample per rank and
-- line, no bucketing. Not a named query: it is the batches table itself, cut to a window and a
-- host, and `forensics sql` already gives that.
-- parameters: since, before (TIMESTAMP, NULL for no bound; before not included), host (VARCHAR, NULL for all)
SELECT epoch_us(ts) AS t_us, host, dp_rank AS rank, queue_req, running_req, bootstrap_req, inflight_req,
       transfer_req, gen_throughput, new_token
FROM batches
WHERE (CAST($since AS TIMESTAMPTZ) IS NULL OR ts >= CAST($since AS TIMESTAMPTZ))
  AND (CAST($before AS TIMESTAMPTZ) IS NULL OR ts < CAST($before AS TIMESTAMPTZ))
  AND (CAST($host AS VARCHAR) IS NULL OR host = $host)
ORDER BY ts, host, source_file, line_no
