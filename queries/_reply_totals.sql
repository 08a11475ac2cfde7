-- name: _reply_totals
-- description: the counts of the first line of `forensics evidence`
-- inputs: replies
-- parameters: none
-- columns:
--   replies: assistant replies
--   corrupted: corrupted ones
--   config_leaks: config leaks (kept apart: not corruption)
--   linked: replies linked to a server request
SELECT count(*) AS replies, count(*) FILTER (WHERE corrupted) AS corrupted, count(*) FILTER (WHERE corruption_class = 'config') AS config_leaks, count(*) FILTER (WHERE link_method IS NOT NULL) AS linked FROM replies
