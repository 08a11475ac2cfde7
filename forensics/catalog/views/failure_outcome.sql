-- name: failure_outcome
-- kind: macro
-- description: the outcome class a failure of a room or request stands for, from its normalised reason and whether
--   it is an abort; used by room_failures (a room's failures) and failed_requests (those known by rid alone)
-- inputs: none
-- parameters:
--   reason VARCHAR: the failure's normalised reason (events.reason, or kv_failure_reason of its text)
--   abort_like BOOLEAN: the failure is an abort line or event (an abort, a corruption abort, a `Finish:` aborted)
-- returns: VARCHAR: waiting_timeout | bootstrap_timeout | aborted | transfer_failed; for the router's words,
--   server_error (a server answered 5xx) | no_workers (no prefill or decode worker could take the request)

-- The router's reasons come first in the parser too (docs/formats/OTHER_ENGINES.md, "sgl-router"): its
-- message quotes the server's answer, which names no cause. An abort that gives no reason of its own,
-- or only the generic one, is the room's being aborted.
CREATE OR REPLACE MACRO failure_outcome(reason, abort_like) AS
    CASE
        WHEN reason = 'waiting_timeout' THEN 'waiting_timeout'
        WHEN reason = 'bootstrap_timeout' THEN 'bootstrap_timeout'
        WHEN reason IN ('decode_error_status', 'prefill_error_status', 'server_error') THEN 'server_error'
        WHEN reason = 'no_workers' THEN 'no_workers'
        WHEN reason IN ('aborted', 'request_timeout', 'metadata_corruption') THEN 'aborted'
        WHEN abort_like AND (reason IS NULL OR reason IN ('transfer_error', 'unknown_rank')) THEN 'aborted'
        ELSE 'transfer_failed'
    END;
