-- name: _main_inputs
-- description: the spans of the inputs that hold at least 1% of the lines, as _main_span counts them: the days a
--   clock time without a date (`--since 16:32`) may fall on are theirs
-- inputs: files
-- parameters: none
-- columns:
--   first_ts: earliest timestamp of the input
--   last_ts: latest timestamp of the input
SELECT first_ts, last_ts FROM files
WHERE lines >= 0.01 * (SELECT sum(lines) FROM files) AND first_ts IS NOT NULL AND last_ts IS NOT NULL
ORDER BY first_ts, last_ts
