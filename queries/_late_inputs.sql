-- name: _late_inputs
-- description: inputs with lines dated after they could have been written: after the input was
--   ingested, or more than a day after its file was last written (a year taken from the wrong
--   place, a --tz the wrong way, a clock run ahead); the reports warn of each
-- inputs: files
-- parameters: none
-- columns:
--   path: the input
--   host: its host
--   last_ts: its latest line's time (UTC)
--   ingested_at: when it was ingested (UTC)
--   file_time: its file's modification time as ingest saw it (UTC; NULL in stores written before it was kept)
--   after: 'ingest' (dated after it was read) | 'file' (more than a day after its file date)
WITH f AS (
    SELECT path, host, last_ts, ingested_at,
           to_timestamp(TRY_CAST(json_extract_string(resume_state, '$.mtime') AS DOUBLE)) AS file_time
    FROM files
    WHERE status = 'ingested' AND last_ts IS NOT NULL
)
SELECT path, host, last_ts, ingested_at, file_time,
       CASE WHEN last_ts > ingested_at + INTERVAL 1 MINUTE THEN 'ingest' ELSE 'file' END AS after
FROM f
WHERE last_ts > ingested_at + INTERVAL 1 MINUTE OR last_ts > file_time + INTERVAL 1 DAY
ORDER BY path
