-- name: clock_bounds
-- kind: view
-- description: How far one host's clock may still run ahead of another's after the offsets in force, bounded by
--   events of one room that must happen in order (the orderings of `forensics clocks`). One row per ordered host
--   pair.
-- inputs: clock_estimates (on the clocks in force)
-- parameters: none
-- columns:
--   host_a VARCHAR: the reference host
--   host_b VARCHAR: the other host
--   lower_s DOUBLE: host_b's corrected clock runs at least this far ahead of host_a's (NULL: no bound)
--   upper_s DOUBLE: ... and at most this far (NULL: no bound)
--   n_lower BIGINT: ordered event pairs giving a lower bound
--   n_upper BIGINT: ordered event pairs giving an upper bound
--   ahead_s DOUBLE: what room_failures allows for: upper_s (else lower_s) when the bounds exclude zero, i.e. show the
--     offsets in force to be off; else 0
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
