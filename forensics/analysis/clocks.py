"""Clock offsets between hosts, estimated from events of the same room that must happen in order.

Two orderings are certain in PD serving (docs/formats/NIXL.md, "Notification ordering" and
"sglang NIXL connector"): decode registers a request before prefill can bootstrap it (post its KV,
or finish it), and prefill posts a WRITE (and finishes the request) before decode gets its
notification (or finishes the request). The rules are SQL
(forensics/catalog/views/clock_constraints.sql and
clock_estimates.sql), shared with the reports. Each ordered pair `a`
(host A) before `b` (host B) bounds the offsets:

    off_B - off_A <= ts_b - ts_a + res_b

where `off` is how far a host's clock runs ahead and `res_b` the resolution of b's timestamp
(1 s for sglang prefixes, which truncate). Pairs in both directions give an interval; the estimate
is its middle, or the one bound there is. Estimates are made on raw times; the offsets in force
(clocks.json) are reported beside them and are never changed here.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex

import polars as pl

from forensics.analysis import names
from forensics.analysis.session import Session, using
from forensics.catalog import named as queries
from forensics.core.errors import UsageError
from forensics.core.text import escape_control
from forensics.store import Store


@dataclasses.dataclass
class PairEstimate:
    """How far `host_b`'s clock runs ahead of `host_a`'s (seconds), with its bounds."""

    host_a: str
    host_b: str
    estimate: float | None
    lower: float | None
    upper: float | None
    n_lower: int
    n_upper: int
    in_force: float  # offsets[host_b] - offsets[host_a] as configured
    consistent: bool  # lower <= upper: otherwise an ordering assumption failed (or hosts share a name)
    skew: float | None = None  # what the bounds prove: the estimate when they are tight, else the bound nearest 0

    @property
    def in_force_ok(self) -> bool:
        lo_ok = self.lower is None or self.in_force >= self.lower - 1e-6
        hi_ok = self.upper is None or self.in_force <= self.upper + 1e-6
        return lo_ok and hi_ok


@dataclasses.dataclass
class ClockReport:
    offsets: dict[str, float]  # in force (clocks.json)
    pairs: list[PairEstimate]
    # why host pairs that share rooms (or the store as a whole) have no estimate: one line each
    unbounded: list[str] = dataclasses.field(default_factory=list)

    def frame(self) -> pl.DataFrame:
        rows = []
        for p in self.pairs:
            rows.append(
                {
                    "host_a": p.host_a,
                    "host_b": p.host_b,
                    "estimate_s": p.estimate,
                    "lower_s": p.lower,
                    "upper_s": p.upper,
                    "pairs": p.n_lower + p.n_upper,
                    "lower_pairs": p.n_lower,
                    "upper_pairs": p.n_upper,
                    "in_force_s": p.in_force,
                    "in_force_ok": p.in_force_ok,
                    "consistent": p.consistent,
                    # a wide interval's middle is a guess: suggest only what the bounds show
                    "suggest": None
                    if p.skew is None
                    else f"forensics clocks set {p.host_b} {self.offsets.get(p.host_a, 0.0) + p.skew:.6f}",
                }
            )
        return pl.DataFrame(
            rows,
            schema={
                "host_a": pl.Utf8,
                "host_b": pl.Utf8,
                "estimate_s": pl.Float64,
                "lower_s": pl.Float64,
                "upper_s": pl.Float64,
                "pairs": pl.Int64,
                "lower_pairs": pl.Int64,
                "upper_pairs": pl.Int64,
                "in_force_s": pl.Float64,
                "in_force_ok": pl.Boolean,
                "consistent": pl.Boolean,
                "suggest": pl.Utf8,
            },
        )


def constraints(session: Session | Store) -> pl.DataFrame:
    """Every ordered cross-host pair of the same room: (room, host_a, host_b, rule, bound) on raw clocks."""
    with using(session, materialize=False) as s:
        return pl.from_arrow(
            s.raw()
            .sql("SELECT * FROM clock_constraints() ORDER BY host_a, host_b, rule, bootstrap_room")
            .to_arrow_table()
        )


def estimate(session: Session | Store) -> ClockReport:
    """Offset estimates for every host pair that shares rooms, beside the offsets in force."""
    with using(session, materialize=False) as s:
        offsets = s.store.clocks()
        # raw clocks: the estimate is what the logs say, whatever offsets are set
        con = s.raw()
        rows = con.sql(queries.internal("_clock_report").sql).fetchall()
        shared = con.sql(queries.internal("_shared_rooms").sql).fetchall()
        n_hosts = con.sql(queries.internal("_host_count").sql).fetchall()[0][0]
    bounded = {frozenset((a, b)) for a, b, *_ in rows}
    unbounded = [
        f"{escape_control(a)} and {escape_control(b)} share {n:,} room{'s' if n != 1 else ''} (e.g. {room}) "
        + (
            "but only through failure lines, which no rule orders across hosts (both sides fail on their own "
            "when a transfer breaks)"
            if only_failures
            else "but no pair of their events is one a rule orders"
        )
        + ": a bound needs decode's request received before prefill's bootstrap, or prefill's KV post (or finish) "
        "before decode's notification (or finish), of the same room"
        for a, b, n, room, only_failures in shared
        if frozenset((a, b)) not in bounded
    ]
    if not rows and not shared:
        unbounded.append(
            "no bootstrap room is seen on two hosts: there is nothing to compare clocks by"
            if n_hosts > 1
            else "the store holds one host: there is no clock to compare"
        )
    return ClockReport(
        offsets,
        [
            PairEstimate(a, b, est, lo, hi, n_lo, n_hi, offsets.get(b, 0.0) - offsets.get(a, 0.0), ok, skew)
            for a, b, est, lo, hi, n_lo, n_hi, ok, skew in rows
        ],
        unbounded,
    )


def set_offset(store: Store, host: str, seconds: float) -> dict[str, float]:
    """Record that `host`'s clock runs `seconds` ahead; return the offsets now in force."""
    if not host:
        raise UsageError("a host name is required", help='see `forensics sql "SELECT DISTINCT host FROM files"`')
    store.require().set_clock(host, seconds)
    return store.clocks()


