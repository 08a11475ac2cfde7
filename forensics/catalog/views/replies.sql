-- name: replies
-- kind: view
-- description: One row per assistant turn with its corruption verdict and its link to the server request.
-- inputs: turns, reply_candidates
-- parameters: none
-- columns:
--   source VARCHAR: 'opencode' | 'openai_proxy' | 'claude_code' | 'outputs_dir'
--   session_id VARCHAR: session (opencode ses_…, Claude Code sessionId, proxy session or file, outputs folder)
--   turn_id VARCHAR: the assistant message / exchange / output file; unique within (source, session_id)
--   t_start TIMESTAMPTZ: UTC time the request went out (request line, assistant time.created, previous user line)
--   t_end TIMESTAMPTZ: UTC time the reply was complete (response line, time.completed, assistant line, file mtime)
--   model VARCHAR: model name the source records
--   finish_reason VARCHAR: stop | length | tool_calls | content_filter | abort | error | …, in sglang's words
--   prompt_tokens BIGINT: prompt tokens (opencode: input + cache.read)
--   completion_tokens BIGINT: completion tokens (opencode: output + reasoning)
--   n_tool_calls BIGINT: structured tool calls in the reply
--   content_chars BIGINT: characters of visible content
--   reasoning_chars BIGINT: characters of reasoning content
--   rid VARCHAR: sglang rid when the source carries it (request rid, or a 32-hex response id)
--   bootstrap_room BIGINT: PD bootstrap room when the request carried one (see error_bootstrap_room)
--   http_status INTEGER: HTTP status of the response (proxy; API errors in opencode / Claude Code)
--   signatures VARCHAR[]: corruption signatures that fired, 'S1'..'S16' (docs/formats/TRANSCRIPTS.md, "Corruption signatures S1-S16")
--   corruption_class VARCHAR: 'clean' | 'parse_leak' | 'incoherent' | 'empty' | 'config' | 'transfer_error'
--   corrupted BOOLEAN: class is parse_leak, incoherent or empty (config and transfer_error are not corruption)
--   evidence VARCHAR: snippet per deciding signature, the match between ⟦ ⟧, control characters escaped
--   link_method VARCHAR: 'error_room' | 'error_rid' (named by the error body) | 'rid' | 'bootstrap_room' |
--     'time_tokens' | NULL when no unique match
--   link_confidence DOUBLE: 0..1 confidence of the link
--   link_candidates BIGINT: server requests that matched by the chosen method (see reply_candidates)
--   server_rid VARCHAR: rid of the linked server request
--   server_bootstrap_room BIGINT: bootstrap room of the linked server request
--   server_host VARCHAR: host that logged the linked request (decode side preferred)
--   degraded_markup BOOLEAN: markup that fired was an ASCII / spaced look-alike of DSML or a special token
--   seq BIGINT: 0-based position of the turn in its session, by time
--   parent_id VARCHAR: the user message or request the turn answers
--   error_text VARCHAR: error body or message recorded for the turn
--   error_rid VARCHAR: rid the error body names (`req.rid='…'`, `rid=…`): the failing request's rid
--   error_bootstrap_room BIGINT: bootstrap room the error body names (`KVTransferError(bootstrap_room=N)`,
--     `bootstrap_room: N`)
--   reasoning_tokens BIGINT: reasoning tokens, where reported
--   cached_tokens BIGINT: prefix-cache tokens, where reported
--   response_id VARCHAR: upstream response id (chatcmpl-…, msg_…, a rid)
--   truncated BOOLEAN: the reply is cut short in the record (a stream without [DONE])
--   source_file VARCHAR: input file or folder
--   line_no BIGINT: line of the reply (JSONL), else its ordinal in the file
CREATE OR REPLACE VIEW replies AS
-- the strongest method that found anything wins: the room or rid the turn's error body names (the
-- server's own account of which request failed), then the rid, then the room the client sent, then
-- time and tokens
WITH ranked AS (
    SELECT *, CASE method WHEN 'error_room' THEN 1 WHEN 'error_rid' THEN 2 WHEN 'rid' THEN 3
                          WHEN 'bootstrap_room' THEN 4 ELSE 5 END AS strength,
           -- what names one request: the room or rid the error named, else the room, else rid on its host
           CASE method WHEN 'error_room' THEN CAST(server_bootstrap_room AS VARCHAR) WHEN 'error_rid' THEN server_rid
                ELSE coalesce(CAST(server_bootstrap_room AS VARCHAR), server_host || ':' || server_rid) END AS request_key
    FROM reply_candidates
),
best AS (
    SELECT source, session_id, turn_id, min(strength) AS strength FROM ranked GROUP BY ALL
),
-- one server request may log several lines (receive and finish, prefill and decode): count requests, not lines
counted AS (
    SELECT r.source, r.session_id, r.turn_id, count(DISTINCT r.request_key) AS n,
           -- a request's lines do not all carry its room (a finish or abort line may name the rid alone)
           max(r.server_bootstrap_room) AS any_room
    FROM ranked r JOIN best b USING (source, session_id, turn_id, strength)
    GROUP BY ALL
),
-- the line to report: decode side (where corruption shows), a finish line, one naming the rid, the best
-- score, the latest
chosen AS (
    SELECT r.*, c.n, c.any_room
    FROM ranked r JOIN best b USING (source, session_id, turn_id, strength)
    JOIN counted c USING (source, session_id, turn_id)
    QUALIFY row_number() OVER (PARTITION BY r.source, r.session_id, r.turn_id
                               ORDER BY (r.server_role = 'decode') DESC, (r.server_event = 'request_finished') DESC,
                                        (r.server_rid IS NOT NULL) DESC, r.score DESC, r.server_ts DESC, r.server_host) = 1
)
SELECT t.source, t.session_id, t.turn_id, t.t_start, t.t_end, t.model, t.finish_reason, t.prompt_tokens,
       t.completion_tokens, t.n_tool_calls, t.content_chars, t.reasoning_chars, t.rid, t.bootstrap_room,
       t.http_status, t.signatures, t.corruption_class, t.corrupted, t.evidence,
       -- time and tokens alone never pick one of several candidates silently (docs/formats/TRANSCRIPTS.md, "Linking turns to server requests")
       CASE WHEN c.method <> 'time_tokens' OR c.n = 1 THEN c.method END AS link_method,
       CASE WHEN c.method <> 'time_tokens' OR c.n = 1 THEN c.score END AS link_confidence,
       coalesce(c.n, 0) AS link_candidates,
       CASE WHEN c.method <> 'time_tokens' OR c.n = 1 THEN c.server_rid END AS server_rid,
       CASE WHEN c.method <> 'time_tokens' OR c.n = 1
            THEN coalesce(c.server_bootstrap_room, CASE WHEN c.n = 1 THEN c.any_room END) END AS server_bootstrap_room,
       CASE WHEN c.method <> 'time_tokens' OR c.n = 1 THEN c.server_host END AS server_host,
       t.degraded_markup, t.seq, t.parent_id, t.error_text, t.error_rid, t.error_bootstrap_room, t.reasoning_tokens,
       t.cached_tokens, t.response_id, t.truncated, t.source_file, t.line_no
FROM turns t
LEFT JOIN chosen c USING (source, session_id, turn_id)
ORDER BY t.t_start NULLS LAST, t.t_end NULLS LAST, t.source, t.session_id, t.seq;
