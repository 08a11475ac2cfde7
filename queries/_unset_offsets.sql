-- name: _unset_offsets
-- description: per host whose clock the estimates see skewed, the pair with most evidence (on the offsets in
--   force); every report's header warns of the hosts with no offset set among them
-- inputs: clock_estimates
-- parameters: none
-- columns:
--   host: the host whose clock is off (host_b of the pair)
--   reference: the host it is compared with, the one of most event pairs
--   skew_s: how far its clock runs ahead of the reference's (seconds)
--   pairs: event pairs behind that estimate
SELECT host_b AS host, arg_max(host_a, lower_pairs + upper_pairs) AS reference,
       arg_max(skew_s, lower_pairs + upper_pairs) AS skew_s, max(lower_pairs + upper_pairs) AS pairs
FROM clock_estimates WHERE skew_s IS NOT NULL
GROUP BY host_b
ORDER BY host_b
