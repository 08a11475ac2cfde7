-- name: reply_hosts
-- description: every reply placed on the decode host that served it: its room's decode host, else
--   the host of the linked server request
-- inputs: replies, rooms
-- parameters:
--   since TIMESTAMP = NULL: first instant (UTC) a reply may start at, default the start of the data
--   before TIMESTAMP = NULL: replies starting before this instant (UTC), default the end of the data
-- columns:
--   source: transcript source
--   session_id: session of the turn
--   turn_id: the turn, unique within (source, session_id)
--   t0: when the request went out (UTC)
--   t1: when the reply was complete (else t0)
--   corruption_class: clean | parse_leak | incoherent | empty | config | transfer_error
--   corrupted: class is parse_leak, incoherent or empty
--   signatures: corruption signatures that fired
--   evidence: snippet per deciding signature
--   finish_reason: finish reason of the reply
--   host: decode host that served it, NULL when not linked to a server request
--   rank: decode rank of its room
--   room: bootstrap room (as text: 63-bit), the server's when linked
--   outcome: the room's outcome
--   link_method: how the reply was linked to its server request
SELECT r.source, r.session_id, r.turn_id, r.t_start AS t0, coalesce(r.t_end, r.t_start) AS t1,
       r.corruption_class, coalesce(r.corrupted, false) AS corrupted, r.signatures, r.evidence, r.finish_reason,
       coalesce(rm.decode_host, r.server_host) AS host, rm.decode_rank AS rank,
       CAST(coalesce(r.server_bootstrap_room, r.bootstrap_room) AS VARCHAR) AS room, rm.outcome, r.link_method
FROM replies r
LEFT JOIN rooms rm ON rm.bootstrap_room = coalesce(r.server_bootstrap_room, r.bootstrap_room)
WHERE (CAST($since AS TIMESTAMPTZ) IS NULL OR r.t_start >= CAST($since AS TIMESTAMPTZ))
  AND (CAST($before AS TIMESTAMPTZ) IS NULL OR r.t_start < CAST($before AS TIMESTAMPTZ))
ORDER BY r.t_start, r.source, r.session_id, r.turn_id
