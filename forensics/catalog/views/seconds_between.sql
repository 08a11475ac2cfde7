-- name: seconds_between
-- kind: macro
-- description: seconds from one timestamp to another, the value epoch(t_to - t_from) gives to the last bit, from
--   their microseconds; used where a view measures every interval of a stream (wedge_intervals)
-- inputs: none
-- parameters:
--   t_from TIMESTAMPTZ: the earlier end
--   t_to TIMESTAMPTZ: the later end (earlier gives a negative count)
-- returns: DOUBLE: whole days of 86400 s plus the rest in seconds, as epoch() adds up an interval; NULL when either is

-- Subtracting two TIMESTAMPTZ goes through the ICU calendar: on a million stats intervals that is
-- twenty times the integer arithmetic. The days are split off the same way the interval holds them,
-- so that the doubles, and what is compared with or rounded from them, do not change.
CREATE OR REPLACE MACRO seconds_between(t_from, t_to) AS
    CAST((epoch_us(t_to) - epoch_us(t_from)) // 86400000000 AS BIGINT) * 86400
    + ((epoch_us(t_to) - epoch_us(t_from)) % 86400000000) / 1e6;
