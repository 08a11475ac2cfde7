-- name: clock_constraints, clock_estimates
-- description: how far each host's clock runs ahead of its PD peer's, from ordered pairs of events
--   of the same room (forensics/analysis/clocks.py explains the orderings); on the clocks in force,
--   so an estimate away from 0 is skew the store's offsets do not correct yet
-- inputs: transfer_events, room_events
-- parameters: none
-- columns:
--   clock_constraints(): bootstrap_room, host_a (the earlier event), host_b (the later), rule,
--     bound (off_b - off_a <= bound, seconds)
--   clock_estimates: host_a (a prefill host when one side is prefill), host_b, estimate_s
--     (off_b - off_a: the middle of [lower_s, upper_s], the one bound there is, NULL when the bounds
--     contradict), lower_s, upper_s, lower_pairs, upper_pairs, consistent (lower_s <= upper_s),
--     skew_s (the skew the bounds show: estimate_s when both bounds exist, agree and lie within
--     2 s of each other, else the bound nearest 0 when 0 is outside them, else NULL)

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
-- that KV arrived and it generated more than one token (SGLANG.md §7, §9)
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

CREATE OR REPLACE VIEW clock_estimates AS
-- only the tightest bound of each direction counts: one row per host pair and rule from here on
WITH c AS (SELECT host_a, host_b, rule, min(bound) AS bound, count(*) AS n FROM clock_constraints() GROUP BY ALL),
-- the side of each host as the rules name it: prefill hosts are the reference of a pair
prefill AS (
    SELECT host_a AS host FROM c WHERE starts_with(rule, 'prefill')
    UNION SELECT host_b FROM c WHERE starts_with(rule, 'decode')
),
-- each pair read one way round (prefill host first, else by name): a bound of the reverse
-- direction bounds the pair from below
oriented AS (
    SELECT c.host_a, c.host_b, c.bound, c.n,
           (c.host_a NOT IN (SELECT host FROM prefill)) AS a_late, (c.host_b NOT IN (SELECT host FROM prefill)) AS b_late
    FROM c
),
pairs AS (
    SELECT CASE WHEN forward THEN host_a ELSE host_b END AS host_a,
           CASE WHEN forward THEN host_b ELSE host_a END AS host_b,
           max(-bound) FILTER (WHERE NOT forward) AS lower_s, min(bound) FILTER (WHERE forward) AS upper_s,
           coalesce(sum(n) FILTER (WHERE NOT forward), 0) AS lower_pairs,
           coalesce(sum(n) FILTER (WHERE forward), 0) AS upper_pairs
    FROM (SELECT *, (a_late < b_late OR (a_late = b_late AND host_a < host_b)) AS forward FROM oriented)
    GROUP BY ALL
)
SELECT host_a, host_b,
       CASE WHEN lower_s IS NOT NULL AND upper_s IS NOT NULL
            THEN CASE WHEN lower_s <= upper_s THEN (lower_s + upper_s) / 2 END
            ELSE coalesce(lower_s, upper_s) END AS estimate_s,
       lower_s, upper_s, lower_pairs, upper_pairs,
       lower_s IS NULL OR upper_s IS NULL OR lower_s <= upper_s AS consistent,
       -- the middle of an interval wider than 2 s could be off by more than a second: then only the
       -- skew the bounds prove (the bound nearest 0, when 0 is outside) is used
       CASE WHEN lower_s > upper_s THEN NULL
            WHEN upper_s - lower_s <= 2 THEN (lower_s + upper_s) / 2
            WHEN lower_s > 0 THEN lower_s
            WHEN upper_s < 0 THEN upper_s END AS skew_s
FROM pairs;
