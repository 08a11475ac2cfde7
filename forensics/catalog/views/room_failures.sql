-- name: room_failures
-- kind: view
-- description: Every failure of a bootstrap room, from both sides' server logs and the transfer trace, classified
--   into the room outcome it stands for. `rooms` takes its outcome from the first. Clock offsets applied; room 0
--   excluded.
-- inputs: room_events, transfer_events (both clock-corrected), clock_bounds, kv_failure_reason, failure_outcome,
--   failure_cause_rank
-- grain: room
-- order: bootstrap_room, ts NULLS LAST, source_file, line_no
-- parameters: none
-- columns:
--   bootstrap_room BIGINT: PD bootstrap room
--   ts TIMESTAMPTZ: corrected time of the line or trace event (NULL for a line without a time)
--   ts_resolution_s DECIMAL(2,1): 1.0 for a whole-second log prefix (true time up to 1 s later), else 0
--   side VARCHAR: 'prefill' | 'decode' | 'unknown'
--   host VARCHAR: host that wrote it
--   source VARCHAR: 'sglang' | 'request_log' (a `Finish:` that ended in an abort) | 'trace'
--   what VARCHAR: event kind of the line, or `<event> <kind> [chunk]` of the trace event
--   outcome VARCHAR: the outcome it stands for: 'waiting_timeout' | 'bootstrap_timeout' | 'aborted' |
--     'transfer_failed'
--   reason VARCHAR: normalised reason (docs/formats/SGLANG.md, "Failure reasons"): waiting_timeout, bootstrap_timeout, aborted, request_timeout,
--     node_failure, transport, transfer_error (none given), ...
--   cause_rank INTEGER: order among failures of one moment, cause first: 0 waiting timeout, 1 bootstrap timeout, 2
--     request timeout, 3 transfer failure, 4 abort, 5 reason-less failure
--   first_failure BOOLEAN: the room's first failure, its outcome: of the failures that may have come first (began
--     before the earliest one surely ended, allowing for the clock differences clock_bounds shows), the lowest
--     cause_rank
--   detail VARCHAR: the message, or the trace event's error (else status)
--   clock_offset_s DOUBLE: clock offset subtracted from the host's ts
--   source_file VARCHAR: file of the line or event
--   line_no BIGINT: its line number

CREATE OR REPLACE VIEW room_failures AS
-- failure lines of the server logs. Besides the failure kinds: a `Finish:` line that ended in an abort
-- (its finish_reason message says why; the prompt text around it is not read), and the bare texts
-- the parser files under other kinds (`Request <room> timed out after 300.0s in KVPoll.…` without
-- its KVTransferError, and the heartbeat's `… Request (bootstrap_room: N) has been marked as failed.`)
WITH log AS (
    SELECT
        bootstrap_room, ts, ts_resolution_s, side, host, source, kind AS what, message AS detail,
        kind IN ('abort', 'corruption_detected', 'request_finished') AS abort_like,
        CASE
            WHEN kind = 'request_finished' THEN kv_failure_reason(regexp_extract(message,
                '[''"]finish_reason[''"]: \{[''"]type[''"]: [''"]abort[''"], [''"]message[''"]: [''"]([^''"]*)', 1))
            WHEN kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected') THEN reason
            ELSE kv_failure_reason(message)
        END AS reason,
        clock_offset_s, source_file, line_no
    FROM room_events
    WHERE kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected')
       OR (kind = 'request_finished' AND finish_reason = 'abort')
       OR (kind NOT IN ('request_received', 'request_finished')
           AND regexp_matches(message, '^Request [0-9]+ (?:timed out after [0-9.]+ ?s in KVPoll\.|waiting_timeout)'
                                       || '|Request \(bootstrap_room: [0-9]+\) has been marked as failed'))
),
-- trace events of a failed or aborted room (docs/formats/TRANSFER_TRACE.md, "Events"); the error text says why
trace AS (
    SELECT
        bootstrap_room, ts, 0.0 AS ts_resolution_s, side, host, 'trace' AS source,
        event || ' ' || kind || coalesce(' ' || chunk, '') AS what, coalesce(error, status) AS detail,
        event = 'abort' AS abort_like,
        coalesce(kv_failure_reason(error), kv_failure_reason(status)) AS reason,
        clock_offset_s, source_file, line_no
    FROM transfer_events
    WHERE event IN ('fail', 'abort') AND NOT unknown_enum AND bootstrap_room <> 0
),
classified AS (
    SELECT *, failure_outcome(reason, abort_like) AS outcome
    FROM (SELECT * FROM log UNION ALL SELECT * FROM trace)
),
-- Which of the failures that share a moment (within a line's 1 s resolution) is the cause; the
-- lower the rank, the more a cause. A timeout ends N s (default 300) of waiting: its cause lies that
-- far back, and what shares its second is its consequence (decode then sends ABORT to prefill,
-- docs/formats/SGLANG.md, "Failure reasons"; a torn-down room fails the writes still in flight). Decode's WaitingForInput
-- before prefill's Bootstrapping for that ABORT; a request-level timeout is a timeout as well.
-- A transfer failure with a reason before the aborts: the prefill request that failed is aborted with
-- 500 and the decode half then logs `Aborted by AbortReq.` in the same second (docs/formats/NIXL.md, "Failure and abort texts").
-- Last, a reason-less failure (`… transfer failed` with no exception, `unknown reason from another
-- rank`): how every side reports a room that some other failure marked Failed, never a cause.
ranked AS MATERIALIZED (
    SELECT *,
        failure_cause_rank(outcome, reason) AS cause_rank
    FROM classified
),
-- The failures that may have come first. A whole-second log line happened up to 1 s after its ts,
-- so each host's earliest failure is surely over by its `t_sure`, the earliest ts + resolution there.
-- A failure may be the first unless some host's t_sure precedes it, in that host's clock: when the
-- room's events show two clocks still apart after the offsets in force (clock_bounds.ahead_s), the
-- comparison allows for it. Of those, cause_rank decides, then the time, then file order. A failure
-- without a time decides only a room that has no timed one.
sure AS (
    SELECT bootstrap_room, host,
           min(ts + to_microseconds(CAST(round(ts_resolution_s * 1e6) AS BIGINT))) AS t_sure
    FROM ranked
    GROUP BY ALL
),
open_start AS (
    SELECT r.bootstrap_room, r.source_file, r.line_no,
           bool_and(CASE
               WHEN r.ts IS NULL THEN s.t_sure IS NULL
               WHEN s.t_sure IS NULL THEN true
               ELSE r.ts - to_microseconds(CAST(round(coalesce(b.ahead_s, 0) * 1e6) AS BIGINT)) < s.t_sure
                    OR (r.ts = s.t_sure AND r.ts_resolution_s = 0 AND r.host IS NOT DISTINCT FROM s.host)
           END) AS may_be_first
    FROM ranked r
    JOIN sure s USING (bootstrap_room)
    LEFT JOIN clock_bounds b ON b.host_a = s.host AND b.host_b = r.host
    GROUP BY ALL
),
candidates AS (
    SELECT r.*, o.may_be_first
    FROM ranked r JOIN open_start o USING (bootstrap_room, source_file, line_no)
)
SELECT
    bootstrap_room, ts, ts_resolution_s, side, host, source, what, outcome, reason, cause_rank,
    row_number() OVER (PARTITION BY bootstrap_room
                       ORDER BY may_be_first DESC, cause_rank, ts NULLS LAST, source_file, line_no) = 1
        AS first_failure,
    detail, clock_offset_s, source_file, line_no
FROM candidates
ORDER BY bootstrap_room, ts NULLS LAST, source_file, line_no;
