-- name: room_events
-- description: server-log events that name a real bootstrap room (not 0), with the PD side that wrote them.
-- inputs: events (clock-corrected)
-- parameters: none
-- columns: every column of `events`, plus `side` ('prefill' | 'decode' | 'unknown') and `ts_resolution_s`;
--   documented in forensics/schema.py (ROOM_EVENTS), checked by tests/test_transfers_views.py.
CREATE OR REPLACE VIEW room_events AS
SELECT
    *,
    -- a file's role is a guess (one pasted file can hold both pods' lines, llm-d#2433), while the failure and
    -- connector templates name their side (SGLANG.md §9.2, §9.4, §9.6)
    CASE
        WHEN regexp_matches(message, 'Decode transfer failed|Decode handshake failed|decode_req\.|Context corruption'
            || '|KV checksum mismatch|Metadata unexpectedly|Sent abort notification|Deferred KV release'
            || '|Lost connection with prefill') THEN 'decode'
        WHEN regexp_matches(message, 'Prefill transfer failed|Prefill bootstrap failed|req\.bootstrap_room'
            || '|Unexpected transfer worker error|NIXL transfer encountered|NIXL transport error|sending kvcache'
            || '|got info room=|is bootstrapped|Received abort notification|left a handle running') THEN 'prefill'
        WHEN role IN ('prefill', 'decode') THEN role
        ELSE 'unknown'
    END AS side,
    -- sglang prefixes print whole seconds (truncated): such a line happened up to 1 s after its ts
    CASE WHEN ts_raw NOT LIKE '%.%' AND epoch_us(ts) % 1000000 = 0 THEN 1.0 ELSE 0.0 END AS ts_resolution_s
FROM events
WHERE bootstrap_room IS NOT NULL AND bootstrap_room <> 0;
