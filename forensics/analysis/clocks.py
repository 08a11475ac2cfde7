"""Clock offsets between hosts, estimated from events of the same room that must happen in order.

Two orderings are certain in PD serving (NIXL.md §7, §10): decode registers a request before prefill
can bootstrap it (and post its KV), and prefill posts a WRITE before decode gets its notification
(or finishes the request). Each ordered pair `a` (host A) before `b` (host B) bounds the offsets:

    off_B - off_A <= ts_b - ts_a + res_b

where `off` is how far a host's clock runs ahead and `res_b` the resolution of b's timestamp
(1 s for sglang prefixes, which truncate). Pairs in both directions give an interval; the estimate
is its middle, or the one bound there is. Estimates are made on raw times; the offsets in force
(clocks.json) are reported beside them and are never changed here.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from forensics.catalog import connect
from forensics.core.errors import UsageError
from forensics.core.text import escape_control
from forensics.ingest.store import Store

# One row per ordered pair of observations (before on host_a, after on host_b) and the bound it gives.
CONSTRAINTS_SQL = r"""
WITH te AS (
    SELECT * FROM transfer_events WHERE NOT unknown_enum AND bootstrap_room <> 0
),
ev AS (SELECT * FROM room_events),
-- prefill posts a unit before decode is notified of it (µs trace times on both sides)
post_notif AS (
    SELECT p.bootstrap_room, p.host AS host_a, d.host AS host_b, p.t AS ts_a, d.t AS ts_b, 0.0 AS res_b,
           'prefill post -> decode notif' AS rule
    FROM (SELECT bootstrap_room, kind, chunk, host, min(ts) AS t FROM te
          WHERE side = 'prefill' AND event = 'post' GROUP BY ALL) p
    JOIN (SELECT bootstrap_room, kind, chunk, host, min(ts) AS t FROM te
          WHERE side = 'decode' AND event IN ('notif', 'done') GROUP BY ALL) d
      ON p.bootstrap_room = d.bootstrap_room AND p.kind = d.kind AND p.chunk IS NOT DISTINCT FROM d.chunk
),
-- decode registers the request before prefill learns where to write (bootstrap) or posts anything
decode_first AS (
    SELECT bootstrap_room, host, min(ts) AS t FROM ev
    WHERE side = 'decode' AND kind = 'request_received' AND ts IS NOT NULL GROUP BY ALL
),
prefill_after AS (
    SELECT bootstrap_room, host, arg_min(res, t) AS res, min(t) AS t FROM (
        SELECT bootstrap_room, host, ts AS t, ts_resolution_s AS res FROM ev
        WHERE side = 'prefill' AND kind = 'bootstrapped' AND ts IS NOT NULL
        UNION ALL
        SELECT bootstrap_room, host, ts, 0.0 FROM te WHERE side = 'prefill' AND event = 'post'
    ) GROUP BY ALL
),
register_bootstrap AS (
    SELECT d.bootstrap_room, d.host, p.host, d.t, p.t, p.res, 'decode request -> prefill bootstrap/post'
    FROM decode_first d JOIN prefill_after p USING (bootstrap_room)
),
-- a request decode finished normally had all its KV posted by prefill first
prefill_last AS (
    SELECT bootstrap_room, host, max(ts) AS t FROM te WHERE side = 'prefill' AND event = 'post' GROUP BY ALL
),
decode_finish AS (
    SELECT bootstrap_room, host, arg_min(ts_resolution_s, ts) AS res, min(ts) AS t FROM ev
    WHERE side = 'decode' AND kind = 'request_finished' AND finish_reason IS DISTINCT FROM 'abort'
      AND ts IS NOT NULL
    GROUP BY ALL
),
post_finish AS (
    SELECT p.bootstrap_room, p.host, d.host, p.t, d.t, d.res, 'prefill post -> decode finish'
    FROM prefill_last p JOIN decode_finish d USING (bootstrap_room)
)
SELECT bootstrap_room, host_a, host_b, rule,
       CAST(date_diff('microsecond', ts_a, ts_b) AS DOUBLE) / 1e6 + res_b AS bound
