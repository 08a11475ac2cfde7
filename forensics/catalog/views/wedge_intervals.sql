-- name: wedge_intervals
-- kind: table macro
-- description: wedges found by scheduler progress (queries/wedges.sql explains them); queries/wedges.sql and
--   incident_wedges call it
-- inputs: wedge_streams and wedge_signals (what ingest summarised of each input's progress and kept of its signal
--   lines; the hosts of wedge_unsummarised and the clocks of clock_offsets too), batches, events, transfer_events,
--   transfers, rooms, room_events, seconds_between
-- parameters:
--   min_gap_s DOUBLE = 60: shortest stop that can be a wedge
--   factor DOUBLE = 10: a stop must also last this many times the stream's normal interval
--   max_gap_s DOUBLE = 21600: a stretch this long without any line of the host is a gap in what was captured, not a
--     wedge
--   incident_s DOUBLE = 10: wedges whose starts are this close (clock offsets applied) are one incident
--   via VARCHAR = 'auto': where the progress streams come from: 'auto' (what ingest summarised of each input,
--     the tables for the hosts it cannot answer: ARCHITECTURE.md, "Derived at ingest") | 'tables' (the stored lines
--     alone; the same rows, slower)
-- columns:
--   host VARCHAR: host whose scheduler stopped
--   kind VARCHAR: 'silence' (no progress on the whole host) | 'rank_stopped' (one rank stopped while its peers went
--     on: a collective desync) | 'dead_thread' (a thread died, e.g. the NIXL prefill bootstrap_thread; its rank's
--     requests time out)
--   dp_rank INTEGER: DP rank of a rank_stopped or dead_thread wedge; NULL when the whole host stopped
--   tp_rank INTEGER: TP rank of a rank_stopped or dead_thread wedge; NULL when the whole host stopped
--   t_start TIMESTAMPTZ: last progress before the stop (UTC): the last stats line, transfer event or bootstrap; for a
--     thread that died, its death line when earlier
--   t_end TIMESTAMPTZ: whichever came first: progress again, the watchdog, the burst of timeouts of the requests in
--     flight, a crash or restart, the start of a capture gap, else the end of the host's log
--   silent_s DOUBLE: t_end - t_start in seconds
--   typical_s DOUBLE: the stream's normal interval between progress points while it had work (90th percentile; NULL
--     with too few)
--   in_flight BIGINT: requests the last stats lines before t_start showed running, queued, in transfer, in prealloc,
--     bootstrapping or retracted (each rank's last line, when recent)
--   pending_transfers BIGINT: transfer units of the host (sent by it or to it) posted before t_start and done only
--     after t_end
--   n_rooms BIGINT: stuck rooms: bootstrap rooms of the host (of the rank) open when it stopped or arriving during
--     it, that closed (finished, failed, timed out) only when it ended or later
--   rooms VARCHAR[]: the stuck rooms (as text: 63-bit), sorted; reports show the first few and "+N more"
--   ended_by VARCHAR: 'resumed' | 'watchdog' | 'waiting_timeout' | 'bootstrap_timeout' | 'request_timeout' | 'crash'
--     | 'shutdown' | 'restart' | 'capture gap' | 'end of log'
--   signals VARCHAR[]: what said it was a wedge, with counts: 'no stats N s', 'in flight N', 'dead thread', 'peers
--     went on (DP0,DP1: N s with stats)', 'health_check_failed xN', '/health 503 xN', '/health 200 xN' (the hang is
--     invisible to health checks), 'watchdog', 'collective_timeout xN', 'py-spy dump xN', 'waiting_timeout xN', 'bootstrap_timeout xN
--     on <peer host>', 'requests arriving xN', 'stuck rooms xN', 'pending transfers xN'
--   incident INTEGER: number of the incident (1, 2, ... by start): wedges of several hosts starting within incident_s
--     are one
--   incident_hosts VARCHAR[]: the hosts of that incident, sorted

CREATE OR REPLACE MACRO wedge_intervals(min_gap_s := 60, factor := 10, max_gap_s := 21600, incident_s := 10,
                                        via := 'auto') AS TABLE
