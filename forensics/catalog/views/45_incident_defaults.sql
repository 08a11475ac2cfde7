-- name: incident_wedges, incident_abort_storms
-- description: the wedges and abort storms at their default thresholds, as views, so that reports
--   (the timeline's markers) share one computation and the store can snapshot it
-- inputs: wedge_intervals, abort_storm_intervals
-- parameters: none
-- columns: those of queries/wedges.sql and queries/abort_storms.sql
CREATE OR REPLACE VIEW incident_wedges AS SELECT * FROM wedge_intervals();
CREATE OR REPLACE VIEW incident_abort_storms AS SELECT * FROM abort_storm_intervals();
