"""Renderers for the timeline and evidence result models: terminal, Markdown, CSV, JSON.

They know the result model (a dict of frames and figures), not SQL. The JSON shapes are a contract
documented in the README.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sys

import polars as pl

from forensics.analysis.clocks import SET_IT, describe_offsets
from forensics.reports.escape import escape_control, markdown_code, markdown_text, rich_text
from forensics.reports.render import (
    console,
    csv_text,
    dumps_json,
    flat,
    markdown,
    print_table,
    table_width,
    to_json_rows,
)

TIMELINE_TABLE_COLUMNS = [
    "bucket_start",
    "replies",
    "corrupted_rate",
    "prefill_new_tokens_per_s",
    "prefill_queue_req",
    "prefill_bootstrap_req",
    "decode_running_req",
    "decode_gen_throughput",
    "transfers",
    "transfer_p99_ms",
    "failed_requests",
    "failure_lines",
    "failure_signals",
    "aborts",
    "errors",
]


def _jsonable(v):
    if isinstance(v, pl.DataFrame):
        return to_json_rows(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def _clean_floats(rows):
    return [{k: _jsonable(v) for k, v in r.items()} for r in rows]


# -- timeline ------------------------------------------------------------------------------------


def timeline_json(model: dict) -> str:
    from forensics.analysis.timeline import anomalies

    rows = model["rows"].with_columns(anomaly=anomalies(model["rows"]))
    doc = {
        "kind": "forensics.timeline",
        "version": 1,
        "bucket_s": model["bucket_s"],
        "since": model["since"],
        "until": model["until"],
        "host": model["host"],
        "clock_offsets": model["clock_offsets"],
        "clock_warnings": model.get("clock_warnings", []),
        "columns": rows.columns,
        "rows": _clean_floats(to_json_rows(rows)),
        "wedges": _clean_floats(to_json_rows(model["wedges"])),
        "abort_storms": _clean_floats(to_json_rows(model["abort_storms"])),
        "coverage": _jsonable(model.get("coverage") or {}),
        "notes": model.get("notes", []),
    }
    return dumps_json(doc)


def render_timeline(model: dict, fmt: str, out=None) -> None:
    from forensics.analysis.timeline import anomalies

    out = out or sys.stdout
    rows = model["rows"]
    if fmt == "json":
        out.write(timeline_json(model) + "\n")
        return
    rows = rows.with_columns(anomaly=anomalies(rows))
    if fmt == "csv":
        # CSV has no header to carry them: the warnings go where the user still sees them
        for w in [*coverage_head(model), *model.get("clock_warnings", [])]:
            sys.stderr.write(w + "\n")
        out.write(csv_text(rows))
        return
    if fmt == "markdown":
        markdown_lead(out, model)
        out.write(
            f"_{markdown_text(describe_offsets(model['clock_offsets']), inline=True)}; "
            f"bucket {model['bucket_s']:g} s{_coverage_md(model)}_\n\n"
        )
        markdown_warnings(out, model.get("clock_warnings", []))
        for note in model["notes"]:
            out.write(f"_note: {markdown_text(note, inline=True)}_\n\n")
        shown = rows.filter((pl.col("anomaly") != "") | (pl.col("replies") > 0) | pl.col("transfers").gt(0))
        out.write(markdown(shown.select(timeline_columns(rows)[0])))
        _wedge_section(out, model["wedges"])
        _markdown_section(out, "Abort storms", storm_table(model["abort_storms"]))
        return
    from rich.text import Text

    con = console(out, width=table_width(out) or 10**6)
    for w in coverage_head(model):
        con.print(rich_text(w, style="bold red"), soft_wrap=True)
    print_warnings(con, model.get("clock_warnings", []))
    cols, keep_first = timeline_columns(rows)
    cells = [[_cell(r[c]) for c in cols] for r in rows.select(cols).iter_rows(named=True)]
    styles = [
        "bold red" if "wedge" in a or "storm" in a else ("yellow" if a else None)
        for (a,) in rows.select("anomaly").iter_rows()
    ]
    print_table(
        out,
        [_stacked(c) for c in cols],
        cells,
        styles=styles,
        wrap=frozenset({"anomaly"}),
        title=f"timeline ({model['bucket_s']:g} s buckets) — {describe_offsets(model['clock_offsets'])}",
        first=tuple(_stacked(c) for c in keep_first),
        ends=False,
    )
    if cov := model.get("coverage"):
        con.print(rich_text(cov["line"]), soft_wrap=True)
    for note in model["notes"]:
        con.print(rich_text(f"note: {note}"), soft_wrap=True)
    if model["wedges"].height:
        con.print(Text("wedges", style="bold"))
        for line in wedge_incidents(model["wedges"]):
            con.print(rich_text(line), soft_wrap=True)
        _rich_frame(out, wedge_table(model["wedges"]))
    if model["abort_storms"].height:
        con.print(Text("abort storms", style="bold"))
        _rich_frame(out, storm_table(model["abort_storms"]))


# what a timeline is read for, in the order a narrow terminal keeps it: when the failures and aborts
# are, and why a bucket stands out (its anomaly text names the failures' reasons and the markers)
TIMELINE_KEPT = ("bucket_start", "failed_requests", "aborts", "anomaly")
REPLY_COLUMNS = ("replies", "corrupted_rate")


def timeline_columns(rows: pl.DataFrame) -> tuple[list[str], list[str]]:
    """The table's columns in their order, and the order a narrow table keeps them in.

    A window without replies (a store of server logs) has no reply columns at all. Of the rest, the
    failures, aborts and anomalies come first; then the columns that say most (the most buckets with
    a value other than 0), and the empty ones last, so they are the first to go."""
    cols = [*TIMELINE_TABLE_COLUMNS, "anomaly"]
    if rows.height and not (rows["replies"].fill_null(0) > 0).any():
        cols = [c for c in cols if c not in REPLY_COLUMNS]

    def said(c: str) -> int:
        v = rows[c]
        if v.dtype == pl.Utf8:
            return int((v.fill_null("") != "").sum())
        return int((v.fill_null(0) != 0).sum()) if v.dtype.is_numeric() else int(v.is_not_null().sum())

    rest = sorted((c for c in cols if c not in TIMELINE_KEPT), key=lambda c: (said(c) == 0, -said(c)))
    return cols, [*(c for c in TIMELINE_KEPT if c in cols), *rest]


def _stacked(name: str) -> str:
    """A column name on as many lines as its words need, so a narrow column keeps its whole name."""
    import textwrap

    words = name.split("_")
    return "\n".join(textwrap.wrap(" ".join(words), width=max(10, *map(len, words))))


def coverage_head(model) -> list[str]:
    """What a report says first when much of its input went unread (forensics.analysis.coverage): that
    its counts are lower bounds, and which inputs are not understood; nothing otherwise."""
    cov = model.get("coverage") or {}
    return [f"warning: {cov['lead']}"] if cov.get("lead") else []


def markdown_lead(out, model) -> None:
    for w in coverage_head(model):
        out.write(f"> **{markdown_text(w, inline=True)}**\n\n")


def _coverage_md(model) -> str:
    cov = model.get("coverage")
    return f"; {markdown_text(cov['line'], inline=True)}" if cov else ""


def markdown_warnings(out, warnings: list[str]) -> None:
    """The header's clock warnings (forensics.analysis.clocks.clock_warnings) as Markdown quotes."""
    for w in warnings:
        text, _, command = w.rpartition(SET_IT)
        out.write(
            f"> **{markdown_text((text or command).strip(), inline=True)}**"
            + (f" {markdown_text(SET_IT, inline=True)}{markdown_code(command)}" if text else "")
            + "\n\n"
        )