-- each host's clock offset: progress is counted per second of the log's own clock, whatever the
-- offset in force (a second of the log is what its prefix prints, and what ingest summarised)
WITH shifts AS (
    SELECT host, to_microseconds(CAST(round(offset_s * 1e6) AS BIGINT)) AS sh FROM clock_offsets
),
-- what each input's ingest summarised of its progress streams (forensics/ingest/derive.py: each
-- rank's stats lines, the host's stats lines, every timed line of the host), on the clocks in force
ws AS (
    SELECT w.* REPLACE (w.t_a - coalesce(s.sh, INTERVAL 0 SECOND) AS t_a, w.t_b - coalesce(s.sh, INTERVAL 0 SECOND) AS t_b,
                        w.t_c - coalesce(s.sh, INTERVAL 0 SECOND) AS t_c),
           coalesce(s.sh, INTERVAL 0 SECOND) AS sh
    FROM wedge_streams w LEFT JOIN shifts s USING (host)
),
-- the last stats line's load before each of a rank's stops and at its end (what in_flight reads)
ws_loads AS (
    SELECT host, dk, tk, CASE WHEN what = 'gap' THEN t_a ELSE t_b END AS ts, load
    FROM ws WHERE stream = 'rank' AND what IN ('gap', 'last')
),
ws_units AS (
    SELECT f.host, f.stream, f.dk, f.tk, f.unit, f.sh, f.t_a AS u_first, f.t_b AS f_last, f.t_c AS f_next,
           f.busy AS f_busy, l.t_a AS l_first, l.t_b AS u_last, l.busy AS l_busy
    FROM ws f JOIN ws l ON l.what = 'last' AND l.host = f.host AND l.stream = f.stream AND l.dk = f.dk AND l.tk = f.tk
     AND l.unit = f.unit
    WHERE f.what = 'first'
),
ws_order AS (
    SELECT *, row_number() OVER (PARTITION BY host, stream, dk, tk ORDER BY u_first, u_last, unit) AS ui,
           max(u_last) OVER (PARTITION BY host, stream, dk, tk ORDER BY u_first, u_last, unit
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_last
    FROM ws_units
),
-- a stream's stretches without a stop of MIN_STOP_S, per unit: from its first second or a stop's
-- end to the next stop or its last second; across units (two files of one host) they overlap
ws_islands AS (
    SELECT s.host, s.stream, s.dk, s.tk, s.t AS i_start, e.t AS i_end
    FROM (SELECT host, stream, dk, tk, unit, t, row_number() OVER (PARTITION BY host, stream, dk, tk, unit ORDER BY t) AS r
          FROM (SELECT host, stream, dk, tk, unit, u_first AS t FROM ws_units
                UNION ALL SELECT host, stream, dk, tk, unit, t_b FROM ws WHERE what = 'gap')) s
    JOIN (SELECT host, stream, dk, tk, unit, t, row_number() OVER (PARTITION BY host, stream, dk, tk, unit ORDER BY t) AS r
          FROM (SELECT host, stream, dk, tk, unit, u_last AS t FROM ws_units
                UNION ALL SELECT host, stream, dk, tk, unit, t_a FROM ws WHERE what = 'gap')) e
      USING (host, stream, dk, tk, unit, r)
),
-- the stops of the whole stream: where a stretch starts after every earlier one ended, and its last
-- point (t_next NULL)
ws_stops AS (
    SELECT host, stream, dk, tk, before_end AS t_prev, i_start AS t_next
    FROM (SELECT *, max(i_end) OVER (PARTITION BY host, stream, dk, tk ORDER BY i_start, i_end
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
          FROM ws_islands)
    WHERE i_start > before_end
    UNION ALL
    SELECT host, stream, dk, tk, max(i_end), NULL FROM ws_islands GROUP BY host, stream, dk, tk
),
ws_end AS (SELECT host, max(t_prev) AS t_end FROM ws_stops WHERE stream = 'lines' AND t_next IS NULL GROUP BY host),
ws_stat_gaps AS (
    SELECT g.host, g.t_prev, coalesce(g.t_next, e.t_end) AS gap_end
    FROM ws_stops g JOIN ws_end e USING (host)
    WHERE g.stream = 'stats' AND seconds_between(g.t_prev, coalesce(g.t_next, e.t_end)) >= min_gap_s
),
-- transfer progress the host's own scheduler makes (posts, completions, notifications it polled,
-- rooms it bootstrapped); failures and aborts are not progress
progress_lines AS (
    SELECT host, ts FROM transfer_events WHERE ts IS NOT NULL AND event IN ('post', 'done', 'notif', 'checksum')
    UNION ALL
    SELECT host, ts FROM events WHERE ts IS NOT NULL AND kind IN ('transfer_notif', 'bootstrapped')
),
-- the hosts computed from the tables: asked for (via 'tables', or stops shorter than the inputs
-- kept), inputs without a summary (ingested before it), a stream two units of which overlap in
-- time or meet at one instant (their intervals interleave; two last lines at one time), transfer
-- progress inside a stop of the stats lines (it splits the host's stop), a thread that died (its
-- wedge starts anywhere), or ranks with and without a DP or TP tag (a rank's probe is not its
-- own stream alone)
tab_hosts AS (
    SELECT host FROM wedge_unsummarised
    UNION SELECT host FROM ws_order WHERE stream <> 'lines' AND before_last >= u_first
    UNION SELECT host FROM wedge_signals WHERE sig = 'death'
    UNION SELECT host FROM ws_units WHERE stream = 'rank' GROUP BY host
          HAVING (bool_or(dk < 0) AND bool_or(dk >= 0)) OR (bool_or(tk < 0) AND bool_or(tk >= 0))
    UNION SELECT DISTINCT t.host FROM progress_lines t JOIN ws_stat_gaps g
                   ON t.host = g.host AND t.ts > g.t_prev AND t.ts < g.gap_end
    UNION SELECT host FROM (SELECT host FROM events UNION ALL SELECT host FROM batches)
          WHERE via = 'tables' OR min_gap_s < 5 OR max_gap_s < 5
),
ws_hosts AS (SELECT DISTINCT host FROM ws_units WHERE host NOT IN (SELECT host FROM tab_hosts)),
-- a stats line and the work it says is in flight; the rank key keeps DP and TP streams apart
-- (docs/formats/SGLANG.md, "Rank tags": with DP attention every DP rank prints its own stats)
stats AS (
    SELECT host, coalesce(dp_rank, -1) AS dk, coalesce(tp_rank, -1) AS tk, ts, source_file, line_no,
           ts + to_microseconds(CAST(round(clock_offset_s * 1e6) AS BIGINT)) AS log_ts,
           coalesce(running_req, 0) + coalesce(queue_req, 0) + coalesce(prealloc_req, 0)
           + coalesce(transfer_req, 0) + coalesce(retracted_req, 0) + coalesce(bootstrap_req, 0)
           + coalesce(inflight_req, 0) AS load
    FROM batches WHERE ts IS NOT NULL AND host IN (SELECT host FROM tab_hosts)
),
-- the intervals from a busy second to the next, of the whole stream: each unit's counts, the
-- interval after its first second (busy as that second is once merged with the units sharing it),
-- and those from one unit's last second to the next unit's first
ws_bounds AS (
    SELECT host, stream, dk, tk, ui, time_bucket(INTERVAL 1 SECOND, u_first + sh) AS sec, u_first AS b_first,
           f_last AS b_last, f_busy AS busy
    FROM ws_order WHERE stream <> 'lines'
    UNION ALL
    SELECT host, stream, dk, tk, ui, time_bucket(INTERVAL 1 SECOND, l_first + sh), l_first, u_last, l_busy
    FROM ws_order WHERE stream <> 'lines' AND f_next IS NOT NULL
),
ws_secs AS (
    SELECT host, stream, dk, tk, sec, min(b_first) AS b_first, max(b_last) AS b_last, bool_or(busy) AS busy,
           min(ui) AS ui_min, max(ui) AS ui_max
    FROM ws_bounds GROUP BY host, stream, dk, tk, sec
),
ws_hist AS (
    SELECT host, stream, dk, tk, us, n FROM ws WHERE what = 'hist'
    UNION ALL
    SELECT o.host, o.stream, o.dk, o.tk, epoch_us(o.f_next) - epoch_us(o.f_last), 1
    FROM ws_order o JOIN ws_secs s ON s.host = o.host AND s.stream = o.stream AND s.dk = o.dk AND s.tk = o.tk
     AND s.sec = time_bucket(INTERVAL 1 SECOND, o.u_first + o.sh)
    WHERE o.stream <> 'lines' AND o.f_next IS NOT NULL AND s.busy
    UNION ALL
    SELECT host, stream, dk, tk, epoch_us(t_next) - epoch_us(t_prev), 1
    FROM (SELECT host, stream, dk, tk, b_last AS t_prev, busy, ui_max,
                 lead(b_first) OVER w AS t_next, lead(ui_min) OVER w AS next_ui
          FROM ws_secs WINDOW w AS (PARTITION BY host, stream, dk, tk ORDER BY sec))
    WHERE busy AND next_ui > ui_max
),
-- the normal interval of a stream, from its counts: quantile_cont over the same values
ws_typical AS (
    SELECT host, stream, dk, tk,
           CASE WHEN count(*) >= 10 THEN quantile_cont(CAST(us // 86400000000 AS BIGINT) * 86400
                                                      + (us % 86400000000) / 1e6, 0.9) END AS typical_s
    FROM (SELECT host, stream, dk, tk, us, unnest(range(n)) FROM ws_hist
          WHERE (stream = 'rank' AND (host, dk, tk) IN (SELECT (host, dk, tk) FROM ws_stops g JOIN ws_end e USING (host)
                     WHERE g.stream = 'rank' AND seconds_between(g.t_prev, coalesce(g.t_next, e.t_end)) >= min_gap_s))
             OR (stream = 'stats' AND host IN (SELECT host FROM ws_stat_gaps)))
    GROUP BY host, stream, dk, tk
),
-- the same from the tables, for the hosts that need them:
-- progress points of each rank, one per second: log prefixes are whole seconds, and a big store
-- has a million stats lines
rank_points AS (
    SELECT host, dk, tk, min(ts) AS t_first, max(ts) AS t_last, max(load) > 0 AS busy
    FROM stats GROUP BY host, dk, tk, time_bucket(INTERVAL 1 SECOND, log_ts)
),
-- every line of the host, per second: its end, and the stretches with no line at all (a gap in what
-- was captured, not a wedge: a wedged server still writes health checks, requests, timeouts)
host_lines AS (
    SELECT l.host, min(l.ts) AS t_first, max(l.ts) AS t_last
    FROM (SELECT host, ts FROM events UNION ALL SELECT host, ts FROM batches) l LEFT JOIN shifts s USING (host)
    WHERE l.ts IS NOT NULL AND l.host IN (SELECT host FROM tab_hosts)
    GROUP BY l.host, time_bucket(INTERVAL 1 SECOND, l.ts + coalesce(s.sh, INTERVAL 0 SECOND))
),
host_end AS (
    SELECT host, max(t_last) AS t_end FROM host_lines GROUP BY host
    UNION ALL SELECT host, t_end FROM ws_end WHERE host IN (SELECT host FROM ws_hosts)
),
tab_points AS (SELECT * FROM rank_points WHERE host IN (SELECT host FROM tab_hosts)),
stat_points AS (
    SELECT p.host, min(p.t_first) AS t_first, max(p.t_last) AS t_last, bool_or(p.busy) AS busy
    FROM tab_points p LEFT JOIN shifts s USING (host)
    GROUP BY p.host, time_bucket(INTERVAL 1 SECOND, p.t_first + coalesce(s.sh, INTERVAL 0 SECOND))
),
-- stretches of a host without stats that could hold a wedge (at least min_gap_s, its log may end
-- in one); only inside them is transfer progress looked for: a big store has ten million
-- transfer events, and outside these stretches the host is progressing anyway
stat_gaps AS (
    SELECT g.host, g.t_prev, coalesce(g.t_next, e.t_end) AS gap_end
    FROM (SELECT * FROM (SELECT host, t_last AS t_prev, lead(t_first) OVER (PARTITION BY host ORDER BY t_first) AS t_next
                         FROM stat_points)
          WHERE t_next IS NULL OR seconds_between(t_prev, t_next) >= min_gap_s) g JOIN host_end e USING (host)
    WHERE seconds_between(g.t_prev, coalesce(g.t_next, e.t_end)) >= min_gap_s
    UNION ALL SELECT * FROM ws_stat_gaps WHERE host IN (SELECT host FROM ws_hosts)
),
transfer_points AS (
    SELECT t.host, min(t.ts) AS t_first, max(t.ts) AS t_last
    FROM progress_lines t
    JOIN stat_gaps g ON t.host = g.host AND t.ts > g.t_prev AND t.ts < g.gap_end
    WHERE t.host IN (SELECT host FROM tab_hosts)
    GROUP BY t.host, time_bucket(INTERVAL 1 SECOND, t.ts)
),
host_points AS (
    SELECT p.host, min(p.t_first) AS t_first, max(p.t_last) AS t_last, bool_or(p.busy) AS busy
    FROM (SELECT host, t_first, t_last, busy FROM stat_points
          UNION ALL
          SELECT host, t_first, t_last, true FROM transfer_points) p LEFT JOIN shifts s USING (host)
    GROUP BY p.host, time_bucket(INTERVAL 1 SECOND, p.t_first + coalesce(s.sh, INTERVAL 0 SECOND))
),
capture_gaps AS (
    SELECT host, t_last AS cap_start
    FROM (SELECT host, t_last, lead(t_first) OVER (PARTITION BY host ORDER BY t_first) AS t_next FROM host_lines)
    WHERE seconds_between(t_last, t_next) > max_gap_s
    UNION ALL
    SELECT host, t_prev FROM ws_stops
    WHERE stream = 'lines' AND host IN (SELECT host FROM ws_hosts) AND seconds_between(t_prev, t_next) > max_gap_s
),
rank_gaps AS (
    SELECT host, dk, tk, t_last AS t_prev, busy,
           lead(t_first) OVER (PARTITION BY host, dk, tk ORDER BY t_first) AS t_next
    FROM tab_points
),
host_gaps AS (
    SELECT host, t_last AS t_prev, busy, lead(t_first) OVER (PARTITION BY host ORDER BY t_first) AS t_next
    FROM host_points
),
-- the stops of a host long enough to be one (the last point counts: its log may end wedged)
host_stops AS (
    SELECT host, t_prev, t_next FROM host_gaps WHERE t_next IS NULL OR seconds_between(t_prev, t_next) >= min_gap_s
    UNION ALL
    SELECT host, t_prev, t_next FROM ws_stops
    WHERE stream = 'stats' AND host IN (SELECT host FROM ws_hosts)
      AND (t_next IS NULL OR seconds_between(t_prev, t_next) >= min_gap_s)
),
-- the normal interval of a stream, measured while it had work (an idle server writes no stats,
-- and decode logs every 40 steps, so "long" is relative to the stream); the 90th percentile,
-- robust to the one long gap that is the wedge
-- (only for streams with a stop of at least min_gap_s: a quantile over a million intervals is what
-- a store of a busy day would otherwise pay for nothing)
-- a stop ends with the next point or, for the last one, the host's end: only the few long stops and
-- the last points meet the host's end (joining every point to it costs seconds on a big store)
rank_stops AS (
    SELECT g.*, coalesce(g.t_next, e.t_end) AS gap_end
    FROM (SELECT host, dk, tk, t_prev, t_next FROM rank_gaps WHERE t_next IS NULL OR seconds_between(t_prev, t_next) >= min_gap_s
          UNION ALL
          SELECT host, dk, tk, t_prev, t_next FROM ws_stops
          WHERE stream = 'rank' AND host IN (SELECT host FROM ws_hosts)
            AND (t_next IS NULL OR seconds_between(t_prev, t_next) >= min_gap_s)) g
    JOIN host_end e USING (host)
    WHERE seconds_between(g.t_prev, coalesce(g.t_next, e.t_end)) >= min_gap_s
),
long_rank_streams AS (SELECT DISTINCT host, dk, tk FROM rank_stops),
rank_typical AS (
    SELECT host, dk, tk, CASE WHEN count(*) >= 10 THEN quantile_cont(seconds_between(t_prev, t_next), 0.9) END AS typical_s
    FROM rank_gaps SEMI JOIN long_rank_streams USING (host, dk, tk)
    WHERE busy AND t_next IS NOT NULL GROUP BY ALL
    UNION ALL
    SELECT host, dk, tk, typical_s FROM ws_typical WHERE stream = 'rank' AND host IN (SELECT host FROM ws_hosts)
),
host_typical AS (
    SELECT host, CASE WHEN count(*) >= 10 THEN quantile_cont(seconds_between(t_prev, t_next), 0.9) END AS typical_s
    FROM host_gaps WHERE busy AND t_next IS NOT NULL AND host IN (SELECT host FROM stat_gaps) GROUP BY ALL
    UNION ALL
    SELECT host, typical_s FROM ws_typical WHERE stream = 'stats' AND host IN (SELECT host FROM ws_hosts)
),
ranks AS (
    SELECT DISTINCT host, dk, tk FROM tab_points
    UNION ALL SELECT DISTINCT host, dk, tk FROM ws_units WHERE stream = 'rank' AND host IN (SELECT host FROM ws_hosts)
),
n_streams AS (SELECT host, count(*) AS n FROM ranks GROUP BY host),
-- the whole host made no progress (the last point of a host counts: its log may end wedged)
host_cand AS (
    SELECT g.host, -1 AS dk, -1 AS tk, 'silence' AS kind, g.t_prev AS t_start, g.t_next,
           coalesce(g.t_next, e.t_end) AS gap_end, t.typical_s,
           greatest(min_gap_s, factor * coalesce(t.typical_s, 0)) AS threshold_s
    FROM host_stops g
    JOIN host_end e USING (host) LEFT JOIN host_typical t USING (host)
    WHERE seconds_between(g.t_prev, coalesce(g.t_next, e.t_end)) >= greatest(min_gap_s, factor * coalesce(t.typical_s, 0))
),
rank_cand0 AS (
    SELECT g.host, g.dk, g.tk, g.t_prev AS t_start, g.t_next, g.gap_end, t.typical_s,
           greatest(min_gap_s, factor * coalesce(t.typical_s, 0)) AS threshold_s
    FROM rank_stops g
    JOIN n_streams n USING (host)
    LEFT JOIN rank_typical t USING (host, dk, tk)
    WHERE n.n > 1 AND seconds_between(g.t_prev, g.gap_end) >= greatest(min_gap_s, factor * coalesce(t.typical_s, 0))
),
-- a rank that stops while its peers go on (a TP collective desync): peers' stats lines in the gap,
-- for at least the rank's own threshold after it stopped
-- (until the whole host stops, if it does: that is a silence of its own; or its capture does)
peer_window AS (
    SELECT c.*, least(c.gap_end, (SELECT min(h.t_start) FROM host_cand h WHERE h.host = c.host
                                  AND h.t_start >= c.t_start),
                      (SELECT min(g.cap_start) FROM capture_gaps g WHERE g.host = c.host
                       AND g.cap_start >= c.t_start)) AS peers_until
    FROM rank_cand0 c
),
-- the peers' progress points in those windows, from their stats lines alone: a second of the log
-- lies within one second of any line of it, so the lines a second away keep the edge seconds whole
-- a window the inputs answer: inside one input's stats lines, or reaching past its edge only where
-- no other input has a stats line in it and none shares that edge's second (a second split
-- between two files is one second of the tables)
stat_units AS (
    SELECT host, sh, u_first, u_last,
           lag(u_last) OVER (PARTITION BY host ORDER BY u_first, u_last, unit) AS prev_last,
           lead(u_first) OVER (PARTITION BY host ORDER BY u_first, u_last, unit) AS next_first
    FROM ws_units WHERE stream = 'stats' AND host IN (SELECT host FROM ws_hosts)
),
peer_ws AS (
    SELECT DISTINCT c.host, c.dk, c.tk, c.t_start
    FROM peer_window c JOIN stat_units u ON u.host = c.host AND c.t_start >= u.u_first AND c.t_start <= u.u_last
    WHERE (u.prev_last IS NULL OR time_bucket(INTERVAL 1 SECOND, u.prev_last + u.sh) < time_bucket(INTERVAL 1 SECOND, u.u_first + u.sh)
           OR time_bucket(INTERVAL 1 SECOND, c.t_start + u.sh) > time_bucket(INTERVAL 1 SECOND, u.u_first + u.sh))
      AND (time_bucket(INTERVAL 1 SECOND, c.peers_until + u.sh) < time_bucket(INTERVAL 1 SECOND, u.u_last + u.sh)
           OR u.next_first IS NULL
           OR (u.next_first > c.peers_until
               AND time_bucket(INTERVAL 1 SECOND, u.next_first + u.sh) > time_bucket(INTERVAL 1 SECOND, u.u_last + u.sh)))
),
-- the peers' progress points in those windows, from their stats lines alone: a second of the log
-- lies within one second of any line of it, so the lines a second away keep the edge seconds whole;
-- or, for the windows the inputs answer, the seconds they kept inside other ranks' stops
peer_points AS (
    SELECT false AS kept, host, dk, tk, min(ts) AS t_first, max(ts) AS t_last
    FROM (SELECT host, coalesce(dp_rank, -1) AS dk, coalesce(tp_rank, -1) AS tk, ts,
                 ts + to_microseconds(CAST(round(clock_offset_s * 1e6) AS BIGINT)) AS log_ts
          FROM batches s SEMI JOIN (SELECT * FROM peer_window ANTI JOIN peer_ws USING (host, dk, tk, t_start)) c
            ON s.host = c.host AND s.ts >= c.t_start - INTERVAL 1 SECOND AND s.ts <= c.peers_until + INTERVAL 1 SECOND)
    GROUP BY host, dk, tk, time_bucket(INTERVAL 1 SECOND, log_ts)
    UNION ALL
    SELECT true, host, dk, tk, t_a, t_b FROM ws WHERE what = 'peer' AND host IN (SELECT host FROM peer_ws)
),
peers AS (
    SELECT c.host, c.dk, c.tk, c.t_start, count(*) AS peer_points, max(p.t_last) AS peer_last,
           string_agg(DISTINCT CASE WHEN p.dk >= 0 THEN 'DP' || p.dk ELSE 'TP' || p.tk END, ','
                      ORDER BY CASE WHEN p.dk >= 0 THEN 'DP' || p.dk ELSE 'TP' || p.tk END) AS peer_names
    FROM (SELECT *, (host, dk, tk, t_start) IN (SELECT (host, dk, tk, t_start) FROM peer_ws) AS kept FROM peer_window) c
    JOIN peer_points p
      ON p.host = c.host AND p.kept = c.kept AND p.t_first > c.t_start AND p.t_last <= c.peers_until
     AND (p.dk <> c.dk OR p.tk <> c.tk)
    GROUP BY c.host, c.dk, c.tk, c.t_start
),
rank_cand AS (
    SELECT c.host, c.dk, c.tk, 'rank_stopped' AS kind, c.t_start, c.t_next, c.gap_end, c.typical_s, c.threshold_s
    FROM rank_cand0 c JOIN peers p USING (host, dk, tk, t_start)
    WHERE seconds_between(c.t_start, p.peer_last) >= c.threshold_s
),
-- threads that died say so once (docs/formats/SGLANG.md, "NIXL connector lines"); requests to their rank then time out
deaths AS (
    SELECT host, coalesce(dp_rank, -1) AS dk,
           coalesce(tp_rank, TRY_CAST(nullif(regexp_extract(message, 'engine_rank=([0-9]+)', 1), '') AS INTEGER), -1)
               AS tk, ts
    FROM (SELECT * FROM events WHERE via = 'tables'
          UNION ALL SELECT e.* FROM events e SEMI JOIN wedge_unsummarised u USING (host) WHERE via <> 'tables')
    WHERE ts IS NOT NULL AND kind IN ('bootstrap_failed', 'transfer_failed', 'exception', 'log', 'nixl')
      AND regexp_matches(message, 'thread died|bootstrap_thread\S* died|[Tt]hread \S+ (?:died|crashed|exited)')
    UNION ALL
    -- every one of them, as the inputs kept it (forensics/ingest/derive.py)
    SELECT host, dk, tk, ts FROM wedge_signals
    WHERE sig = 'death' AND via <> 'tables' AND host NOT IN (SELECT host FROM wedge_unsummarised)
),
death_cand AS (
    SELECT d.host, d.dk, d.tk, 'dead_thread' AS kind, d.ts AS t_start, CAST(NULL AS TIMESTAMPTZ) AS t_next,
           e.t_end AS gap_end, t.typical_s, greatest(min_gap_s, factor * coalesce(t.typical_s, 0)) AS threshold_s
    FROM deaths d JOIN host_end e USING (host) LEFT JOIN host_typical t USING (host)
),
cand0 AS (SELECT * FROM host_cand UNION ALL SELECT * FROM rank_cand UNION ALL SELECT * FROM death_cand),
cand AS (SELECT row_number() OVER (ORDER BY t_start, host, kind, dk, tk) AS wid, * FROM cand0),
-- what the host's stats said was in flight when it stopped: each rank's last line before the
-- start, when that line is recent (a rank idle for an hour says nothing about now)
probe AS (
    SELECT c.wid, c.host, c.t_start, c.threshold_s, r.dk, r.tk
    FROM cand c JOIN ranks r ON r.host = c.host AND (c.kind = 'silence' OR c.dk < 0 OR r.dk = c.dk)
     AND (c.kind = 'silence' OR c.tk < 0 OR r.tk = c.tk)
),
-- a rank writes several stats lines in one second of its clock, with different loads: ASOF would
-- take any of them, so each second keeps the last line its file wrote. Only lines a candidate's
-- threshold reaches can count (an older last line counts 0, as does none), so only they are ranked
-- (each rank's last line before a stop of the host or of the rank is what the inputs kept of it)
last_stats AS (
    SELECT s.host, s.dk, s.tk, s.ts, s.load FROM stats s
    SEMI JOIN cand c ON s.host = c.host AND s.ts <= c.t_start
     AND s.ts >= c.t_start - to_microseconds(CAST((c.threshold_s + 1) * 1e6 AS BIGINT))
    QUALIFY row_number() OVER (PARTITION BY host, dk, tk, ts ORDER BY line_no DESC, source_file DESC) = 1
    UNION ALL
    SELECT host, dk, tk, ts, load FROM ws_loads WHERE host IN (SELECT host FROM ws_hosts)
),
load_before AS (
    SELECT p.wid, CAST(sum(CASE WHEN seconds_between(b.ts, p.t_start) <= p.threshold_s THEN b.load ELSE 0 END) AS BIGINT)
               AS in_flight
    FROM probe p ASOF JOIN last_stats b ON p.host = b.host AND p.dk = b.dk AND p.tk = b.tk AND p.t_start >= b.ts
    GROUP BY p.wid
),
-- a candidate whose signal lines the inputs kept: a silence of a summarised host, or a rank's stop
-- where every input of the host with stats lines in its window has that rank's lines (an input
-- keeps the lines inside the stops of the streams it has)
cand_kept AS (
    SELECT c.wid, c.host IN (SELECT host FROM ws_hosts) AND (c.kind = 'silence' OR NOT EXISTS (
        SELECT 1 FROM ws_units u JOIN ws_units l ON l.host = u.host AND l.unit = u.unit AND l.stream = 'lines'
        WHERE u.stream = 'stats' AND u.host = c.host AND l.u_last > c.t_start
          AND l.u_first <= c.gap_end + INTERVAL 30 SECOND
          AND NOT EXISTS (SELECT 1 FROM ws_units r WHERE r.host = u.host AND r.unit = u.unit AND r.stream = 'rank'
                          AND r.dk = c.dk AND r.tk = c.tk))) AS kept
    FROM cand c
),
-- the lines that say a server is stuck, or how it came out of it; only these few kinds are
-- joined to the candidates, never every access line
sig_events AS (
    SELECT false AS kept, host, coalesce(dp_rank, -1) AS dk, coalesce(tp_rank, -1) AS tk, ts, bootstrap_room,
        CASE
            WHEN kind = 'health_check_failed' THEN 'health_check_failed'
            WHEN kind = 'http_access' AND http_status = 503 THEN '/health 503'
            WHEN kind = 'http_access' THEN '/health 200'
            WHEN kind = 'watchdog_timeout' THEN 'watchdog'
            WHEN kind = 'collective_timeout' THEN 'collective_timeout'
            WHEN kind = 'request_received' THEN 'arrival'
            WHEN kind = 'crash' THEN 'crash'
            WHEN kind = 'hang_dump' THEN 'py-spy dump'
            WHEN kind = 'shutdown' THEN 'shutdown'
            WHEN kind = 'startup' THEN 'restart'
            -- its text names KVPoll.Bootstrapping, but it is the cause, not one of the timeouts
            WHEN regexp_matches(message, 'thread\S* died') THEN 'dead thread'
            ELSE reason
        END AS sig
    FROM events
    WHERE ts IS NOT NULL AND host IN (SELECT c.host FROM cand c JOIN cand_kept k USING (wid) WHERE NOT k.kept)
      AND (kind IN ('health_check_failed', 'watchdog_timeout', 'collective_timeout', 'crash', 'hang_dump')
           OR (kind = 'http_access' AND http_path LIKE '/health%' AND http_status IN (200, 503))
           OR (kind = 'request_received' AND coalesce(rid, '') NOT LIKE 'HEALTH_CHECK%')
           OR (kind = 'shutdown' AND regexp_matches(message, 'SIGTERM received|Gracefully exiting|Force exiting'))
           OR (kind = 'startup' AND regexp_matches(message, 'max_total_num_tokens=|Started server process'))
           OR (kind IN ('transfer_failed', 'bootstrap_failed', 'abort')
               AND reason IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout')))
    UNION ALL
    -- what the inputs kept of these lines (forensics/ingest/derive.py writes the same names)
    SELECT true, host, dk, tk, ts, bootstrap_room, sig FROM wedge_signals
    WHERE ts IS NOT NULL AND sig NOT IN ('death', 'none') AND host IN (SELECT host FROM cand)
      AND host IN (SELECT host FROM ws_hosts)
),
-- untagged lines (uvicorn, the tokenizer, request logs) belong to the whole host; tagged ones
-- to their rank
cand_sig AS (
    SELECT row_number() OVER () AS sid, c.wid, c.t_start, c.threshold_s, s.ts, s.sig, s.bootstrap_room
    FROM cand c JOIN cand_kept k USING (wid) JOIN sig_events s
      ON s.host = c.host AND s.kept = k.kept AND s.ts > c.t_start AND s.ts <= c.gap_end + INTERVAL 30 SECOND
     AND (c.kind = 'silence' OR (s.dk < 0 AND s.tk < 0)
          OR ((c.dk < 0 OR s.dk < 0 OR s.dk = c.dk) AND (c.tk < 0 OR s.tk < 0 OR s.tk = c.tk)))
),
-- the timeouts that fire for every request that was in flight come together: bursts of them,
-- once the wedge has lasted its threshold
timeouts AS (
    SELECT wid, sid, ts, sig,
           sum(CASE WHEN seconds_between(prev, ts) <= 10 THEN 0 ELSE 1 END) OVER (PARTITION BY wid ORDER BY ts
               ROWS UNBOUNDED PRECEDING) AS burst
    FROM (SELECT wid, sid, ts, sig, lag(ts) OVER (PARTITION BY wid ORDER BY ts) AS prev FROM cand_sig
          WHERE sig IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout')
            AND seconds_between(t_start, ts) >= threshold_s)
),
bursts AS (
    SELECT wid, burst, min(ts) AS t0, count(*) AS n, mode(sig) AS sig FROM timeouts GROUP BY wid, burst
),
mass AS (
    SELECT b.wid, arg_min(b.t0, b.t0) AS t_mass, arg_min(b.sig, b.t0) AS mass_sig
    FROM bursts b JOIN cand c USING (wid) LEFT JOIN load_before l USING (wid)
    WHERE b.n >= least(3, greatest(coalesce(l.in_flight, 0), 1))
    GROUP BY b.wid
),
ends AS (
    SELECT c.wid,
           min(s.ts) FILTER (WHERE s.sig IN ('watchdog', 'collective_timeout') AND s.ts <= c.gap_end) AS t_watchdog,
           arg_min(s.sig, s.ts) FILTER (WHERE s.sig IN ('watchdog', 'collective_timeout') AND s.ts <= c.gap_end)
               AS watchdog_sig,
           min(s.ts) FILTER (WHERE s.sig IN ('crash', 'shutdown', 'restart') AND s.ts <= c.gap_end) AS t_down,
           arg_min(s.sig, s.ts) FILTER (WHERE s.sig IN ('crash', 'shutdown', 'restart') AND s.ts <= c.gap_end)
               AS down_sig,
           min(s.ts) FILTER (WHERE s.sig IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout')
                             AND seconds_between(c.t_start, s.ts) >= c.threshold_s) AS t_first_timeout,
           arg_min(s.sig, s.ts) FILTER (WHERE s.sig IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout')
                             AND seconds_between(c.t_start, s.ts) >= c.threshold_s) AS first_timeout_sig
    FROM cand c LEFT JOIN cand_sig s USING (wid)
    GROUP BY c.wid
),
-- where the wedge ends: progress again, the watchdog, the mass timeout, a crash or restart, or the
-- start of a capture gap, whichever comes first
bounded AS (
    SELECT c.*, l.in_flight, e.t_watchdog, e.watchdog_sig, e.t_down, e.down_sig, m.t_mass, m.mass_sig, e.t_first_timeout,
           e.first_timeout_sig, g.cap_start,
           least(c.gap_end, e.t_watchdog, e.t_down, m.t_mass, g.cap_start) AS t_end
    FROM cand c
    LEFT JOIN load_before l USING (wid)
    LEFT JOIN ends e USING (wid)
    LEFT JOIN mass m USING (wid)
    LEFT JOIN (SELECT c.wid, min(g.cap_start) AS cap_start FROM cand c JOIN capture_gaps g
                 ON g.host = c.host AND g.cap_start >= c.t_start AND g.cap_start < c.gap_end GROUP BY c.wid) g
      USING (wid)
),
-- evidence counted inside the wedge (and the burst of timeouts that ended it)
-- (every timeout of a burst that began by the end counts: they fire one per stuck request)
burst_of AS (
    SELECT t.sid, u.t0 FROM timeouts t JOIN bursts u USING (wid, burst)
),
counts AS (
    SELECT b.wid, s.sig, count(*) AS n
    FROM bounded b JOIN cand_sig s USING (wid)
    LEFT JOIN burst_of u USING (sid)
    WHERE s.ts <= b.t_end + CASE WHEN s.sig IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout', 'watchdog')
                                 THEN INTERVAL 10 SECOND ELSE INTERVAL 0 SECOND END
       OR u.t0 <= b.t_end + INTERVAL 2 SECOND
    GROUP BY ALL
),
-- per room and host: first sighting, first close (finish, failure, abort), its rank, and when a
-- timeout says it started waiting (`timed out after 300.0s`)
room_host AS (
    SELECT bootstrap_room, host, min(dp_rank) AS dp, min(tp_rank) AS tp,
           least(min(ts) FILTER (WHERE kind NOT IN ('request_finished', 'transfer_failed', 'bootstrap_failed',
                                                     'abort', 'corruption_detected')),
                 min(ts - to_microseconds(CAST(1e6 * TRY_CAST(nullif(regexp_extract(message,
                     'timed out after ([0-9.]+) ?s', 1), '') AS DOUBLE) AS BIGINT)))) AS t_open,
           min(ts) FILTER (WHERE kind IN ('request_finished', 'transfer_failed', 'bootstrap_failed', 'abort',
                                          'corruption_detected')) AS t_closed,
           min(ts) FILTER (WHERE reason IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout')) AS t_timeout
    FROM room_events
    WHERE host IN (SELECT host FROM cand)
    GROUP BY bootstrap_room, host
),
-- the prefill side of a room is done when its last transfer completed
room_close AS (
    SELECT h.*, r.t_finished,
           CASE WHEN r.prefill_host = h.host AND r.outcome = 'ok' THEN least(h.t_closed, r.t_last_transfer)
                ELSE h.t_closed END AS t_closed_here
    FROM room_host h LEFT JOIN rooms r USING (bootstrap_room)
),
-- rooms that waited on the wedged host: open when it stopped (or arriving during it) and closed
-- only when it ended or after, or timed out in it
stuck AS (
    SELECT b.wid, r.bootstrap_room
    FROM bounded b JOIN room_close r
      ON r.host = b.host
     -- a room counts for a rank only when a line of that rank names it
     AND (b.kind = 'silence' OR ((b.dk < 0 OR r.dp = b.dk) AND (b.tk < 0 OR r.tp = b.tk)
                                 AND (r.dp IS NOT NULL OR r.tp IS NOT NULL)))
     -- a request that arrives during a lull is served at once, and its arrival is what ends the lull:
     -- it waited on the host only if nothing happened for a good while after it came
     AND seconds_between(greatest(r.t_open, b.t_start), b.t_end) >= min_gap_s / 2
     -- a room first seen failing after the stop says nothing about being in flight during it (excerpts
     -- of different hours in one folder look like that); a timeout says how long it had waited
     AND (r.t_open IS NOT NULL OR (r.t_timeout > b.t_start AND r.t_timeout <= b.t_end + INTERVAL 10 SECOND))
     AND (r.t_closed_here IS NULL OR r.t_closed_here >= b.t_start)
     AND ((r.t_timeout > b.t_start AND r.t_timeout <= b.t_end + INTERVAL 10 SECOND)
          OR coalesce(r.t_closed_here, r.t_finished) >= b.t_end - INTERVAL 2 SECOND)
),
stuck_rooms AS (
    SELECT wid, count(*) AS n_rooms,
           list(CAST(bootstrap_room AS VARCHAR) ORDER BY CAST(bootstrap_room AS VARCHAR)) AS rooms
    FROM stuck GROUP BY wid
),
-- the other side's timeouts for those rooms (prefill's bootstrap timing out after decode's wait)
peer_timeouts AS (
    SELECT s.wid, e.host, e.reason, count(DISTINCT e.bootstrap_room) AS n
    FROM stuck s JOIN bounded b USING (wid) JOIN room_events e
      ON e.bootstrap_room = s.bootstrap_room AND e.host <> b.host
     AND e.reason IN ('waiting_timeout', 'bootstrap_timeout', 'request_timeout')
     AND e.ts > b.t_start AND e.ts <= b.t_end + INTERVAL 60 SECOND
    GROUP BY ALL
),
-- transfer units posted before the wedge and neither done nor failed when it ended; only slow or
-- unfinished units can be, so the ten million quick ones are dropped first
slow_units AS (
    SELECT t.host, r.decode_host, t.t_post, t.t_done, t.status
    FROM transfers t LEFT JOIN rooms r USING (bootstrap_room)
    WHERE t.t_post IS NOT NULL AND (t.t_done IS NULL OR seconds_between(t.t_post, t.t_done) >= min_gap_s)
      AND t.t_post <= (SELECT max(t_start) FROM cand) AND t.host IS NOT NULL
      AND coalesce(t.status, 'unknown') NOT IN ('failed', 'aborted', 'timeout')
),
pending AS (
    SELECT b.wid, count(*) AS pending_transfers
    FROM bounded b JOIN slow_units u
      ON (u.host = b.host OR u.decode_host = b.host) AND u.t_post <= b.t_start
     AND u.t_done > b.t_end
    GROUP BY b.wid
),
judged AS (
    SELECT b.*, coalesce(s.n_rooms, 0) AS n_rooms, coalesce(s.rooms, []) AS rooms,
           coalesce(p.pending_transfers, 0) AS pending_transfers,
           coalesce((SELECT sum(n) FROM counts k WHERE k.wid = b.wid AND k.sig IN
               ('health_check_failed', '/health 503', 'watchdog', 'collective_timeout', 'py-spy dump',
                'waiting_timeout', 'bootstrap_timeout', 'request_timeout')), 0) AS n_stuck_lines,
           coalesce((SELECT sum(n) FROM counts k WHERE k.wid = b.wid AND k.sig IN
               ('health_check_failed', '/health 503', 'watchdog', 'collective_timeout', 'py-spy dump')), 0)
               AS n_own_lines,
           pe.peer_points, pe.peer_names
    FROM bounded b
    LEFT JOIN stuck_rooms s USING (wid)
    LEFT JOIN pending p USING (wid)
    LEFT JOIN peers pe ON b.kind = 'rank_stopped' AND pe.host = b.host AND pe.dk = b.dk AND pe.tk = b.tk
     AND pe.t_start = b.t_start
),
-- a stop is a wedge when something says requests were stuck on it: health checks failing, the
-- watchdog, timeouts, stuck rooms or transfers; a rank that stops for good while its peers go on,
-- with work in flight, is one on its own (a desync /health cannot see)
wedges AS (
    SELECT j.*
    FROM judged j
    WHERE seconds_between(j.t_start, j.t_end) >= j.threshold_s
      AND (j.kind = 'dead_thread' OR j.n_stuck_lines > 0 OR j.n_rooms > 0 OR j.pending_transfers > 0
           OR (j.kind = 'rank_stopped' AND coalesce(j.in_flight, 0) > 0 AND j.t_next IS NULL))
),
-- a host that only waited on another one is its consequence, not a wedge: no health check, watchdog
-- or dead thread of its own, and every one of its stuck rooms stuck in a wedge of the other host that
-- began no later (a prefill whose bootstrap times out because its decode host is wedged)
consequences AS (
    SELECT w.wid
    FROM wedges w JOIN wedges v
      ON v.host <> w.host AND v.t_start <= w.t_start + to_microseconds(CAST(incident_s * 1e6 AS BIGINT))
     AND list_has_all(v.rooms, w.rooms)
    WHERE w.kind = 'silence' AND w.n_own_lines = 0 AND w.n_rooms > 0 AND w.pending_transfers = 0
      AND NOT EXISTS (SELECT 1 FROM deaths d WHERE d.host = w.host AND d.ts >= w.t_start - INTERVAL 30 SECOND
                      AND d.ts <= w.t_end)
      AND (v.n_own_lines > 0 OR v.kind <> 'silence' OR v.t_start < w.t_start
           OR EXISTS (SELECT 1 FROM deaths d WHERE d.host = v.host AND d.ts >= v.t_start - INTERVAL 30 SECOND
                      AND d.ts <= v.t_end))
),
-- a dead thread inside a progress wedge of its host names its cause; the progress wedge stays.
-- A rank that stopped first and was still stopped when the whole host went quiet (a desync the
-- peers ran into later) is the start of that host's wedge, not a wedge of its own
first_stops AS (
    SELECT w.wid, min(v.t_start) AS t_first_stop,
           string_agg(CASE WHEN v.dk >= 0 THEN 'DP' || v.dk ELSE 'TP' || v.tk END, ','
                      ORDER BY CASE WHEN v.dk >= 0 THEN 'DP' || v.dk ELSE 'TP' || v.tk END) AS first_ranks,
           list(v.wid) AS folded_wids
    FROM wedges w JOIN wedges v
      ON w.kind = 'silence' AND v.kind = 'rank_stopped' AND v.host = w.host AND v.t_start < w.t_start
     AND v.t_end >= w.t_start - INTERVAL 10 SECOND
    GROUP BY w.wid
),
merged AS (
    SELECT w.*, f.t_first_stop, f.first_ranks,
           w.kind <> 'dead_thread' AND EXISTS (SELECT 1 FROM deaths d WHERE d.host = w.host
               AND d.ts >= w.t_start - INTERVAL 30 SECOND AND d.ts <= w.t_end) AS has_death,
           (w.kind = 'dead_thread' AND EXISTS (SELECT 1 FROM wedges v WHERE v.kind <> 'dead_thread' AND v.host = w.host
               AND w.t_start >= v.t_start - INTERVAL 30 SECOND AND w.t_start <= v.t_end))
           OR EXISTS (SELECT 1 FROM first_stops x WHERE list_contains(x.folded_wids, w.wid)) AS folded
    FROM wedges w LEFT JOIN first_stops f USING (wid)
    WHERE w.wid NOT IN (SELECT wid FROM consequences)
),
shown AS (
    SELECT m.*, CASE WHEN m.has_death THEN 'dead_thread' ELSE m.kind END AS shown_kind,
           least(m.t_start, m.t_first_stop,
                 CASE WHEN m.has_death THEN (SELECT min(d.ts) FROM deaths d WHERE d.host = m.host
                     AND d.ts >= m.t_start - INTERVAL 30 SECOND AND d.ts <= m.t_end) END) AS shown_start
    FROM merged m WHERE NOT m.folded
),
-- wedges of several hosts that start within incident_s of each other are one incident
grouped AS (
    SELECT *, sum(CASE WHEN seconds_between(prev_start, shown_start) <= incident_s THEN 0 ELSE 1 END)
                  OVER (ORDER BY shown_start, host, wid ROWS UNBOUNDED PRECEDING) AS incident
    FROM (SELECT *, lag(shown_start) OVER (ORDER BY shown_start, host, wid) AS prev_start FROM shown)
)
SELECT g.host, g.shown_kind AS kind,
       CAST(CASE WHEN g.kind = 'silence' OR g.dk < 0 THEN NULL ELSE g.dk END AS INTEGER) AS dp_rank,
       CAST(CASE WHEN g.kind = 'silence' OR g.tk < 0 THEN NULL ELSE g.tk END AS INTEGER) AS tp_rank,
       g.shown_start AS t_start, g.t_end,
       round(seconds_between(g.shown_start, g.t_end), 3) AS silent_s, round(g.typical_s, 3) AS typical_s,
       coalesce(g.in_flight, 0) AS in_flight, g.pending_transfers, g.n_rooms, g.rooms,
       CASE
           WHEN g.t_watchdog <= g.t_end + INTERVAL 2 SECOND THEN g.watchdog_sig
           WHEN g.t_mass <= g.t_end + INTERVAL 2 SECOND THEN g.mass_sig
           WHEN g.t_first_timeout <= g.t_end + INTERVAL 2 SECOND THEN g.first_timeout_sig
           WHEN g.t_down <= g.t_end THEN g.down_sig
           WHEN g.t_next IS NOT NULL AND g.t_next <= g.t_end THEN 'resumed'
           WHEN g.cap_start <= g.t_end THEN 'capture gap'
           ELSE 'end of log'
       END AS ended_by,
       list_filter([
           -- as far as the capture shows: after a capture gap nothing is known
           CASE WHEN g.cap_start < coalesce(g.t_next, g.gap_end)
                THEN 'no stats ' || CAST(round(seconds_between(g.t_start, g.cap_start)) AS BIGINT) || ' s (then a capture gap)'
                ELSE 'no stats ' || CAST(round(seconds_between(g.t_start, coalesce(g.t_next, g.gap_end))) AS BIGINT) || ' s'
                     || CASE WHEN g.t_next IS NULL THEN ' (to the end of the log)' ELSE '' END END,
           CASE WHEN g.in_flight > 0 THEN 'in flight ' || g.in_flight END,
           CASE WHEN g.has_death OR g.kind = 'dead_thread' THEN 'dead thread' END,
           CASE WHEN g.first_ranks IS NOT NULL THEN g.first_ranks || ' stopped first, '
               || CAST(round(seconds_between(g.t_first_stop, g.t_start)) AS BIGINT) || ' s before the others' END,
           CASE WHEN g.kind = 'rank_stopped' THEN 'peers went on (' || g.peer_names || ': ' || g.peer_points
               || ' s with stats)' END
       ] || coalesce((SELECT list(CASE WHEN k.sig = 'watchdog' THEN 'watchdog' || CASE WHEN k.n > 1 THEN ' x' || k.n ELSE '' END
                                      WHEN k.sig = 'arrival' THEN 'requests arriving x' || k.n
                                      ELSE k.sig || ' x' || k.n END
                                 ORDER BY CASE k.sig WHEN 'health_check_failed' THEN 1 WHEN '/health 503' THEN 2
                                     WHEN '/health 200' THEN 3 WHEN 'watchdog' THEN 4 WHEN 'collective_timeout' THEN 5
                                     WHEN 'py-spy dump' THEN 5
                                     WHEN 'waiting_timeout' THEN 6 WHEN 'bootstrap_timeout' THEN 7
                                     WHEN 'request_timeout' THEN 8 ELSE 9 END, k.sig)
                      FROM counts k WHERE k.wid = g.wid
                        AND k.sig NOT IN ('crash', 'shutdown', 'restart', 'dead thread')), [])
         || coalesce((SELECT list(p.reason || ' x' || p.n || ' on ' || p.host ORDER BY p.host, p.reason)
                      FROM peer_timeouts p WHERE p.wid = g.wid), [])
         || [CASE WHEN g.n_rooms > 0 THEN 'stuck rooms x' || g.n_rooms END,
             CASE WHEN g.pending_transfers > 0 THEN 'pending transfers x' || g.pending_transfers END],
         lambda s: s IS NOT NULL) AS signals,
       CAST(g.incident AS INTEGER) AS incident, i.incident_hosts
FROM grouped g
JOIN (SELECT incident, list(DISTINCT host ORDER BY host) AS incident_hosts FROM grouped GROUP BY incident) i
  USING (incident);
