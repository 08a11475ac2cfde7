"""`forensics timeline --format html`: one self-contained, offline HTML file.

Zoomable lanes per host (load, transfers, replies), wedge and abort-storm bands; click a reply for
its evidence and the server events around it. The page is assets/timeline.html with
assets/timeline.css and assets/timeline.js inlined (static files), and everything taken from the store,
its path and header text too, as JSON in one <script type="application/json"> element
(escape.script_json: no `</`, U+2028 or U+2029 can end it). The page is never filled in with text
from the store: the script reads the JSON and sets every text with textContent only.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from forensics.analysis.clocks import describe_offsets
from forensics.reports.detail import CLASS_COLORS, OUTCOME_COLORS, iso, other_replies
from forensics.reports.escape import escape_control, script_json

_PLACEHOLDER = re.compile(r"%([A-Z]+)%")


def page_data(model: dict, d: dict, store_name: str) -> dict:
    """The JSON the page draws from; times in milliseconds since the epoch."""
    names = [h["name"] for h in d["hosts"]]
    index = {h: i for i, h in enumerate(names)}

    def ms(us):
        return None if us is None else us / 1000

    load = []
    for h in names:
        parts = [p for p in d["load"] if p["host"] == h]
        load.append(
            {
                k: [v for p in parts for v in p[c]]
                for k, c in (
                    ("t", "t_us"),
                    ("queue", "queue_req"),
                    ("running", "running_req"),
                    ("throughput", "throughput"),
                    ("bootstrap", "bootstrap_req"),
                )
            }
        )
        load[-1]["t"] = [ms(v) for v in load[-1]["t"]]
    segments = []
    for r in d["rooms"]:
        if r["t0"] is not None and r["prefill_host"] in index:
            segments.append(
                {
                    "host": index[r["prefill_host"]],
                    "t0": ms(r["t0"]),
                    "t1": ms(r["t1"]),
                    "room": r["room"],
                    "outcome": r["outcome"],
                    "peer": r["decode_host"],
                    "side": "sent",
                }
            )
        if r["recv_t0"] is not None and r["decode_host"] in index:
            start = r["t0"] if r["t0"] is not None and r["t0"] <= r["recv_t0"] else r["recv_t0"]
            segments.append(
                {
                    "host": index[r["decode_host"]],
                    "t0": ms(start),
                    "t1": ms(r["recv_t1"]),
                    "room": r["room"],
                    "outcome": r["outcome"],
                    "peer": r["prefill_host"],
                    "side": "received",
                }
            )
    data = {
        "store": escape_control(store_name),
        "bucket_s": model["bucket_s"],
        "window": [ms(d["window"][0]), ms(d["window"][1])],
        "offsets": {escape_control(h): v for h, v in d["offsets"].items()},
        "hosts": [{**h, "load": load[i], "bucket_ms": model["bucket_s"] * 1000} for i, h in enumerate(d["hosts"])],
        "transfers": segments,
        "marks": [
            {
                "host": index[m["host"]],
                "t": ms(m["t_us"]),
                "mark": m["mark"],
                "kind": m["kind"],
                "reason": m["reason"],
                "room": m["room"],
                "message": m["message"],
                "placed": m.get("ts_placed"),
            }
            for m in d["marks"]
            if m["host"] in index
        ],
        "failed_requests": [
            {
                "hosts": [index[h] for h in r["hosts"] or [] if h in index],
                "t": ms(r["t_us"]),
                # a 63-bit room as text: a JavaScript number would round it
                "room": None if r["room"] is None else str(r["room"]),
                "rids": [x for x in (r["rid_prefill"], r["rid_decode"]) if x],
                "reason": r["reason"],
                "outcome": r["outcome"],
                "first_host": r["first_host"],
                "lines": r["n_lines"],
                "ranks": r["n_ranks"],
            }
            for r in d.get("failed_requests", [])
            if r["t_us"] is not None
        ],
        "replies": [
            {
                "t0": ms(r["t0"]),
                "t1": ms(r["t1"]),
                "cls": r["corruption_class"],
                "corrupted": r["corrupted"],
                "host": index.get(r["host"], -1),
                "host_name": r["host"],
                "rank": r["rank"],
                "room": r["room"],
                "source": r["source"],
                "session": r["session_id"],
                "turn": r["turn_id"],
                "signatures": r["signatures"] or [],
                "evidence": r["evidence"],
                "outcome": r["outcome"],
                "finish_reason": r["finish_reason"],
                "link": r["link_method"],
                "events": [
                    {
                        "t": ms(e["t_us"]),
                        "host": e["host"],
                        "kind": e["kind"],
                        "reason": e["reason"],
                        "message": e["message"],
                    }
                    for e in r["events"]
                ],
            }
            for r in d["replies"]
        ],
        "wedges": [
            {
                "host": index[w["host"]],
                "t0": ms(w["t0"]),
                "t1": ms(w["t1"]),
                "kind": w["kind"],
                "label": f"wedge: {w['kind']} {w['silent_s']:.0f} s, {w['in_flight']} in flight, {w['n_rooms']} rooms, "
                f"ended by {w['ended_by']}; " + "; ".join(w.get("signals") or []),
            }
            for w in d["wedges"]
            if w["host"] in index
        ],
        "storms": [
            {
                "host": index[s["host"]],
                "t0": ms(s["t0"]),
                "t1": ms(s["t1"]),
                "label": f"abort storm: {s['aborts_on_host']} of {s['n_aborts']} aborts on {s['n_hosts']} hosts "
                f"({s['aborts_per_s']}/s)",
            }
            for s in d["storms"]
            if s["host"] in index
        ],
        "other_replies": other_replies(model),
        "class_colors": CLASS_COLORS,
        "outcome_colors": OUTCOME_COLORS,
    }
    data.update(_counts(d, index, int(model["bucket_s"] * 1e6)))
    return data


def _counts(d: dict, index: dict, bucket_us: int) -> dict:
    """Per-bucket counts for the lanes whose rows are not all drawn (reports.detail): per host index,
    [bucket index, what, count]; replies on no drawn host under -1, as the page's unlinked lane."""
    n = None if d["window"][0] is None else -(-(d["window"][1] - d["window"][0]) // bucket_us)
    out = {}
    for key, what, hosted in (("rooms", "outcome", True), ("marks", "mark", True), ("replies", "cls", False)):
        if key not in d["counts"]:
            continue
        lanes: dict[int, list] = {}
        for r in d["counts"][key]:
            i = index.get(r["host"], None if hosted else -1)
            if i is None or r["k"] is None or not 0 <= r["k"] < n:
                continue
            lanes.setdefault(i, []).append([r["k"], r[what], r["n"]])
        out[f"{key}_per_bucket"] = [{"host": i, "counts": c} for i, c in sorted(lanes.items())]
    return out


def _asset(name: str) -> str:
    return resources.files("forensics.reports").joinpath("assets", name).read_text(encoding="utf-8")


def fill(template: str, parts: dict[str, str]) -> str:
    """`template` with each %NAME% replaced by parts[NAME], every placeholder in one pass."""
    # inserted text is never searched again: JSON or a script that spells a placeholder stays as it is
    unmatched = set(_PLACEHOLDER.findall(template)) ^ set(parts)
    if unmatched:
        raise ValueError(f"placeholders and parts differ: {sorted(unmatched)}")
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], template)