def unset_offset(store: Store, host: str) -> dict[str, float]:
    """Remove `host`'s recorded offset; return the offsets now in force."""
    offsets = store.require().clocks()
    if host not in offsets:
        listed = ", ".join(escape_control(h) for h in sorted(offsets)) or "none"
        raise UsageError(f"clocks unset {host}: no offset is set for it", help=f"offsets set: {listed}")
    store.unset_clock(host)
    return store.clocks()


def describe_offsets(offsets: dict[str, float]) -> str:
    """One line naming the offsets a report used (every report and export says it the same way)."""
    if not offsets:
        return "clock offsets: none applied"
    return "clock offsets applied: " + ", ".join(f"{escape_control(h)} {v:+g} s" for h, v in sorted(offsets.items()))


# skew the estimates see beyond this, on a host with no offset set, is named in every report's header:
# whole-second log stamps make anything less indistinguishable from no skew
WARN_SKEW_S = 1.0


@dataclasses.dataclass(frozen=True)
class UnsetOffset:
    """A host whose clock the estimates see `skew_s` ahead of `reference` (on the offsets in force)."""

    host: str
    reference: str
    skew_s: float
    pairs: int

    def command(self, store: Store) -> str:
        """The command that records the offset (the skew is relative to corrected times: it is the offset)."""
        return f"forensics clocks set {shlex.quote(self.host)} {self.skew_s:.3f} --store {shlex.quote(str(store.root))}"


def unset_offsets(session: Session) -> list[UnsetOffset]:
    """Hosts with an estimated skew above WARN_SKEW_S and no offset in clocks.json."""
    offsets = session.store.clocks()
    # per host, the pair with most evidence; from the snapshot of clock_estimates that the command's
    # connection already reads (the estimate is never recomputed per report)
    rows = session.con.sql(queries.internal("_unset_offsets").sql).fetchall()
    return [UnsetOffset(h, ref, skew, n) for h, ref, skew, n in rows if h not in offsets and abs(skew) > WARN_SKEW_S]


