-- name: _summary_inputs
-- description: the first line of `forensics summary`: inputs by status, their lines, unparsed lines and bytes
-- inputs: files
-- parameters: none
-- columns:
--   ingested: inputs read by a parser
--   skipped: inputs refused as not a log
--   failed: inputs whose parser failed
--   lines: input lines
--   unparsed: lines in the unparsed table
--   bytes: decompressed bytes
SELECT count(*) FILTER (WHERE status = 'ingested') AS ingested, count(*) FILTER (WHERE status = 'skipped') AS skipped,
       count(*) FILTER (WHERE status = 'failed') AS failed, coalesce(sum(lines), 0) AS lines,
       coalesce(sum(unparsed_lines), 0) AS unparsed, coalesce(sum(bytes), 0) AS bytes
FROM files
