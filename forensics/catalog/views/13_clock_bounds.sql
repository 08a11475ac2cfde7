-- name: clock_bounds
-- description: how far one host's clock may still run ahead of another's after the offsets in force,
--   read both ways round from clock_estimates (one set of orderings, those `forensics clocks` uses);
--   room_failures allows for this when it orders failures on different hosts; no time is moved by it.
-- inputs: clock_estimates (on the clocks in force)
-- parameters: none
-- columns: documented once in forensics/schema.py (CLOCK_BOUNDS) and printed by `forensics tables clock_bounds`;
--   tests/test_room_outcomes.py checks that this view returns exactly those columns, in order.
CREATE OR REPLACE VIEW clock_bounds AS
WITH e AS (SELECT host_a, host_b, lower_s, upper_s, lower_pairs, upper_pairs FROM clock_estimates),
-- an upper bound of b ahead of a is a lower bound of a ahead of b
directed AS (
    SELECT host_a, host_b, lower_s, upper_s, lower_pairs AS n_lower, upper_pairs AS n_upper FROM e
    UNION ALL
    SELECT host_b, host_a, -upper_s, -lower_s, upper_pairs, lower_pairs FROM e
)
SELECT
    host_a, host_b, lower_s, upper_s, CAST(n_lower AS BIGINT) AS n_lower, CAST(n_upper AS BIGINT) AS n_upper,
    -- how far host_b's corrected clock runs ahead of host_a's at most, when the bounds show the offsets
    -- in force to be off (zero outside them); 0 when they allow zero or contradict each other (an
    -- ordering assumption failed), so a clock nothing shows wrong is trusted as corrected
    CASE
        WHEN lower_s > upper_s THEN 0.0
        WHEN lower_s > 0 THEN coalesce(upper_s, lower_s)
        WHEN upper_s < 0 THEN upper_s
        ELSE 0.0
    END AS ahead_s
FROM directed
ORDER BY host_a, host_b;
