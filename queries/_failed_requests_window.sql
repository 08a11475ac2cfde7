-- name: _failed_requests_window
-- description: the failed requests of a window (each once, at its first failure), earliest first,
--   which the HTML page and the charts draw one by one: they are a handful where lines are thousands
-- inputs: failed_requests
-- parameters:
--   since TIMESTAMP = NULL: first instant (UTC) of the window, default the start of the data
--   before TIMESTAMP = NULL: end of the window (UTC, exclusive), default the end of the data
--   host VARCHAR = NULL: only requests this host logged
--   cap INTEGER = 20000: requests to keep
-- columns:
--   room: bootstrap room of the request (NULL for a request known only by rid)
--   rid_prefill: its rid on the prefill side
--   rid_decode: its rid on the decode side
--   hosts: the hosts that logged a failure of it, sorted
--   t_first: its first failure line (UTC, clock offsets applied)
--   first_host: the host of that line
--   reason: the normalised reason of that line
--   outcome: the request's outcome
--   n_lines: failure lines that named it, over every rank, side and host
--   n_ranks: ranks that logged a failure of it
--   first_simultaneous: both sides failed in the same log second and nothing orders them
SELECT bootstrap_room AS room, rid_prefill, rid_decode, hosts, t_first, first_host, first_reason AS reason,
       outcome, n_lines, n_ranks, first_simultaneous
FROM failed_requests
WHERE (CAST($since AS TIMESTAMPTZ) IS NULL OR t_first >= CAST($since AS TIMESTAMPTZ))
  AND (CAST($before AS TIMESTAMPTZ) IS NULL OR t_first < CAST($before AS TIMESTAMPTZ))
  AND (CAST($host AS VARCHAR) IS NULL OR list_contains(hosts, $host))
ORDER BY t_first, request_key
LIMIT $cap
