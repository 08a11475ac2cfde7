-- name: timeline
-- description: one row per time bucket: replies by class, prefill and decode load, transfers,
--   failed requests (each once, at its first failure) beside the failure lines of every rank,
--   failure signals naming no request, aborts, errors, and the wedge and abort-storm markers
-- inputs: batches, events, transfers, rooms, failed_requests, replies, incident_wedges, incident_abort_storms, is_failure_signal
-- parameters:
--   bucket_s DOUBLE = 10: bucket width in seconds
--   since TIMESTAMP = NULL: first instant shown (UTC), default the start of the data
--   until TIMESTAMP = NULL: last instant shown (UTC), default the end of the data
--   host VARCHAR = NULL: only this host's load and events, its rooms' transfers (either side) and replies
-- columns:
--   bucket_start: start of the bucket (UTC)
--   replies: assistant turns that started in the bucket
--   replies_clean: clean turns
--   replies_parse_leak: turns whose tool-call markup leaked into the text
--   replies_incoherent: turns where the model lost the plot
--   replies_empty: empty turns
--   replies_config: leaks from a template / parser mismatch (every call of the session)
--   replies_transfer_error: turns that failed with a transfer error
--   corrupted_rate: corrupted / replies in the bucket
--   prefill_new_tokens_per_s: prefill input tokens computed per second, all prefill hosts
--   prefill_queue_req: prefill waiting queue, summed over ranks (mean within the bucket)
--   prefill_bootstrap_req: prefill bootstrap queue, summed over ranks
--   prefill_inflight_req: prefill transfers in flight, summed over ranks
--   decode_running_req: decode running requests, all decode hosts
--   decode_queue_req: decode waiting queue, all decode hosts
--   decode_gen_throughput: decode tokens per second, all decode hosts
--   decode_hosts: per decode host: host, running_req, queue_req, transfer_req, gen_throughput
--   transfers: transfer units posted in the bucket
--   transfer_p50_ms: median transfer duration
--   transfer_p99_ms: 99th percentile transfer duration
--   failed_requests: requests whose first failure falls in the bucket, each once however many ranks, sides and hosts logged it (failed_requests)
--   failed_requests_by_reason: those requests by the reason of their first failure
--   failure_lines: transfer / bootstrap failure lines naming a request (room or rid), every rank's copy, plus failed, aborted or timed-out trace units
--   failures_by_reason: those failure lines by normalised reason
--   failure_signals: failure lines that name no request (failure_signals: session failures, bootstrap info fetch errors, PD warnings, crashes)
--   signals_by_host: those lines per host, kind and reason
--   aborts: abort lines and failures whose reason is an abort
--   errors: lines of severity error or fatal
--   wedged_hosts: hosts with a wedge during the bucket: no scheduler progress on the host or one of its ranks while requests were stuck (queries/wedges.sql)
--   abort_storm_hosts: hosts in an abort storm during the bucket
WITH params0 AS (
    SELECT CAST($bucket_s AS DOUBLE) AS bucket_s, CAST($since AS TIMESTAMPTZ) AS since,
           CAST($until AS TIMESTAMPTZ) AS until, CAST($host AS VARCHAR) AS only_host
),
-- rows from the start of the first bucket shown to the end of the last (lo, hi: NULL when open):
-- placing the whole store in buckets to keep a few is gigabytes in 1 s buckets over months of logs
params AS (
    SELECT *, time_bucket(to_microseconds(CAST(bucket_s * 1e6 AS BIGINT)), since) AS lo,
           time_bucket(to_microseconds(CAST(bucket_s * 1e6 AS BIGINT)), until)
               + to_microseconds(CAST(bucket_s * 1e6 AS BIGINT)) AS hi
    FROM params0
),
-- the whole span, so that silent buckets (a wedge) still get a row
span AS (
    SELECT coalesce(p.since, min(t)) AS t0, coalesce(p.until, max(t)) AS t1, p.bucket_s
    FROM params p, (SELECT ts AS t FROM batches UNION ALL SELECT ts FROM events UNION ALL SELECT t_start FROM replies) x
    WHERE t IS NOT NULL GROUP BY p.since, p.until, p.bucket_s
),
n_buckets AS (SELECT *, CAST(ceil(epoch(t1 - t0) / bucket_s) + 1 AS BIGINT) AS n FROM span),
-- a dense grid shows silence as empty rows; data spread over years would make millions, so then
-- only buckets with data are kept
grid AS (
    SELECT time_bucket(to_microseconds(CAST(s.bucket_s * 1e6 AS BIGINT)), t0) + to_microseconds(
               CAST(i * s.bucket_s * 1e6 AS BIGINT)) AS bucket_start
    FROM n_buckets s, range(0, CASE WHEN s.n <= 50000 THEN s.n ELSE 0 END) r(i)
),
data_buckets AS (
    SELECT time_bucket(to_microseconds(CAST(p.bucket_s * 1e6 AS BIGINT)), t) AS bucket_start
    FROM params p, (SELECT ts AS t FROM batches UNION ALL SELECT ts FROM events UNION ALL SELECT t_start FROM replies) x
    WHERE t IS NOT NULL AND (p.lo IS NULL OR t >= p.lo) AND (p.hi IS NULL OR t < p.hi)
),
buckets AS (
    SELECT DISTINCT k.bucket_start, p.bucket_s
    FROM (SELECT bucket_start FROM grid UNION SELECT bucket_start FROM data_buckets) k, params p, span s
    WHERE k.bucket_start + to_microseconds(CAST(p.bucket_s * 1e6 AS BIGINT)) > s.t0 AND k.bucket_start <= s.t1
),
-- a transfer is traced on the sending side only: a decode host's share is the rooms it received
host_rooms AS (
    SELECT bootstrap_room FROM rooms, params p WHERE prefill_host = p.only_host OR decode_host = p.only_host
),
-- every row placed in its bucket with the same function, so that joins line up
b AS (
    SELECT time_bucket(to_microseconds(CAST(p.bucket_s * 1e6 AS BIGINT)), ts) AS bucket_start, x.*
    FROM batches x, params p
    WHERE ts IS NOT NULL AND (p.only_host IS NULL OR host = p.only_host) AND (p.lo IS NULL OR ts >= p.lo) AND (p.hi IS NULL OR ts < p.hi)
),
-- ranks first (each DP rank reports its own queues), then summed per host and over hosts; in
-- DECIMAL, so the sums do not depend on the order DuckDB's threads add them in (a 33.45 once
-- rounded to 33.4 or 33.5 from one run to the next); TRY_CAST, as a value past DECIMAL's range (a
-- 1e300 throughput in a log) is no load figure and must not fail the report
prefill_rank AS (
    SELECT bucket_start, host, dp_rank, sum(new_token) AS new_token, TRY_CAST(avg(queue_req) AS DECIMAL(18, 6)) AS queue_req,
           TRY_CAST(avg(bootstrap_req) AS DECIMAL(18, 6)) AS bootstrap_req, TRY_CAST(avg(inflight_req) AS DECIMAL(18, 6)) AS inflight_req
    FROM b WHERE kind = 'prefill' GROUP BY ALL
),
prefill AS (
    SELECT bucket_start, sum(new_token) AS new_token, sum(queue_req) AS queue_req,
           sum(bootstrap_req) AS bootstrap_req, sum(inflight_req) AS inflight_req
    FROM prefill_rank GROUP BY bucket_start
),
decode_rank AS (
    SELECT bucket_start, host, dp_rank, TRY_CAST(avg(running_req) AS DECIMAL(18, 6)) AS running_req,
           TRY_CAST(avg(queue_req) AS DECIMAL(18, 6)) AS queue_req, TRY_CAST(avg(transfer_req) AS DECIMAL(18, 6)) AS transfer_req,
           TRY_CAST(avg(TRY_CAST(gen_throughput AS DECIMAL(18, 3))) AS DECIMAL(18, 6)) AS gen_throughput
    FROM b WHERE kind = 'decode' GROUP BY ALL
),
decode_host AS (
    SELECT bucket_start, host, round(sum(running_req), 1) AS running_req, round(sum(queue_req), 1) AS queue_req,
           round(sum(transfer_req), 1) AS transfer_req, round(sum(gen_throughput), 1) AS gen_throughput
    FROM decode_rank GROUP BY ALL
),
decode AS (
    SELECT bucket_start, sum(running_req)::DOUBLE AS running_req, sum(queue_req)::DOUBLE AS queue_req,
           sum(gen_throughput)::DOUBLE AS gen_throughput,
           list({'host': host, 'running_req': running_req::DOUBLE, 'queue_req': queue_req::DOUBLE,
                 'transfer_req': transfer_req::DOUBLE, 'gen_throughput': gen_throughput::DOUBLE} ORDER BY host)
               AS decode_hosts
    FROM decode_host GROUP BY bucket_start
),
e AS (
    SELECT time_bucket(to_microseconds(CAST(p.bucket_s * 1e6 AS BIGINT)), ts) AS bucket_start, x.*
    FROM events x, params p
    WHERE ts IS NOT NULL AND (p.only_host IS NULL OR host = p.only_host) AND (p.lo IS NULL OR ts >= p.lo) AND (p.hi IS NULL OR ts < p.hi)
),
-- a request is counted once, in the bucket of its first failure
fr AS (
    SELECT bucket_start, CAST(sum(n) AS BIGINT) AS failed_requests,
           list({'reason': reason, 'n': n} ORDER BY n DESC, reason) AS failed_requests_by_reason
    FROM (SELECT time_bucket(to_microseconds(CAST(p.bucket_s * 1e6 AS BIGINT)), t_first) AS bucket_start,
                 coalesce(first_reason, 'other') AS reason, count(*) AS n
          FROM failed_requests, params p
          WHERE t_first IS NOT NULL AND (p.only_host IS NULL OR list_contains(hosts, p.only_host))
            AND (p.lo IS NULL OR t_first >= p.lo) AND (p.hi IS NULL OR t_first < p.hi)
          GROUP BY ALL)
    GROUP BY bucket_start
),
-- failure lines that name no request (the failure_signals view, at the bucket's width)
sig AS (
    SELECT bucket_start, CAST(sum(n) AS BIGINT) AS failure_signals,
           list({'host': host, 'kind': kind, 'reason': reason, 'n': n} ORDER BY host, n DESC, kind, reason)
               AS signals_by_host
    FROM (SELECT bucket_start, host, kind, coalesce(reason, kind) AS reason, count(*) AS n FROM e
          WHERE bootstrap_room IS NULL AND rid IS NULL
            AND is_failure_signal(kind, severity)
          GROUP BY ALL)
    GROUP BY bucket_start
),
ev AS (
    SELECT bucket_start,
           count(*) FILTER (WHERE kind = 'abort' OR reason = 'aborted') AS aborts,
           count(*) FILTER (WHERE severity IN ('error', 'fatal')) AS errors,
           count(*) FILTER (WHERE kind IN ('transfer_failed', 'bootstrap_failed')
                            AND (bootstrap_room IS NOT NULL OR rid IS NOT NULL)) AS failure_lines
    FROM e GROUP BY bucket_start
),
reasons AS (
    SELECT bucket_start, list({'reason': reason, 'n': n} ORDER BY n DESC, reason) AS failures_by_reason
    FROM (SELECT bucket_start, coalesce(reason, 'other') AS reason, count(*) AS n FROM e
          WHERE kind IN ('transfer_failed', 'bootstrap_failed') AND (bootstrap_room IS NOT NULL OR rid IS NOT NULL)
          GROUP BY ALL)
    GROUP BY bucket_start
),
tr AS (
    SELECT time_bucket(to_microseconds(CAST(p.bucket_s * 1e6 AS BIGINT)), t_post) AS bucket_start,
           count(*) AS transfers,
           round(quantile_cont(duration_ms, 0.5), 3) AS p50, round(quantile_cont(duration_ms, 0.99), 3) AS p99,
           count(*) FILTER (WHERE status IN ('failed', 'aborted', 'timeout')) AS failed
    FROM transfers, params p
    WHERE t_post IS NOT NULL AND (p.lo IS NULL OR t_post >= p.lo) AND (p.hi IS NULL OR t_post < p.hi) AND (p.only_host IS NULL OR host = p.only_host OR bootstrap_room IN (SELECT bootstrap_room FROM host_rooms))
    GROUP BY ALL
),
rp AS (
    SELECT time_bucket(to_microseconds(CAST(p.bucket_s * 1e6 AS BIGINT)), t_start) AS bucket_start,
           count(*) AS replies,
           count(*) FILTER (WHERE corruption_class = 'clean') AS clean,
           count(*) FILTER (WHERE corruption_class = 'parse_leak') AS parse_leak,
           count(*) FILTER (WHERE corruption_class = 'incoherent') AS incoherent,
           count(*) FILTER (WHERE corruption_class = 'empty') AS empty,
           count(*) FILTER (WHERE corruption_class = 'config') AS config,
           count(*) FILTER (WHERE corruption_class = 'transfer_error') AS transfer_error,
           count(*) FILTER (WHERE corrupted) AS corrupted
    FROM replies, params p
    WHERE t_start IS NOT NULL AND (p.lo IS NULL OR t_start >= p.lo) AND (p.hi IS NULL OR t_start < p.hi)
      AND (p.only_host IS NULL OR server_host = p.only_host
                                   OR server_bootstrap_room IN (SELECT bootstrap_room FROM host_rooms))
    GROUP BY ALL
),
-- markers: a bucket is marked when it overlaps the interval
wedged AS (
    SELECT k.bucket_start, list(DISTINCT w.host ORDER BY w.host) AS hosts
    FROM buckets k JOIN incident_wedges w
      ON w.t_start < k.bucket_start + to_microseconds(CAST(k.bucket_s * 1e6 AS BIGINT)) AND w.t_end > k.bucket_start
    GROUP BY k.bucket_start
),
-- a storm spans hosts: each host is marked over its own share of it
storms AS (
    SELECT k.bucket_start, list(DISTINCT a.host ORDER BY a.host) AS hosts
    FROM buckets k JOIN (SELECT unnest(per_host, recursive := true) FROM incident_abort_storms) a
      ON a.t_start < k.bucket_start + to_microseconds(CAST(k.bucket_s * 1e6 AS BIGINT)) AND a.t_end >= k.bucket_start
    GROUP BY k.bucket_start
)
SELECT k.bucket_start,
       coalesce(rp.replies, 0) AS replies, coalesce(rp.clean, 0) AS replies_clean,
       coalesce(rp.parse_leak, 0) AS replies_parse_leak, coalesce(rp.incoherent, 0) AS replies_incoherent,
       coalesce(rp.empty, 0) AS replies_empty, coalesce(rp.config, 0) AS replies_config,
       coalesce(rp.transfer_error, 0) AS replies_transfer_error,
       round(rp.corrupted / nullif(rp.replies, 0), 3) AS corrupted_rate,
       round(prefill.new_token / k.bucket_s, 1) AS prefill_new_tokens_per_s,
       round(prefill.queue_req, 1)::DOUBLE AS prefill_queue_req,
       round(prefill.bootstrap_req, 1)::DOUBLE AS prefill_bootstrap_req,
       round(prefill.inflight_req, 1)::DOUBLE AS prefill_inflight_req,
       decode.running_req AS decode_running_req, decode.queue_req AS decode_queue_req,
       decode.gen_throughput AS decode_gen_throughput, coalesce(decode.decode_hosts, []) AS decode_hosts,
       coalesce(tr.transfers, 0) AS transfers, tr.p50 AS transfer_p50_ms, tr.p99 AS transfer_p99_ms,
       coalesce(fr.failed_requests, 0) AS failed_requests,
       coalesce(fr.failed_requests_by_reason, []) AS failed_requests_by_reason,
       coalesce(tr.failed, 0) + coalesce(ev.failure_lines, 0) AS failure_lines,
       coalesce(reasons.failures_by_reason, []) AS failures_by_reason,
       coalesce(sig.failure_signals, 0) AS failure_signals,
       coalesce(sig.signals_by_host, []) AS signals_by_host,
       coalesce(ev.aborts, 0) AS aborts, coalesce(ev.errors, 0) AS errors,
       coalesce(wedged.hosts, []) AS wedged_hosts, coalesce(storms.hosts, []) AS abort_storm_hosts
FROM buckets k
LEFT JOIN prefill USING (bucket_start)
LEFT JOIN decode USING (bucket_start)
LEFT JOIN ev USING (bucket_start)
LEFT JOIN fr USING (bucket_start)
LEFT JOIN sig USING (bucket_start)
LEFT JOIN reasons USING (bucket_start)
LEFT JOIN tr USING (bucket_start)
LEFT JOIN rp USING (bucket_start)
LEFT JOIN wedged USING (bucket_start)
LEFT JOIN storms USING (bucket_start)
ORDER BY k.bucket_start
