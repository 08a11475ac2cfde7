-- name: failed_requests
-- kind: view
-- description: one row per failed request, however many lines logged it: the failure lines of
--   every TP/DP/EP rank, of both PD sides, of the router and of every host grouped by bootstrap room
--   (the PD join key), else by rid (the router's request id); its first failure is the room's outcome (room_failures), the rest follow.
-- inputs: room_failures, rooms, room_events, transfer_events, events (all clock-corrected), kv_failure_reason,
--   failure_outcome, failure_cause_rank
-- parameters: none
-- columns:
--   request_key VARCHAR: 'room:<bootstrap_room>', or 'rid:<rid>' for a request whose failure lines name no room
--   bootstrap_room BIGINT: PD bootstrap room (NULL: known by rid only)
--   rid_prefill VARCHAR: request id on prefill (rooms.rid_prefill, else a prefill failure line's rid)
--   rid_decode VARCHAR: request id on decode
--   hosts VARCHAR[]: hosts that logged or traced a failure of it, by name
--   sides VARCHAR: sides that logged or traced one: 'prefill+decode' | 'prefill' | 'decode' | 'unknown'
--   outcome VARCHAR: the request's outcome (rooms.outcome): transfer_failed | waiting_timeout | bootstrap_timeout | aborted;
--     for a request only the router names: server_error (a server answered 5xx) | no_workers (no PD pair to send it to);
--     a router failure whose id no server logs joins the servers' failed request of its second (or the one
--     before) when exactly one is there and no other router failure pairs with it
--   t_first TIMESTAMPTZ: corrected time of its first failure (room_failures.first_failure)
--   first_host VARCHAR: host of the first failure
--   first_side VARCHAR: side of the first failure
--   first_reason VARCHAR: normalised reason of the first failure
--   first_message VARCHAR: text of the first failure
--   first_simultaneous BOOLEAN: another side or host logged a failure of the same cause rank within the same log second: nothing orders them, the first is one of them by file order
--   later_failures STRUCT(ts TIMESTAMPTZ, side VARCHAR, host VARCHAR, outcome VARCHAR, reason VARCHAR, n BIGINT)[]: the other failures, one entry per side, host and outcome (rooms.later_failures)
--   t_last TIMESTAMPTZ: corrected time of its last failure line or event
--   n_lines BIGINT: failure lines and trace failure events of the request (every rank's copy counted)
--   n_ranks BIGINT: distinct (host, rank tags) that logged or traced one
--   n_hosts BIGINT: distinct hosts among them
CREATE OR REPLACE VIEW failed_requests AS
-- a failure line naming a rid but no room belongs to the room its rid is tied to elsewhere in the logs
WITH rid_room AS (
    SELECT rid, min(bootstrap_room) AS bootstrap_room
    FROM room_events
    WHERE rid IS NOT NULL
    GROUP BY rid
    HAVING count(DISTINCT bootstrap_room) = 1
),
-- the failure lines that name a request but no room; another engine's line may name several
-- (vLLM's MooncakeConnector prints a Python list of ids: docs/formats/OTHER_ENGINES.md), one request each
rid_events AS (
    SELECT * EXCLUDE (rid), unnest(
        CASE WHEN source = 'vllm' AND message LIKE '%for [''%'
             THEN regexp_extract_all(regexp_extract(message, 'for \[([^\]]*)\]', 1), '''([^'']+)''', 1)
             ELSE [rid] END) AS rid
    FROM events
    WHERE bootstrap_room IS NULL AND rid IS NOT NULL
      AND (kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected', 'router_failure')
           OR (kind = 'request_finished' AND finish_reason = 'abort'))
),
rid_lines AS (
    SELECT
        e.rid, e.ts, CASE WHEN e.ts_raw NOT LIKE '%.%' AND epoch_us(e.ts) % 1000000 = 0 THEN 1.0 ELSE 0.0 END
            AS ts_resolution_s,
        -- the failure templates name their side (docs/formats/SGLANG.md, "PD transfer and bootstrap failures";
        -- docs/formats/OTHER_ENGINES.md, "P/D failures of other engines"), else the file's role
        CASE
            WHEN regexp_matches(e.message, 'Decode transfer failed|Decode handshake failed|decode_req\.|^Decode server returned') THEN 'decode'
            WHEN regexp_matches(e.message, 'Prefill transfer failed|Prefill bootstrap failed|req\.rid|^Prefill server returned') THEN 'prefill'
            WHEN e.source IN ('vllm', 'trtllm') AND regexp_matches(e.message,
                '^NIXL transfer|^NIXL send_notif|^Handshake failed for request|^Error happens during tranfering'
                || '|^MooncakeAgentMetadata transfer|during generation transfer|generation request \S+ due to KV cache')
                THEN 'decode'
            WHEN e.source IN ('vllm', 'trtllm') AND regexp_matches(e.message,
                '^Releasing expired KV blocks|^Potentially invalid KV blocks|seconds without being sent'
                || '|during context transfer|context request \S+ due to KV cache|waiting for context KV cache')
                THEN 'prefill'
            WHEN e.role IN ('prefill', 'decode') THEN e.role
            ELSE 'unknown'
        END AS side,
        e.host, {'dp': e.dp_rank, 'pp': e.pp_rank, 'cp': e.attn_cp_rank, 'moe': e.moe_dp_rank, 'tp': e.tp_rank,
                 'ep': e.ep_rank} AS ranks,
        CASE WHEN e.kind = 'request_finished' THEN kv_failure_reason(e.message)
             ELSE coalesce(e.reason, kv_failure_reason(e.message)) END AS reason,
        e.kind IN ('abort', 'corruption_detected', 'request_finished') AS abort_like,
        e.kind = 'router_failure' AS router,
        e.message AS detail, e.source_file, e.line_no, m.bootstrap_room
    FROM rid_events e
    LEFT JOIN rid_room m USING (rid)
),
-- the same classes as room_failures gives the lines of a room
rid_classified AS (
    SELECT *, failure_outcome(reason, abort_like) AS outcome
    FROM rid_lines
),
rid_ranked AS (
    SELECT *,
        failure_cause_rank(outcome, reason) AS cause_rank
    FROM rid_classified
),
-- every failure line or trace event of a request, under its key; the rank tags come from the line itself
raw_lines AS (
    SELECT
        'room:' || f.bootstrap_room AS request_key, f.bootstrap_room, NULL::VARCHAR AS rid, f.ts, f.ts_resolution_s,
        f.side, f.host, CASE WHEN f.source = 'trace'
            THEN {'dp': NULL::INTEGER, 'pp': NULL::INTEGER, 'cp': NULL::INTEGER, 'moe': NULL::INTEGER,
                  'tp': t.engine_rank::INTEGER, 'ep': NULL::INTEGER}
            ELSE {'dp': e.dp_rank, 'pp': e.pp_rank, 'cp': e.attn_cp_rank, 'moe': e.moe_dp_rank, 'tp': e.tp_rank,
                  'ep': e.ep_rank} END AS ranks,
        f.outcome, f.reason, f.cause_rank, f.first_failure, f.detail, f.source_file, f.line_no, false AS router
    FROM room_failures f
    LEFT JOIN room_events e
        ON f.source <> 'trace' AND e.host IS NOT DISTINCT FROM f.host AND e.source_file = f.source_file
           AND e.line_no = f.line_no
    LEFT JOIN transfer_events t
        ON f.source = 'trace' AND t.host IS NOT DISTINCT FROM f.host AND t.source_file = f.source_file
           AND t.line_no = f.line_no
    UNION ALL
    SELECT
        CASE WHEN bootstrap_room IS NOT NULL THEN 'room:' || bootstrap_room ELSE 'rid:' || rid END,
        bootstrap_room, rid, ts, ts_resolution_s, side, host, ranks, outcome, reason, cause_rank,
        -- the first failure of a request known by rid alone (or a room whose only failure lines name just
        -- its rid): within a log second the cause first, as room_failures orders
        (bootstrap_room IS NULL OR bootstrap_room NOT IN (SELECT bootstrap_room FROM room_failures))
        AND row_number() OVER (
            PARTITION BY coalesce(CAST(bootstrap_room AS VARCHAR), rid)
            ORDER BY date_trunc('second', ts) NULLS LAST, cause_rank, ts, source_file, line_no) = 1,
        detail, source_file, line_no, router
    FROM rid_ranked
),
-- A request only the router names (its own request id, which the servers do not log) is the servers'
-- failed request of the same second or the one before (the router logs the answer after the server
-- failed), when that pairing is one to one: two requests failing in one second stay apart.
router_only AS (
    SELECT request_key, min(ts) AS ts FROM raw_lines GROUP BY 1 HAVING bool_and(router) AND min(ts) IS NOT NULL
),
server_firsts AS (
    SELECT request_key, ts FROM raw_lines WHERE first_failure AND NOT router AND ts IS NOT NULL
),
pairs AS (
    SELECT r.request_key AS router_key, s.request_key AS server_key
    FROM router_only r JOIN server_firsts s
      ON date_trunc('second', r.ts) - date_trunc('second', s.ts) BETWEEN INTERVAL 0 SECOND AND INTERVAL 1 SECOND
),
one_to_one AS (
    SELECT router_key, any_value(server_key) AS server_key FROM pairs
    WHERE server_key IN (SELECT server_key FROM pairs GROUP BY 1 HAVING count(*) = 1)
    GROUP BY 1 HAVING count(*) = 1
),
lines AS (
    SELECT l.* REPLACE (coalesce(j.server_key, l.request_key) AS request_key,
                        l.first_failure AND j.server_key IS NULL AS first_failure)
    FROM raw_lines l LEFT JOIN one_to_one j ON l.request_key = j.router_key
),
firsts AS (
    SELECT request_key, ts, ts_resolution_s, side, host, reason, outcome, cause_rank, detail
    FROM lines
    WHERE first_failure
),
-- the first failure ties with another side's or host's failure of the same rank in the same second
ties AS (
    SELECT l.request_key, bool_or(
        l.ts IS NOT NULL AND d.ts IS NOT NULL AND l.cause_rank = d.cause_rank
        AND (l.side IS DISTINCT FROM d.side OR l.host IS DISTINCT FROM d.host)
        AND abs(epoch(l.ts) - epoch(d.ts)) < greatest(l.ts_resolution_s, d.ts_resolution_s, 1e-6)) AS tied
    FROM lines l JOIN firsts d USING (request_key)
    GROUP BY 1
),
agg AS (
    SELECT
        request_key,
        any_value(bootstrap_room) AS bootstrap_room,
        arg_min(rid, (ts, source_file, line_no)) FILTER (WHERE rid IS NOT NULL AND side = 'prefill') AS rid_prefill,
        arg_min(rid, (ts, source_file, line_no)) FILTER (WHERE rid IS NOT NULL AND side <> 'prefill') AS rid_decode,
        list(DISTINCT host ORDER BY host) FILTER (WHERE host IS NOT NULL) AS hosts,
        CASE
            WHEN bool_or(side = 'prefill') AND bool_or(side = 'decode') THEN 'prefill+decode'
            WHEN bool_or(side = 'prefill') THEN 'prefill'
            WHEN bool_or(side = 'decode') THEN 'decode'
            ELSE 'unknown'
        END AS sides,
        max(ts) AS t_last,
        count(*) AS n_lines,
        count(DISTINCT {'host': host, 'r': ranks}) AS n_ranks,
        count(DISTINCT host) AS n_hosts
    FROM lines
    GROUP BY 1
),
-- the other failures of those requests, in the shape of rooms.later_failures
rid_later AS (
    SELECT g.request_key,
           list({'ts': g.ts, 'side': g.side, 'host': g.host, 'outcome': g.outcome, 'reason': g.reason, 'n': g.n}
                ORDER BY g.ts NULLS LAST, g.cause_rank, g.side, g.host, g.outcome) AS later_failures
    FROM (
        SELECT request_key, side, host, outcome, min(ts) AS ts,
               arg_min(reason, (cause_rank, coalesce(ts, 'infinity'::TIMESTAMPTZ), source_file, line_no)) AS reason,
               min(cause_rank) AS cause_rank, count(*) AS n
        FROM lines
        WHERE bootstrap_room IS NULL OR bootstrap_room NOT IN (SELECT bootstrap_room FROM room_failures)
        GROUP BY ALL
    ) g
    JOIN firsts d USING (request_key)
    WHERE NOT (g.side IS NOT DISTINCT FROM d.side AND g.host IS NOT DISTINCT FROM d.host AND g.outcome = d.outcome)
    GROUP BY 1
)
SELECT
    a.request_key,
    a.bootstrap_room,
    coalesce(r.rid_prefill, a.rid_prefill) AS rid_prefill,
    coalesce(r.rid_decode, a.rid_decode) AS rid_decode,
    a.hosts,
    a.sides,
    coalesce(r.outcome, d.outcome) AS outcome,
    d.ts AS t_first,
    d.host AS first_host,
    d.side AS first_side,
    d.reason AS first_reason,
    d.detail AS first_message,
    coalesce(t.tied, false) AS first_simultaneous,
    coalesce(r.later_failures, l.later_failures, []) AS later_failures,
    a.t_last,
    a.n_lines,
    a.n_ranks,
    a.n_hosts
FROM agg a
LEFT JOIN firsts d USING (request_key)
LEFT JOIN ties t USING (request_key)
LEFT JOIN rooms r ON r.bootstrap_room = a.bootstrap_room
LEFT JOIN rid_later l USING (request_key)
ORDER BY t_first NULLS LAST, request_key;
