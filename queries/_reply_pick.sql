-- name: _reply_pick
-- description: the replies the HTML page draws one by one when there are too many: corrupted, then the other
--   classes that are not clean, then clean, each class taken bucket by bucket
-- inputs: reply_hosts
-- over: reply_hosts
-- parameters:
--   lo_us BIGINT = 0: the window's start, microseconds since the epoch (UTC)
--   bucket_us BIGINT = 60000000: bucket width in microseconds
--   cap INTEGER = 20: replies to keep
-- columns:
--   source: transcript source
--   session_id: session of the turn
--   turn_id: the turn, unique within (source, session_id)
--   t0: when the request went out, microseconds since the epoch (UTC)
--   t1: when the reply was complete (else t0), microseconds since the epoch
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
SELECT * EXCLUDE (prio, rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY prio, (t0 - $lo_us) // $bucket_us
                                 ORDER BY t0, source, session_id, turn_id) AS rn
    FROM (SELECT *, CASE WHEN corrupted THEN 0 WHEN corruption_class <> 'clean' THEN 1 ELSE 2 END AS prio
          FROM (SELECT * REPLACE (epoch_us(t0) AS t0, epoch_us(t1) AS t1) FROM q)))
ORDER BY prio, rn, t0 LIMIT $cap
