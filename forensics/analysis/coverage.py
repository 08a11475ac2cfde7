"""How much of its inputs a report read: the unparsed share of each input and of the whole, the
inputs another engine wrote (named from their unparsed lines, forensics.parsers.engines), and
whether the counts a report gives are lower bounds (docs/formats/OTHER_ENGINES.md, "Lower bounds").
"""

from __future__ import annotations

from forensics.catalog import named as queries
from forensics.parsers import engines

HIGH_INPUT = 0.5  # an input over this share unparsed is not understood
HIGH_TOTAL = 0.2  # the inputs together over this share: every count is a lower bound

_INPUTS = """
SELECT path, min(host) AS host, sum(lines) AS lines, sum(unparsed_lines) AS unparsed
FROM files WHERE status IN ('ingested', 'failed') {where}
GROUP BY path ORDER BY path
"""
_SAMPLE = """
SELECT source_file, line FROM (
  SELECT source_file, line, row_number() OVER (PARTITION BY source_file ORDER BY line_no) AS n
  FROM unparsed WHERE source_file IN (SELECT unnest($paths))
) WHERE n <= $n ORDER BY source_file, n
"""


# the inputs whose events are mostly another engine's own lines (the parser's `source` for them)
_READ_ENGINES = """
SELECT source_file, arg_max(source, n) AS engine FROM (
  SELECT source_file, source, count(*) AS n, sum(count(*)) OVER (PARTITION BY source_file) AS total
  FROM events WHERE source_file IN (SELECT unnest($paths)) GROUP BY source_file, source
) WHERE source IN (SELECT unnest($engines)) AND 2 * n >= total GROUP BY source_file
"""


def build(con, host: str | None = None) -> dict:
    """The coverage of the store's inputs (of one host's, with `host`), as plain values for JSON.

    `inputs` lists the inputs with unparsed lines or read as another engine's, most unparsed first,
    each with the engine its events or else its unparsed lines name (or None); `not_understood` those over HIGH_INPUT unparsed or of another
    engine; `lower_bound` whether counts made from the rest are lower bounds; `lead` the sentence
    that says so, before any count, or None."""
    where, params = ("AND host = $host", {"host": host}) if host else ("", {})
    rows = con.execute(_INPUTS.format(where=where), params).fetchall()
    total = sum(r[2] or 0 for r in rows)
    unparsed = sum(r[3] or 0 for r in rows)
    read_by = dict(
        con.execute(
            _READ_ENGINES, {"paths": [r[0] for r in rows], "engines": [e.name for e in engines.ENGINES if e.read_lines]}
        ).fetchall()
    )
    partly = [r for r in rows if r[3] or r[0] in read_by]
    samples: dict[str, list[str]] = {}
    if partly:
        for path, text in con.execute(_SAMPLE, {"paths": [r[0] for r in partly], "n": engines.SAMPLE_LINES}).fetchall():
            samples.setdefault(path, []).append(text or "")
    inputs = []
    for path, h, n, u in partly:
        share = (u or 0) / n if n else 0.0
        read = path in read_by
        engine = read_by[path] if read else engines.recognise(samples.get(path, []))
        inputs.append(
            {
                "path": path,
                "host": h,
                "lines": n,
                "unparsed_lines": u or 0,
                "unparsed_share": share,
                "engine": engine,
                "engine_label": engines.BY_NAME[engine].label if engine else None,
                "read": describe(engine, share, read),
                # its lines are read as that engine's own: it is understood, unless most went unread
                "engine_read": read,
            }
        )
    inputs.sort(key=lambda i: (-i["unparsed_share"], -i["unparsed_lines"], i["path"]))
    share = unparsed / total if total else 0.0
    not_understood = [
        i["path"] for i in inputs if i["unparsed_share"] > HIGH_INPUT or (i["engine"] and not i["engine_read"])
    ]
    high = share > HIGH_TOTAL or any(i["unparsed_share"] > HIGH_INPUT for i in inputs)
    if high and not not_understood:
        not_understood = [i["path"] for i in inputs[:3]]
    out = {
        "inputs_read": len(rows),
        "lines": total,
        "unparsed_lines": unparsed,
        "unparsed_share": share,
        "lower_bound": high,
        "inputs": inputs,
        "not_understood": not_understood,
    }
    out["lead"] = lead(out)
    out["line"] = line(out)
    return out


def describe(engine: str | None, share: float, read: bool = False) -> str:
    """What is and is not read of one input: 'vLLM log: not read beyond plain lines; 100% unparsed',
    or, with `read`, what of its lines is read as the engine's own."""
    return engines.describe(engine, share, read) if engine else f"{engines.percent(share)} unparsed"


def line(cov: dict) -> str:
    """'coverage: 8 of 1,200 input lines unparsed (0.7%) in 3 inputs'."""
    n = cov["inputs_read"]
    return (
        f"coverage: {cov['unparsed_lines']:,} of {cov['lines']:,} input lines unparsed "
        f"({engines.percent(cov['unparsed_share'])}) in {n} input{'s' if n != 1 else ''}"
    )


def lead(cov: dict) -> str | None:
    """The first thing a report says when much of its input went unread, or None."""
    if not cov["lower_bound"]:
        return None
    by_path = {i["path"]: i for i in cov["inputs"]}
    named = "; ".join(f"{p} ({by_path[p]['read']})" for p in cov["not_understood"])
    return (
        f"counts are lower bounds: {cov['unparsed_lines']:,} of {cov['lines']:,} input lines "
        f"({engines.percent(cov['unparsed_share'])}) were not read, and what they hold is not counted; "
        f"not understood: {named}"
    )


def engine_lines(cov: dict) -> list[str]:
    """One line per input another engine wrote: 'x.log: vLLM log: not read beyond plain lines; 100% unparsed'."""
    return [f"{i['path']}: {i['read']}" for i in cov["inputs"] if i["engine"]]


_PLACED_AT = {
    "line_above": "the timed line above",
    "line_below": "the timed line below",
    "file_time": "its file's time",
}


def placed_notes(con, since, until, host) -> list[str]:
    """The window's lines whose time was placed (`ts_placed`), and the lines with no time, which no
    window or bucket holds: both said, so that a crash dump without a clock is seen to be there and where."""
    rows = con.execute(queries.internal("_placed_lines").sql, {"since": since, "until": until, "host": host}).fetchall()
    placed = [f"{kind} {n:,} at {_PLACED_AT.get(how, how)}" for what, how, kind, n in rows if what == "placed"]
    untimed = [f"{kind} {n:,}" for what, _, kind, n in rows if what == "untimed"]
    notes = []
    if placed:
        notes.append(f"placed in time, having no clock of their own (ts_placed): {'; '.join(placed)}")
    if untimed:
        notes.append(f"not placed, having no time and no timed line near them in their input: {'; '.join(untimed)}")
    return notes
