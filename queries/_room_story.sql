-- name: _room_story
-- description: one bootstrap room's story, `forensics room`: every server-log line and trace event naming it, in
--   corrected time (rows without a time, lines copied without a prefix, last, in file order); `failure` names the
--   outcome a failure row stands for, and which one decided the room's outcome
-- inputs: room_events, transfer_events, room_failures
-- parameters:
--   room BIGINT = NULL: the bootstrap room
-- columns:
--   ts: corrected time of the line or event
--   host: host that wrote it
--   side: 'prefill' | 'decode' | 'unknown'
--   source: line family of a server-log line, 'trace' for a trace event
--   what: event kind of the line, or `<event> <kind> [chunk] [(last)]` of the trace event
--   failure: the outcome a failure stands for, `(first)` for the one that decided the room's outcome
--   detail: the message, or the trace event's rank, rid, bytes, status, checksum, peer and error
--   clock_correction: the correction applied to the host's time (`+0.000000s`), NULL without one
--   ts_raw: the timestamp as written
--   source_file: file of the line or event
--   line_no: its line number
SELECT s.ts, s.host, s.side, s.source, s.what,
       CASE WHEN f.first_failure THEN f.outcome || ' (first)' ELSE f.outcome END AS failure,
       s.detail,
       CASE WHEN s.clock_offset_s <> 0 THEN printf('%+.6fs', -s.clock_offset_s) END AS clock_correction,
       s.ts_raw, s.source_file, s.line_no
FROM (
    SELECT ts, host, side, source, kind AS what, message AS detail, clock_offset_s, ts_raw, source_file, line_no
    FROM room_events WHERE bootstrap_room = $room
    UNION ALL
    SELECT ts, host, side, 'trace', event || ' ' || kind || coalesce(' ' || chunk, '')
               || CASE WHEN is_last THEN ' (last)' ELSE '' END,
           concat_ws(' ', 'rank=' || engine_rank, 'rid=' || rid, 'bytes=' || bytes, 'status=' || status,
                     'checksum=' || checksum, 'peer=' || peer, 'error=' || error),
           clock_offset_s, ts_raw, source_file, line_no
    FROM transfer_events WHERE bootstrap_room = $room
) s
LEFT JOIN (SELECT * FROM room_failures WHERE bootstrap_room = $room) f USING (source_file, line_no)
ORDER BY s.ts NULLS LAST, s.source_file, s.line_no
