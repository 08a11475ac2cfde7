-- name: _summary_hosts
-- description: the hosts of `forensics summary`: roles, inputs, lines, time span and formats of each
-- inputs: files
-- parameters: none
-- columns:
--   host: host name
--   roles: its roles, comma-separated
--   inputs: input files read for it
--   lines: their lines
--   first_ts: earliest timestamp of its inputs
--   last_ts: latest timestamp of its inputs
--   formats: the parsers that read them, comma-separated
SELECT host, string_agg(DISTINCT role, ', ' ORDER BY role) AS roles, count(*) AS inputs,
       sum(lines) AS lines, min(first_ts) AS first_ts, max(last_ts) AS last_ts,
       string_agg(DISTINCT format, ', ' ORDER BY format) AS formats
FROM files WHERE status <> 'skipped' AND host IS NOT NULL GROUP BY host ORDER BY host
