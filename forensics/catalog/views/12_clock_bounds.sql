-- name: clock_bounds
-- description: how far one host's clock may still run ahead of another's after the offsets in force,
--   bounded by events of one room that must happen in order (the orderings `forensics clocks` uses:
--   decode registers a request before prefill bootstraps it, posts or finishes it, prefill posts a
--   unit before decode is notified of it and before decode finishes the request; NIXL.md §7, §10). room_failures
--   allows for this when it orders failures on different hosts; no time is moved by it.
-- inputs: room_events, transfer_events (clock-corrected)
-- parameters: none
-- columns: documented once in forensics/schema.py (CLOCK_BOUNDS) and printed by `forensics tables clock_bounds`;
--   tests/test_room_outcomes.py checks that this view returns exactly those columns, in order.
CREATE OR REPLACE VIEW clock_bounds AS
-- per room and host, the first and last post of the sender and the first notification of the receiver
WITH tr AS (
    SELECT
        bootstrap_room, host,
        min(ts) FILTER (WHERE side = 'prefill' AND event = 'post') AS first_post,
        max(ts) FILTER (WHERE side = 'prefill' AND event = 'post') AS last_post,
        min(ts) FILTER (WHERE side = 'decode' AND event IN ('notif', 'done')) AS first_notif
    FROM transfer_events
    WHERE NOT unknown_enum AND bootstrap_room <> 0 AND ts IS NOT NULL AND event IN ('post', 'notif', 'done')
    GROUP BY ALL
),
-- per room and host, the server-log moments with their resolution (a whole-second line happened up to 1 s later)
lg AS (
    SELECT
        bootstrap_room, host,
        min(ts) FILTER (WHERE side = 'decode' AND kind = 'request_received') AS received,
        min(ts) FILTER (WHERE side = 'prefill' AND kind = 'bootstrapped') AS bootstrapped,
        arg_min(ts_resolution_s, ts) FILTER (WHERE side = 'prefill' AND kind = 'bootstrapped') AS bootstrapped_res,
        min(ts) FILTER (WHERE side = 'decode' AND kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort')
            AS finished,
        arg_min(ts_resolution_s, ts) FILTER (WHERE side = 'decode' AND kind = 'request_finished'
                                             AND finish_reason IS DISTINCT FROM 'abort') AS finished_res,
        -- a prefill request finishes once its KV is written, so after decode registered it: the one
        -- ordering that request logs alone give
        min(ts) FILTER (WHERE side = 'prefill' AND kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort')
            AS prefill_finished,
        arg_min(ts_resolution_s, ts) FILTER (WHERE side = 'prefill' AND kind = 'request_finished'
                                             AND finish_reason IS DISTINCT FROM 'abort') AS prefill_finished_res
    FROM room_events
    WHERE ts IS NOT NULL AND kind IN ('request_received', 'bootstrapped', 'request_finished')
    GROUP BY ALL
),
-- `a` on host_a happened before `b` on host_b: host_b's clock runs at most ts_b - ts_a + res_b ahead
pairs AS (
    SELECT p.host AS host_a, d.host AS host_b, epoch(d.first_notif - p.first_post) AS bound
    FROM tr p JOIN tr d USING (bootstrap_room)
    WHERE p.first_post IS NOT NULL AND d.first_notif IS NOT NULL
    UNION ALL
    SELECT p.host, d.host, epoch(d.finished - p.last_post) + d.finished_res
    FROM tr p JOIN lg d USING (bootstrap_room)
    WHERE p.last_post IS NOT NULL AND d.finished IS NOT NULL
    UNION ALL
    SELECT d.host, p.host, epoch(p.bootstrapped - d.received) + p.bootstrapped_res
    FROM lg d JOIN lg p USING (bootstrap_room)
    WHERE d.received IS NOT NULL AND p.bootstrapped IS NOT NULL
    UNION ALL
    SELECT d.host, p.host, epoch(p.first_post - d.received)
    FROM lg d JOIN tr p USING (bootstrap_room)
    WHERE d.received IS NOT NULL AND p.first_post IS NOT NULL
    UNION ALL
    SELECT d.host, p.host, epoch(p.prefill_finished - d.received) + p.prefill_finished_res
    FROM lg d JOIN lg p USING (bootstrap_room)
    WHERE d.received IS NOT NULL AND p.prefill_finished IS NOT NULL
),
-- each bound read in both directions: an upper bound of b ahead of a is a lower bound of a ahead of b
directed AS (
    SELECT host_a, host_b, CAST(NULL AS DOUBLE) AS lo, bound AS hi FROM pairs WHERE host_a <> host_b
    UNION ALL
    SELECT host_b, host_a, -bound, NULL FROM pairs WHERE host_a <> host_b
)
SELECT
    host_a, host_b,
    max(lo) AS lower_s,
    min(hi) AS upper_s,
    count(lo) AS n_lower,
    count(hi) AS n_upper,
    -- how far host_b's corrected clock runs ahead of host_a's at most, when the bounds show the offsets
    -- in force to be off (zero outside them); 0 when they allow zero or contradict each other (an
    -- ordering assumption failed), so a clock nothing shows wrong is trusted as corrected
    CASE
        WHEN max(lo) > min(hi) THEN 0.0
        WHEN max(lo) > 0 THEN coalesce(min(hi), max(lo))
        WHEN min(hi) < 0 THEN min(hi)
        ELSE 0.0
    END AS ahead_s
FROM directed
GROUP BY host_a, host_b
ORDER BY host_a, host_b;
