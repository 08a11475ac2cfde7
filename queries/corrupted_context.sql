-- name: corrupted_context
-- description: each corrupted reply with the server events around it on its decode host (and its room)
-- inputs: replies, rooms, events, excerpt
-- parameters:
--   before_s DOUBLE = 30: seconds before the reply started
--   after_s DOUBLE = 5: seconds after the reply ended
--   max_events INTEGER = 8: events kept per reply, nearest first
-- columns:
--   source: transcript source
--   session_id: session of the turn
--   turn_id: the turn
--   t_start: when the request went out (UTC)
--   corruption_class: parse_leak | incoherent | empty
--   signatures: signatures that fired
--   evidence: snippet of what fired
--   bootstrap_room: room of the linked server request (as text)
--   decode_host: decode host that served it
--   outcome: the room's outcome
--   events: nearby warnings and errors on that host or room: ts, host, kind, reason, message
WITH c AS (
    SELECT r.source, r.session_id, r.turn_id, r.t_start, coalesce(r.t_end, r.t_start) AS t_end, r.corruption_class,
           r.signatures, r.evidence, coalesce(r.server_bootstrap_room, r.bootstrap_room) AS room,
           coalesce(rm.decode_host, r.server_host) AS dhost, rm.outcome
    FROM replies r LEFT JOIN rooms rm ON rm.bootstrap_room = coalesce(r.server_bootstrap_room, r.bootstrap_room)
    WHERE r.corrupted
),
-- warnings and errors only: the rest is the background the timeline already shows
loud AS (
    SELECT ts, host, kind, reason, bootstrap_room, source_file, line_no, excerpt(message, 160) AS message,
           CAST(floor(epoch(ts) / 10) AS BIGINT) AS tkey
    FROM events WHERE severity IN ('warning', 'error', 'fatal') AND ts IS NOT NULL
),
-- each reply's window cut into 10 s keys, so that the host-and-time match is a hash join
windows AS (
    SELECT c.*, unnest(range(
               CAST(floor(epoch(c.t_start - to_microseconds(CAST(CAST($before_s AS DOUBLE) * 1e6 AS BIGINT))) / 10) AS BIGINT),
               CAST(floor(epoch(c.t_end + to_microseconds(CAST(CAST($after_s AS DOUBLE) * 1e6 AS BIGINT))) / 10) AS BIGINT)
               + 1)) AS tkey
    FROM c WHERE c.dhost IS NOT NULL
),
matched AS (
    -- the same room, wherever and whenever it was logged
    SELECT c.source, c.session_id, c.turn_id, c.t_start, e.* EXCLUDE (tkey, bootstrap_room)
    FROM c JOIN loud e ON e.bootstrap_room = c.room
    UNION
    -- the decode host around the reply's lifetime
    SELECT w.source, w.session_id, w.turn_id, w.t_start, e.* EXCLUDE (tkey, bootstrap_room)
    FROM windows w JOIN loud e
      ON e.host = w.dhost AND e.tkey = w.tkey
     AND e.ts BETWEEN w.t_start - to_microseconds(CAST(CAST($before_s AS DOUBLE) * 1e6 AS BIGINT))
                  AND w.t_end + to_microseconds(CAST(CAST($after_s AS DOUBLE) * 1e6 AS BIGINT))
),
near AS (
    SELECT source, session_id, turn_id, ts, host, kind, reason, message,
           row_number() OVER (PARTITION BY source, session_id, turn_id
                              ORDER BY abs(epoch(ts - t_start)), source_file, line_no) AS k
    FROM matched
)
SELECT c.source, c.session_id, c.turn_id, c.t_start, c.corruption_class, c.signatures, c.evidence,
       CAST(c.room AS VARCHAR) AS bootstrap_room, c.dhost AS decode_host, c.outcome,
       coalesce((SELECT list({'ts': n.ts, 'host': n.host, 'kind': n.kind, 'reason': n.reason, 'message': n.message}
                             ORDER BY n.ts, n.host, n.kind, n.message)
                 FROM near n WHERE n.source = c.source AND n.session_id = c.session_id AND n.turn_id = c.turn_id
                   AND n.k <= CAST($max_events AS INTEGER)), []) AS events
FROM c
ORDER BY c.t_start, c.source, c.session_id, c.turn_id
