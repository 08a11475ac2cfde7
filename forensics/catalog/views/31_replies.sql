-- name: replies
-- description: one row per assistant turn with its corruption verdict and its link to the server request
-- inputs: turns, reply_candidates
-- parameters: none
-- columns:
--   source: 'opencode' | 'openai_proxy' | 'claude_code' | 'outputs_dir'
--   session_id: session of the turn
--   turn_id: message / exchange / file, unique within (source, session_id)
--   t_start: UTC time the request went out
--   t_end: UTC time the reply was complete
--   model: model name the source records
--   finish_reason: stop | length | tool_calls | content_filter | abort | error | ...
--   prompt_tokens: prompt tokens
--   completion_tokens: completion tokens
--   n_tool_calls: structured tool calls
--   content_chars: characters of visible content
--   reasoning_chars: characters of reasoning
--   rid: sglang rid carried by the source
--   bootstrap_room: bootstrap room carried by the source
--   http_status: HTTP status of the response
--   signatures: signatures that fired, 'S1'..'S16'
--   corruption_class: 'clean' | 'parse_leak' | 'incoherent' | 'empty' | 'config' | 'transfer_error'
--   corrupted: class is parse_leak, incoherent or empty
--   evidence: snippet per deciding signature, the match between ⟦ ⟧
--   link_method: 'error_room' | 'error_rid' (named by the error body) | 'rid' | 'bootstrap_room' | 'time_tokens' | NULL when nothing matched uniquely
--   link_confidence: 0..1 confidence of the link
--   link_candidates: server requests that matched by the chosen method
--   server_rid: rid of the linked server request
--   server_bootstrap_room: bootstrap room of the linked server request
--   server_host: host that logged it, the decode side when both sides did
--   degraded_markup .. line_no: the remaining columns of `turns` (see `forensics tables turns`)
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
       -- time and tokens alone never pick one of several candidates silently (§10 rule 3)
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
