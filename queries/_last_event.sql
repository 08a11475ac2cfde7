-- name: _last_event
-- description: the latest timestamp of the inputs holding at least 1% of the lines: what relative times (`-30m`,
--   `2h ago`) count from
-- inputs: files
-- parameters: none
-- columns:
--   last: that timestamp
SELECT max(last_ts) AS last FROM files WHERE lines >= 0.01 * (SELECT sum(lines) FROM files)
