"""`forensics timeline --format png|svg`: a static chart to paste into a GitHub issue.

matplotlib is imported when a chart is drawn, so the other formats and the CLI do not pay for it.
Text from the store (host names, the store path) is escaped by escape.escape_control and drawn with
mathtext off, so `$...$` in it is text, not math (a stray `$` would otherwise end the chart in an
error); the SVG writer escapes `<`, `>`, `&` and quotes itself.
"""

from __future__ import annotations

import textwrap

from forensics.analysis.clocks import describe_offsets
from forensics.core.errors import UsageError
from forensics.reports.detail import CLASS_COLORS, us
from forensics.reports.escape import escape_control


def write(model: dict, d: dict, path: str, fmt: str) -> None:
    """A 1600x900 chart for a GitHub issue: a panel per host, a panel of replies, wedge and storm bands."""
    from matplotlib import rc_context

    # text stays text in the SVG (searchable, and the panel titles can be checked); no date, so
    # the same store gives the same file
    with rc_context({"text.parse_math": False, "svg.fonttype": "none", "svg.hashsalt": "forensics"}):
        _draw(model, d, path, fmt)


def _draw(model: dict, d: dict, path: str, fmt: str) -> None:
    import numpy as np
    from matplotlib import dates as mdates
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    hosts = d["hosts"]
    bucket_us = int(model["bucket_s"] * 1e6)
    lo, hi = d["window"]
    if lo is None:
        lo, hi = 0, bucket_us
    n = -(-(hi - lo) // bucket_us)
    if n > 20_000:
        raise UsageError(
            f"{n} buckets of {model['bucket_s']:g} s are too many for a chart",
            help="pass a larger --bucket, or narrow the window with --since / --until",
        )
    fig = Figure(figsize=(16, 9), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    rows = model["rows"]
    # a store without transcripts has no replies: their panel would be an empty frame, so the hosts
    # take its room
    has_replies = rows.height > 0 and int(rows["replies"].sum() or 0) > 0
    panels = len(hosts) + (1 if has_replies or not hosts else 0)
    # a host without stats lines has only its failure and transfer counts to show: half a panel, the
    # rest of its room to the panels with load on them
    loaded = {part["host"] for part in d["load"]}
    ratios = [1.0 if h["name"] in loaded else 0.5 for h in hosts] + [1.0] * (panels - len(hosts))
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": ratios})[:, 0]

    def x(us):
        return mdates.date2num(np.asarray(us, dtype="int64").astype("datetime64[us]"))

    edges = x(lo + bucket_us * np.arange(n + 1))
    centers = x(lo + bucket_us * np.arange(n) + bucket_us // 2)

    def per_bucket(times, values=None):
        """Counts (or the values, where given) on the bucket grid; NaN where nothing was seen."""
        k = (np.asarray(times, dtype="int64") - lo) // bucket_us
        keep = (k >= 0) & (k < n)
        if values is None:
            out = np.zeros(n)
            np.add.at(out, k[keep], 1)
            return out
        out = np.full(n, np.nan)
        out[k[keep]] = np.asarray([np.nan if v is None else v for v in values], dtype=float)[keep]
        return out

    # a 2 s storm on a 20 min chart would be a hairline: bands get a minimum visible width
    min_band = max((hi - lo) // 250, 1)

    def caption(ax, us, height, text, color, zorder=6):
        """`text` just right of time `us`, its top at `height` of the panel (0 to 1)."""
        ax.text(
            x(us),
            height,
            " " + text,
            transform=ax.get_xaxis_transform(),
            va="top",
            ha="left",
            fontsize=8,
            color=color,
            zorder=zorder,
        )

    def band(ax, item, color, text=None, height=1.0, label_at="t0"):
        t0, t1 = item["t0"], max(item["t1"], item["t0"] + min_band)
        ax.axvspan(x(t0), x(t1), color=color, alpha=0.18, lw=0, zorder=0)
        if text:
            caption(ax, t0 if label_at == "t0" else t1, height, text, color, zorder=5)

    def counted(rows):
        """Counts per bucket index (reports.detail's counts) on the bucket grid."""
        out = np.zeros(n)
        for r in rows:
            if r["k"] is not None and 0 <= r["k"] < n:
                out[r["k"]] += r["n"]
        return out

    def failed_marks(ax, reqs):
        """Each bucket's failed requests: a band at least min_band wide and a marker with the count
        above it, so three requests in a 20 min window read as three, not as hairlines."""
        by_k: dict[int, list[dict]] = {}
        for r in reqs:
            if r["t_us"] is not None:
                by_k.setdefault(int((r["t_us"] - lo) // bucket_us), []).append(r)
        first = True
        # labels of buckets closer than a fortieth of the window would print over each other: one
        # label counts them together, at the first of them
        gap = max(1, n // 40)
        labels: list[list[int]] = []
        for k, rs in sorted(by_k.items()):
            if not 0 <= k < n:
                continue
            if labels and k - labels[-1][2] <= gap:
                labels[-1][1] += len(rs)
                labels[-1][2] = k
            else:
                labels.append([k, len(rs), k])
            t0 = lo + k * bucket_us
            ax.axvspan(x(t0), x(t0 + max(bucket_us, min_band)), color="#e03131", alpha=0.22, lw=0, zorder=0)
            ax.plot(
                [x(t0 + bucket_us // 2)],
                [0.9],
                marker="v",
                markersize=11,
                color="#c92a2a",
                transform=ax.get_xaxis_transform(),
                zorder=6,
                ls="none",
                label="failed requests" if first else None,
            )
            first = False
        for k, count, _ in labels:
            caption(ax, lo + k * bucket_us + bucket_us // 2, 0.8, f"{count} failed", "#c92a2a")

    for ax, h in zip(axes, hosts):
        load = [part for part in d["load"] if part["host"] == h["name"]]
        times = [t for part in load for t in part["t_us"]]
        series = [("queue_req", "#e8590c"), ("running_req", "#1c7ed6")]
        if h["role"] == "prefill":
            series += [("bootstrap_req", "#7048e8"), ("inflight_req", "#0ca678")]
        for name, color in series:
            # NaN in buckets without a stats line, so a silent host shows a gap, not a flat line
            y = per_bucket(times, [v for part in load for v in part[name]])
            if np.isfinite(y).any():
                ax.plot(centers, y, color=color, lw=1.3, label=name)
                # a stats line between silent buckets has no neighbour to draw a line to: a dot shows it
                alone = isolated(y)
                if alone.any():
                    ax.plot(centers[alone], y[alone], ls="none", marker="o", ms=4, color=color)
        if h["name"] in loaded:
            ax.set_ylabel("requests")
        else:
            ax.set_yticks([])
            ax.set_ylabel("no stats lines", fontsize=8)
        tw = ax.twinx()
        transfers = [r for r in d["counts"]["rooms"] if r["host"] == h["name"]]
        fails = [m for m in d["counts"]["marks"] if m["host"] == h["name"] and m["mark"] == "failure"]
        aborts = [m for m in d["counts"]["marks"] if m["host"] == h["name"] and m["mark"] == "abort"]
        for lane, color, label, alpha in (
            (transfers, "#adb5bd", "transfers", 0.6),
            (fails, "#e03131", "failure lines", 0.9),
            (aborts, "#f59f00", "aborts", 0.9),
        ):
            if lane:
                _stairs(tw, counted(lane), edges, fill=True, color=color, alpha=alpha, label=f"{label} / bucket")
        tw.set_ylabel("per bucket")
        mine = [r for r in d.get("failed_requests", []) if h["name"] in (r["hosts"] or [])]
        if mine:
            failed_marks(ax, mine)
        ax.set_zorder(tw.get_zorder() + 1)
        ax.patch.set_visible(False)
        for c in d.get("crashes", []):
            if c["host"] == h["name"]:
                ax.axvline(x(c["t_us"]), color="#212529", lw=1.2, ls="--" if c["ts_placed"] else "-", zorder=4)
                what = f"crash{' ' + c['reason'] if c['reason'] else ''}" + (" (placed)" if c["ts_placed"] else "")
                caption(ax, c["t_us"], 0.97, escape_control(what), "#212529")
        for w in d["wedges"]:
            if w["host"] == h["name"]:
                band(ax, w, "#c92a2a", f"wedge ({w['kind']}, {w['silent_s']:.0f} s)")
        for s in d["storms"]:
            if s["host"] == h["name"]:
                band(
                    ax,
                    s,
                    "#e67700",
                    f"abort storm ({s['aborts_on_host']} of {s['n_aborts']})",
                    height=0.86,
                    label_at="t1",
                )
        ax.set_title(f"{h['name']} ({h['role']})", loc="left", fontsize=10, fontweight="bold")
        handles = ax.get_legend_handles_labels()[0] + tw.get_legend_handles_labels()[0]
        if handles:
            ax.legend(handles=handles, loc="upper right", fontsize=7, ncol=len(handles), framealpha=0.8)

    if has_replies or not hosts:
        _replies_panel(axes[-1], model, d, per_bucket, edges, band)
    ax = axes[-1]
    ax.xaxis.set_major_locator(mdates.AutoDateLocator())
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.set_xlabel("UTC")
    ax.set_xlim(edges[0], edges[-1])
    fig.suptitle(
        f"forensics timeline — {escape_control(d['store'])} — {describe_offsets(d['offsets'])} — "
        f"{model['bucket_s']:g} s buckets"
        + "".join(
            "\n" + textwrap.fill(escape_control(w), 190) for w in [*d["clock_warnings"], *model.get("notes", [])]
        ),
        fontsize=11,
    )
    fig.savefig(path, format=fmt, metadata={"Date": None} if fmt == "svg" else None)


def _stairs(ax, values, edges, **kw):
    """`ax.stairs(values, edges, **kw)`, the axes sized to the step from its vertices at once.

    matplotlib sizes the axes to a patch by walking its path a segment at a time in Python, which
    takes most of a chart's time at thousands of buckets. A step's segments are straight lines, so
    the points that walk finds are the path's own vertices: the same limits, from one array.
    """
    import numpy as np
    from matplotlib.path import Path

    def limits(patch) -> None:
        path, trf = patch.get_path(), patch.get_transform()
        updatex, updatey = trf.contains_branch_separately(ax.transData)
        if not (updatex or updatey):
            return
        keep = np.isfinite(path.vertices).all(axis=1)
        if path.codes is not None:
            # a CLOSEPOLY vertex is not drawn to (the line goes back to the start), and nothing after STOP is
            stop = np.flatnonzero(path.codes == Path.STOP)
            keep &= path.codes != Path.CLOSEPOLY
            if stop.size:
                keep[stop[0] :] = False
        if keep.any():
            ax.update_datalim((trf - ax.transData).transform(path.vertices[keep]), updatex=updatex, updatey=updatey)

    if ax.name != "rectilinear":  # matplotlib's walk has cases of its own for other projections
        return ax.stairs(values, edges, **kw)
    ax._update_patch_limits = limits  # the one patch ax.stairs adds; the method comes back after it
    try:
        return ax.stairs(values, edges, **kw)
    finally:
        del ax._update_patch_limits


def isolated(y):
    """Where `y` has a value and neither bucket beside it has one: a line through it draws nothing."""
    import numpy as np

    seen = np.isfinite(y)
    before = np.concatenate([[False], seen[:-1]])
    after = np.concatenate([seen[1:], [False]])
    return seen & ~before & ~after


def _replies_panel(ax, model, d, per_bucket, edges, band) -> None:
    import numpy as np

    rows = model["rows"]
    n = len(edges) - 1
    starts = [us(v) for v in rows["bucket_start"].to_list()]
    bottom = np.zeros(n)
    for cls in ("clean", "parse_leak", "incoherent", "empty", "config", "transfer_error"):
        y = np.nan_to_num(per_bucket(starts, rows[f"replies_{cls}"].to_list()))
        if y.any():
            _stairs(
                ax,
                bottom + y,
                edges,
                baseline=bottom.copy(),
                fill=True,
                color=CLASS_COLORS[cls],
                label=cls.replace("_", " "),
            )
            bottom += y
    for w in d["wedges"]:
        band(ax, w, "#c92a2a")
    for s in d["storms"]:
        band(ax, s, "#e67700")
    ax.set_title(
        "replies by class (corrupted: parse leak, incoherent, empty)", loc="left", fontsize=10, fontweight="bold"
    )
    ax.set_ylabel("replies / bucket")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize=7, ncol=6, framealpha=0.8)
