-- name: _merged_hosts
-- description: per host, the roles and paths of its ingested inputs: a host name more than one machine's inputs
--   may share (inputs of different roles, or files of different folders named alike) is warned of
-- inputs: files
-- parameters: none
-- columns:
--   host: host name
--   roles: the roles of its inputs, sorted
--   paths: the paths of its inputs, sorted
SELECT host, list(DISTINCT role ORDER BY role) AS roles, list(path ORDER BY path) AS paths FROM files
WHERE status = 'ingested' AND host IS NOT NULL GROUP BY host ORDER BY host
