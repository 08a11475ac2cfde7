"""The evidence report for the bug report: Markdown, terminal and JSON.

They know the result model, not SQL. The JSON shapes are a contract documented in the README.
"""

from __future__ import annotations

import sys

import polars as pl

from forensics.analysis.clocks import describe_offsets
from forensics.analysis.models import Evidence
from forensics.reports.escape import markdown_code, markdown_text
from forensics.reports.serialize import markdown
from forensics.reports.text.common import (
    _coverage_md,
    _markdown_section,
    _wedge_section,
    evidence_json,
    markdown_lead,
    markdown_warnings,
    storm_table,
)
from forensics.reports.text.compare import _context_table, comparison_table


def render_evidence(report: Evidence, fmt: str, out=None) -> None:
    out = out or sys.stdout
    if fmt == "json":
        out.write(evidence_json(report) + "\n")
        return
    s = report.summary
    out.write("## Evidence\n\n")
    markdown_lead(out, report)
    out.write(f"_{markdown_text(describe_offsets(report.clock_offsets), inline=True)}{_coverage_md(report)}_\n\n")
    cov = report.coverage or {}
    for i in cov.get("inputs", []):
        if i["engine"] and i["path"] not in cov.get("not_understood", []):
            out.write(f"_{markdown_text(i['path'] + ': ' + i['read'], inline=True)}_\n\n")
    markdown_warnings(out, report.clock_warnings)
    servers = report.servers
    lower = bool(cov.get("lower_bound"))
    if not s["replies"]:
        # a store of server logs alone: the incident as they tell it, and the server-side tables that hold rows
        if servers is not None:
            _servers_section(out, servers, lower)
        for title, df in (
            ("Wedges", report.wedges),
            ("Abort storms", storm_table(report.abort_storms)),
            ("Checksum mismatches", report.checksum_mismatches),
        ):
            if df.height:
                if title == "Wedges":
                    _wedge_section(out, df)
                else:
                    _markdown_section(out, title, df)
        out.write("\n_No agent replies in the store: ingest the transcripts to compare corrupted and clean replies._\n")
        return
    out.write(
        f"{s['corrupted']} of {s['replies']} replies corrupted ({100 * s['corrupted_rate']:.1f}%, "
        f"95% CI {100 * s['ci_low']:.1f}-{100 * s['ci_high']:.1f}%); {s['config_leaks']} config leaks "
        f"kept apart; {s['linked']} replies linked to a server request.\n"
    )
    if servers is not None:
        _servers_section(out, servers, lower)
    comp = report.comparisons
    if comp.height:
        out.write(
            f"\n{s['comparisons']} comparisons made (each bucket of a dimension against the rest); "
            f"{s['significant']} significant at Benjamini–Hochberg q < {s['q_threshold']:g} "
            f"({s['significant_raising']} raising the rate). Rows without that are not evidence on their own.\n"
        )
    out.write(
        "\n### Corrupted vs clean, by dimension (risk-raising first, then protective; by q, then effect size)\n\n"
    )
    if comp.height:
        out.write(markdown(comparison_table(comp)))
        out.write(
            f"\n_* significant at q < {s['q_threshold']:g}. Intervals are 95%: Wilson for rates, Newcombe's "
            "score interval for differences, Katz for risk ratios._\n"
        )
    else:
        out.write("_not enough replies to compare_\n")
    _markdown_section(out, "Corrupted replies and the events around them", _context_table(report.corrupted_replies))
    _wedge_section(out, report.wedges)
    _markdown_section(out, "Abort storms", storm_table(report.abort_storms))
    _markdown_section(out, "Checksum mismatches", report.checksum_mismatches)


