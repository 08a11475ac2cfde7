-- name: kv_failure_reason
-- kind: macro
-- description: the normalised failure reason (docs/formats/SGLANG.md, "Failure reasons") a free failure text gives; used by room_failures
-- inputs: none
-- parameters:
--   t VARCHAR: the failure text (a trace error or status, a line's message)
-- returns: VARCHAR: transport, unknown_rank, transfer_error, waiting_timeout, ... (the parser's REASON_RULES); NULL
--   when nothing matches

-- The reason a free failure text gives, for the texts the parser does not classify (trace errors,
-- the abort message of a `Finish:` line, lines it files under another kind). The same classes and
-- the same first-match order as the parser's REASON_RULES (docs/formats/SGLANG.md, "Failure reasons"; docs/formats/NIXL.md, "Failure and abort texts"), for
-- the classes that decide an outcome or its tie order; NULL when nothing matches.
CREATE OR REPLACE MACRO kv_failure_reason(t) AS CASE
    WHEN t IS NULL OR t = '' THEN NULL
    WHEN regexp_matches(t, 'KVPoll\.WaitingForInput|waiting_timeout|Timed out waiting for prefill completion')
        THEN 'waiting_timeout'
    WHEN regexp_matches(t, 'KVPoll\.Bootstrapping') THEN 'bootstrap_timeout'
    WHEN regexp_matches(t, 'Aborted by|^Abort|[Aa]bort notification|ABORT') THEN 'aborted'
    WHEN regexp_matches(t, 'Request (?:waiting|running) timeout reached') THEN 'request_timeout'
    WHEN regexp_matches(t, 'Lost connection with prefill|healthy before, but now it is down|node failure|might be dead'
                        || '|could be dead|is not alive|bootstrap_thread died') THEN 'node_failure'
    WHEN regexp_matches(t, 'Context corruption detected|Metadata unexpectedly|Metadata corruption')
        THEN 'metadata_corruption'
    WHEN regexp_matches(t, 'NIXL_ERR_REMOTE_DISCONNECT|RemoteDisconnect|remote agent \S+ was disconnected'
                        || '|NIXL peer \S+ disconnected') THEN 'remote_disconnect'
    WHEN regexp_matches(t, 'NIXL|UCX|Work Request Flushed|KVSender|[Ss]ession \S+ (?:failed|is not alive)|Failed to send')
        THEN 'transport'
    WHEN regexp_matches(t, 'unknown reason from another rank') THEN 'unknown_rank'
    WHEN regexp_matches(t, 'KV transfer failed|Room marked Failed|transfer failed|KVTransferError') THEN 'transfer_error'
END;
