-- name: transfers
-- kind: view
-- description: One row per transfer unit (bootstrap_room, kind, chunk) per sending rank, from the transfer trace and
--   NIXL notification payloads in debug logs. Clock offsets applied; room 0 (warmup) excluded.
-- inputs: transfer_events (clock-corrected), events (notification payloads of debug logs, room failures)
-- grain: room
-- order: bootstrap_room, kind, chunk NULLS FIRST, side, host, engine_rank
-- parameters: none
-- columns:
--   bootstrap_room BIGINT: PD bootstrap room
--   kind VARCHAR: 'kv' | 'aux' | 'state' | 'index_k'
--   chunk INTEGER: chunk index (NULL for aux/state)
--   side VARCHAR: side that describes the transfer: 'prefill' (sender) or 'decode' (only the receiver seen)
--   host VARCHAR: host of that side
--   engine_rank INTEGER: engine rank of that side
--   t_post TIMESTAMPTZ: when prefill posted the WRITE
--   t_done TIMESTAMPTZ: completion: prefill handle DONE, else decode notification / done
--   t_notif TIMESTAMPTZ: when the decode notification arrived (decode clock, corrected)
--   duration_ms DOUBLE: t_done - t_post in milliseconds
--   bytes BIGINT: bytes in the unit
--   is_last BOOLEAN: the room's last chunk
--   status VARCHAR: 'done' | 'failed' | 'aborted' | 'timeout' | 'unknown'
--   nixl_status VARCHAR: NIXL status of the failure or completion
--   peer VARCHAR: remote NIXL agent
--   error VARCHAR: failure text of the unit, else the room's abort text
--   clock_offset_s DOUBLE: clock offset subtracted from this side's host
--   source_file VARCHAR: file of the first event of the unit
--   line_no BIGINT: its line number
CREATE OR REPLACE VIEW transfers AS
-- rows that take part in verdicts: unknown kinds or events stay in transfer_events only (docs/formats/TRANSFER_TRACE.md, "Reader rules")
WITH te AS (
    SELECT *, coalesce(chunk, -2147483648) AS chunk_k
    FROM transfer_events
    WHERE NOT unknown_enum AND bootstrap_room <> 0
),
-- the sender's view of each unit: one row per prefill host and engine rank
sent AS (
    SELECT
        bootstrap_room, kind, chunk_k, host, engine_rank,
        min(ts) FILTER (WHERE event = 'post') AS t_post,
        min(ts) FILTER (WHERE event = 'done') AS t_done,
        min(ts) FILTER (WHERE event = 'fail') AS t_fail,
        arg_min(status, (ts, source_file, line_no)) FILTER (WHERE event IN ('fail', 'done')) AS nixl_status,
        arg_min(coalesce(error, status), (ts, source_file, line_no)) FILTER (WHERE event = 'fail') AS fail_error,
        max(bytes) FILTER (WHERE event = 'post') AS bytes,
        bool_or(is_last) AS is_last,
        arg_min(peer, (ts, source_file, line_no)) FILTER (WHERE peer IS NOT NULL) AS peer,
        any_value(clock_offset_s) AS clock_offset_s,
        arg_min(source_file, (ts, line_no)) AS source_file,
        arg_min(line_no, (ts, line_no)) AS line_no
    FROM te
    WHERE side = 'prefill' AND event IN ('post', 'done', 'fail')
    GROUP BY ALL
),
-- the receiver's view of each unit per decode rank: a notification (or decode `done`) is completion evidence
got AS (
    SELECT
        bootstrap_room, kind, chunk_k, host, engine_rank,
        min(ts) FILTER (WHERE event IN ('notif', 'done')) AS t_notif,
        min(ts) FILTER (WHERE event = 'fail') AS t_fail,
        arg_min(coalesce(error, status), (ts, source_file, line_no)) FILTER (WHERE event = 'fail') AS fail_error,
        max(bytes) AS bytes,
        bool_or(is_last) AS is_last,
        arg_min(peer, (ts, source_file, line_no)) FILTER (WHERE peer IS NOT NULL) AS peer,
        any_value(clock_offset_s) AS clock_offset_s,
        arg_min(source_file, (ts, line_no)) AS source_file,
        arg_min(line_no, (ts, line_no)) AS line_no
    FROM te
    WHERE side = 'decode' AND event IN ('notif', 'done', 'fail')
    GROUP BY ALL
),
-- a decode rank's notification comes from the prefill rank of the same number when TP sizes match;
-- otherwise only the unit's last notification is sure to follow every post
got_unit AS (
    SELECT bootstrap_room, kind, chunk_k, max(t_notif) AS t_notif_last, bool_or(t_fail IS NOT NULL) AS failed,
           arg_min(fail_error, t_fail) AS fail_error
    FROM got
    GROUP BY ALL
),
-- debug logs (`sending kvcache to <peer> with notif <payload>`, docs/formats/NIXL.md, "Notification strings") name units the trace may not have
log_sent AS (
    SELECT
        e.bootstrap_room,
        CASE WHEN e.m.kind = 'stg' THEN 'kv' ELSE e.m.kind END AS kind,
        coalesce(CASE WHEN e.m.kind IN ('kv', 'stg') THEN TRY_CAST(e.m.a AS INTEGER) END, -2147483648) AS chunk_k,
        e.host,
        coalesce(CASE WHEN e.m.kind = 'kv' THEN TRY_CAST(e.m.c AS INTEGER) END, e.tp_rank) AS engine_rank,
        e.ts AS t_post,
        CASE WHEN e.m.kind IN ('kv', 'stg') AND e.m.b <> '' THEN e.m.b IN ('1', 'True') END AS is_last,
        nullif(regexp_extract(e.message, 'sending kvcache to (\S+)', 1), '') AS peer,
        e.clock_offset_s, e.source_file, e.line_no
    FROM (
        SELECT *, regexp_extract(message,
            '(?:nixlv2_\d+_)?(\d{1,19})_(kv|aux|state|stg)(?:_(\d+))?(?:_([01]|True|False))?(?:_(\d+))?',
            ['room', 'kind', 'a', 'b', 'c']) AS m
        FROM events
        WHERE kind = 'transfer_notif' AND message LIKE 'sending kvcache%' AND bootstrap_room <> 0
    ) e
),
-- how each room ended, from the trace and the server logs: explains units that never completed
room_end AS (
    SELECT
        bootstrap_room,
        bool_or(aborted) AS aborted,
        bool_or(timed_out) AS timed_out,
        arg_min(error, (ts, source_file, line_no)) AS error
    FROM (
        SELECT bootstrap_room, ts, source_file, line_no, event = 'abort' AS aborted,
               regexp_matches(coalesce(error, ''), 'timed out|KVPoll\.(WaitingForInput|Bootstrapping)|waiting_timeout')
                   AS timed_out,
               error
        FROM te
        WHERE event IN ('abort', 'fail')
        UNION ALL
        SELECT bootstrap_room, ts, source_file, line_no, kind = 'abort' OR reason = 'aborted',
               reason IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout'), message
        FROM events
        WHERE kind IN ('abort', 'transfer_failed', 'bootstrap_failed') AND bootstrap_room <> 0
    )
    GROUP BY 1
),
-- sender rows from the trace, then log-only sender rows, then units only the receiver saw
units AS (
    SELECT
        s.bootstrap_room, s.kind, s.chunk_k, 'prefill' AS side, s.host, s.engine_rank,
        s.t_post,
        coalesce(s.t_done, g.t_notif, u.t_notif_last) AS t_done,
        coalesce(g.t_notif, u.t_notif_last) AS t_notif,
        s.bytes, s.is_last,
        s.t_fail IS NOT NULL OR coalesce(u.failed, false) AS failed,
        s.nixl_status, coalesce(s.fail_error, u.fail_error) AS fail_error,
        s.peer, s.clock_offset_s, s.source_file, s.line_no
    FROM sent s
    LEFT JOIN got g USING (bootstrap_room, kind, chunk_k, engine_rank)
    LEFT JOIN got_unit u USING (bootstrap_room, kind, chunk_k)
    UNION ALL
    SELECT
        l.bootstrap_room, l.kind, l.chunk_k, 'prefill', l.host, l.engine_rank,
        l.t_post, u.t_notif_last, u.t_notif_last, NULL, l.is_last,
        coalesce(u.failed, false), NULL, u.fail_error, l.peer, l.clock_offset_s, l.source_file, l.line_no
    FROM log_sent l
    LEFT JOIN got_unit u USING (bootstrap_room, kind, chunk_k)
    WHERE NOT EXISTS (SELECT 1 FROM sent s
                      WHERE s.bootstrap_room = l.bootstrap_room AND s.kind = l.kind AND s.chunk_k = l.chunk_k)
    UNION ALL
    SELECT
        g.bootstrap_room, g.kind, g.chunk_k, 'decode', g.host, g.engine_rank,
        NULL, g.t_notif, g.t_notif, g.bytes, g.is_last,
        g.t_fail IS NOT NULL, NULL, g.fail_error, g.peer, g.clock_offset_s, g.source_file, g.line_no
    FROM got g
    WHERE NOT EXISTS (SELECT 1 FROM sent s
                      WHERE s.bootstrap_room = g.bootstrap_room AND s.kind = g.kind AND s.chunk_k = g.chunk_k)
      AND NOT EXISTS (SELECT 1 FROM log_sent l
                      WHERE l.bootstrap_room = g.bootstrap_room AND l.kind = g.kind AND l.chunk_k = g.chunk_k)
)
SELECT
    x.bootstrap_room,
    x.kind,
    CAST(nullif(x.chunk_k, -2147483648) AS INTEGER) AS chunk,
    x.side,
    x.host,
    CAST(x.engine_rank AS INTEGER) AS engine_rank,
    x.t_post,
    x.t_done,
    x.t_notif,
    CAST(date_diff('microsecond', x.t_post, x.t_done) AS DOUBLE) / 1000.0 AS duration_ms,
    CAST(x.bytes AS BIGINT) AS bytes,
    x.is_last,
    CASE
        WHEN x.failed THEN 'failed'
        WHEN x.t_done IS NOT NULL THEN 'done'
        WHEN r.timed_out THEN 'timeout'
        WHEN r.aborted THEN 'aborted'
        ELSE 'unknown'
    END AS status,
    x.nixl_status,
    x.peer,
    CASE WHEN x.failed THEN coalesce(x.fail_error, r.error) WHEN x.t_done IS NULL THEN r.error END AS error,
    x.clock_offset_s,
    x.source_file,
    x.line_no
FROM units x
LEFT JOIN room_end r USING (bootstrap_room)
ORDER BY x.bootstrap_room, x.kind, chunk NULLS FIRST, x.side, x.host, x.engine_rank;
