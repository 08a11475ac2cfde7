-- name: clock_bounds
-- description: how far one host's clock may still run ahead of another's after the offsets in force,
--   bounded by events of one room that must happen in order (the orderings `forensics clocks` uses:
--   decode registers a request before prefill bootstraps it, posts or finishes it; prefill posts
--   before decode is notified and before decode finishes; NIXL.md §7, §10). room_failures allows for
--   this when it orders failures on different hosts; no time is moved by it.
-- inputs: room_events, transfer_events (clock-corrected)
-- parameters: none
-- columns: documented once in forensics/schema.py (CLOCK_BOUNDS) and printed by `forensics tables clock_bounds`;
--   tests/test_room_outcomes.py checks that this view returns exactly those columns, in order.
CREATE OR REPLACE VIEW clock_bounds AS
-- the moments of each room that the orderings compare, from the trace (µs) and the server logs (a
-- whole-second line happened up to 1 s after its ts)
WITH obs AS (
    SELECT bootstrap_room, host, side, CASE WHEN side = 'prefill' THEN 'post' ELSE 'notif' END AS what, ts,
           0.0 AS res
    FROM transfer_events
    WHERE NOT unknown_enum AND bootstrap_room <> 0 AND ts IS NOT NULL
      AND ((side = 'prefill' AND event = 'post') OR (side = 'decode' AND event IN ('notif', 'done')))
    UNION ALL
    SELECT bootstrap_room, host, side,
           CASE WHEN kind = 'request_finished' THEN side || '_finished'
                WHEN kind = 'request_received' THEN 'received' ELSE 'bootstrapped' END,
           ts, ts_resolution_s
    FROM room_events
    WHERE ts IS NOT NULL
      AND ((side = 'decode' AND kind = 'request_received') OR (side = 'prefill' AND kind = 'bootstrapped')
           OR (kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort' AND side IN ('prefill', 'decode')))
),
-- one row per room, in one pass; a room served by more than one host on a side bounds nothing, as
-- which host's moment is which is not known
per_room AS (
    SELECT
        bootstrap_room,
        min(host) FILTER (WHERE side = 'prefill') AS p_host,
        max(host) FILTER (WHERE side = 'prefill') AS p_host_max,
        min(host) FILTER (WHERE side = 'decode') AS d_host,
        max(host) FILTER (WHERE side = 'decode') AS d_host_max,
        min(ts) FILTER (WHERE what = 'post') AS first_post,
        max(ts) FILTER (WHERE what = 'post') AS last_post,
        min(ts) FILTER (WHERE what = 'notif') AS first_notif,
        min(ts) FILTER (WHERE what = 'received') AS received,
        min(ts) FILTER (WHERE what = 'bootstrapped') AS bootstrapped,
        arg_min(res, ts) FILTER (WHERE what = 'bootstrapped') AS bootstrapped_res,
        -- a prefill request finishes once its KV is written, so after decode registered it: the one
        -- ordering that request logs alone give
        min(ts) FILTER (WHERE what = 'prefill_finished') AS prefill_finished,
        arg_min(res, ts) FILTER (WHERE what = 'prefill_finished') AS prefill_finished_res,
        min(ts) FILTER (WHERE what = 'decode_finished') AS decode_finished,
        arg_min(res, ts) FILTER (WHERE what = 'decode_finished') AS decode_finished_res
    FROM obs
    GROUP BY 1
),
one_pair AS (
    SELECT * FROM per_room WHERE p_host = p_host_max AND d_host = d_host_max AND p_host <> d_host
),
-- `a` on host_a happened before `b` on host_b: host_b's clock runs at most ts_b - ts_a + res_b ahead
pairs AS (
    SELECT p_host AS host_a, d_host AS host_b, epoch(first_notif - first_post) AS bound
    FROM one_pair WHERE first_post IS NOT NULL AND first_notif IS NOT NULL
    UNION ALL
    SELECT p_host, d_host, epoch(decode_finished - last_post) + decode_finished_res
    FROM one_pair WHERE last_post IS NOT NULL AND decode_finished IS NOT NULL
    UNION ALL
    SELECT d_host, p_host, epoch(bootstrapped - received) + bootstrapped_res
    FROM one_pair WHERE received IS NOT NULL AND bootstrapped IS NOT NULL
    UNION ALL
    SELECT d_host, p_host, epoch(first_post - received)
    FROM one_pair WHERE received IS NOT NULL AND first_post IS NOT NULL
    UNION ALL
    SELECT d_host, p_host, epoch(prefill_finished - received) + prefill_finished_res
    FROM one_pair WHERE received IS NOT NULL AND prefill_finished IS NOT NULL
),
-- each bound read in both directions: an upper bound of b ahead of a is a lower bound of a ahead of b
directed AS (
    SELECT host_a, host_b, CAST(NULL AS DOUBLE) AS lo, bound AS hi FROM pairs
    UNION ALL
    SELECT host_b, host_a, -bound, NULL FROM pairs
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