def print_warnings(con, warnings: list[str]) -> None:
    """The header's clock warnings on a rich console, as plain text (host names are not markup)."""
    for w in warnings:
        # never wrapped: the command in it is copied and pasted
        con.print(rich_text(w, style="bold yellow"), soft_wrap=True)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return escape_control(str(v))


def _rich_frame(out, df: pl.DataFrame) -> None:
    f = flat(df)
    print_table(out, f.columns, [[_cell(v) for v in r] for r in f.iter_rows()], ends=False)


def storm_table(df: pl.DataFrame) -> pl.DataFrame:
    """The abort storms as a report shows them: the per-host counts as their one line of text, hosts joined."""
    if df.height == 0 or "host_counts" not in df.columns:
        return df
    out = df.drop("per_host", strict=False)
    # the counts per host say most: they come right after the storm's size, before what is cut first
    first = [c for c in ("t_start", "t_end", "n_aborts", "host_counts") if c in out.columns]
    out = out.select(*first, *[c for c in out.columns if c not in first])
    if out.schema.get("hosts") == pl.List(pl.Utf8):
        out = out.with_columns(pl.col("hosts").list.join(", "))
    return out


# a wedge can hold thousands of stuck rooms: tables show the first few and how many more
ROOMS_SHOWN = 3


