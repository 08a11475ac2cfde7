"""`forensics summary`: what a store holds, in one screen: hosts, tables, unparsed share, clocks, warnings."""

from __future__ import annotations

import os
import re

from forensics.analysis import coverage, failures, names
from forensics.analysis.clocks import clock_warnings, estimate, zone_warnings
from forensics.analysis.models import Summary
from forensics.analysis.session import Session, using
from forensics.catalog import model
from forensics.catalog import named as queries
from forensics.core import schema
from forensics.store import Store

# the derived views whose row counts the summary shows, in its order: the relations a reader joins
# on. The others are shown as what they mean (clock_estimates as the estimated offsets) or are
# the report markers (incident_wedges, incident_abort_storms).
SUMMARY_VIEWS = (
    "room_events",
    "transfers",
    "clock_bounds",
    "room_failures",
    "rooms",
    "failed_requests",
    "failure_signals",
    "reply_candidates",
    "replies",
)


def _summarised() -> list[schema.Table]:
    views = model.views()
    return list(schema.TABLES.values()) + [views[n] for n in SUMMARY_VIEWS]


def build(session: Session | Store) -> Summary:
    """The summary as a result model: plain values and lists of dicts, ready for JSON."""
    # the session materializes: the derived views' counts are part of the answer, and computing them
    # here (at the end of an ingest) leaves them cached for the first report
    with using(session) as s:
        store, offsets, con = s.store, s.offsets, s.con
        hosts = [
            dict(zip(("host", "roles", "inputs", "lines", "first_ts", "last_ts", "formats"), r))
            for r in con.execute(queries.internal("_summary_hosts").sql).fetchall()
        ]
        ingested, skipped, failed, lines, unparsed, nbytes = con.execute(
            queries.internal("_summary_inputs").sql
        ).fetchall()[0]
        tables = [
            {"table": t.name, "view": t.view, "rows": con.execute(f'SELECT count(*) FROM "{t.name}"').fetchall()[0][0]}
            for t in _summarised()
        ]
        warnings = clock_warnings(s) + zone_warnings(con) + merge_warnings(con)
        top_unparsed = con.execute(queries.internal("_summary_unparsed").sql).fetchall()
        known = names.known_hosts(con)
        fails = failures.totals(con)
        clock_report = estimate(s)
        cov = coverage.build(con)
    estimates = [
        {
            "host_a": p.host_a,
            "host_b": p.host_b,
            "estimate_s": p.estimate,
            "lower_s": p.lower,
            "upper_s": p.upper,
            "pairs": int(p.n_lower + p.n_upper),
            "in_force_s": p.in_force,
        }
        for p in clock_report.pairs
    ]
    warnings += [
        f"warning: clocks.json sets an offset for {h}, a host the store holds no rows of "
        f"(`forensics clocks unset {h}` removes it)"
        for h in sorted(offsets)
        if h not in known
    ]
    if failed:
        warnings.append(
            f"warning: {failed} input{'s' if failed != 1 else ''} failed to parse "
            "(see `forensics sql \"SELECT path, skip_reason FROM files WHERE status = 'failed'\"`)"
        )
    if cov["lead"]:
        # first: every count below it is one of what was read
        warnings.insert(0, f"warning: {cov['lead']}")
    by_path = {c["path"]: c for c in cov["inputs"]}
    most = [{"path": p, "unparsed_lines": u, "lines": n} for p, u, n in top_unparsed]
    for m in most:
        c = by_path.get(m["path"])
        m["engine"], m["read"] = (c["engine"], c["read"]) if c else (None, None)
    shown = {m["path"] for m in most}
    # an input another engine wrote is named, if the three most unparsed leave it out
    most += [
        {k: c[k] for k in ("path", "unparsed_lines", "lines", "engine", "read")}
        for c in cov["inputs"]
        if c["engine"] and c["path"] not in shown
    ]
    for h in hosts:
        for k in ("first_ts", "last_ts"):
            h[k] = None if h[k] is None else h[k].isoformat()
    return Summary(
        kind="forensics.summary",
        version=1,
        store=str(store.root),
        inputs={
            "ingested": ingested,
            "skipped": skipped,
            "failed": failed,
            "bytes": nbytes,
            "lines": lines,
            "unparsed_lines": unparsed,
            "unparsed_share": unparsed / lines if lines else 0.0,
            "most_unparsed": most,
            # counts are lower bounds: docs/formats/OTHER_ENGINES.md, "Lower bounds"
            "lower_bound": cov["lower_bound"],
            "not_understood": cov["not_understood"],
        },
        hosts=hosts,
        tables=tables,
        failures=fails,
        clock_offsets=dict(sorted(offsets.items())),
        clock_estimates=estimates,
        clock_unbounded=clock_report.unbounded,
        warnings=warnings,
    )


def merge_warnings(con) -> list[str]:
    """Hosts whose name more than one machine's inputs may share: inputs of different roles, or files
    from different folders that took their host from the file name (`decode-0/sglang.log` and
    `decode-1/sglang.log` given as files are both host `sglang`)."""
    out = []
    rows = con.execute(queries.internal("_merged_hosts").sql).fetchall()
    for host, roles, paths in rows:
        roles = [r for r in roles if r and r != "unknown"]
        named_by_file = {
            os.path.dirname(p.split("!")[0]) for p in paths if _stem(os.path.basename(p.split("!")[0])) == host
        }
        if len(roles) > 1:
            why = f"inputs of {len(roles)} roles ({', '.join(roles)})"
        elif len(named_by_file) > 1:
            why = f"files of the same name from {len(named_by_file)} folders ({', '.join(sorted(named_by_file)[:3])})"
        else:
            continue
        out.append(
            f"warning: host {host} holds {why}: if they are different machines, their rows are merged; "
            f"ingest each machine's inputs with `--host NAME`"
        )
    return out


# what ingest strips from a file name to make its host: rotation and compression suffixes
_SUFFIXES = re.compile(r"(\.(log|txt|out|err|jsonl?|gz|zst|\d+))+$", re.I)


def _stem(name: str) -> str:
    return _SUFFIXES.sub("", name) or name


def row_counts(session: Session) -> dict[str, int | None]:
    """Rows per table, for `forensics tables`: stored tables always, derived views when a report has
    cached them (None otherwise: counting one would compute it). `session` does not materialize."""
    con, cached = session.con, session.snapshots is not None
    return {
        t.name: (con.execute(f'SELECT count(*) FROM "{t.name}"').fetchall()[0][0] if not t.view or cached else None)
        for t in model.tables().values()
    }
