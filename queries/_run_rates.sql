-- name: _run_rates
-- description: replies and corrupted replies per run of a store (the files' `ingest --run` label), config leaks
--   left out: what `forensics compare` tests against the baseline
-- inputs: replies, files
-- parameters:
--   default_run VARCHAR = NULL: the run of replies whose input has no label (compare gives the store's name)
-- columns:
--   run: run label
--   replies: replies of the run, config leaks left out
--   corrupted: corrupted ones among them
SELECT coalesce(f.run, $default_run) AS run, count(*) AS replies, count(*) FILTER (WHERE r.corrupted) AS corrupted
FROM replies r LEFT JOIN files f ON f.path = r.source_file
WHERE r.corruption_class <> 'config'
GROUP BY ALL ORDER BY run
