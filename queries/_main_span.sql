-- name: _main_span
-- description: the span of the inputs that hold at least 1% of the lines: one old or stray small log must not
--   widen the timeline's buckets, or its window, of the whole incident
-- inputs: files
-- parameters: none
-- columns:
--   lo: earliest timestamp of those inputs
--   hi: latest timestamp of those inputs
SELECT min(first_ts) AS lo, max(last_ts) AS hi FROM files WHERE lines >= 0.01 * (SELECT sum(lines) FROM files)