# where a warning's command starts: renderers set the command apart (Markdown code)
SET_IT = "Set it: "


def clock_warnings(session: Session) -> list[str]:
    """One line per unset offset the estimates call for, with the command that sets it, then the
    dates that cannot be right (`date_warnings`): the report headers."""
    return _offset_warnings(session) + date_warnings(session.con)


def _offset_warnings(session: Session) -> list[str]:
    out = []
    store = session.store
    for u in unset_offsets(session):
        way = "ahead of" if u.skew_s > 0 else "behind"
        out.append(
            f"warning: {escape_control(u.host)}'s clock runs about {abs(u.skew_s):.1f} s {way} "
            f"{escape_control(u.reference)}'s ({int(u.pairs):,} room event pairs) and no offset is set for it; "
            f"its times are off by that much. {SET_IT}{escape_control(u.command(store))}"
        )
    return out


# hosts of one store whose lines lie further apart than this are one incident only if a clock is wrong
HOSTS_APART = dt.timedelta(days=1)


def date_warnings(con) -> list[str]:
    """Lines dated after they could have been written (after their input was ingested, or more
    than a day after its file was last written), and hosts of one store more than a day apart: a
    year taken from the wrong place, a --tz the wrong way, a clock run ahead, or two dumps in one store."""
    out = []
    for path, host, last, ingested, file_time, after in con.execute(queries.internal("_late_inputs").sql).fetchall():
        when = (
            f"after it was ingested ({_t(ingested)})"
            if after == "ingest"
            else f"more than a day after its file was last written ({_t(file_time)})"
        )
        out.append(
            f"warning: {escape_control(path)}: lines dated up to {_t(last)}, {when}: a year, zone or clock "
            "is wrong (ingest it again with --year, --date or --tz)"
        )
    spans = [
        (first, last, host)
        for host, *_, first, last, _f in con.execute(queries.internal("_summary_hosts").sql).fetchall()
        if first is not None and last is not None
    ]
    spans.sort()
    groups: list[list] = []
    for first, last, host in spans:
        if groups and first - groups[-1][1] <= HOSTS_APART:
            groups[-1][1] = max(groups[-1][1], last)
            groups[-1][2].append(host)
        else:
            groups.append([first, last, [host]])
    if len(groups) > 1:
        parts = "; ".join(
            f"{names.listing(sorted(escape_control(h) for h in g[2]), 3)} {_t(g[0])} to {_t(g[1])}" for g in groups[:4]
        )
        more = f" and {len(groups) - 4} more" if len(groups) > 4 else ""
        out.append(
            f"warning: the store's hosts lie more than a day apart ({parts}{more}): one host's year, zone "
            "or clock is wrong, or two dumps share the store"
        )
    return out


def _t(v) -> str:
    return "?" if v is None else v.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# Two clocks within one file (docs/formats/SGLANG.md, "Time zones and dates"; docs/formats/NIXL.md, "UCX lines"): UCX stamps its lines with epoch seconds
