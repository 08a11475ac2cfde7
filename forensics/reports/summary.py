"""`forensics summary` as one screen of plain text, or JSON (the model of forensics.analysis.summary)."""

from __future__ import annotations

from forensics.reports.escape import escape_control


def render_summary(model: dict, fmt: str, out) -> None:
    if fmt == "json":
        import json

        out.write(json.dumps(dict(model.items()), indent=1, ensure_ascii=False) + "\n")
        return
    out.write("\n".join(lines(model)) + "\n")


def _n(v) -> str:
    return f"{v:,}"


def _size(n: int) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def _t(iso: str | None) -> str:
    return "-" if iso is None else iso[:19].replace("T", " ")


def lines(m: dict) -> list[str]:
    i = m["inputs"]
    # much of the input unread: said first, before any count (forensics.analysis.coverage)
    lead = [w for w in m["warnings"] if w.startswith("warning: counts are lower bounds")][:1]
    out = [escape_control(w) for w in lead] + [
        f"store {escape_control(m['store'])}: {i['ingested']} input{'s' if i['ingested'] != 1 else ''} ingested, "
        f"{i['skipped']} skipped, {i['failed']} failed; {_n(i['lines'])} lines ({_size(i['bytes'])}), "
        f"{_n(i['unparsed_lines'])} unparsed ({100 * i['unparsed_share']:.2f}%)"
    ]
    for u in i["most_unparsed"]:
        said = f" ({escape_control(u['read'])})" if u.get("engine") else ""
        out.append(
            f"  unparsed: {_n(u['unparsed_lines'])} of {_n(u['lines'])} lines in {escape_control(u['path'])}{said}"
        )
    out.append("")
    head = ("host", "roles", "inputs", "lines", "first (UTC)", "last (UTC)", "formats")
    rows = [
        (
            escape_control(h["host"]),
            h["roles"] or "-",
            _n(h["inputs"]),
            _n(h["lines"] or 0),
            _t(h["first_ts"]),
            _t(h["last_ts"]),
            h["formats"] or "-",
        )
        for h in m["hosts"]
    ]
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    right = {2, 3}
    for r in [head, *rows]:
        out.append(
            "  ".join(c.rjust(w) if k in right else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()
        )
    out.append("")
    stored = [t for t in m["tables"] if not t["view"]]
    views = [t for t in m["tables"] if t["view"]]
    out.append("rows: " + ", ".join(f"{t['table']} {_n(t['rows'])}" for t in stored))
    out.append("views: " + ", ".join(f"{t['table']} {_n(t['rows'])}" for t in views))
    out.append("")
    out += _failures(m["failures"])
    offsets = m["clock_offsets"]
    out.append(
        "clock offsets set: " + (", ".join(f"{escape_control(h)} {v:+g} s" for h, v in offsets.items()) or "none")
    )
    est = [e for e in m["clock_estimates"] if e["estimate_s"] is not None]
    out.append(
        "clock offsets estimated: "
        + (
            ", ".join(
                f"{escape_control(e['host_b'])} {e['estimate_s']:+.3f} s vs {escape_control(e['host_a'])} "
                f"({_n(e['pairs'])} pairs)"
                for e in est
            )
            or "none"
        )
    )
    out += [f"  no clock bound: {escape_control(w)}" for w in m.get("clock_unbounded", [])]
    if [w for w in m["warnings"] if w not in lead]:
        out.append("")
        out += [escape_control(w) for w in m["warnings"] if w not in lead]
    return out


def _failures(f: dict) -> list[str]:
    """Failed requests first (one per request, however many ranks logged it), then lines and signals."""
    n = f["requests"]
    head = (
        f"failures: {_n(n)} failed request{'s' if n != 1 else ''} ({_n(f['lines'])} failure lines); "
        f"{_n(f['signals'])} signal line{'s' if f['signals'] != 1 else ''} naming no request"
    )
    out = [head]
    if f["by_reason"]:
        out.append(
            "  by first reason: "
            + ", ".join(f"{escape_control(r['reason'])} {_n(r['requests'])}" for r in f["by_reason"])
        )
    for h in f["by_host"]:
        bits = [f"{_n(h['requests'])} request{'s' if h['requests'] != 1 else ''}"]
        if h["first_failures"]:
            bits.append(f"{_n(h['first_failures'])} first failure{'s' if h['first_failures'] != 1 else ''}")
        bits.append(f"{_n(h['lines'])} line{'s' if h['lines'] != 1 else ''}")
        if h["signals"]:
            bits.append(f"{_n(h['signals'])} signal{'s' if h['signals'] != 1 else ''}")
        if h["warnings"]:
            bits.append(f"{_n(h['warnings'])} warning{'s' if h['warnings'] != 1 else ''}")
        if h["crashes"]:
            bits.append(f"{_n(h['crashes'])} crash{'es' if h['crashes'] != 1 else ''}")
        out.append(f"  {escape_control(h['host'])}: " + ", ".join(bits))
    out.append("")
    return out
