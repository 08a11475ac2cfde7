"""`forensics timeline`: what happened when, one row per time bucket, with wedge and storm markers."""

from __future__ import annotations

import bisect
import datetime as dt
import re

import polars as pl

from forensics.analysis import coverage, names, when
from forensics.analysis.clocks import clock_warnings
from forensics.analysis.models import Timeline
from forensics.analysis.session import Session, using
from forensics.catalog import named as queries
from forensics.core.errors import UsageError
from forensics.store import Store

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'10s', '500ms', '2m', '1h', '1d' or plain seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)?\s*", str(text))
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"cannot read the duration {text!r}", help="write e.g. 10s, 500ms, 2m, 1h or 1d")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


# `--bucket auto`: 10 s, or the first of these that keeps the span within MAX_AUTO_BUCKETS rows
AUTO_BUCKETS_S = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_AUTO_BUCKETS = 500


def auto_bucket(span_s: float | None) -> float:
    """The bucket for a span: 10 s for an incident of minutes, wider for hours of logs (a 6 h dump in
    10 s buckets is 2,160 rows nobody reads in a terminal)."""
    for b in AUTO_BUCKETS_S:
        if not span_s or span_s / b <= MAX_AUTO_BUCKETS:
            return float(b)
    return float(AUTO_BUCKETS_S[-1])


# a chart draws every bucket: beyond this many it is a smear, and matplotlib runs out of memory
MAX_CHART_BUCKETS = 20_000
# every format holds a row per bucket: 1 s buckets over two months of logs would be gigabytes
MAX_BUCKETS = 500_000


def _main_span(con) -> tuple[dt.datetime | None, dt.datetime | None]:
    """The span of the inputs that hold at least 1% of the lines: one old or stray small log must not
    widen the buckets, or the window, of the whole incident."""
    [(lo, hi)] = con.execute(queries.internal("_main_span").sql).fetchall()
    return lo, hi


def _far_away(con, lo: dt.datetime, hi: dt.datetime) -> list[tuple[str, str]]:
    """(host, path) of the small inputs lying outside the main span by more than its length (at least
    an hour): era samples or a last year's log in the same store, not the incident's own edges."""
    pad = max(hi - lo, dt.timedelta(hours=1))
    return con.execute(queries.internal("_far_inputs").sql, {"lo": lo - pad, "hi": hi + pad}).fetchall()


def _window(con, since: str | None, until: str | None) -> tuple[str | None, str | None, list[str]]:
    """The window shown: the one asked for; by default the whole store, or the main span when small
    inputs lie far from it (said in a note, with how to see them)."""
    if since is not None and until is not None:
        return since, until, []
    lo, hi = _main_span(con)
    if lo is None:
        return since, until, []
    far = _far_away(con, lo, hi)
    if not far:
        return since, until, []
    hosts = sorted({h for h, _ in far if h})
    which = (
        f"window {when.fmt(lo)} to {when.fmt(hi)}, the span"
        if since is None and until is None
        else f"window starts {when.fmt(lo)}, the start"
        if until is not None
        else f"window ends {when.fmt(hi)}, the end"
    )
    note = (
        f"{which} of the inputs holding most lines: "
        f"{len(far)} small input{'s' if len(far) != 1 else ''} far outside it left out "
        f"(host{'s' if len(hosts) != 1 else ''} {names.listing(hosts, 5)}); pass --since / --until to see them"
    )
    return since or lo.isoformat(), until or hi.isoformat(), [note]


def _occupied(con, bucket_s: float, since, until, host) -> pl.DataFrame:
    params = {"bucket_s": float(bucket_s), "since": since, "until": until, "host": host}
    return pl.from_arrow(con.sql(queries.internal("_occupancy").sql, params=params).to_arrow_table())


def _host_window(con, host: str, since, until) -> tuple[str | None, str | None, list[str]]:
    """The window of `--host` alone: that host's span, where a bound is not given, so a host that
    logged for seconds gets its seconds, not the whole store's days in empty rows."""
    occ = _occupied(con, 1e9, since, until, host)
    if occ.height == 0:
        return since, until, []
    lo, hi = occ["t_first"].min(), occ["t_last"].max()
    note = f"window {_stretch(lo, hi)}: the span of host {host}; pass --since / --until for another"
    return since or lo.isoformat(), until or hi.isoformat(), [note]