def _abbrev(rooms) -> str:
    rooms = list(rooms or [])
    more = len(rooms) - ROOMS_SHOWN
    return ", ".join(rooms[:ROOMS_SHOWN]) + (f" +{more} more" if more > 0 else "")


def wedge_table(df: pl.DataFrame) -> pl.DataFrame:
    """The wedges as a report shows them: rank as one label, rooms abbreviated, signals as text."""
    if df.height == 0:
        return df
    rank = pl.concat_str([pl.format("DP{}", "dp_rank"), pl.format("TP{}", "tp_rank")], separator=" ", ignore_nulls=True)
    return df.select(
        "incident",
        "host",
        pl.when(rank != "").then(rank).alias("rank"),
        "kind",
        "t_start",
        "t_end",
        "silent_s",
        "in_flight",
        "n_rooms",
        pl.Series("rooms", [_abbrev(r) for r in df["rooms"].to_list()], dtype=pl.Utf8),
        "ended_by",
        pl.col("signals").list.join("; ").alias("signals"),
    )


def wedge_incidents(df: pl.DataFrame) -> list[str]:
    """One line per incident of several hosts, said once above the rows it groups."""
    lines = []
    if df.height == 0 or "incident" not in df.columns:
        return lines
    for (inc,), g in df.sort("t_start").group_by("incident", maintain_order=True):
        hosts = sorted(set(g["host"]))
        if len(hosts) < 2:
            continue
        t0, t1 = g["t_start"].min(), g["t_start"].max()
        lines.append(
            f"incident {inc}: {', '.join(hosts)} wedged within {(t1 - t0).total_seconds():.0f} s "
            f"from {t0:%Y-%m-%d %H:%M:%S} UTC ({g.height} wedges, {int(g['in_flight'].sum())} requests "
            "in flight)"
        )
    return lines


def _wedge_section(out, df: pl.DataFrame) -> None:
    out.write("\n### Wedges\n\n")
    if df.height == 0:
        out.write("_none found_\n")
        return
    for line in wedge_incidents(df):
        out.write(f"- {markdown_text(line, inline=True)}\n")
    out.write("\n" if wedge_incidents(df) else "")
    out.write(markdown(wedge_table(df)))


def _markdown_section(out, title: str, df: pl.DataFrame) -> None:
    out.write(f"\n### {title}\n\n")
    out.write(markdown(df) if df.height else "_none found_\n")


# -- evidence ------------------------------------------------------------------------------------


def evidence_json(report: dict) -> str:
    doc = {"kind": "forensics.evidence", "version": 1}
    doc.update({k: _jsonable(v) for k, v in report.items()})
    for k, v in doc.items():
        if isinstance(v, list):
            doc[k] = _clean_floats(v) if v and isinstance(v[0], dict) else v
    return dumps_json(doc)


