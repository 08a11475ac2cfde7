-- name: clock_estimates
-- kind: view
-- description: How far each host's clock runs ahead of its PD peer's, from ordered pairs of events of the same room
--   (clock_constraints), on the clocks in force: an estimate away from 0 is skew the store's offsets do not correct
--   yet. One row per host pair.
-- inputs: clock_constraints
-- parameters: none
-- columns:
--   host_a VARCHAR: the reference host (a prefill host when one side is prefill)
--   host_b VARCHAR: the other host
--   estimate_s DOUBLE: off_b - off_a: the middle of [lower_s, upper_s], the one bound there is, NULL when the bounds
--     contradict
--   lower_s DOUBLE: host_b's clock runs at least this far ahead of host_a's (NULL: no bound)
--   upper_s DOUBLE: ... and at most this far (NULL: no bound)
--   lower_pairs HUGEINT: event pairs giving the lower bound
--   upper_pairs HUGEINT: event pairs giving the upper bound
--   consistent BOOLEAN: lower_s <= upper_s (or only one bound)
--   skew_s DOUBLE: the skew the bounds show: estimate_s when both bounds exist, agree and lie within 2 s of each
--     other, else the bound nearest 0 when 0 is outside them, else NULL

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
