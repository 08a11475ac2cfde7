"""Clock offsets between hosts, estimated from events of the same room that must happen in order.

Two orderings are certain in PD serving (NIXL.md §7, §10): decode registers a request before prefill
can bootstrap it (post its KV, or finish it), and prefill posts a WRITE (and finishes the request)
before decode gets its notification (or finishes the request). The rules are SQL
(forensics/catalog/views/12_clock_estimates.sql), shared with the reports. Each ordered pair `a`
(host A) before `b` (host B) bounds the offsets:

    off_B - off_A <= ts_b - ts_a + res_b

where `off` is how far a host's clock runs ahead and `res_b` the resolution of b's timestamp
(1 s for sglang prefixes, which truncate). Pairs in both directions give an interval; the estimate
is its middle, or the one bound there is. Estimates are made on raw times; the offsets in force
(clocks.json) are reported beside them and are never changed here.
"""

from __future__ import annotations

import dataclasses
import shlex

import duckdb
import polars as pl

from forensics.catalog import connect, snapshot_path
from forensics.core.errors import UsageError
from forensics.core.text import escape_control
from forensics.ingest.store import Store


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


def constraints(store: Store) -> pl.DataFrame:
    """Every ordered cross-host pair of the same room: (room, host_a, host_b, rule, bound) on raw clocks."""
    con = connect(store.require(), offsets={})
    try:
        return pl.from_arrow(
            con.sql("SELECT * FROM clock_constraints() ORDER BY host_a, host_b, rule, bootstrap_room").to_arrow_table()
        )
    finally:
        con.close()


def estimate(store: Store) -> ClockReport:
    """Offset estimates for every host pair that shares rooms, beside the offsets in force."""
    offsets = store.require().clocks()
    # raw clocks: the estimate is what the logs say, whatever offsets are set
    con = connect(store, offsets={})
    try:
        rows = con.sql(
            "SELECT host_a, host_b, estimate_s, lower_s, upper_s, lower_pairs, upper_pairs, consistent, "
            "skew_s FROM clock_estimates ORDER BY host_a, host_b"
        ).fetchall()
        shared = con.sql(_SHARED_SQL).fetchall()
        n_hosts = con.sql("SELECT count(DISTINCT host) FROM files WHERE host IS NOT NULL").fetchall()[0][0]
    finally:
        con.close()
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


# host pairs whose logs or traces name the same rooms; only_failures: every shared room's lines on
# both hosts are failure lines
_SHARED_SQL = """
WITH seen AS (
    SELECT bootstrap_room, host, bool_and(kind IN ('transfer_failed', 'bootstrap_failed', 'abort',
                                                   'corruption_detected', 'checksum_mismatch')) AS failure_only
    FROM room_events WHERE host IS NOT NULL GROUP BY ALL
    UNION ALL
    SELECT bootstrap_room, host, bool_and(event IN ('fail', 'abort'))
    FROM transfer_events WHERE host IS NOT NULL AND bootstrap_room <> 0 AND NOT unknown_enum GROUP BY ALL
),
per_host AS (SELECT bootstrap_room, host, bool_and(failure_only) AS failure_only FROM seen GROUP BY ALL)
SELECT a.host, b.host, count(DISTINCT a.bootstrap_room), CAST(min(a.bootstrap_room) AS VARCHAR),
       bool_and(a.failure_only AND b.failure_only)
FROM per_host a JOIN per_host b ON a.bootstrap_room = b.bootstrap_room AND a.host < b.host
GROUP BY ALL
ORDER BY 1, 2
"""


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

# per host, the pair with most evidence; read from the snapshot of clock_estimates that the report's
# connection already has (the estimate is never recomputed per report)
_UNSET_SQL = """
SELECT host_b AS host, arg_max(host_a, lower_pairs + upper_pairs) AS reference,
       arg_max(skew_s, lower_pairs + upper_pairs) AS skew_s, max(lower_pairs + upper_pairs) AS pairs
FROM clock_estimates WHERE skew_s IS NOT NULL
GROUP BY host_b
ORDER BY host_b
"""


def _sql_text(s: str) -> str:
    return s.replace("'", "''")


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


def unset_offsets(store: Store, con=None) -> list[UnsetOffset]:
    """Hosts with an estimated skew above WARN_SKEW_S and no offset in clocks.json."""
    offsets = store.clocks()
    own = con is None
    if own:
        # a command that has no connection of its own to lend: the snapshot a report left, read alone,
        # costs milliseconds where opening the catalog costs seconds on a large store
        snap = snapshot_path(store.require(), "clock_estimates")
        if snap is None:
            con = connect(store, offsets, materialize=True)
        else:
            con = duckdb.connect(":memory:")
            con.execute(
                f"CREATE VIEW clock_estimates AS SELECT * FROM read_parquet('{_sql_text(str(snap))}', hive_partitioning = false)"
            )
    try:
        rows = con.sql(_UNSET_SQL).fetchall()
    finally:
        if own:
            con.close()
    return [UnsetOffset(h, ref, skew, n) for h, ref, skew, n in rows if h not in offsets and abs(skew) > WARN_SKEW_S]


# where a warning's command starts: renderers set the command apart (Markdown code)
SET_IT = "Set it: "


def clock_warnings(store: Store, con=None) -> list[str]:
    """One line per unset offset the estimates call for, with the command that sets it (report headers)."""
    out = []
    for u in unset_offsets(store, con):
        way = "ahead of" if u.skew_s > 0 else "behind"
        out.append(
            f"warning: {escape_control(u.host)}'s clock runs about {abs(u.skew_s):.1f} s {way} "
            f"{escape_control(u.reference)}'s ({int(u.pairs):,} room event pairs) and no offset is set for it; "
            f"its times are off by that much. {SET_IT}{escape_control(u.command(store))}"
        )
    return out
