-- name: _redact_hosts
-- description: the store's host names, which `--redact` masks as whole names wherever they appear
-- inputs: files, events
-- parameters: none
-- columns:
--   host: a host name
SELECT DISTINCT host FROM files WHERE host IS NOT NULL UNION SELECT DISTINCT host FROM events WHERE host IS NOT NULL