def render_evidence(report: dict, fmt: str, out=None) -> None:
    out = out or sys.stdout
    if fmt == "json":
        out.write(evidence_json(report) + "\n")
        return
    s = report["summary"]
    out.write("## Evidence\n\n")
    markdown_lead(out, report)
    out.write(f"_{markdown_text(describe_offsets(report['clock_offsets']), inline=True)}{_coverage_md(report)}_\n\n")
    cov = report.get("coverage") or {}
    for i in cov.get("inputs", []):
        if i["engine"] and i["path"] not in cov.get("not_understood", []):
            out.write(f"_{markdown_text(i['path'] + ': ' + i['read'], inline=True)}_\n\n")
    markdown_warnings(out, report.get("clock_warnings", []))
    servers = report.get("servers")
    lower = bool(cov.get("lower_bound"))
    if not s["replies"]:
        # a store of server logs alone: the incident as they tell it, and the server-side tables that hold rows
        if servers is not None:
            _servers_section(out, servers, lower)
        for title, df in (
            ("Wedges", report["wedges"]),
            ("Abort storms", storm_table(report["abort_storms"])),
            ("Checksum mismatches", report["checksum_mismatches"]),
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
    comp = report["comparisons"]
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
    _markdown_section(out, "Corrupted replies and the events around them", _context_table(report["corrupted_replies"]))
    _wedge_section(out, report["wedges"])
    _markdown_section(out, "Abort storms", storm_table(report["abort_storms"]))
    _markdown_section(out, "Checksum mismatches", report["checksum_mismatches"])


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


def _pct(v) -> str:
    return "" if v is None or not math.isfinite(v) else f"{100 * v:.1f}"


def _ratio(v) -> str:
    if v is None or math.isnan(v):
        return ""
    # an exact 0 is the ratio of a group with no corrupted reply, not a small one rounded
    return "inf" if math.isinf(v) else "0" if v == 0 else f"{v:.2f}"


def _sig(v) -> str:
    return "" if v is None or math.isnan(v) else f"{v:.2g}"


def comparison_table(comp: pl.DataFrame) -> pl.DataFrame:
    """The comparisons as shown: rates and effects with their intervals, p and q side by side."""
    rows = []
    for r in comp.iter_rows(named=True):
        rows.append(
            {
                "dimension": r["dimension"],
                "bucket": r["bucket"],
                "effect": r["effect"] + (" *" if r["significant"] else ""),
                "replies": r["replies"],
                "corrupted": r["corrupted"],
                "rate": f"{_pct(r['rate'])}% ({_pct(r['ci_low'])}-{_pct(r['ci_high'])})",
                "rest": f"{_pct(r['rest_rate'])}%",
                "difference": f"{r['difference'] * 100:+.1f} pts ({r['difference_low'] * 100:+.1f} to "
                f"{r['difference_high'] * 100:+.1f})",
                "risk ratio": f"{_ratio(r['risk_ratio'])} ({_ratio(r['risk_ratio_low'])}-{_ratio(r['risk_ratio_high'])})",
                "Fisher p": _sig(r["p_value"]),
                "BH q": _sig(r["q_value"]),
            }
        )
    return pl.DataFrame(rows, schema={c: (pl.Int64 if c in ("replies", "corrupted") else pl.Utf8) for c in rows[0]})


def _context_table(df: pl.DataFrame) -> pl.DataFrame:
    if df.height == 0:
        return df

    def events(evs):
        return "; ".join(
            f"{e['ts'].strftime('%H:%M:%S') if e['ts'] else '?'} {e['host']} {e['kind']}"
            + (f" ({e['reason']})" if e["reason"] else "")
            for e in (evs or [])
        )

    return df.select(
        "t_start",
        "source",
        "session_id",
        "turn_id",
        "corruption_class",
        "decode_host",
        "bootstrap_room",
        pl.col("evidence").str.slice(0, 120),
    ).with_columns(pl.Series("events nearby", [events(v) for v in df["events"].to_list()], dtype=pl.Utf8))


# -- compare ----------------------------------------------------------------------------------------


def render_compare(result: dict, fmt: str, out=None) -> None:
    out = out or sys.stdout
    if fmt == "json":
        out.write(evidence_json({"kind_detail": "compare", **{k: _jsonable(v) for k, v in result.items()}}) + "\n")
        return
    out.write("## Corruption rate per run\n\n")
    markdown_warnings(out, result.get("clock_warnings", []))
    b = result.get("baseline")
    if b:
        out.write(
            f"Baseline: run {markdown_code(b['run'])} of store {markdown_code(b['store'])} "
            f"({markdown_text(b['chosen_by'], inline=True)}; `--baseline` chooses another). "
            "Every other run is tested against it.\n\n"
        )
    for path in result.get("without_replies") or []:
        out.write(f"Store {markdown_code(path)} holds no agent replies: it is not in the table.\n\n")
    c = result["corruption"]
    if c.height:
        rows = []
        for r in c.iter_rows(named=True):
            vs = r["verdict"] != "baseline"
            rows.append(
                {
                    "run": r["run"],
                    "replies": r["replies"],
                    "corrupted": r["corrupted"],
                    "rate": f"{_pct(r['rate'])}% ({_pct(r['ci_low'])}-{_pct(r['ci_high'])})",
                    "vs": r["vs"] or "",
                    "difference": (
                        f"{r['difference'] * 100:+.1f} pts ({r['difference_low'] * 100:+.1f} to "
                        f"{r['difference_high'] * 100:+.1f})"
                    )
                    if vs
                    else "",
                    "risk ratio": (
                        f"{_ratio(r['risk_ratio'])} ({_ratio(r['risk_ratio_low'])}-{_ratio(r['risk_ratio_high'])})"
                    )
                    if vs
                    else "",
                    "Fisher p": _sig(r["p_value"]) if vs else "",
                    "BH q": _sig(r["q_value"]) if vs else "",
                    "verdict": r["verdict"],
                }
            )
        out.write(markdown(pl.DataFrame(rows)))
        out.write(
            "\n_Intervals are 95% (Wilson, Newcombe, Katz); the verdict is q < 0.05, q being "
            "Benjamini–Hochberg over the runs compared (p itself when there is one)._\n"
        )
    else:
        out.write("_no replies in these stores_\n")
    out.write("\n## Decode throughput by concurrency band\n\n")
    out.write(markdown(result["throughput"]) if result["throughput"].height else "_no decode stats_\n")


# -- replies ----------------------------------------------------------------------------------------

_MARK = re.compile(r"⟦(.*?)⟧", re.S)


def print_replies(df: pl.DataFrame, out=None) -> None:
    """A rich table; the part of the evidence that fired is highlighted, control characters escaped."""
    import sys

    from rich.text import Text

    styles = {
        "clean": "green",
        "parse_leak": "bold red",
        "incoherent": "bold magenta",
        "empty": "yellow",
        "config": "cyan",
        "transfer_error": "bold blue",
    }

    def rows():
        for row in df.iter_rows(named=True):
            cells = []
            for c, v in row.items():
                if c == "evidence" and v:
                    text, pos = Text(), 0
                    ev = escape_control(v)
                    for m in _MARK.finditer(ev):
                        text.append(ev[pos : m.start()])
                        text.append(m.group(1), style="bold black on yellow")
                        pos = m.end()
                    text.append(ev[pos:])
                    cells.append(text)
                elif c == "corruption_class":
                    cells.append(rich_text(v, style=styles.get(v)))
                else:
                    cells.append(_cell(v))
            yield cells

    # the evidence is what a reader came for: it wraps, whole, where other cells are cut
    print_table(
        out or sys.stdout,
        df.columns,
        rows,
        wrap=frozenset({"evidence", "session_id", "turn_id"}),
        show_lines=True,
        first=("t_end", "corruption_class", "evidence", "session_id", "turn_id"),
    )