# (UTC) and glog with its process's local time, beside sglang's zone-less local prefixes, which
# ingest reads in `--tz`. A difference of whole zone steps (15 min) between a line of one and the
# sglang lines around it is a zone, not a delay; under half an hour it is left alone.
_ZONE_SQL = """
WITH other AS (
    SELECT source_file, source AS clock, line_no, ts FROM raw_events
    WHERE source IN ('ucx', 'glog') AND ts IS NOT NULL AND ts_raw IS NOT NULL
),
sg AS (
    SELECT source_file, line_no, ts FROM raw_events
    WHERE source IN ('sglang', 'request_log') AND ts IS NOT NULL AND ts_raw IS NOT NULL
      AND source_file IN (SELECT DISTINCT source_file FROM other)
    UNION ALL
    SELECT source_file, line_no, ts FROM raw_batches
    WHERE ts IS NOT NULL AND ts_raw IS NOT NULL AND source_file IN (SELECT DISTINCT source_file FROM other)
),
before AS (
    SELECT o.source_file, o.clock, o.line_no, epoch(o.ts) - epoch(s.ts) AS d
    FROM other o ASOF JOIN sg s ON o.source_file = s.source_file AND o.line_no >= s.line_no
),
after AS (
    SELECT o.source_file, o.clock, o.line_no, epoch(o.ts) - epoch(s.ts) AS d
    FROM other o ASOF JOIN sg s ON o.source_file = s.source_file AND o.line_no <= s.line_no
),
pairs AS (
    SELECT source_file, clock,
           CASE WHEN b.d IS NOT NULL AND a.d IS NOT NULL AND abs(b.d - a.d) <= 600 THEN (b.d + a.d) / 2
                ELSE coalesce(b.d, a.d) END AS est
    FROM before b FULL JOIN after a USING (source_file, clock, line_no)
)
SELECT p.source_file, p.clock, median(p.est) AS est, count(*) AS n, any_value(f.tz) AS tz, min(f.first_ts) AS t0
FROM pairs p LEFT JOIN files f ON f.path = p.source_file
WHERE p.est IS NOT NULL
GROUP BY p.source_file, p.clock
ORDER BY p.source_file, p.clock
"""
ZONE_STEP_S = 900


def _utc_label(seconds: int) -> str:
    sign = "-" if seconds < 0 else "+"
    h, m = divmod(abs(seconds) // 60, 60)
    return f"UTC{sign}{h:02d}:{m:02d}"


def _zone_for(seconds: int) -> str:
    """A `--tz` value at this UTC offset: Etc/GMT zones for whole hours (their sign is inverted)."""
    if seconds == 0:
        return "UTC"
    if seconds % 3600 == 0 and -12 <= seconds // 3600 <= 14:
        return f"Etc/GMT{-seconds // 3600:+d}"
    return f"a zone at {_utc_label(seconds)}"


def zone_mismatches(con) -> list[dict]:
    """Per file and foreign clock (ucx, glog): its median difference to the file's sglang lines
    when that is a whole number of zone steps, at least half an hour."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    out = []
    for path, clock, est, n, tz, t0 in con.execute(_ZONE_SQL).fetchall():
        step = round(est / ZONE_STEP_S) * ZONE_STEP_S
        if abs(step) < 1800 or abs(est - step) > 300:
            continue
        try:
            zone = ZoneInfo(tz or "UTC")
        except Exception:  # a zone this machine does not know: name the difference only
            zone = None
        at = t0 or dt.datetime.now(dt.timezone.utc)
        read_as = int(zone.utcoffset(at.replace(tzinfo=None)).total_seconds()) if zone else None
        # UCX's epoch is UTC: sglang's local clock runs `-step` ahead of what --tz assumed
        actual = None if read_as is None or clock != "ucx" else read_as - step
        out.append(
            {"path": path, "clock": clock, "offset_s": step, "lines": n, "tz": tz or "UTC", "log_utc_offset_s": actual}
        )
    return out


def zone_warnings(con) -> list[str]:
    """One line per file whose UCX or glog lines disagree with its sglang lines by a zone (summary)."""
    out = []
    for m in zone_mismatches(con):
        h = m["offset_s"] / 3600
        head = (
            f"warning: {escape_control(m['path'])}: its {m['clock'].upper()} lines ({m['lines']:,}) are "
            f"{h:+.2f} h from its sglang lines read in --tz {escape_control(m['tz'])}"
        )
        if m["log_utc_offset_s"] is not None:
            out.append(
                f"{head}: UCX stamps UTC, so the sglang clock is {_utc_label(m['log_utc_offset_s'])}; "
                f"ingest the file again with --tz {_zone_for(m['log_utc_offset_s'])} (or the zone's name)"
            )
        else:
            out.append(
                f"{head}: glog and sglang write in different zones here, and --tz gives one zone to both: set it "
                "to the sglang lines' zone and read the glog times as that far off"
            )
    return out