def _hm(t) -> str:
    return (
        ""
        if t is None
        else t.strftime("%Y-%m-%d %H:%M:%S") + (f".{t.microsecond // 1000:03d}" if t.microsecond else "")
    )


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def _servers_section(out, sv: dict, lower: bool = False) -> None:
    """The incident from the servers' side: requests counted once, lines and signals beside them;
    `lower`: much of the input went unread, so every count is at least what it says."""
    f = sv["failures"]
    out.write("\n### The incident as the server logs tell it\n\n")
    out.write(
        ("Lower bounds (much of the input is not read: see above): " if lower else "")
        + f"{_plural(f['requests'], 'failed request')} ({_plural(f['lines'], 'failure line')}, every rank's copy); "
        f"{_plural(f['signals'], 'signal line')} that name no request (session failures, bootstrap fetch errors, "
        "warnings, crashes: signals of their host, not requests).\n"
    )
    for note in sv.get("placed", []):
        out.write(f"\n_{markdown_text(note[0].upper() + note[1:], inline=True)}._\n")
    first = sv["first_failure"]
    if first is not None:
        who = f"room {markdown_code(str(first['bootstrap_room']))}" if first["bootstrap_room"] is not None else ""
        rids = [r for r in (first["rid_prefill"], first["rid_decode"]) if r]
        if rids:
            who += (" " if who else "") + "rid " + " / ".join(markdown_code(r) for r in rids)
        text = first["first_message"] or ""
        out.write(
            f"\nFirst failure: {_hm(first['t_first'])} on {markdown_text(first['first_host'] or '?', inline=True)} "
            f"({first['first_side']}), {markdown_text(first['first_reason'] or 'no reason given', inline=True)}: "
            f"{who}, logged by {_plural(first['n_ranks'], 'rank')} ({_plural(first['n_lines'], 'line')}) on "
            f"{markdown_text(', '.join(first['hosts'] or []), inline=True)}.\n"
        )
        t0 = first["t_first"]
        same = sv["failed_requests"].filter((pl.col("t_first") - t0).dt.total_microseconds().abs() < 1_000_000).height
        if same > 1:
            out.write(
                f"{same - 1:,} other request{'s' if same > 2 else ''} failed within the same second "
                "(whole-second log lines do not order them): this one is first by time, then key.\n"
            )
        if first["first_simultaneous"]:
            out.write(
                "Another side logged a failure of the same kind in the same log second: nothing orders them, "
                "so the first is one of them, not the cause of the other.\n"
            )
        if text:
            out.write(f"\n> {markdown_text(text[:300], inline=True)}\n")
        before = sv["before_first"]
        if before.height:
            out.write(f"\nWhat each host logged in the {sv['before_s']} s up to it (its second included):\n\n")
            out.write(
                markdown(
                    before.select(
                        "host",
                        pl.col("t_stats").alias("last stats line"),
                        pl.col("running_req").alias("running"),
                        pl.col("queue_req").alias("queued"),
                        "aborts",
                        "warnings",
                        pl.col("signals").alias("signal lines"),
                        pl.col("signal_reasons").alias("signals said"),
                        "crashes",
                        "wedge",
                    )
                )
            )
    req = sv["failed_requests"]
    out.write("\n### Failed requests (each once, at its first failure)\n\n")
    if req.height:
        out.write(
            markdown(
                req.select(
                    pl.col("t_first").alias("first failure"),
                    pl.col("bootstrap_room").cast(pl.Utf8).alias("room"),
                    "rid_prefill",
                    "rid_decode",
                    pl.col("hosts").list.join(", ").alias("hosts"),
                    pl.concat_str(
                        [pl.col("first_reason").fill_null("?"), pl.lit(" on "), pl.col("first_host").fill_null("?")]
                    ).alias("first reason"),
                    pl.when(pl.col("first_simultaneous")).then(pl.lit("yes")).otherwise(pl.lit("")).alias("tied"),
                    "outcome",
                    pl.col("n_ranks").alias("ranks"),
                    pl.col("n_lines").alias("lines"),
                )
            )
        )
        if f["requests"] > req.height:
            out.write(
                f"\n_the first {req.height:,} of {f['requests']:,}; "
                '`forensics sql "SELECT * FROM failed_requests"` lists every one. The others, in order: '
                + ", ".join(markdown_text(r, inline=True) for r in sv.get("unlisted", []))
                + "_\n"
            )
    else:
        out.write(
            "_no failed request in the lines read; a lower bound: the inputs not understood (above) may hold some_\n"
            if lower
            else "_no failed request in the server logs_\n"
        )
    if sv["by_reason_host"].height:
        out.write("\n### Failed requests by first reason and host\n\n")
        out.write(markdown(sv["by_reason_host"]))
    sig = sv["signals"]
    if sig.height:
        out.write("\n### Warnings and failure signals (lines that name no request)\n\n")
        out.write(
            markdown(
                sig.select(
                    "host",
                    "kind",
                    "severity",
                    "reason",
                    "lines",
                    "ranks",
                    pl.col("t_first").alias("first"),
                    pl.col("t_last").alias("last"),
                    pl.col("message").str.slice(0, 120),
                )
            )
        )
    crashes = sv["crashes"]
    if crashes.height:
        out.write("\n### Crashes\n\n")
        out.write(
            markdown(
                crashes.select(
                    "ts",
                    *(
                        [pl.col("ts_placed").alias("time placed at")]
                        if crashes["ts_placed"].is_not_null().any()
                        else []
                    ),
                    "host",
                    "exc_type",
                    pl.col("message").str.slice(0, 160),
                    pl.col("frames").list.join("; ").alias("innermost frames"),
                    pl.col("traceback").str.split("\n").list.len().alias("frames lines"),
                )
            )
        )
    hangs = sv.get("hang_dumps")
    if hangs is not None and hangs.height:
        out.write("\n### Hang dumps (py-spy: where each thread was when it was taken)\n\n")
        out.write(
            markdown(
                hangs.select(
                    "ts",
                    *([pl.col("ts_placed").alias("time placed at")] if hangs["ts_placed"].is_not_null().any() else []),
                    "host",
                    pl.col("message").str.slice(0, 120).alias("process"),
                    pl.col("threads").list.join("; ").alias("threads, innermost frames first"),
                )
            )
        )