FROM (SELECT * FROM post_notif UNION ALL SELECT * FROM register_bootstrap UNION ALL SELECT * FROM post_finish)
WHERE host_a <> host_b
ORDER BY host_a, host_b, rule, bootstrap_room
"""


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

    @property
    def in_force_ok(self) -> bool:
        lo_ok = self.lower is None or self.in_force >= self.lower - 1e-6
        hi_ok = self.upper is None or self.in_force <= self.upper + 1e-6
        return lo_ok and hi_ok


@dataclasses.dataclass
class ClockReport:
    offsets: dict[str, float]  # in force (clocks.json)
    pairs: list[PairEstimate]

    def frame(self) -> pl.DataFrame:
        rows = []
        for p in self.pairs:
            rows.append({
                "host_a": p.host_a, "host_b": p.host_b,
                "estimate_s": p.estimate, "lower_s": p.lower, "upper_s": p.upper,
                "pairs": p.n_lower + p.n_upper, "lower_pairs": p.n_lower, "upper_pairs": p.n_upper,
                "in_force_s": p.in_force, "in_force_ok": p.in_force_ok, "consistent": p.consistent,
                "suggest": None if p.estimate is None else
                f"forensics clocks set {p.host_b} {self.offsets.get(p.host_a, 0.0) + p.estimate:.6f}",
            })
        return pl.DataFrame(rows, schema={
            "host_a": pl.Utf8, "host_b": pl.Utf8, "estimate_s": pl.Float64, "lower_s": pl.Float64,
            "upper_s": pl.Float64, "pairs": pl.Int64, "lower_pairs": pl.Int64, "upper_pairs": pl.Int64,
            "in_force_s": pl.Float64, "in_force_ok": pl.Boolean, "consistent": pl.Boolean, "suggest": pl.Utf8})


def constraints(store: Store) -> pl.DataFrame:
    """Every ordered cross-host pair of the same room: (room, host_a, host_b, rule, bound) on raw clocks."""
    con = connect(store.require(), offsets={})
    try:
        return pl.from_arrow(con.sql(CONSTRAINTS_SQL).to_arrow_table())
    finally:
        con.close()


def estimate(store: Store) -> ClockReport:
    """Offset estimates for every host pair that shares rooms, beside the offsets in force."""
    offsets = store.require().clocks()
    c = constraints(store)
    # prefill hosts are the reference: a pair reads "how far this decode host runs ahead of prefill"
    prefill = set(c.filter(pl.col("rule").str.starts_with("prefill"))["host_a"].to_list()) | set(
        c.filter(pl.col("rule").str.starts_with("decode"))["host_b"].to_list())
    pairs: dict[tuple[str, str], dict] = {}
    for a, b, bound in c.select("host_a", "host_b", "bound").iter_rows():
        # canonical pair (x, y), delta = off_y - off_x; a before b bounds off_b - off_a from above
        x, y = sorted((a, b), key=lambda h: (h not in prefill, h))
        d = pairs.setdefault((x, y), {"lo": [], "hi": []})
        if (a, b) == (x, y):
            d["hi"].append(bound)
        else:
            d["lo"].append(-bound)
    out = []
    for (x, y), d in sorted(pairs.items()):
        lo = max(d["lo"]) if d["lo"] else None
        hi = min(d["hi"]) if d["hi"] else None
        if lo is not None and hi is not None:
            est = (lo + hi) / 2 if lo <= hi else None
        else:
            est = lo if hi is None else hi
        out.append(PairEstimate(x, y, est, lo, hi, len(d["lo"]), len(d["hi"]),
                                offsets.get(y, 0.0) - offsets.get(x, 0.0),
                                lo is None or hi is None or lo <= hi))
    return ClockReport(offsets, out)


def set_offset(store: Store, host: str, seconds: float) -> dict[str, float]:
    """Record that `host`'s clock runs `seconds` ahead; return the offsets now in force."""
    if not host:
        raise UsageError("a host name is required", help="see `forensics sql \"SELECT DISTINCT host FROM files\"`")
    store.require().set_clock(host, seconds)
    return store.clocks()


def describe_offsets(offsets: dict[str, float]) -> str:
    """One line naming the offsets a report used (every report and export says it the same way)."""
    if not offsets:
        return "clock offsets: none applied"
    return "clock offsets applied: " + ", ".join(f"{escape_control(h)} {v:+g} s" for h, v in sorted(offsets.items()))
