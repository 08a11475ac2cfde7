-- name: checksum_mismatches
-- description: rooms whose bytes differ between prefill and decode (trace checksums), and the
--   server's own corruption lines (metadata buffer collisions, checksum mismatch lines)
-- inputs: rooms, events, excerpt
-- parameters: none
-- columns:
--   bootstrap_room: the room (as text: 63-bit)
--   source: 'trace' (checksums of both sides differ) | the event kind that reported it
--   prefill_host: prefill host of the room
--   decode_host: decode host of the room
--   detail: mismatched units (kind:chunk) or the corruption line
--   t_first: first time the room was seen (UTC)
--   outcome: the room's outcome
WITH trace AS (
    SELECT CAST(bootstrap_room AS VARCHAR) AS bootstrap_room, 'trace' AS source, prefill_host, decode_host,
           mismatched_units AS detail, least(t_received, t_first_transfer) AS t_first, outcome
    FROM rooms WHERE checksum_match = false
),
-- the decode server's own detectors (docs/formats/SGLANG.md, "PD transfer and bootstrap failures")
logged AS (
    SELECT CAST(e.bootstrap_room AS VARCHAR), e.kind, r.prefill_host, coalesce(r.decode_host, e.host),
           excerpt(e.message, 200), e.ts, r.outcome
    FROM events e LEFT JOIN rooms r USING (bootstrap_room)
    WHERE e.kind IN ('checksum_mismatch', 'corruption_detected')
)
SELECT * FROM trace UNION ALL SELECT * FROM logged
ORDER BY t_first NULLS LAST, bootstrap_room, source
