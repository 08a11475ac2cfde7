-- name: room_events
-- kind: view
-- description: Server-log events naming a real bootstrap room (not 0), with the PD side that wrote them (from the
--   line's template, else the file's role; a request-log line, which echoes the request and its error text, by
--   its file's role alone). Clock offsets applied.
-- inputs: events (clock-corrected)
-- grain: room
-- order: none
-- parameters: none
-- columns:
--   ts TIMESTAMPTZ: UTC time of the line (microseconds); from the best clock the line carries
--   ts_raw VARCHAR: the timestamp text as written in the line; null on a line without a clock of its own (a crash
--     dump, a bare message or stats line), whose ts was placed (ts_placed)
--   ts_placed VARCHAR: NULL where the line's own clock dated it; for a line without one, where its ts comes from:
--     'line_above' (the nearest timed line above it in the same input), 'line_below' (the nearest below, when none
--     is above), 'file_time' (the input has no timed line: its file's modification time; an event only). NULL too
--     in stores written before it
--   prefix VARCHAR: outer prefix added by a log shipper (k8s CRI, docker, Kibana, tqdm), stripped
--   host VARCHAR: host the file came from (--host, else the file's folder or name)
--   role VARCHAR: 'prefill' | 'decode' | 'unified' | 'unknown' (--role, else inferred)
--   dp_rank INTEGER: `DP<n>` rank tag of the line, NULL when absent
--   pp_rank INTEGER: `PP<n>` rank tag of the line, NULL when absent
--   attn_cp_rank INTEGER: `ATTN_CP<n>` rank tag of the line, NULL when absent
--   moe_dp_rank INTEGER: `MOE_DP<n>` rank tag of the line, NULL when absent
--   tp_rank INTEGER: `TP<n>` rank tag of the line, NULL when absent
--   ep_rank INTEGER: `EP<n>` rank tag of the line, NULL when absent
--   kind VARCHAR: request_received | request_finished | transfer_failed | bootstrap_failed | abort | watchdog_timeout
--     | health_check_failed | exception | corruption_detected | checksum_mismatch | collective_timeout | http_access
--     | nixl_error | ucx_error | ... (`SELECT kind, count(*) FROM events GROUP BY kind` lists a store's); 'log' for
--     other messages
--   severity VARCHAR: 'debug' | 'info' | 'warning' | 'error' | 'fatal'
--   source VARCHAR: line family: sglang | uvicorn | glog | ucx | c10d | nccl | nixl | request_log
--   rid VARCHAR: request id on this server (prefill and decode rids of one request may differ)
--   bootstrap_room BIGINT: PD bootstrap room (63-bit); the join key across servers
--   reason VARCHAR: normalised failure reason: aborted, waiting_timeout, bootstrap_timeout, node_failure, ...
--   finish_reason VARCHAR: finish reason type of a finished request: stop | length | abort
--   prompt_tokens BIGINT: prompt tokens (request lines)
--   completion_tokens BIGINT: completion tokens (finished requests)
--   cached_tokens BIGINT: prefix-cache tokens (finished requests)
--   e2e_latency DOUBLE: seconds from receive to finish (finished requests)
--   http_status INTEGER: HTTP status (access lines, abort reasons)
--   http_method VARCHAR: HTTP method (access lines)
--   http_path VARCHAR: HTTP path (access lines)
--   peer VARCHAR: remote address, agent or client named by the line
--   message VARCHAR: the message text after the prefix
--   exc_type VARCHAR: exception type closing the traceback, if any
--   traceback VARCHAR: continuation lines (traceback) folded into this record
--   truncated BOOLEAN: the line was cut (last line of a file without newline)
--   source_file VARCHAR: input file (archive members as archive!member)
--   line_no BIGINT: 1-based line number in the decompressed file; the order within a second
--   clock_offset_s DOUBLE: clock offset subtracted from the host's ts
--   side VARCHAR: 'prefill' | 'decode' | 'unknown'
--   ts_resolution_s DECIMAL(2,1): 1.0 for whole-second sglang prefixes (true time up to 1 s later), else 0
CREATE OR REPLACE VIEW room_events AS
SELECT
    *,
    -- a file's role is a guess (one pasted file can hold both pods' lines, llm-d#2433), while the failure and
    -- connector templates name their side (docs/formats/SGLANG.md, "PD transfer and bootstrap failures", "Bootstrap, heartbeat and abort control" and "NIXL connector lines")
    -- a request-log line (Receive, Finish) echoes the request, error text included: only its file says the side
    CASE
        WHEN source = 'request_log' THEN CASE WHEN role IN ('prefill', 'decode') THEN role ELSE 'unknown' END
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
