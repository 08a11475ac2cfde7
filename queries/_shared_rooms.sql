-- name: _shared_rooms
-- description: host pairs whose logs or traces name the same bootstrap rooms, for `forensics clocks`
--   to say why a pair that shares rooms has no bound
-- inputs: room_events, transfer_events
-- parameters: none
-- columns:
--   host_a: the first host of the pair (host_a < host_b)
--   host_b: the second host
--   n_rooms: rooms both hosts name
--   example_room: the lowest of them (as text: 63-bit)
--   only_failures: every shared room's lines on both hosts are failure lines

-- each host's rooms, and whether it named each only in failure lines: no rule orders two failure
-- lines across hosts (both sides fail on their own when a transfer breaks)
WITH seen AS (
    SELECT bootstrap_room, host, bool_and(kind IN ('transfer_failed', 'bootstrap_failed', 'abort',
                                                   'corruption_detected', 'checksum_mismatch')) AS failure_only
    FROM room_events WHERE host IS NOT NULL GROUP BY ALL
    UNION ALL
    SELECT bootstrap_room, host, bool_and(event IN ('fail', 'abort'))
    FROM transfer_events WHERE host IS NOT NULL AND bootstrap_room <> 0 AND NOT unknown_enum GROUP BY ALL
),
per_host AS (SELECT bootstrap_room, host, bool_and(failure_only) AS failure_only FROM seen GROUP BY ALL)
SELECT a.host AS host_a, b.host AS host_b, count(DISTINCT a.bootstrap_room) AS n_rooms,
       CAST(min(a.bootstrap_room) AS VARCHAR) AS example_room,
       bool_and(a.failure_only AND b.failure_only) AS only_failures
FROM per_host a JOIN per_host b ON a.bootstrap_room = b.bootstrap_room AND a.host < b.host
GROUP BY ALL
ORDER BY host_a, host_b