# a default window is cut to where its rows are when more than this share of its buckets is empty
# (and it has this many buckets at least): 626 empty days of 643 is not a timeline anyone reads
MOSTLY_EMPTY, MIN_CUT_BUCKETS = 0.5, 30
# a stretch without rows this long (a share of the window's buckets) parts two clusters of rows
CLUSTER_GAP = 0.1


def _clusters(occ: pl.DataFrame, bucket_s: float, n_buckets: int) -> list[pl.DataFrame]:
    """The occupied buckets in runs parted by gaps longer than CLUSTER_GAP of the window."""
    starts = occ["bucket_start"].unique().sort()
    gap = max(2, CLUSTER_GAP * n_buckets) * bucket_s
    cuts = [starts[0]]
    for a, b in zip(starts, starts[1:]):
        if (b - a).total_seconds() > gap:
            cuts.append(b)
    edges = [*cuts[1:], None]
    return [
        occ.filter((pl.col("bucket_start") >= lo) & (pl.col("bucket_start") < hi if hi is not None else True))
        for lo, hi in zip(cuts, edges)
    ]


def _failure_times(con, since, until, host) -> tuple[list[dt.datetime], int]:
    """The first failure of every failed request in the window (of `host`'s requests), earliest first
    (`_kept` bisects it), and how many failed requests have no time (a crash dump's lines): those
    are in no stretch."""
    params = {"since": since, "before": until, "host": host, "cap": MAX_BUCKETS}
    cur = con.execute(queries.internal("_failed_requests_window").sql, params)
    at = [c[0] for c in cur.description].index("t_first")
    times = [row[at] for row in cur.fetchall()]
    return sorted(t for t in times if t is not None), sum(t is None for t in times)


def _kept(parts: list[pl.DataFrame], bucket_s: float, auto: bool, failures: list[dt.datetime]) -> tuple[int, int, bool]:
    """The clusters a cut window keeps, first and last, and whether failed requests chose them: from
    the one holding the first failed request to the one holding the last, or the first one's alone
    where that span holds more than MAX_AUTO_BUCKETS buckets (of `bucket_s`, or of the `auto` bucket
    for it); without failed requests, the one holding most rows, the later on a tie."""
    step = dt.timedelta(seconds=bucket_s)
    held = [
        i
        for i, p in enumerate(parts)
        if bisect.bisect_left(failures, p["bucket_start"].min())
        < bisect.bisect_left(failures, p["bucket_start"].max() + step)
    ]
    if held:
        first, last = held[0], held[-1]
        span_s = (parts[last]["t_last"].max() - parts[first]["t_first"].min()).total_seconds()
        if span_s / (auto_bucket(span_s) if auto else bucket_s) > MAX_AUTO_BUCKETS:
            last = first  # more rows than a terminal shows: the first failure's stretch
        return first, last, True
    keep = max(reversed(range(len(parts))), key=lambda i: parts[i]["n"].sum())
    return keep, keep, False


