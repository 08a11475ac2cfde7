-- name: clock_constraints
-- kind: table macro
-- description: one row per room and ordering rule: an event of host_a that must come before one of host_b bounds how
--   far host_b's clock may run ahead of host_a's (forensics/analysis/clocks.py explains the orderings); on the clocks
--   in force. Read by clock_estimates and `forensics clocks`.
-- inputs: transfer_events, room_events
-- parameters: none
-- columns:
--   bootstrap_room BIGINT: the room whose events are paired
--   host_a VARCHAR: host of the earlier event
--   host_b VARCHAR: host of the later event
--   rule VARCHAR: which ordering: post_notif, register_bootstrap, post_finish, register_finish, finish_finish
--   bound DOUBLE: off_b - off_a <= bound, in seconds (the later event's time resolution allowed for)

-- a macro, not a view: one row per room and rule, only ever read by clock_estimates and `forensics clocks`
CREATE OR REPLACE MACRO clock_constraints() AS TABLE
WITH te AS (
    SELECT * FROM transfer_events WHERE NOT unknown_enum AND bootstrap_room <> 0
),
ev AS (SELECT * FROM room_events),
-- prefill posts a unit before decode is notified of it (µs trace times on both sides)
post_notif AS (
    SELECT p.bootstrap_room, p.host AS host_a, d.host AS host_b, p.t AS ts_a, d.t AS ts_b, 0.0 AS res_b,
           'prefill post -> decode notif' AS rule
    FROM (SELECT bootstrap_room, kind, chunk, host, min(ts) AS t FROM te
          WHERE side = 'prefill' AND event = 'post' GROUP BY ALL) p
    JOIN (SELECT bootstrap_room, kind, chunk, host, min(ts) AS t FROM te
          WHERE side = 'decode' AND event IN ('notif', 'done') GROUP BY ALL) d
      ON p.bootstrap_room = d.bootstrap_room AND p.kind = d.kind AND p.chunk IS NOT DISTINCT FROM d.chunk
),
-- decode registers the request before prefill learns where to write (bootstrap) or posts anything
decode_first AS (
    SELECT bootstrap_room, host, min(ts) AS t FROM ev
    WHERE side = 'decode' AND kind = 'request_received' AND ts IS NOT NULL GROUP BY ALL
),
prefill_after AS (
    SELECT bootstrap_room, host, arg_min(res, t) AS res, min(t) AS t FROM (
        SELECT bootstrap_room, host, ts AS t, ts_resolution_s AS res FROM ev
        WHERE side = 'prefill' AND kind = 'bootstrapped' AND ts IS NOT NULL
        UNION ALL
        SELECT bootstrap_room, host, ts, 0.0 FROM te WHERE side = 'prefill' AND event = 'post'
    ) GROUP BY ALL
),
register_bootstrap AS (
    SELECT d.bootstrap_room, d.host, p.host, d.t, p.t, p.res, 'decode request -> prefill bootstrap/post'
    FROM decode_first d JOIN prefill_after p USING (bootstrap_room)
),
-- a request decode finished normally had all its KV posted by prefill first
prefill_last AS (
    SELECT bootstrap_room, host, max(ts) AS t FROM te WHERE side = 'prefill' AND event = 'post' GROUP BY ALL
),
decode_finish AS (
    SELECT bootstrap_room, host, arg_min(ts_resolution_s, ts) AS res, min(ts) AS t FROM ev
    WHERE side = 'decode' AND kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort'
      AND ts IS NOT NULL
    GROUP BY ALL
),
post_finish AS (
    SELECT p.bootstrap_room, p.host, d.host, p.t, d.t, d.res, 'prefill post -> decode finish'
    FROM prefill_last p JOIN decode_finish d USING (bootstrap_room)
),
-- without a trace or debug lines the request log still orders the sides: prefill finishes a request
-- only once its KV is sent, which needs decode to have registered it first, and decode finishes after
-- that KV arrived and it generated more than one token (docs/formats/SGLANG.md, "Request logs" and "PD transfer and bootstrap failures")
prefill_finish AS (
    SELECT bootstrap_room, host, arg_min(ts_resolution_s, ts) AS res, min(ts) AS t FROM ev
    WHERE side = 'prefill' AND kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort'
      AND ts IS NOT NULL
    GROUP BY ALL
),
register_finish AS (
    SELECT d.bootstrap_room, d.host, p.host, d.t, p.t, p.res, 'decode request -> prefill finish'
    FROM decode_first d JOIN prefill_finish p USING (bootstrap_room)
),
finish_finish AS (
    SELECT p.bootstrap_room, p.host, d.host, p.t, d.t, d.res, 'prefill finish -> decode finish'
    FROM prefill_finish p
    JOIN (SELECT bootstrap_room, host, arg_min(ts_resolution_s, ts) AS res, min(ts) AS t FROM ev
          WHERE side = 'decode' AND kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort'
            AND coalesce(completion_tokens, 2) > 1 AND ts IS NOT NULL
          GROUP BY ALL) d USING (bootstrap_room)
)
SELECT bootstrap_room, host_a, host_b, rule,
       CAST(date_diff('microsecond', ts_a, ts_b) AS DOUBLE) / 1e6 + res_b AS bound
FROM (SELECT * FROM post_notif UNION ALL SELECT * FROM register_bootstrap UNION ALL SELECT * FROM post_finish
      UNION ALL SELECT * FROM register_finish UNION ALL SELECT * FROM finish_finish)
WHERE host_a <> host_b;
