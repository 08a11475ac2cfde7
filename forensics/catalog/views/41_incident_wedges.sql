-- name: incident_wedges
-- description: the wedges at their default thresholds, as a view, so that reports (the timeline's
--   markers) and the abort storms' next_wedge share one computation and the store can snapshot it
-- inputs: wedge_intervals
-- parameters: none
-- columns: those of queries/wedges.sql
CREATE OR REPLACE VIEW incident_wedges AS SELECT * FROM wedge_intervals();