def _to_the_data(
    con, since, until, bucket: str, bucket_s: float, host
) -> tuple[str | None, str | None, list[str], float]:
    """A default window that would be mostly empty buckets, cut to where the failed requests are (the
    clusters of rows from the first one's to the last one's), else to the cluster holding most rows
    (the later on a tie), with a note naming what lies outside; `auto` buckets are chosen again for
    the cut window, which may be cut again (five times at most)."""
    outside: list[pl.DataFrame] = []
    failures, untimed = _failure_times(con, since, until, host)
    by_failures = False
    for _ in range(5):
        occ = _occupied(con, bucket_s, since, until, host)
        if occ.height == 0:
            break
        lo, hi = occ["t_first"].min(), occ["t_last"].max()
        n_buckets = int((hi - lo).total_seconds() // bucket_s) + 1
        if n_buckets < MIN_CUT_BUCKETS or occ["bucket_start"].n_unique() > (1 - MOSTLY_EMPTY) * n_buckets:
            break
        parts = _clusters(occ, bucket_s, n_buckets)
        first, last, by = _kept(parts, bucket_s, bucket == "auto", failures)
        if len(parts) < 2 or (first, last) == (0, len(parts) - 1):
            break
        by_failures = by_failures or by
        outside += parts[:first] + parts[last + 1 :]
        since = parts[first]["t_first"].min().isoformat()
        until = max(p["t_last"].max() for p in parts[first : last + 1]).isoformat()
        if bucket == "auto":
            bucket_s = auto_bucket(_span_s(since, until, con))
    if not outside:
        return since, until, [], bucket_s
    rest = sorted(outside, key=lambda p: p["t_first"].min())
    named = [
        f"{_stretch(p['t_first'].min(), p['t_last'].max())} "
        f"({names.listing(sorted({h for h in p['host'].to_list() if h}), 3)}: {_rows(int(p['n'].sum()))})"
        for p in rest[:5]
    ]
    more = f" and {len(rest) - 5} more stretches" if len(rest) > 5 else ""
    lo, hi = dt.datetime.fromisoformat(since), dt.datetime.fromisoformat(until)
    n = sum(lo <= t <= hi for t in failures)
    where = (
        "where most of the rows are"
        if not by_failures
        else f"where the {n:,} failed request{'s are' if n != 1 else ' is'}"
        if n == len(failures)
        else f"where the first failed request is ({n:,} of {len(failures):,} in it)"
    )
    if by_failures and untimed:
        where += f" ({untimed:,} more without a time)"
    note = (
        f"window {_stretch(lo, hi)}, {where}; outside it: {'; '.join(named)}{more}; pass --since / --until to see them"
    )
    return since, until, [note], bucket_s


def _rows(n: int) -> str:
    return f"{n:,} row{'' if n == 1 else 's'}"


def _stretch(lo: dt.datetime, hi: dt.datetime) -> str:
    """`2026-03-02 14:44:10 to 14:44:12 UTC`; one instant once."""
    a, b = when.fmt(lo), when.fmt(hi)
    if a == b:
        return a
    return f"{a[:-4]} to {b[11:]}" if a[:10] == b[:10] else f"{a[:-4]} to {b}"


def _untimed_replies(con, host) -> list[str]:
    """Replies without a start time (a captured stream carries none) fall in no bucket: said, not dropped."""
    [(n,)] = con.execute(
        "SELECT count(*) FROM replies WHERE t_start IS NULL AND ($host IS NULL OR server_host = $host)",
        {"host": host},
    ).fetchall()
    if not n:
        return []
    return [
        f"{n:,} repl{'y has' if n == 1 else 'ies have'} no start time and {'is' if n == 1 else 'are'} in no bucket "
        "(`forensics replies` lists them)"
    ]


def _span_s(since: str | None, until: str | None, con) -> float | None:
    """Seconds between `since` and `until`, by default the main span (see _main_span)."""
    lo, hi = _main_span(con)
    lo = dt.datetime.fromisoformat(since) if since else lo
    hi = dt.datetime.fromisoformat(until) if until else hi
    return (hi - lo).total_seconds() if lo is not None and hi is not None else None


def _data_span(con, since: str | None, until: str | None) -> tuple[dt.datetime | None, dt.datetime | None]:
    """The window's bounds as the timeline query takes them: the given ones, else the data's edges."""
    [(lo, hi)] = con.execute(queries.internal("_data_span").sql, {"since": since, "until": until}).fetchall()
    return lo, hi


def _fit(
    con, since, until, bucket_s: float, max_buckets: int, what: str = "chart"
) -> tuple[str | None, str | None, list[str]]:
    """A window of at most `max_buckets` buckets: a longer one keeps its last stretch (logs end with
    the incident that made someone read them), with a note naming what was cut and how to see it."""
    lo, hi = _data_span(con, since, until)
    if lo is None or hi is None or (hi - lo).total_seconds() / bucket_s <= max_buckets:
        return since, until, []
    start = hi - dt.timedelta(seconds=bucket_s * (max_buckets - 1))
    note = (
        f"the {what} shows {when.fmt(start)} to {when.fmt(hi)}: {when.fmt(lo)} to {when.fmt(hi)} in "
        f"{bucket_s:g} s buckets would be {int((hi - lo).total_seconds() // bucket_s) + 1} of them, and a {what} "
        f"holds {max_buckets}; pass a wider --bucket, or --since / --until for another stretch"
    )
    return start.isoformat(), hi.isoformat(), [note]


def build(
    session: Session | Store,
    bucket: str = "auto",
    since: str | None = None,
    until: str | None = None,
    host: str | None = None,
    max_buckets: int | None = None,
) -> Timeline:
    """The timeline as a result model: params, clock offsets, bucket rows and the marker intervals.

    `since` / `until` take what `forensics.analysis.when` reads (ISO, or relative to the store's last
    event); `max_buckets` narrows a longer window (charts), as MAX_BUCKETS does for every format.
    `notes` says how the window was chosen.
    """
    with using(session) as s:
        con = s.con
        names.check_host(con, host)
        default = since is None and until is None
        since, until, notes = when.resolve(con, since, until)
        if host and (since is None or until is None):
            since, until, more = _host_window(con, host, since, until)
        else:
            since, until, more = _window(con, since, until)
        notes += more
        bucket_s = auto_bucket(_span_s(since, until, con)) if bucket == "auto" else parse_duration(bucket)
        if default:
            since, until, more, bucket_s = _to_the_data(con, since, until, bucket, bucket_s, host)
            notes += more
        notes += _untimed_replies(con, host)
        if max_buckets:
            since, until, more = _fit(con, since, until, bucket_s, max_buckets)
            notes += more
        elif (_span_s(since, until, con) or 0) / bucket_s > MAX_BUCKETS / 2:
            since, until, more = _fit(con, since, until, bucket_s, MAX_BUCKETS, "timeline")
            notes += more
        notes += coverage.placed_notes(con, since, until, host)
        rows = s.query("timeline", {"bucket_s": bucket_s, "since": since, "until": until, "host": host})
        # the default thresholds, as the bucket markers use them (one shared, snapshotted computation)
        wedges = s.internal("_incident_wedges")
        storms = s.internal("_incident_abort_storms")
        warnings = clock_warnings(s)
        offsets = s.offsets
        cov = coverage.build(con, host)
    if host:
        wedges = wedges.filter(pl.col("host") == host)
        storms = storms.filter(pl.col("hosts").list.contains(host))
    return Timeline(
        bucket_s=bucket_s,
        since=since,
        until=until,
        host=host,
        clock_offsets=offsets,
        clock_warnings=warnings,
        notes=notes,
        # why a bucket stands out, in words: what the renderers print beside its counts
        rows=rows.with_columns(anomaly=anomalies(rows)),
        wedges=wedges,
        abort_storms=storms,
        coverage=cov,
    )


def _reasons(col: str) -> pl.Expr:
    """`a 2, b 1` from a list of {reason, n}."""
    return (
        pl.col(col)
        .list.eval(pl.element().struct.field("reason") + pl.lit(" ") + pl.element().struct.field("n").cast(pl.Utf8))
        .list.join(", ")
    )


def _requests_text() -> pl.Expr:
    """`3 requests failed: node_failure 2, aborted 1`: each request once, in the bucket of its first
    failure; a bucket holding only later lines of earlier requests says how many lines."""
    n = pl.col("failed_requests")
    return (
        pl.when(n > 0)
        .then(
            pl.format("{} request", n)
            + pl.when(n == 1).then(pl.lit("")).otherwise(pl.lit("s"))
            + pl.lit(" failed: ")
            + _reasons("failed_requests_by_reason")
        )
        .when(pl.col("failure_lines") > 0)
        .then(pl.format("{} failure lines", pl.col("failure_lines")))
    )


def _signals_text() -> pl.Expr:
    """`decode-1 bootstrap_failed/bootstrap_unreachable 7`: per host, what the lines naming no request said."""
    item = (
        pl.element().struct.field("host")
        + pl.lit(" ")
        + pl.when(pl.element().struct.field("kind") == pl.element().struct.field("reason"))
        .then(pl.element().struct.field("kind"))
        .otherwise(pl.element().struct.field("kind") + pl.lit("/") + pl.element().struct.field("reason"))
        + pl.lit(" ")
        + pl.element().struct.field("n").cast(pl.Utf8)
    )
    return pl.when(pl.col("failure_signals") > 0).then(
        pl.lit("signals: ") + pl.col("signals_by_host").list.eval(item).list.join(", ")
    )


def anomalies(rows: pl.DataFrame) -> pl.Series:
    """Why a bucket stands out (empty when it does not): markers, failures, corruption above baseline."""
    if rows.height == 0:
        return pl.Series("anomaly", [], dtype=pl.Utf8)
    base = rows["corrupted_rate"].drop_nulls().median() or 0.0
    return rows.select(
        pl.concat_str(
            [
                pl.when(pl.col("wedged_hosts").list.len() > 0).then(
                    pl.lit("wedge ") + pl.col("wedged_hosts").list.join(",")
                ),
                pl.when(pl.col("abort_storm_hosts").list.len() > 0).then(
                    pl.lit("abort storm ") + pl.col("abort_storm_hosts").list.join(",")
                ),
                _requests_text(),
                _signals_text(),
                pl.when((pl.col("corrupted_rate") > max(2 * base, 0.1)) & (pl.col("replies") >= 3)).then(
                    pl.format("corrupted {}", pl.col("corrupted_rate"))
                ),
            ],
            separator="; ",
            ignore_nulls=True,
        ).alias("anomaly")
    ).to_series()
