-- name: _data_span
-- description: a window's bounds as the timeline query takes them: the given ones, else the data's edges
-- inputs: batches, events, replies
-- parameters:
--   since TIMESTAMP = NULL: the window's start, default the data's first time
--   until TIMESTAMP = NULL: the window's end, default the data's last time
-- columns:
--   lo: start
--   hi: end
SELECT coalesce(CAST($since AS TIMESTAMPTZ), min(t)) AS lo, coalesce(CAST($until AS TIMESTAMPTZ), max(t)) AS hi FROM (SELECT ts AS t FROM batches UNION ALL SELECT ts FROM events UNION ALL SELECT t_start FROM replies)
