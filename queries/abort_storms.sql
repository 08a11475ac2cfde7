-- name: abort_storms
-- description: abort storms: many requests aborted within seconds, across hosts, with per-host
--   counts, the agent-side burst that matches them, and their aftermath
-- inputs: events, turns, replies, clock_estimates (through abort_storm_intervals)
-- parameters:
--   window_s DOUBLE = 5: aborts (any host) closer than this to the previous one belong to the same storm
--   min_aborts INTEGER = 20: smallest storm, in aborts summed over hosts (host_aborts)
--   aftermath_s DOUBLE = 60: how long after the storm errors and corrupted replies are counted
--   min_near INTEGER = 5: aborts with fewer aborts than this within window_s / 2 are background, never part of a storm
--   agent_window_s DOUBLE = 10: an aborted agent reply that ended this close to the storm belongs to it
--   max_reply_s DOUBLE = 600: a reply killed in flight (no end) belongs to the storm if it started at most this long before it
-- columns:
--   t_start: first abort of the storm (UTC, on the clock offsets in force)
--   t_end: last abort of the storm
--   n_aborts: requests aborted, each once however many lines and hosts wrote it (prefill and decode join on the room)
--   host_aborts: aborted requests summed over hosts, each request once per host (abort lines, `Aborted by AbortReq.`, transfer failures whose reason is an abort, finish_reason abort whose message is an abort)
--   n_hosts: hosts with aborts in the storm
--   hosts: those hosts, by their first abort
--   per_host: per host: host, n_aborts (its requests aborted), t_start, t_end, unapplied_skew_s (the clock skew the estimates still see, used to group the host's aborts)
--   host_counts: per_host as text, e.g. `prefill-0 80, decode-0 44, decode-1 36 (clock +2.4 s off, not corrected)`
--   aborts_per_s: n_aborts over the storm's length (at least 1 s)
--   errors_after: error lines on the storm's hosts in the aftermath
--   corrupted_replies_after: corrupted replies that started during the storm or its aftermath
--   next_wedge: start of the next wedge on one of the storm's hosts, if any
--   agent_aborts: agent replies aborted, interrupted, cut off or killed in flight at the storm (0 without transcripts)
--   agent_sessions: agent sessions those replies belong to
--   agent_t_start: the first such reply's end, or for replies killed with no end the latest start among them
SELECT * FROM abort_storm_intervals(window_s := CAST($window_s AS DOUBLE), min_aborts := CAST($min_aborts AS INTEGER),
                                    aftermath_s := CAST($aftermath_s AS DOUBLE), min_near := CAST($min_near AS INTEGER),
                                    agent_window_s := CAST($agent_window_s AS DOUBLE),
                                    max_reply_s := CAST($max_reply_s AS DOUBLE))
ORDER BY t_start
