-- name: reply_candidates
-- kind: view
-- description: Every server request that could be a turn's upstream request, with how it matched and a score.
-- inputs: turns, events (kind request_finished / request_received; any line naming an error body's rid or room)
-- parameters: none
-- columns:
--   source VARCHAR: turn source
--   session_id VARCHAR: turn session
--   turn_id VARCHAR: turn id
--   method VARCHAR: 'error_room' | 'error_rid' (named by the turn's error body) | 'rid' | 'bootstrap_room' |
--     'time_tokens'
--   score DOUBLE: 0..1: 1 for a room or rid named by an error or a rid, lower for weaker matches
--   server_rid VARCHAR: rid of the server request
--   server_bootstrap_room BIGINT: bootstrap room of the server request
--   server_host VARCHAR: host that logged the request
--   server_role VARCHAR: role of that host
--   server_ts TIMESTAMPTZ: time of the request line
--   server_event VARCHAR: 'request_finished' | 'request_received'; for a link named by an error body, also the
--     server's failure line (transfer_failed, bootstrap_failed, …)
--   prompt_tokens_diff BIGINT: server prompt_tokens minus the turn's
--   completion_tokens_diff BIGINT: server completion_tokens minus the turn's
CREATE OR REPLACE VIEW reply_candidates AS
-- the server side of each request: finish lines carry token counts, receive lines carry the room
WITH server AS (
    SELECT rid, bootstrap_room, host, role, ts, kind, prompt_tokens, completion_tokens
    FROM events
    WHERE kind IN ('request_finished', 'request_received')
),
-- an error body quotes the server's failure line, which names the failing request exactly
-- (docs/formats/SGLANG.md, "PD transfer and bootstrap failures"): that line, and every other line with the same room or rid, is the request.
-- With request logging off the failure line is the only one that names it. Two equi-joins, not one
-- join on an OR, so each stays a hash join against the (large) events table.
named AS (
    SELECT rid, bootstrap_room, host, role, ts, kind, prompt_tokens, completion_tokens
    FROM events
    WHERE rid IS NOT NULL OR bootstrap_room IS NOT NULL
),
by_error_room AS (
    SELECT t.source, t.session_id, t.turn_id, 'error_room' AS method, 1.0 AS score, s.*,
           t.prompt_tokens AS t_prompt, t.completion_tokens AS t_completion
    FROM turns t JOIN named s ON s.bootstrap_room = t.error_bootstrap_room
    WHERE t.error_bootstrap_room IS NOT NULL
),
by_error_rid AS (
    SELECT t.source, t.session_id, t.turn_id, 'error_rid' AS method, 1.0 AS score, s.*,
           t.prompt_tokens AS t_prompt, t.completion_tokens AS t_completion
    FROM turns t JOIN named s ON s.rid = t.error_rid
    WHERE t.error_rid IS NOT NULL
),
-- rule 1 (docs/formats/TRANSCRIPTS.md, "Linking turns to server requests"): the response id or request rid is the server's rid
by_rid AS (
    SELECT t.source, t.session_id, t.turn_id, 'rid' AS method, 1.0 AS score, s.*,
           t.prompt_tokens AS t_prompt, t.completion_tokens AS t_completion
    FROM turns t JOIN server s ON s.rid = t.rid
    WHERE t.rid IS NOT NULL
),
-- rule 2: the room the client sent joins prefill and decode, whatever rids they logged
by_room AS (
    SELECT t.source, t.session_id, t.turn_id, 'bootstrap_room' AS method, 0.95 AS score, s.*,
           t.prompt_tokens AS t_prompt, t.completion_tokens AS t_completion
    FROM turns t JOIN server s ON s.bootstrap_room = t.bootstrap_room
    WHERE t.bootstrap_room IS NOT NULL
),
-- rule 3: finished requests inside the turn's time window (server logs have 1 s resolution)
-- whose token counts agree within 1 % or 8 tokens. The window is cut into 10 s keys and each finish
-- line carries its key, so the join is a hash join on the key instead of a range join of every turn
-- against every request (minutes on a large incident).
turn_keys AS (
    SELECT t.*, unnest(range(
               CAST(floor(epoch(coalesce(t.t_start, t.t_end) - INTERVAL 2 SECOND) / 10) AS BIGINT),
               CAST(floor(epoch(coalesce(t.t_end, t.t_start) + INTERVAL 2 SECOND) / 10) AS BIGINT) + 1)) AS tkey
    FROM turns t
    WHERE coalesce(t.t_start, t.t_end) IS NOT NULL AND t.prompt_tokens IS NOT NULL AND t.completion_tokens IS NOT NULL
),
finished AS (
    SELECT *, CAST(floor(epoch(ts) / 10) AS BIGINT) AS skey FROM server WHERE kind = 'request_finished'
),
by_time AS (
    SELECT t.source, t.session_id, t.turn_id, 'time_tokens' AS method,
           0.8 - 0.3 * greatest(
               abs(s.prompt_tokens - t.prompt_tokens) / greatest(8, 0.01 * t.prompt_tokens),
               abs(s.completion_tokens - t.completion_tokens) / greatest(8, 0.01 * t.completion_tokens)) AS score,
           s.* EXCLUDE (skey), t.prompt_tokens AS t_prompt, t.completion_tokens AS t_completion
    FROM turn_keys t JOIN finished s
      ON s.skey = t.tkey
     AND s.ts BETWEEN coalesce(t.t_start, t.t_end) - INTERVAL 2 SECOND AND coalesce(t.t_end, t.t_start) + INTERVAL 2 SECOND
     AND abs(s.prompt_tokens - t.prompt_tokens) <= greatest(8, 0.01 * t.prompt_tokens)
     AND abs(s.completion_tokens - t.completion_tokens) <= greatest(8, 0.01 * t.completion_tokens)
)
SELECT source, session_id, turn_id, method, CAST(score AS DOUBLE) AS score,
       rid AS server_rid, bootstrap_room AS server_bootstrap_room, host AS server_host, role AS server_role,
       ts AS server_ts, kind AS server_event,
       prompt_tokens - t_prompt AS prompt_tokens_diff, completion_tokens - t_completion AS completion_tokens_diff
FROM (SELECT * FROM by_error_room UNION ALL SELECT * FROM by_error_rid
      UNION ALL SELECT * FROM by_rid UNION ALL SELECT * FROM by_room UNION ALL SELECT * FROM by_time)
ORDER BY source, session_id, turn_id, method, score DESC, server_host, server_ts;
