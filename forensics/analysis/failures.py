"""Failed requests and failure signals, counted the way a person reads an incident.

Every TP rank logs its own copy of a failure, and both PD sides log theirs: one request is 8, 16
or more lines. `failed_requests` (catalog/views/21_failed_requests.sql) groups them into
requests; `failure_signals` (22_failure_signals.sql) holds the lines that name no request
(`Session <ip:port> failed.`, bootstrap info fetch errors, PD timeout warnings, crashes), which
are signals of their host, never requests. The reports count requests first and lines beside them.
"""

from __future__ import annotations

_TOTALS_SQL = """
SELECT count(*), coalesce(sum(n_lines), 0) FROM failed_requests
"""

_SIGNALS_SQL = "SELECT coalesce(sum(n_lines), 0) FROM failure_signals"

_BY_REASON_SQL = """
SELECT coalesce(first_reason, 'other') AS reason, count(*) AS requests, sum(n_lines) AS lines
FROM failed_requests GROUP BY 1 ORDER BY requests DESC, reason
"""

# per host: requests it logged a failure of, the first failures it holds, its failure lines and signals
_BY_HOST_SQL = """
WITH req AS (
    SELECT unnest(hosts) AS host, count(*) AS requests FROM failed_requests GROUP BY 1
),
fst AS (SELECT first_host AS host, count(*) AS first FROM failed_requests WHERE first_host IS NOT NULL GROUP BY 1),
lines AS (
    SELECT host, count(*) AS lines FROM (
        SELECT host FROM room_failures
        UNION ALL
        SELECT host FROM events
        WHERE bootstrap_room IS NULL AND rid IS NOT NULL
          AND (kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected')
               OR (kind = 'request_finished' AND finish_reason = 'abort'))
    ) GROUP BY 1
),
sig AS (
    SELECT host, sum(n_lines) AS signals,
           sum(n_lines) FILTER (WHERE kind = 'crash') AS crashes,
           sum(n_lines) FILTER (WHERE severity = 'warning') AS warnings
    FROM failure_signals GROUP BY 1
)
SELECT host, coalesce(req.requests, 0), coalesce(fst.first, 0), coalesce(lines.lines, 0),
       coalesce(sig.signals, 0), coalesce(sig.warnings, 0), coalesce(sig.crashes, 0)
FROM req FULL JOIN fst USING (host) FULL JOIN lines USING (host) FULL JOIN sig USING (host)
WHERE host IS NOT NULL
ORDER BY host
"""

_SIGNAL_GROUPS_SQL = """
SELECT host, kind, severity, reason, sum(n_lines) AS lines, max(n_ranks) AS ranks, min(t_first) AS t_first,
       max(t_last) AS t_last, arg_min(first_message, coalesce(t_first, 'infinity'::TIMESTAMPTZ)) AS message
FROM failure_signals
GROUP BY ALL
ORDER BY t_first NULLS LAST, host, kind, severity, reason
"""


def totals(con) -> dict:
    """The `failures` section of `forensics summary`: requests first, lines and signals beside them."""
    requests, lines = con.execute(_TOTALS_SQL).fetchone()
    signals = con.execute(_SIGNALS_SQL).fetchone()[0]
    by_reason = [
        {"reason": r, "requests": int(n), "lines": int(m)} for r, n, m in con.execute(_BY_REASON_SQL).fetchall()
    ]
    by_host = [
        {
            "host": h,
            "requests": int(req),
            "first_failures": int(first),
            "lines": int(lines_),
            "signals": int(sig),
            "warnings": int(warn),
            "crashes": int(crash),
        }
        for h, req, first, lines_, sig, warn, crash in con.execute(_BY_HOST_SQL).fetchall()
    ]
    return {
        "requests": int(requests),
        "lines": int(lines),
        "signals": int(signals),
        "by_reason": by_reason,
        "by_host": by_host,
    }


def signal_groups(con) -> list[dict]:
    """Failure signals per host, kind, severity and reason over the whole store, first seen first."""
    cols = ("host", "kind", "severity", "reason", "lines", "ranks", "t_first", "t_last", "message")
    return [dict(zip(cols, r)) for r in con.execute(_SIGNAL_GROUPS_SQL).fetchall()]


def reason_counts(by_reason: list[dict]) -> str:
    """`bootstrap_info 1, node_failure 1, ...`: requests per first reason."""
    return ", ".join(f"{r['reason']} {r['requests']}" for r in by_reason)


def requests_phrase(n: int) -> str:
    return f"{n} request{'s' if n != 1 else ''} failed"
