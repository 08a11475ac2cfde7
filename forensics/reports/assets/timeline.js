(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("timeline-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var LABEL_W = 150, PAD_R = 12, AXIS_H = 24, HEAD_H = 18, GAP = 10;
  var LANES = [["load", 70], ["transfers", 46], ["replies", 54]];
  var TRANSFER_ROWS = 6, REPLY_ROWS = 9, MIN_SPAN = 500;
  var svg = document.getElementById("chart");
  var full = {t0: D.window[0], t1: D.window[1]};
  if (full.t0 === null) { full = {t0: 0, t1: 1}; }
  var view = {t0: full.t0, t1: full.t1};
  var selected = null, drag = null, dragMoved = false, pending = false;

  // every text of the page comes from the data, as text: nothing from the store is ever parsed as HTML
  function fillPage() {
    var P = D.page;
    document.title = P.title;
    document.getElementById("meta").textContent = "store " + P.store + " \u00b7 " + P.summary;
    var off = document.getElementById("offsets");
    P.offsets.forEach(function (t, i) {
      if (i) { off.appendChild(document.createElement("br")); }
      off.appendChild(document.createTextNode(t));
    });
    [["legend-classes", D.class_colors, P.legend_classes], ["legend-outcomes", D.outcome_colors, P.legend_outcomes]]
      .forEach(function (g) {
        var box = document.getElementById(g[0]);
        g[2].forEach(function (k) {
          var sw = document.createElement("span");
          sw.className = "sw";
          sw.style.background = g[1][k];
          box.appendChild(sw);
          box.appendChild(document.createTextNode(k.replace(/_/g, " ") + " "));
        });
      });
  }
  fillPage();

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { if (attrs[k] !== undefined && attrs[k] !== null) { e.setAttribute(k, attrs[k]); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function label(parent, x, y, s, cls, color) {
    var t = el("text", {x: x, y: y, "class": cls, fill: color}, parent);
    t.textContent = s;
    return t;
  }
  function tip(parent, s) { el("title", {}, parent).textContent = s; }
  function fmtTime(ms, withMs) {
    var s = new Date(ms).toISOString();
    return withMs ? s.slice(11, 23) : s.slice(11, 19);
  }
  function fmtSpan(ms) {
    var s = ms / 1000;
    if (s < 60) { return s.toFixed(s < 10 ? 2 : 1) + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + "m" + Math.round(s % 60) + "s"; }
    return (s / 3600).toFixed(2) + " h";
  }
  function fmtNum(v) { return v >= 1000 ? (v / 1000).toFixed(1) + "k" : String(Math.round(v * 10) / 10); }

  // rows fixed once from the data, so zooming never reshuffles what is where
  function pack(items, rows) {
    var ends = [];
    items.forEach(function (it) {
      var r = -1;
      for (var i = 0; i < ends.length; i++) { if (ends[i] <= it.t0) { r = i; break; } }
      if (r < 0 && ends.length < rows) { r = ends.length; ends.push(0); }
      if (r < 0) { r = ends.indexOf(Math.min.apply(null, ends)); }
      ends[r] = Math.max(ends[r], it.t1);
      it.row = r;
    });
  }
  var groups = D.hosts.map(function (h, i) {
    return {name: h.name, role: h.role, host: h, index: i, transfers: [], marks: [], replies: [], wedges: [],
            storms: []};
  });
  var unlinked = {name: D.other_replies, role: "", host: null, index: -1, transfers: [], marks: [],
                  replies: [], wedges: [], storms: []};
  D.transfers.forEach(function (t) { groups[t.host].transfers.push(t); });
  D.marks.forEach(function (m) { groups[m.host].marks.push(m); });
  D.wedges.forEach(function (w) { groups[w.host].wedges.push(w); });
  D.storms.forEach(function (s) { groups[s.host].storms.push(s); });
  (D.failed_requests || []).forEach(function (f) {
    f.hosts.forEach(function (h) { (groups[h].failed = groups[h].failed || []).push(f); });
  });
  D.replies.forEach(function (r, i) {
    r.index = i;
    (r.host >= 0 ? groups[r.host] : unlinked).replies.push(r);
  });
  // a window with more rooms, lines or replies than the page draws one by one brings each lane's
  // counts per bucket ([bucket, what, n]): drawn as bars behind the rows that are drawn
  function bars(counts) {
    var by = {}, out = [];
    counts.forEach(function (c) {
      var b = by[c[0]];
      if (!b) { b = by[c[0]] = {k: c[0], parts: {}, total: 0}; out.push(b); }
      b.parts[c[1]] = (b.parts[c[1]] || 0) + c[2];
      b.total += c[2];
    });
    out.max = out.reduce(function (m, b) { return Math.max(m, b.total); }, 1);
    return out;
  }
  [["rooms_per_bucket", "roomBars"], ["marks_per_bucket", "markBars"], ["replies_per_bucket", "replyBars"]]
    .forEach(function (k) {
      (D[k[0]] || []).forEach(function (c) { (c.host >= 0 ? groups[c.host] : unlinked)[k[1]] = bars(c.counts); });
    });
  if (unlinked.replies.length || unlinked.replyBars) { groups.push(unlinked); }
  groups.forEach(function (g) {
    pack(g.transfers, TRANSFER_ROWS);
    pack(g.replies, REPLY_ROWS);
    var L = g.host ? g.host.load : null;
    g.maxReq = 1; g.maxThr = 1;
    if (L) {
      L.t.forEach(function (_, i) {
        g.maxReq = Math.max(g.maxReq, L.queue[i] || 0, L.running[i] || 0, L.bootstrap[i] || 0);
        g.maxThr = Math.max(g.maxThr, L.throughput[i] || 0);
      });
    }
    // a host that served no reply (a prefill host) has no replies lane
    g.lanes = g.host ? LANES.filter(function (l) { return l[0] !== "replies" || g.replies.length || g.replyBars; })
                     : [LANES[2]];
  });

  function render() {
    pending = false;
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var width = Math.max(600, svg.clientWidth || 1200), plotW = width - LABEL_W - PAD_R;
    var span = view.t1 - view.t0;
    function x(t) { return LABEL_W + (t - view.t0) / span * plotW; }
    function visible(t0, t1) { return t1 >= view.t0 && t0 <= view.t1; }
    var height = AXIS_H;
    groups.forEach(function (g) {
      g.y = height;
      height += HEAD_H + g.lanes.reduce(function (a, l) { return a + l[1]; }, 0) + GAP;
    });
    svg.setAttribute("height", height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    var defs = el("defs", {}, svg);
    var clip = el("clipPath", {id: "plot-clip"}, defs);
    el("rect", {x: LABEL_W, y: 0, width: plotW, height: height}, clip);

    // axis: a round step giving about ten ticks
    var steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5,
                 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];
    var step = steps.find(function (s) { return span / s <= 12; }) || 864e5;
    var axis = el("g", {"data-axis": "time"}, svg);
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      el("line", {x1: x(t), x2: x(t), y1: AXIS_H - 6, y2: height, "class": "tick"}, axis);
      label(axis, x(t) + 2, AXIS_H - 9, fmtTime(t, step < 1000));
    }
    label(axis, 4, AXIS_H - 9, "UTC", "lane-label");

    groups.forEach(function (g) {
      var gh = HEAD_H + g.lanes.reduce(function (a, l) { return a + l[1]; }, 0);
      var G = el("g", {"data-lane": g.host ? "host" : "unlinked", "data-host": g.host ? g.name : null,
                       "data-role": g.role}, svg);
      el("rect", {x: 0, y: g.y, width: width, height: gh, fill: g.index % 2 ? "#fcfcfd" : "#f6f7f9"}, G);
      label(G, 6, g.y + 13, g.name + (g.role ? " (" + g.role + ")" : ""), "host-label");
      var P = el("g", {"clip-path": "url(#plot-clip)"}, G);
      g.wedges.forEach(function (w) {
        if (!visible(w.t0, w.t1)) { return; }
        var r = el("rect", {x: x(w.t0), y: g.y, width: Math.max(3, x(w.t1) - x(w.t0)), height: gh,
                            fill: "rgba(201,42,42,.16)", stroke: "#c92a2a", "stroke-dasharray": "4 3",
                            "data-band": "wedge", "data-host": g.name}, P);
        tip(r, w.label);
        label(P, Math.max(x(w.t0), LABEL_W) + 3, g.y + 13, w.label, "band-label", "#c92a2a");
      });
      g.storms.forEach(function (s) {
        if (!visible(s.t0, s.t1)) { return; }
        var r = el("rect", {x: x(s.t0) - 1, y: g.y, width: Math.max(4, x(s.t1) - x(s.t0) + 2), height: gh,
                            fill: "rgba(230,119,0,.32)", "data-band": "abort-storm", "data-host": g.name}, P);
        tip(r, s.label);
        label(P, x(s.t1) + 4, g.y + 26, s.label, "band-label", "#d9480f");
      });
      var y = g.y + HEAD_H;
      g.lanes.forEach(function (lane) {
        var name = lane[0], h = lane[1];
        var L = el("g", {"data-lane": name, "data-host": g.name}, G);
        el("line", {x1: LABEL_W, x2: width - PAD_R, y1: y + h, y2: y + h, stroke: "#e9ecef"}, L);
        label(L, 14, y + h / 2 + 4, name, "lane-label");
        var C = el("g", {"clip-path": "url(#plot-clip)"}, L);
        if (name === "load") { drawLoad(C, g, y, h, x); }
        if (name === "transfers") { drawTransfers(C, g, y, h, x, visible); }
        if (name === "replies") { drawReplies(C, g, y, h, x, visible); }
        y += h;
      });
    });
    document.getElementById("range").textContent =
      fmtTime(view.t0, span < 60000) + " – " + fmtTime(view.t1, span < 60000) + " UTC (" + fmtSpan(span) + ")";
  }

  function drawLoad(C, g, y, h, x) {
    var L = g.host.load, bucket = g.host.bucket_ms;
    function line(values, max, color, dash, title) {
      var d = "", prev = null, alone = [];
      for (var i = 0; i < L.t.length; i++) {
        var v = values[i];
        if (v === null || v === undefined) { prev = null; continue; }
        var t = L.t[i] + bucket / 2;
        // a missing bucket is silence (a wedge shows as a gap), never a straight line across it
        var jump = prev === null || t - prev > bucket * 1.5;
        var py = y + h - 3 - v / max * (h - 8);
        d += (jump ? "M" : "L") + x(t).toFixed(1) + " " + py.toFixed(1);
        var next = i + 1 < L.t.length && values[i + 1] !== null && values[i + 1] !== undefined &&
                   L.t[i + 1] - L.t[i] <= bucket * 1.5;
        // a stats line between silent buckets: a path of one point draws nothing, a dot does
        if (jump && !next) { alone.push([x(t), py]); }
        prev = t;
      }
      if (d) { tip(el("path", {d: d, fill: "none", stroke: color, "stroke-width": 1.4, "stroke-dasharray": dash,
                               "data-series": title}, C), title); }
      alone.forEach(function (p) {
        tip(el("circle", {cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: 2.5, fill: color, "data-series": title}, C),
            title);
      });
    }
    line(L.throughput, g.maxThr, "#2f9e44", "3 2", "throughput (tok/s), max " + fmtNum(g.maxThr));
    if (g.role === "prefill") { line(L.bootstrap, g.maxReq, "#7048e8", null, "bootstrap_req"); }
    line(L.queue, g.maxReq, "#e8590c", null, "queue_req");
    line(L.running, g.maxReq, "#1c7ed6", null, "running_req");
    label(C, LABEL_W + 4, y + 10, "queue / running max " + fmtNum(g.maxReq) + " · throughput max " +
          fmtNum(g.maxThr) + " tok/s", "lane-label");
  }

  // stacked bars of a lane's counts per bucket, from the lane's bottom (or hanging from its top)
  function drawBars(C, list, colors, noun, y, h, x, visible, fromTop) {
    if (!list) { return; }
    var bucket = D.bucket_s * 1000;
    list.forEach(function (b) {
      var t0 = D.window[0] + b.k * bucket, t1 = t0 + bucket;
      if (!visible(t0, t1)) { return; }
      var x0 = x(t0), w = Math.max(1, x(t1) - x0 - 0.5), at = 0, text = [];
      Object.keys(b.parts).sort().forEach(function (what) {
        var bh = b.parts[what] / list.max * (h - 4);
        el("rect", {x: x0, y: fromTop ? y + 2 + at : y + h - 2 - at - bh, width: w, height: bh,
                    fill: colors[what] || "#868e96", opacity: 0.35, "data-count": noun}, C);
        at += bh;
        text.push(what.replace(/_/g, " ") + " " + b.parts[what]);
      });
      var r = el("rect", {x: x0, y: y, width: w, height: h, fill: "transparent"}, C);
      tip(r, b.total + " " + noun + " in " + fmtTime(t0) + " + " + fmtSpan(bucket) + ": " + text.join(", "));
    });
  }
  var MARK_COLORS = {abort: "#f59f00", failure: "#e03131", error: "#495057"};

  function drawTransfers(C, g, y, h, x, visible) {
    var rowH = (h - 6) / TRANSFER_ROWS;
    drawBars(C, g.roomBars, D.outcome_colors, "rooms", y, h, x, visible, false);
    drawBars(C, g.markBars, MARK_COLORS, "failure, abort and error lines", y, h / 3, x, visible, true);
    g.transfers.forEach(function (t) {
      if (!visible(t.t0, t.t1)) { return; }
      var r = el("rect", {x: x(t.t0), y: y + 3 + t.row * rowH, width: Math.max(1.5, x(t.t1) - x(t.t0)),
                          height: Math.max(1, rowH - 1), fill: D.outcome_colors[t.outcome] || "#868e96",
                          "data-room": t.room, "data-outcome": t.outcome}, C);
      var peer = t.peer ? (t.side === "sent" ? " to " : " from ") + t.peer : "";
      tip(r, "room " + t.room + " · " + t.outcome + " · " + t.side + peer + " · " + fmtTime(t.t0, true) +
          " (" + fmtSpan(t.t1 - t.t0) + ")");
    });
    // a failed request is one marker however many ranks logged it: a triangle wide enough to see and
    // to point at, where its lines are hairlines
    (g.failed || []).forEach(function (f) {
      if (!visible(f.t, f.t)) { return; }
      var cx = x(f.t);
      var r = el("path", {d: "M" + (cx - 6).toFixed(1) + " " + (y + 1) + "L" + (cx + 6).toFixed(1) + " " + (y + 1) +
                             "L" + cx.toFixed(1) + " " + (y + 12) + "Z",
                          fill: D.outcome_colors[f.outcome] || "#e03131", stroke: "#fff", "stroke-width": 0.8,
                          "data-failed-request": f.room === null ? f.rids.join(",") : f.room}, C);
      tip(r, "failed request" + (f.room !== null ? " room " + f.room : "") +
          (f.rids.length ? " rid " + f.rids.join(" / ") : "") + " · " + f.outcome + " (" + (f.reason || "?") +
          ") first on " + f.first_host + " · " + fmtTime(f.t, true) + " · " + f.lines + " lines from " + f.ranks +
          " ranks");
    });
    g.marks.forEach(function (m) {
      if (!visible(m.t, m.t)) { return; }
      var color = MARK_COLORS[m.mark] || MARK_COLORS.error;
      var r = el("rect", {x: x(m.t) - 0.75, y: y + 1, width: 1.5, height: h - 2, fill: color, "data-mark": m.mark}, C);
      tip(r, fmtTime(m.t, true) + (m.placed ? " (placed: " + m.placed + ")" : "") + " " + m.kind +
          (m.reason ? " (" + m.reason + ")" : "") + (m.room ? " room " + m.room : "") + "\n" + (m.message || ""));
    });
  }

  function drawReplies(C, g, y, h, x, visible) {
    var rowH = (h - 4) / REPLY_ROWS;
    drawBars(C, g.replyBars, D.class_colors, "replies", y, h, x, visible, false);
    // clean first, so corrupted replies are drawn on top and stay clickable
    var order = g.replies.filter(function (r) { return !r.corrupted; })
      .concat(g.replies.filter(function (r) { return r.corrupted; }));
    order.forEach(function (r) {
      if (!visible(r.t0, r.t1)) { return; }
      var e = el("rect", {x: x(r.t0), y: y + 2 + r.row * rowH,
                          width: Math.max(r.corrupted ? 4 : 1.5, x(r.t1) - x(r.t0)),
                          height: Math.max(1, rowH - 1), fill: D.class_colors[r.cls] || "#868e96",
                          "data-reply": r.index, "data-class": r.cls, "data-corrupted": r.corrupted ? "true" : "false",
                          "class": r.index === selected ? "selected" : null}, C);
      tip(e, r.cls + " · " + fmtTime(r.t0, true) + " · " + r.source + " " + r.turn);
    });
  }

  function schedule() { if (!pending) { pending = true; requestAnimationFrame(render); } }
  function clampView() {
    var span = Math.min(Math.max(view.t1 - view.t0, MIN_SPAN), (full.t1 - full.t0) * 1.02 + MIN_SPAN);
    var t0 = Math.min(Math.max(view.t0, full.t0 - span * 0.01), full.t1 - span * 0.02);
    view.t0 = t0; view.t1 = t0 + span;
  }
  function zoom(factor, at) {
    var span = view.t1 - view.t0;
    at = at === undefined ? view.t0 + span / 2 : at;
    var ns = span * factor;
    view.t0 = at - (at - view.t0) * ns / span; view.t1 = view.t0 + ns;
    clampView(); schedule();
  }
  function pan(frac) { var s = view.t1 - view.t0; view.t0 += s * frac; view.t1 += s * frac; clampView(); schedule(); }
  function timeAt(clientX) {
    var rect = svg.getBoundingClientRect(), plotW = rect.width - LABEL_W - PAD_R;
    return view.t0 + (clientX - rect.left - LABEL_W) / plotW * (view.t1 - view.t0);
  }

  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    zoom(Math.exp(e.deltaY * 0.0015), timeAt(e.clientX));
  }, {passive: false});
  svg.addEventListener("pointerdown", function (e) {
    drag = {x: e.clientX, t0: view.t0, t1: view.t1}; dragMoved = false;
  });
  window.addEventListener("pointermove", function (e) {
    if (!drag) { return; }
    var dx = e.clientX - drag.x;
    if (Math.abs(dx) > 3) { dragMoved = true; svg.classList.add("dragging"); }
    if (!dragMoved) { return; }
    var rect = svg.getBoundingClientRect(), per = (drag.t1 - drag.t0) / (rect.width - LABEL_W - PAD_R);
    view.t0 = drag.t0 - dx * per; view.t1 = drag.t1 - dx * per;
    clampView(); schedule();
  });
  window.addEventListener("pointerup", function () { drag = null; svg.classList.remove("dragging"); });
  svg.addEventListener("click", function (e) {
    if (dragMoved) { return; }
    var target = e.target.closest ? e.target.closest("[data-reply]") : null;
    if (target) { select(parseInt(target.getAttribute("data-reply"), 10), true); }
  });
  document.getElementById("zoom-in").addEventListener("click", function () { zoom(0.5); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom(2); });
  document.getElementById("pan-left").addEventListener("click", function () { pan(-0.25); });
  document.getElementById("pan-right").addEventListener("click", function () { pan(0.25); });
  document.getElementById("reset").addEventListener("click", function () {
    view = {t0: full.t0, t1: full.t1}; schedule();
  });
  window.addEventListener("resize", schedule);

  function row(dl, k, v) {
    if (v === null || v === undefined || v === "") { return; }
    el2("dt", dl).textContent = k;
    el2("dd", dl).textContent = String(v);
  }
  function el2(tag, parent, attrs) {
    var e = document.createElement(tag);
    for (var k in (attrs || {})) { e.setAttribute(k, attrs[k]); }
    parent.appendChild(e);
    return e;
  }
  function select(i, fromClick) {
    var r = D.replies[i];
    if (!r) { return; }
    selected = i;
    var box = document.getElementById("detail");
    while (box.firstChild) { box.removeChild(box.firstChild); }
    box.setAttribute("data-selected", String(i));
    box.setAttribute("data-class", r.cls);
    el2("h2", box).textContent = (r.corrupted ? "Corrupted reply: " : "Reply: ") + r.cls.replace(/_/g, " ");
    var dl = el2("dl", box);
    row(dl, "started", new Date(r.t0).toISOString());
    row(dl, "ended", new Date(r.t1).toISOString() + " (" + fmtSpan(r.t1 - r.t0) + ")");
    row(dl, "decode host", r.host_name ? r.host_name + (r.rank !== null ? " rank " + r.rank : "")
                                       : "not linked to a server request");
    row(dl, "bootstrap room", r.room);
    row(dl, "room outcome", r.outcome);
    row(dl, "transcript", r.source + " · session " + r.session + " · turn " + r.turn);
    row(dl, "finish reason", r.finish_reason);
    row(dl, "signatures", r.signatures.join(", "));
    row(dl, "linked by", r.link);
    el2("h3", box).textContent = "Evidence";
    el2("pre", box, {"data-evidence": ""}).textContent = r.evidence || "(no signature fired)";
    el2("h3", box).textContent = "Server warnings and errors around it (its decode host and room)";
    if (!r.events.length) {
      el2("div", box).textContent = r.corrupted ? "none within 30 s before and 5 s after"
                                                : "shown for corrupted replies only";
    } else {
      var table = el2("table", box, {"data-events": String(r.events.length)});
      var head = el2("tr", table);
      ["time (UTC)", "host", "kind", "reason", "message"].forEach(function (s) { el2("th", head).textContent = s; });
      r.events.forEach(function (ev) {
        var tr = el2("tr", table);
        [fmtTime(ev.t, true), ev.host, ev.kind, ev.reason || "", ev.message || ""].forEach(function (s) {
          el2("td", tr).textContent = s;
        });
      });
    }
    if (fromClick && history.replaceState) { history.replaceState(null, "", "#select=" + i); }
    if (r.t1 < view.t0 || r.t0 > view.t1) {
      var span = view.t1 - view.t0;
      view.t0 = (r.t0 + r.t1) / 2 - span / 2; view.t1 = view.t0 + span; clampView();
    }
    render();
  }
  // #view=<t0>,<t1> (ms since the epoch) and #select=<reply index> make a view shareable as a link
  function fromHash() {
    var v = /view=(\d+(?:\.\d+)?),(\d+(?:\.\d+)?)/.exec(location.hash);
    if (v) { view = {t0: parseFloat(v[1]), t1: parseFloat(v[2])}; clampView(); render(); }
    var m = /select=(\d+)/.exec(location.hash);
    if (m) { select(parseInt(m[1], 10), false); }
  }
  window.addEventListener("hashchange", fromHash);
  render();
  fromHash();
  document.body.setAttribute("data-rendered", String(groups.length));
})();
