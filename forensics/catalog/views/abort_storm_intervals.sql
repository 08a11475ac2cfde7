-- name: abort_storm_intervals
-- kind: table macro
-- description: abort storms across hosts (queries/abort_storms.sql explains them); queries/abort_storms.sql and
--   incident_abort_storms call it
-- inputs: events, raw_turns, replies, clock_estimates, incident_wedges
-- parameters:
--   window_s DOUBLE = 5: aborts (any host) closer than this to the previous one belong to the same storm
--   min_aborts INTEGER = 20: smallest storm, in aborts summed over hosts (host_aborts)
--   aftermath_s DOUBLE = 60: how long after the storm errors and corrupted replies are counted
--   min_near INTEGER = 5: aborts with fewer aborts than this within window_s / 2 are background, never part of a
--     storm
--   agent_window_s DOUBLE = 10: an aborted agent reply that ended this close to the storm belongs to it
--   max_reply_s DOUBLE = 600: a reply killed in flight (no end) belongs to the storm if it started at most this long
--     before it
-- columns:
--   t_start TIMESTAMPTZ: first abort of the storm (UTC, on the clock offsets in force)
--   t_end TIMESTAMPTZ: last abort of the storm
--   n_aborts BIGINT: requests aborted, each once however many lines and hosts wrote it (prefill and decode join on
--     the room)
--   host_aborts BIGINT: aborted requests summed over hosts, each request once per host (abort lines, `Aborted by
--     AbortReq.`, transfer failures whose reason is an abort, finish_reason abort whose message is an abort)
--   n_hosts BIGINT: hosts with aborts in the storm
--   hosts VARCHAR[]: those hosts, by their first abort
--   per_host STRUCT(host VARCHAR, n_aborts BIGINT, t_start TIMESTAMPTZ, t_end TIMESTAMPTZ, unapplied_skew_s DOUBLE)[]:
--     per host: host, n_aborts (its requests aborted), t_start, t_end, unapplied_skew_s (the clock skew the estimates
--     still see, used to group the host's aborts)
--   host_counts VARCHAR: per_host as text, e.g. `prefill-0 80, decode-0 44, decode-1 36 (clock +2.4 s off, not
--     corrected)`
--   aborts_per_s DOUBLE: n_aborts over the storm's length (at least 1 s)
--   errors_after BIGINT: error lines on the storm's hosts in the aftermath
--   corrupted_replies_after BIGINT: corrupted replies that started during the storm or its aftermath
--   next_wedge TIMESTAMPTZ: start of the next wedge on one of the storm's hosts, if any
--   agent_aborts BIGINT: agent replies aborted, interrupted, cut off or killed in flight at the storm (0 without
--     transcripts)
--   agent_sessions BIGINT: agent sessions those replies belong to
--   agent_t_start TIMESTAMPTZ: the first such reply's end, or for replies killed with no end the latest start among
--     them

CREATE OR REPLACE MACRO abort_storm_intervals(window_s := 5, min_aborts := 20, aftermath_s := 60, min_near := 5,
                                              agent_window_s := 10, max_reply_s := 600) AS TABLE
-- every way a server writes that a request was aborted (docs/formats/SGLANG.md, "Aborts", "Failure reasons" and "Bootstrap, heartbeat and abort control"): abort lines
-- (scheduler aborts, `Aborted by AbortReq.`, abort notifications and their ACKs), transfer and
-- bootstrap failures whose reason is an abort, and `Finish:` lines whose finish_reason is an abort
-- that says so. A finish_reason of type abort also carries timeouts, transfer errors and
-- corruption (`Request … timed out`, `KVTransferError(…): NIXL transfer encountered ERR`): those
-- are failures, not aborts, and a wedge's mass timeout must not read as a storm; so are the
-- `Request waiting/running timeout reached.` lines
WITH abort_lines AS (
    SELECT host, ts, rid, nullif(bootstrap_room, 0) AS room, source_file, line_no
    FROM events
    WHERE ts IS NOT NULL AND (
        (kind = 'abort' AND reason IS DISTINCT FROM 'request_timeout')
        OR (kind IN ('transfer_failed', 'bootstrap_failed') AND reason = 'aborted')
        OR (kind = 'request_finished' AND finish_reason = 'abort'
            AND coalesce(regexp_matches(
                regexp_extract(message, '[''"]finish_reason[''"]: \{[^}]*?[''"]message[''"]: ([^,}]*)', 1),
                '^(?:None|null|[''"][^''"]*[Aa][Bb][Oo][Rr][Tt])'), true))
    )
),
-- one request writes several of these (`Received abort notification for room …`, `Decode transfer
-- failed … Aborted by AbortReq.`, its `Finish:` line): a request is its room, else the room its rid
-- has in other lines of the host, else its rid, else the line itself, and counts once per host
rid_rooms AS (
    SELECT e.host, e.rid, min(e.bootstrap_room) AS room
    FROM events e
    SEMI JOIN (SELECT DISTINCT host, rid FROM abort_lines WHERE room IS NULL AND rid IS NOT NULL) a
      ON a.host = e.host AND a.rid = e.rid
    WHERE e.bootstrap_room IS NOT NULL AND e.bootstrap_room <> 0
    GROUP BY ALL
),
per_request AS (
    SELECT a.host, coalesce(a.room, r.room) AS room,
           coalesce('room ' || coalesce(a.room, r.room), 'rid ' || a.rid, 'line ' || a.source_file || ':' || a.line_no) AS req,
           min(a.ts) AS ts
    FROM abort_lines a LEFT JOIN rid_rooms r ON r.host = a.host AND r.rid = a.rid
    GROUP BY ALL
),
-- a host whose skew the clock estimates see (no offset set, or a wrong one) is grouped on the
-- estimate, so its share of a storm is not cut off; the times reported stay on the clocks in force
skew AS (
    SELECT host_b AS host, arg_max(skew_s, lower_pairs + upper_pairs) AS skew_s
    FROM clock_estimates WHERE skew_s IS NOT NULL GROUP BY host_b
),
grouped AS (
    SELECT p.*, coalesce(s.skew_s, 0) AS skew_s, epoch(p.ts) - coalesce(s.skew_s, 0) AS tx
    FROM per_request p LEFT JOIN skew s USING (host)
),
-- a storm is dense: an abort with fewer than min_near aborts (any host) within window_s / 2 of it is
-- background, and left out so that scattered aborts neither make a storm nor chain onto one
near AS (
    SELECT *, count(*) OVER (ORDER BY tx RANGE BETWEEN window_s / 2 PRECEDING AND window_s / 2 FOLLOWING) AS n_near
    FROM grouped
),
dense AS (SELECT * FROM near WHERE n_near >= min_near),
-- aborts closer than window_s to the previous one (any host) belong to the same storm
marked AS (
    SELECT *, CASE WHEN tx - lag(tx) OVER (ORDER BY tx, host, req) <= window_s THEN 0 ELSE 1 END AS new_storm
    FROM dense
),
numbered AS (
    SELECT *, sum(new_storm) OVER (ORDER BY tx, host, req ROWS UNBOUNDED PRECEDING) AS storm FROM marked
),
hosts AS (
    SELECT storm, host, count(*) AS n_aborts, min(ts) AS t_start, max(ts) AS t_end, any_value(skew_s) AS skew_s
    FROM numbered GROUP BY storm, host
),
storms AS (
    SELECT storm, min(t_start) AS t_start, max(t_end) AS t_end, CAST(sum(n_aborts) AS BIGINT) AS host_aborts,
           count(*) AS n_hosts,
           list(host ORDER BY t_start, host) AS hosts,
           list({'host': host, 'n_aborts': n_aborts, 't_start': t_start, 't_end': t_end,
                 'unapplied_skew_s': round(skew_s, 3)} ORDER BY t_start, host) AS per_host,
           string_agg(host || ' ' || n_aborts
                      || CASE WHEN abs(skew_s) > 1 THEN printf(' (clock %+.1f s off, not corrected)', skew_s) ELSE '' END,
                      ', ' ORDER BY t_start, host) AS host_counts
    FROM hosts GROUP BY storm
    HAVING sum(n_aborts) >= min_aborts
),
-- the same request aborted on prefill and on decode is one abort: joined on the room
requests AS (
    SELECT storm, count(DISTINCT coalesce('room ' || room, host || ' ' || req)) AS n_aborts
    FROM numbered WHERE storm IN (SELECT storm FROM storms) GROUP BY storm
),
-- the agent's side of a kill (docs/formats/TRANSCRIPTS.md, "opencode", "OpenAI-compatible proxy logs" and "Claude Code sessions"): replies that ended in an abort (finish_reason
-- abort, HTTP 499, opencode's MessageAbortedError, a fetch AbortError), streams cut without [DONE],
-- a reply the user interrupted (Claude Code's next user turn is `[Request interrupted by user…]`),
-- and the last reply of a session that never completed (the process was killed mid-reply)
turn_marks AS (
    SELECT source, session_id, t_start, t_end, finish_reason, http_status, error_text, truncated,
           lead(starts_with(coalesce(user_text, ''), '[Request interrupted by user'))
               OVER (PARTITION BY source, session_id ORDER BY seq) AS interrupted_next,
           lead(seq) OVER (PARTITION BY source, session_id ORDER BY seq) IS NULL AS last_in_session
    -- the stored rows: user_text is not in the public view, and no verdict is needed here
    FROM raw_turns
),
agent_aborted AS (
    SELECT source, session_id, t_start, t_end,
           t_end IS NULL AND last_in_session AND finish_reason IS NULL AND NOT coalesce(truncated, false)
             AND error_text IS NULL AS in_flight
    FROM turn_marks
    WHERE finish_reason = 'abort' OR http_status = 499 OR truncated OR coalesce(interrupted_next, false)
       OR regexp_matches(coalesce(error_text, ''), 'MessageAbortedError|AbortError|[Aa]borted|[Ii]nterrupted|[Cc]ancell?ed')
       OR (t_end IS NULL AND last_in_session AND finish_reason IS NULL)
),
-- an aborted reply belongs to a storm when it ended within agent_window_s of it, or, killed in
-- flight with no end, when it started before the storm ended and at most max_reply_s before it began
agent AS (
    SELECT s.storm, count(*) AS agent_aborts, count(DISTINCT a.source || ' ' || a.session_id) AS agent_sessions,
           coalesce(min(a.t_end), max(a.t_start)) AS agent_t_start
    FROM storms s JOIN agent_aborted a ON CASE
        WHEN a.t_end IS NOT NULL THEN
            a.t_end BETWEEN s.t_start - to_microseconds(CAST(agent_window_s * 1e6 AS BIGINT))
                        AND s.t_end + to_microseconds(CAST(agent_window_s * 1e6 AS BIGINT))
        WHEN a.in_flight THEN
            a.t_start BETWEEN s.t_start - to_microseconds(CAST(max_reply_s * 1e6 AS BIGINT))
                          AND s.t_end + to_microseconds(CAST(agent_window_s * 1e6 AS BIGINT))
        ELSE false END
    GROUP BY s.storm
),
-- the wedges at their defaults: their view, computed (and snapshotted) once, not once per storm
wedges AS (SELECT host, t_start FROM incident_wedges)
SELECT s.t_start, s.t_end, q.n_aborts, s.host_aborts, s.n_hosts, s.hosts, s.per_host, s.host_counts,
       round(q.n_aborts / greatest(epoch(s.t_end - s.t_start), 1), 2) AS aborts_per_s,
       (SELECT count(*) FROM events e WHERE list_contains(s.hosts, e.host) AND e.ts > s.t_end
          AND e.ts <= s.t_end + to_microseconds(CAST(aftermath_s * 1e6 AS BIGINT))
          AND e.severity IN ('error', 'fatal')) AS errors_after,
       (SELECT count(*) FROM replies r WHERE r.corrupted AND r.t_start >= s.t_start
          AND r.t_start <= s.t_end + to_microseconds(CAST(aftermath_s * 1e6 AS BIGINT))) AS corrupted_replies_after,
       (SELECT min(w.t_start) FROM wedges w WHERE list_contains(s.hosts, w.host) AND w.t_start >= s.t_start) AS next_wedge,
       coalesce(a.agent_aborts, 0) AS agent_aborts, coalesce(a.agent_sessions, 0) AS agent_sessions, a.agent_t_start
FROM storms s JOIN requests q USING (storm) LEFT JOIN agent a USING (storm);
