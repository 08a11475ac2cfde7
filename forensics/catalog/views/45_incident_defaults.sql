-- name: incident_abort_storms
-- description: the abort storms at their default thresholds, as a view, so that reports (the
--   timeline's markers) share one computation and the store can snapshot it
-- inputs: abort_storm_intervals
-- parameters: none
-- columns: those of queries/abort_storms.sql
CREATE OR REPLACE VIEW incident_abort_storms AS SELECT * FROM abort_storm_intervals();
