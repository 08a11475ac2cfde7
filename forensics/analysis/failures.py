"""Failed requests and failure signals, counted the way a person reads an incident.

Every TP rank logs its own copy of a failure, and both PD sides log theirs: one request is 8, 16
or more lines. `failed_requests` (catalog/views/21_failed_requests.sql) groups them into
requests; `failure_signals` (22_failure_signals.sql) holds the lines that name no request
(`Session <ip:port> failed.`, bootstrap info fetch errors, PD timeout warnings, crashes), which
are signals of their host, never requests. The reports count requests first and lines beside them.
"""

from __future__ import annotations

import re

from forensics.analysis import coverage

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
          AND (kind IN ('transfer_failed', 'bootstrap_failed', 'abort', 'corruption_detected', 'router_failure')
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
    requests, lines = con.execute(_TOTALS_SQL).fetchall()[0]
    signals = con.execute(_SIGNALS_SQL).fetchall()[0][0]
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


# the lines of a host that may have led up to the incident's first failure are those of this many
# seconds before it, up to the end of its log second (a whole-second line may be up to 1 s later)
BEFORE_S = 60
# the evidence lists every failed request up to this many; past it, the first ones and how to see all
MAX_LISTED = 500

_REQUESTS_SQL = """
SELECT bootstrap_room, rid_prefill, rid_decode, hosts, sides, outcome, t_first, first_host, first_side,
       first_reason, first_simultaneous, n_lines, n_ranks, first_message, request_key
FROM failed_requests
ORDER BY t_first NULLS LAST, request_key
LIMIT $cap
"""

# past the cap, the rest by name only: the evidence names every failed request's room
_UNLISTED_SQL = """
SELECT coalesce(CAST(bootstrap_room AS VARCHAR), request_key) AS request
FROM failed_requests
ORDER BY t_first NULLS LAST, request_key
OFFSET $cap
"""

_REASON_HOST_SQL = """
SELECT coalesce(first_reason, 'other') AS reason, first_host AS host, count(*) AS requests, sum(n_lines) AS lines
FROM failed_requests GROUP BY ALL ORDER BY requests DESC, reason, host
"""

# per host, what its log said in the BEFORE_S seconds up to the first failure: the last stats line
# (summed over its ranks' last lines), aborts, signals, crashes, and a wedge under way
_BEFORE_SQL = """
WITH w AS (
    SELECT CAST($t0 AS TIMESTAMPTZ) AS t0,
           CAST($t0 AS TIMESTAMPTZ) - to_microseconds(CAST($before_s * 1e6 AS BIGINT)) AS lo,
           CAST($t0 AS TIMESTAMPTZ) + INTERVAL 1 second AS hi
),
hosts AS (SELECT DISTINCT host FROM files WHERE host IS NOT NULL AND status = 'ingested'),
last_stats AS (
    SELECT host, max(ts) AS t_stats, sum(running_req) AS running_req, sum(queue_req) AS queue_req
    FROM (SELECT b.host, b.ts, b.running_req, b.queue_req,
                 row_number() OVER (PARTITION BY b.host, b.dp_rank, b.tp_rank ORDER BY b.ts DESC) AS k
          FROM batches b, w WHERE b.ts < w.hi AND b.ts >= w.lo)
    WHERE k = 1 GROUP BY host
),
ev AS (
    SELECT e.host,
           count(*) FILTER (WHERE e.kind = 'abort' OR e.reason = 'aborted') AS aborts,
           count(*) FILTER (WHERE e.bootstrap_room IS NULL AND e.rid IS NULL
                            AND is_failure_signal(e.kind, e.severity)) AS signals,
           count(*) FILTER (WHERE e.bootstrap_room IS NULL AND e.rid IS NULL AND e.severity = 'warning') AS warnings,
           count(*) FILTER (WHERE e.kind = 'crash') AS crashes,
           string_agg(DISTINCT coalesce(e.reason, e.kind), ', ' ORDER BY coalesce(e.reason, e.kind))
               FILTER (WHERE e.bootstrap_room IS NULL AND e.rid IS NULL
                       AND is_failure_signal(e.kind, e.severity)) AS signal_reasons
    FROM events e, w WHERE e.ts >= w.lo AND e.ts < w.hi GROUP BY e.host
),
wedged AS (
    SELECT i.host, string_agg(i.kind || ' since ' || strftime(i.t_start, '%H:%M:%S'), ', ' ORDER BY i.t_start) AS wedge
    FROM incident_wedges i, w WHERE i.t_start <= w.hi AND i.t_end >= w.lo GROUP BY i.host
)
SELECT h.host, s.t_stats, s.running_req, s.queue_req, coalesce(ev.aborts, 0) AS aborts,
       coalesce(ev.signals, 0) AS signals, coalesce(ev.warnings, 0) AS warnings, coalesce(ev.crashes, 0) AS crashes,
       ev.signal_reasons, wd.wedge
FROM hosts h
LEFT JOIN last_stats s USING (host)
LEFT JOIN ev USING (host)
LEFT JOIN wedged wd USING (host)
ORDER BY h.host
"""


def _frame(con, sql: str, params: dict | None = None):
    import polars as pl

    return pl.from_arrow(con.sql(sql, params=params).to_arrow_table())


def _dumps(con, kind: str, extra: str, column: str, read):
    """The events of one dump kind, in time order, with what `read` makes of each traceback as `column`."""
    import polars as pl

    df = _frame(
        con,
        f"SELECT ts, ts_placed, host, {extra}message, traceback FROM events WHERE kind = $kind "
        "ORDER BY ts NULLS LAST, host, source_file, line_no",
        {"kind": kind},
    )
    if not df.height:
        return df
    return df.with_columns(pl.col("traceback").map_elements(read, return_dtype=pl.List(pl.Utf8)).alias(column))


def servers_side(con) -> dict:
    """The incident as the server logs tell it, without transcripts: its first failure and what led
    up to it on each host, every failed request, failures by reason and host, signals and crashes."""
    import polars as pl

    requests = _frame(con, _REQUESTS_SQL, {"cap": MAX_LISTED})
    first = None
    before = pl.DataFrame()
    if requests.height and requests["t_first"][0] is not None:
        first = requests.row(0, named=True)
        # as text, as the JSON rows write a 63-bit room (a JavaScript reader would round a number)
        if first["bootstrap_room"] is not None:
            first["bootstrap_room"] = str(first["bootstrap_room"])
        before = _frame(con, _BEFORE_SQL, {"t0": first["t_first"], "before_s": BEFORE_S})
    unlisted = _frame(con, _UNLISTED_SQL, {"cap": MAX_LISTED}) if requests.height >= MAX_LISTED else None
    by_reason_host = _frame(con, _REASON_HOST_SQL)
    signals = _frame(con, _SIGNAL_GROUPS_SQL)
    crashes = _dumps(con, "crash", "exc_type, ", "frames", innermost_frames)
    hangs = _dumps(con, "hang_dump", "", "threads", hang_threads)
    return {
        "failures": totals(con),
        "first_failure": first,
        "before_s": BEFORE_S,
        "before_first": before,
        "failed_requests": requests,
        "listed_max": MAX_LISTED,
        "unlisted": [] if unlisted is None or not unlisted.height else unlisted["request"].to_list(),
        "by_reason_host": by_reason_host,
        "signals": signals,
        "crashes": crashes,
        "hang_dumps": hangs,
        # lines whose time is not their own: their failures and signals are dated where they were placed
        "placed": coverage.placed_notes(con, None, None, None),
    }


# a frame as each dump prints it (docs/formats/SGLANG.md, "Crash dumps"): faulthandler's
# `File "p", line N in f`, torch's and Python's `File "p", line N, in f`, UCX's numbered native frames
_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line ([0-9]+),? in (.+?)\s*$')
# c10's `frame #N: <function> + 0x<off> (0x<addr> in <library>)`
_C10_FRAME = re.compile(r"^frame #[0-9]+: (.+?) \+ 0x[0-9a-f]+ \((?:0x[0-9a-f]+)? ?in ([^)]+)\)\s*$")
# the frames that raise and report a c10 error, not where it went wrong
_C10_MACHINERY = ("c10::Error::Error", "c10::detail::torchCheckFail", "c10::DistBackendError", "<unknown function>")
_NATIVE_FRAME = re.compile(r"^\s*[0-9]+\s+([^\s(]+)(?:\((.*)\))?\s+\[0x[0-9a-f]+\]\s*$")
INNERMOST = 3


def innermost_frames(traceback: str | None) -> list[str]:
    """The three innermost frames of a crash's dump, `file:line function` (native: `library function`).

    faulthandler prints the most recent call first, its current thread's section first in what
    matters (taken when there is one); UCX and torch print the innermost first; a Python
    traceback prints it last."""
    if not traceback:
        return []
    lines = traceback.split("\n")
    current = next((i for i, ln in enumerate(lines) if ln.startswith("Current thread 0x")), None)
    if current is not None:
        lines = lines[current + 1 :]
    frames, python_order = [], False
    for ln in lines:
        if ln.startswith("Traceback (most recent call last)"):
            python_order, frames = True, []
            continue
        if ln.startswith("Thread 0x") and frames and not python_order:
            break  # the next thread's section: the first one's frames are the dump's
        if m := _PY_FRAME.match(ln):
            path, line, func = m.groups()
            frames.append(f"{path.rsplit('/', 1)[-1]}:{line} {func}")
        elif m := _C10_FRAME.match(ln):
            func, lib = m.groups()
            if not func.startswith(_C10_MACHINERY):
                frames.append(f"{lib.rsplit('/', 1)[-1]} {func}")
        elif m := _NATIVE_FRAME.match(ln):
            lib, func = m.groups()
            lib, func = lib.rsplit("/", 1)[-1], (func or "").split("+")[0]
            # UCX's own signal handler and the C library's trampoline come first: not the crash
            if not lib.startswith("libucs.") and func:
                frames.append(f"{lib} {func}")
    return frames[-INNERMOST:][::-1] if python_order else frames[:INNERMOST]


# py-spy's thread header and frame (docs/formats/OTHER_ENGINES.md, "py-spy dumps"):
# `Thread <tid> (<status>)[: "<name>"]`, then `    <func> (<file>[:<line>])`, innermost first
_PYSPY_THREAD = re.compile(r'^Thread (\S+) \(([a-z+]+)\)(?:: "(.*)")?\s*$')
_PYSPY_FRAME = re.compile(r"^    (\S.*?) \(([^()]+?)(?::([0-9]+))?\)\s*$")


def hang_threads(traceback: str | None) -> list[str]:
    """Each thread of a py-spy dump with its innermost frames: `MainThread (active): socket.py:701 send
    < prefill.py:388 event_loop_pp_disagg_prefill < ...`, in the dump's order (innermost first,
    three at most)."""
    out: list[tuple[str, list[str]]] = []
    for ln in (traceback or "").split("\n"):
        if m := _PYSPY_THREAD.match(ln):
            tid, status, name = m.groups()
            out.append((f"{name or tid} ({status})", []))
        elif out and (m := _PYSPY_FRAME.match(ln)) and len(out[-1][1]) < INNERMOST:
            func, path, line = m.groups()
            out[-1][1].append(f"{path.rsplit('/', 1)[-1]}{':' + line if line else ''} {func}")
    return [f"{who}: {' < '.join(frames)}" if frames else who for who, frames in out]