def write(model: dict, d: dict, path: str) -> None:
    """Write the page of `model` and its detail `d` (reports.detail.gather, plus the store's name) to `path`."""
    data = page_data(model, d, d["store"])
    n_replies, n_corrupted = d.get("n_replies") or (
        len(data["replies"]),
        sum(1 for r in data["replies"] if r["corrupted"]),
    )
    lo, hi = d["window"]
    header = (
        f"{iso(lo)} to {iso(hi)} · {model['bucket_s']:g} s buckets · {n_replies} replies, "
        f"{n_corrupted} corrupted · {len(data['wedges'])} wedges · {len(data['storms'])} abort storms"
        + (f" · host {model['host']}" if model["host"] else "")
    )
    data["page"] = {
        "title": f"forensics timeline — {escape_control(d['store'])}",
        "store": escape_control(d["store"]),
        "summary": escape_control(header),
        "offsets": [escape_control(t) for t in [describe_offsets(d["offsets"]), *d["clock_warnings"], *d["notes"]]],
        "legend_classes": list(CLASS_COLORS),
        "legend_outcomes": [k for k in OUTCOME_COLORS if k != "bootstrap_timeout"],
    }
    Path(path).write_text(assemble(script_json(data)), encoding="utf-8")


# the one element the store's content goes into
DATA_SLOT = '<script type="application/json" id="timeline-data">'


def assemble(data_json: str) -> str:
    """The page: the static assets filled in, then the data JSON joined in at its one slot."""
    page = fill(_asset("timeline.html"), {"CSS": _asset("timeline.css"), "JS": _asset("timeline.js"), "DATA": "%DATA%"})
    if page.count(DATA_SLOT + "%DATA%") != 1:
        raise ValueError("the page template needs exactly one data element")
    # joined, not substituted: nothing is searched for or replaced once the data is in
    before, slot, after = page.partition(DATA_SLOT + "%DATA%")
    return before + DATA_SLOT + data_json + after
