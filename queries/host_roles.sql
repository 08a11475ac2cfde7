-- name: host_roles
-- description: each host's server role, from the files ingested for it
-- inputs: files
-- parameters:
--   none
-- columns:
--   host: host named by the files
--   role: prefill | decode | unified (the alphabetically first when its files disagree); unknown when none says
SELECT host, coalesce(min(role) FILTER (WHERE role NOT IN ('unknown')), 'unknown') AS role
FROM files WHERE host IS NOT NULL GROUP BY host ORDER BY host
