-- name: rooms
-- kind: view
-- description: One row per bootstrap_room, joining both servers' events and the transfer trace. A room seen on one
--   side only is kept. Clock offsets applied; room 0 (warmup) excluded.
-- inputs: room_events, room_failures, transfer_events, transfers (all clock-corrected)
-- grain: room
-- order: bootstrap_room
-- parameters: none
-- columns:
--   bootstrap_room BIGINT: PD bootstrap room: the join key across servers
--   prefill_host VARCHAR: prefill host (first by name when several)
--   prefill_rank INTEGER: lowest prefill engine/TP rank seen
--   decode_host VARCHAR: decode host
--   decode_rank INTEGER: lowest decode engine/TP rank seen
--   rid_prefill VARCHAR: request id on prefill
--   rid_decode VARCHAR: request id on decode (may differ from prefill's)
--   t_received TIMESTAMPTZ: first request_received line of the room
--   t_bootstrapped TIMESTAMPTZ: prefill learned the decode destination (`got info room=`, `is bootstrapped`)
--   t_first_transfer TIMESTAMPTZ: first WRITE posted (or first notification when only decode is seen)
--   t_last_transfer TIMESTAMPTZ: last transfer completion (or post when it never completed)
--   t_finished TIMESTAMPTZ: request_finished, else the last failure or abort of the room
--   outcome VARCHAR: the room's first failure in corrected time (room_failures; within a log line's 1 s, the cause
--     before its consequences): 'transfer_failed' | 'waiting_timeout' | 'bootstrap_timeout' | 'aborted'; without one
--     'ok' (finished, or every unit done), else 'unknown'
--   t_outcome TIMESTAMPTZ: when that first failure happened (NULL for ok / unknown)
--   outcome_side VARCHAR: side that logged or traced it: 'prefill' | 'decode' | 'unknown'
--   outcome_host VARCHAR: host that logged or traced it
--   outcome_reason VARCHAR: its normalised reason (events.reason: waiting_timeout, transport, aborted, ...)
--   later_failures STRUCT(ts TIMESTAMPTZ, side VARCHAR, host VARCHAR, outcome VARCHAR, reason VARCHAR, n BIGINT)[]:
--     the room's other failures, its consequences: one entry per side, host and outcome other than the first
--     failure's own (ts of its first line or event, n of them), in time order; empty when none
--   checksum_prefill VARCHAR: prefill checksums compared (hex; comma-separated by kind, chunk, rank)
--   checksum_decode VARCHAR: decode checksums compared
--   checksum_match BOOLEAN: the verdict of docs/formats/TRANSFER_TRACE.md, "Checksum verdicts": true verified, false corrupted (or a `KV checksum mismatch`
--     line), NULL unverified
--   checksum_verdict VARCHAR: 'verified' | 'corrupted' | 'unverified'
--   mismatched_units VARCHAR: units whose checksums differ, as kind:chunk (comma-separated)
--   n_post BIGINT: trace post events
--   n_fail BIGINT: trace fail events plus transfer failure lines
--   n_abort BIGINT: trace abort events plus abort lines
--   first_error VARCHAR: text of the first failure (else of a `KV checksum mismatch` line)
--   seen_prefill BOOLEAN: the room appears in prefill events or trace
--   seen_decode BOOLEAN: the room appears in decode events or trace
--   sides_seen VARCHAR: 'prefill+decode' | 'prefill' | 'decode' | 'unknown' (only lines of unknown role)
CREATE OR REPLACE VIEW rooms AS
WITH ev AS (SELECT * FROM room_events),
te AS (
    SELECT * FROM transfer_events WHERE NOT unknown_enum AND bootstrap_room <> 0
),
-- who saw the room: hosts, ranks and rids per side, from both sources
seen AS (
    SELECT bootstrap_room, side, host, coalesce(tp_rank, attn_cp_rank) AS rank, rid, ts, source_file, line_no FROM ev
    UNION ALL
    SELECT bootstrap_room, side, host, engine_rank, rid, ts, source_file, line_no FROM te
),
who AS (
    SELECT
        bootstrap_room,
        min(host) FILTER (WHERE side = 'prefill') AS prefill_host,
        min(rank) FILTER (WHERE side = 'prefill') AS prefill_rank,
        min(host) FILTER (WHERE side = 'decode') AS decode_host,
        min(rank) FILTER (WHERE side = 'decode') AS decode_rank,
        arg_min(rid, (ts, source_file, line_no)) FILTER (WHERE side = 'prefill' AND rid IS NOT NULL) AS rid_prefill,
        arg_min(rid, (ts, source_file, line_no)) FILTER (WHERE side = 'decode' AND rid IS NOT NULL) AS rid_decode,
        bool_or(side = 'prefill') AS seen_prefill,
        bool_or(side = 'decode') AS seen_decode
    FROM seen
    GROUP BY 1
),
-- lifecycle times, counts and the checksum line from the server logs
ev_room AS (
    SELECT
        bootstrap_room,
        min(ts) FILTER (WHERE kind = 'request_received') AS t_received,
        min(ts) FILTER (WHERE kind = 'bootstrapped') AS t_bootstrapped,
        max(ts) FILTER (WHERE kind = 'request_finished') AS t_request_finished,
        max(ts) FILTER (WHERE kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected'))
            AS t_failed,
        bool_or(kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort') AS finished_ok,
        count(*) FILTER (WHERE kind IN ('transfer_failed', 'bootstrap_failed')) AS n_fail,
        count(*) FILTER (WHERE kind = 'abort') AS n_abort,
        arg_min(message, (ts, source_file, line_no)) FILTER (WHERE kind = 'checksum_mismatch') AS first_mismatch,
        bool_or(kind = 'checksum_mismatch') AS log_mismatch,
        arg_min(lower(nullif(regexp_extract(message, 'expected=(?:0x)?([0-9a-fA-F]+)', 1), '')), (ts, source_file, line_no))
            FILTER (WHERE kind = 'checksum_mismatch') AS log_expected,
        arg_min(lower(nullif(regexp_extract(message, 'got=(?:0x)?([0-9a-fA-F]+)', 1), '')), (ts, source_file, line_no))
            FILTER (WHERE kind = 'checksum_mismatch') AS log_got
    FROM ev
    GROUP BY 1
),
-- the same counts from the trace
te_room AS (
    SELECT
        bootstrap_room,
        count(*) FILTER (WHERE event = 'post') AS n_post,
        count(*) FILTER (WHERE event = 'fail') AS n_fail,
        count(*) FILTER (WHERE event = 'abort') AS n_abort,
        max(ts) FILTER (WHERE event = 'abort') AS t_abort
    FROM te
    GROUP BY 1
),
-- transfer times from the transfers view; a room whose every unit completed is ok unless it failed
tf_room AS (
    SELECT
        bootstrap_room,
        min(coalesce(t_post, t_notif)) AS t_first_transfer,
        max(coalesce(t_done, t_notif, t_post)) AS t_last_transfer,
        bool_and(status = 'done') AS all_done
    FROM transfers
    GROUP BY 1
),
-- the room's failures, computed once for the two uses below
rf AS MATERIALIZED (SELECT * FROM room_failures),
-- the failure that decides the outcome (room_failures says which and why)
first_fail AS (
    SELECT bootstrap_room,
           {'ts': ts, 'side': side, 'host': host, 'outcome': outcome, 'reason': reason, 'detail': detail} AS ff
    FROM rf
    WHERE first_failure
),
-- every failure of the room, one entry per side, host and outcome (the same failure seen by several
-- ranks, or in the log and the trace, is one entry with its count), first seen when
fail_group AS (
    SELECT
        bootstrap_room, side, host, outcome,
        min(ts) AS ts,
        arg_min(reason, (cause_rank, coalesce(ts, 'infinity'::TIMESTAMPTZ), source_file, line_no)) AS reason,
        min(cause_rank) AS cause_rank,
        count(*) AS n
    FROM rf
    GROUP BY ALL
),
-- the entries besides the first failure's own: its consequences, in time order (cause first in a tie)
later AS (
    SELECT
        g.bootstrap_room,
        list({'ts': g.ts, 'side': g.side, 'host': g.host, 'outcome': g.outcome, 'reason': g.reason, 'n': g.n}
             ORDER BY g.ts NULLS LAST, g.cause_rank, g.side, g.host, g.outcome) AS later_failures
    FROM fail_group g
    JOIN first_fail d USING (bootstrap_room)
    WHERE NOT (g.side IS NOT DISTINCT FROM d.ff.side AND g.host IS NOT DISTINCT FROM d.ff.host
               AND g.outcome = d.ff.outcome)
    GROUP BY 1
),
-- checksums (docs/formats/TRANSFER_TRACE.md, "Checksum verdicts"): the latest value per unit, side and engine rank (earlier ones stay in
-- transfer_events but are not compared)
ck AS (
    SELECT bootstrap_room, kind, coalesce(chunk, -2147483648) AS chunk_k, side, engine_rank,
           arg_max(checksum_int, (ts, line_no)) AS v, arg_max(checksum, (ts, line_no)) AS hex
    FROM te
    WHERE event = 'checksum'
    GROUP BY ALL
),
ck_group AS (
    SELECT bootstrap_room, kind, chunk_k,
           list_sort(list(engine_rank) FILTER (WHERE side = 'prefill')) AS p_ranks,
           list_sort(list(engine_rank) FILTER (WHERE side = 'decode')) AS d_ranks,
           list(v) FILTER (WHERE side = 'prefill') AS p_vals
    FROM ck
    GROUP BY ALL
),
-- rank by rank when both sides report the same ranks, otherwise every decode value must be some prefill value
ck_verdict AS (
    SELECT g.bootstrap_room, g.kind, g.chunk_k,
        CASE
            WHEN g.p_ranks IS NULL OR g.d_ranks IS NULL THEN 'unverified'
            WHEN g.p_ranks = g.d_ranks THEN
                CASE WHEN bool_or(d.v <> p.v) THEN 'mismatch' ELSE 'match' END
            ELSE CASE WHEN bool_or(NOT list_contains(g.p_vals, d.v)) THEN 'mismatch' ELSE 'match' END
        END AS verdict
    FROM ck_group g
    LEFT JOIN ck d ON d.side = 'decode' AND d.bootstrap_room = g.bootstrap_room AND d.kind = g.kind
        AND d.chunk_k = g.chunk_k
    LEFT JOIN ck p ON p.side = 'prefill' AND p.bootstrap_room = g.bootstrap_room AND p.kind = g.kind
        AND p.chunk_k = g.chunk_k AND p.engine_rank = d.engine_rank
    GROUP BY g.bootstrap_room, g.kind, g.chunk_k, g.p_ranks, g.d_ranks, g.p_vals
),
ck_room AS (
    SELECT
        v.bootstrap_room,
        CASE WHEN bool_or(verdict = 'mismatch') THEN 'corrupted'
             WHEN bool_or(verdict = 'match') THEN 'verified' ELSE 'unverified' END AS verdict,
        string_agg(v.kind || ':' || coalesce(CAST(nullif(v.chunk_k, -2147483648) AS VARCHAR), ''), ','
                   ORDER BY v.kind, v.chunk_k) FILTER (WHERE verdict = 'mismatch') AS mismatched_units,
        (SELECT string_agg(hex, ',' ORDER BY kind, chunk_k, engine_rank) FROM ck
         WHERE ck.bootstrap_room = v.bootstrap_room AND ck.side = 'prefill') AS checksum_prefill,
        (SELECT string_agg(hex, ',' ORDER BY kind, chunk_k, engine_rank) FROM ck
         WHERE ck.bootstrap_room = v.bootstrap_room AND ck.side = 'decode') AS checksum_decode
    FROM ck_verdict v
    GROUP BY 1
)
SELECT
    w.bootstrap_room,
    w.prefill_host,
    CAST(w.prefill_rank AS INTEGER) AS prefill_rank,
    w.decode_host,
    CAST(w.decode_rank AS INTEGER) AS decode_rank,
    w.rid_prefill,
    w.rid_decode,
    e.t_received,
    e.t_bootstrapped,
    f.t_first_transfer,
    f.t_last_transfer,
    coalesce(e.t_request_finished, greatest(e.t_failed, t.t_abort)) AS t_finished,
    coalesce(d.ff.outcome,
             CASE WHEN coalesce(e.finished_ok, false) OR coalesce(f.all_done, false) THEN 'ok' ELSE 'unknown' END)
        AS outcome,
    d.ff.ts AS t_outcome,
    d.ff.side AS outcome_side,
    d.ff.host AS outcome_host,
    d.ff.reason AS outcome_reason,
    coalesce(l.later_failures, []) AS later_failures,
    coalesce(c.checksum_prefill, e.log_expected) AS checksum_prefill,
    coalesce(c.checksum_decode, e.log_got) AS checksum_decode,
    CASE
        WHEN coalesce(e.log_mismatch, false) OR c.verdict = 'corrupted' THEN false
        WHEN c.verdict = 'verified' THEN true
    END AS checksum_match,
    CASE
        WHEN coalesce(e.log_mismatch, false) OR c.verdict = 'corrupted' THEN 'corrupted'
        ELSE coalesce(c.verdict, 'unverified')
    END AS checksum_verdict,
    c.mismatched_units,
    coalesce(t.n_post, 0) AS n_post,
    coalesce(t.n_fail, 0) + coalesce(e.n_fail, 0) AS n_fail,
    coalesce(t.n_abort, 0) + coalesce(e.n_abort, 0) AS n_abort,
    coalesce(d.ff.detail, e.first_mismatch) AS first_error,
    w.seen_prefill,
    w.seen_decode,
    CASE
        WHEN w.seen_prefill AND w.seen_decode THEN 'prefill+decode'
        WHEN w.seen_prefill THEN 'prefill'
        WHEN w.seen_decode THEN 'decode'
        ELSE 'unknown'
    END AS sides_seen
FROM who w
LEFT JOIN ev_room e USING (bootstrap_room)
LEFT JOIN te_room t USING (bootstrap_room)
LEFT JOIN tf_room f USING (bootstrap_room)
LEFT JOIN ck_room c USING (bootstrap_room)
LEFT JOIN first_fail d USING (bootstrap_room)
LEFT JOIN later l USING (bootstrap_room)
ORDER BY w.bootstrap_room;
