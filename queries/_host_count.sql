-- name: _host_count
-- description: how many hosts the store's inputs name, for `forensics clocks` to say why no pair has a bound
-- inputs: files
-- parameters: none
-- columns:
--   n_hosts: distinct hosts of the inputs
SELECT count(DISTINCT host) AS n_hosts FROM files WHERE host IS NOT NULL
