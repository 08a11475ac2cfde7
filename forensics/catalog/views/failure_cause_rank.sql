-- name: failure_cause_rank
-- kind: macro
-- description: how surely a failure of a room or request is its cause rather than a consequence (0
--   surest): timeouts first, then a request timeout, a failure with a reason, aborts, and last a
--   reason-less failure; used by room_failures and failed_requests to pick the first failure
-- inputs: none
-- parameters:
--   outcome VARCHAR: the failure's outcome class (transfer_failed, waiting_timeout, bootstrap_timeout, aborted)
--   reason VARCHAR: its normalised reason (events.reason)
-- returns: INTEGER: 0 waiting_timeout, 1 bootstrap_timeout, 2 request_timeout, 3 transfer_failed with a
--   reason, 4 anything else (aborts), 5 transfer_failed without one (transfer_error, unknown_rank)
CREATE OR REPLACE MACRO failure_cause_rank(outcome, reason) AS
    CASE
        WHEN outcome = 'waiting_timeout' THEN 0
        WHEN outcome = 'bootstrap_timeout' THEN 1
        WHEN reason = 'request_timeout' THEN 2
        WHEN outcome = 'transfer_failed' AND reason IN ('transfer_error', 'unknown_rank') THEN 5
        WHEN outcome = 'transfer_failed' THEN 3
        ELSE 4
    END;
