-- name: _known_hosts
-- description: every host name the store's rows carry; `files` first, it names every ingested input's host
-- inputs: files, batches, events, transfer_events
-- parameters: none
-- columns:
--   host: a host name (NULL among them when a row has none)
SELECT host FROM files WHERE status = 'ingested' UNION SELECT host FROM batches UNION SELECT host FROM events UNION SELECT host FROM transfer_events
