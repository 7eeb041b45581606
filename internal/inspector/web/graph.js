// ensemble ui: a run's graph, laid out in layers (the server's: agents that
// can run together share a column), drawn in an SVG that pans (drag) and
// zooms (wheel, buttons) and fits its box at first: nothing is clipped.
// Each agent is the HTML node app.js makes, in a foreignObject; each edge
// a path with its label (condition, on failure/always, optional, select).
"use strict";

(function () {
  const UI = (window.EnsembleUI = window.EnsembleUI || {});
  const SVG = "http://www.w3.org/2000/svg";
  const MARGIN = 16, VGAP = 22, MINGAP = 48, LABEL_MAX = 44;
  function svgEl(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v);
    for (const k of kids) if (k) e.append(k);
    return e;
  }
  // edgeLabel is what an edge says of itself: its condition, when it
  // fires, whether it is optional, what it delivers, how often.
  function edgeLabel(e) {
    const parts = [];
    if (e.condition) parts.push(e.condition);
    if (e.on_failure) parts.push("on failure");
    if (e.on_always) parts.push("on always");
    if (e.optional) parts.push("optional");
    if (e.select) parts.push("select: " + e.select);
    if (e.max_executions) parts.push("max " + e.max_executions);
    return parts.join(" · ");
  }
  // cut keeps a long label's start and end (a condition's comparison).
  const cut = (s) => (s.length > LABEL_MAX ? s.slice(0, LABEL_MAX / 2 - 1) + "…" + s.slice(s.length - LABEL_MAX / 2) : s);
  // columns are the agents by layer, each column ordered by where its
  // agents' dependencies are in the columns before (fewer crossings).
  function columns(agents, edges) {
    const cols = [];
    agents.forEach((a, i) => (cols[a.layer || 0] ||= []).push({ a, i }));
    const pos = new Map();
    const preds = new Map();
    for (const e of edges) if (!e.back) (preds.get(e.to) || preds.set(e.to, []).get(e.to)).push(e.from);
    const out = cols.filter(Boolean);
    for (const col of out) {
      const key = (x) => {
        const ps = (preds.get(x.a.name) || []).filter((p) => pos.has(p));
        return ps.length ? ps.reduce((s, p) => s + pos.get(p), 0) / ps.length : x.i / 1e6;
      };
      col.sort((x, y) => key(x) - key(y) || x.i - y.i);
      col.forEach((x, k) => pos.set(x.a.name, k));
    }
    return out.map((col) => col.map((x) => x.a));
  }
  // point is the point of the cubic curve from p0 to p1 (horizontal at
  // both ends) whose x is x.
  function curveAt(p0, p1, x) {
    const dx = Math.max(30, (p1.x - p0.x) / 2);
    const bx = (t) => (1 - t) ** 3 * p0.x + 3 * (1 - t) ** 2 * t * (p0.x + dx) + 3 * (1 - t) * t * t * (p1.x - dx) + t ** 3 * p1.x;
    let lo = 0, hi = 1;
    for (let k = 0; k < 30; k++) { const m = (lo + hi) / 2; if (bx(m) < x) lo = m; else hi = m; }
    const t = (lo + hi) / 2;
    return { x, y: (1 - t) ** 3 * p0.y + 3 * (1 - t) ** 2 * t * p0.y + 3 * (1 - t) * t * t * p1.y + t ** 3 * p1.y };
  }

  // byLayer is agents in columns by their layer (a child ensemble's, in
  // an expanded node).
  UI.byLayer = function (agents) {
    const cols = [];
    for (const a of agents) (cols[a.layer || 0] ||= []).push(a);
    return cols.filter(Boolean);
  };

  // render draws graph g into box; nodeOf makes an agent's HTML node.
  // box.graphView keeps the user's pan and zoom across the page's updates.
  UI.renderGraph = function (box, g, nodeOf, title) {
    const { el } = UI;
    const cols = columns(g.agents, g.edges);
    const svg = svgEl("svg", { class: "graph-svg", "data-field": "graph", role: "img", "aria-label": "the ensemble's graph" });
    const marker = (id, fill) => svgEl("marker", { id, viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svgEl("path", { d: "M0,0 L8,4 L0,8 z", fill }));
    const layers = { edges: svgEl("g", { class: "edges" }), nodes: svgEl("g", { class: "nodes" }), labels: svgEl("g", { class: "labels" }) };
    const world = svgEl("g", {}, layers.edges, layers.nodes, layers.labels);
    svg.append(svgEl("defs", {}, marker("arrow", "#8e96a3"), marker("arrow-failure", "#c0392b")), world);
    const fos = new Map();
    for (const col of cols) for (const a of col) {
      const div = el("div", { class: "fo" }, nodeOf(a));
      div.setAttribute("xmlns", "http://www.w3.org/1999/xhtml");
      const fo = svgEl("foreignObject", { x: 0, y: 0, width: 2000, height: 2000, "data-node": a.name });
      fo.append(div);
      layers.nodes.append(fo);
      fos.set(a.name, { fo, div });
    }
    const tools = el("div", { class: "graph-tools" },
      el("button", { type: "button", "data-graph": "fit", title: "show the whole graph", text: "fit" }),
      el("button", { type: "button", "data-graph": "in", title: "zoom in (or the wheel)", text: "+" }),
      el("button", { type: "button", "data-graph": "out", title: "zoom out", text: "−" }),
      el("span", { class: "muted", text: "drag to pan, wheel to zoom" }));
    box.replaceChildren(el("h2", { text: title }), tools, svg);
    // Sizes, once the nodes are laid out as HTML; labels measured as the
    // SVG draws them.
    const size = new Map();
    for (const [name, { div }] of fos) size.set(name, { w: Math.ceil(div.offsetWidth) + 2, h: Math.ceil(div.offsetHeight) + 2 });
    const probe = svgEl("text", { class: "edge-label", x: 0, y: -100 });
    world.append(probe);
    const textWidth = (t) => { probe.textContent = t; return probe.getComputedTextLength(); };
    const labels = g.edges.map((e) => { const t = edgeLabel(e); return { e, text: cut(t), full: t, w: t ? textWidth(cut(t)) + 12 : 0 }; });
    probe.remove();
    const lay = place(cols, size, labels);
    for (const [name, b] of lay.boxes) {
      const { fo } = fos.get(name);
      fo.setAttribute("x", b.x); fo.setAttribute("y", b.y); fo.setAttribute("width", b.w); fo.setAttribute("height", b.h);
    }
    drawLabels(drawEdges(labels, lay, layers.edges), lay, layers.labels);
    zoomable(box, svg, tools, { x: 0, y: lay.top, w: Math.max(lay.width, 1), h: Math.max(lay.height - lay.top, 1) });
  };

  // place puts the columns side by side, each centred on the tallest, the
  // gap before each as wide as the labels of the edges that enter it from
  // the column before.
  function place(cols, size, labels) {
    const colOf = new Map();
    cols.forEach((col, c) => col.forEach((a) => colOf.set(a.name, c)));
    const gapBefore = cols.map(() => MINGAP);
    for (const l of labels) {
      const c = colOf.get(l.e.to);
      if (!l.e.back && c !== undefined && colOf.get(l.e.from) === c - 1) gapBefore[c] = Math.max(gapBefore[c], l.w + 24);
    }
    const heights = cols.map((col) => col.reduce((s, a) => s + size.get(a.name).h, 0) + VGAP * (col.length - 1));
    const tallest = Math.max(0, ...heights);
    const boxes = new Map(), colX = [], colRight = [];
    let x = MARGIN;
    cols.forEach((col, c) => {
      if (c > 0) x += gapBefore[c];
      colX[c] = x;
      let y = MARGIN + (tallest - heights[c]) / 2;
      for (const a of col) {
        const s = size.get(a.name);
        boxes.set(a.name, { x, y, w: s.w, h: s.h });
        y += s.h + VGAP;
      }
      x += Math.max(...col.map((a) => size.get(a.name).w));
      colRight[c] = x;
    });
    return { colOf, gapBefore, boxes, colX, colRight, width: x + MARGIN, height: tallest + 2 * MARGIN, top: 0 };
  }

  // drawEdges draws each edge: between neighbouring columns from right to
  // left sides; longer ones over the graph, back ones (a loop) under it,
  // each in a channel of its own. It returns where their labels go, and
  // grows lay to hold the channels.
  function drawEdges(labels, lay, into) {
    const { colOf, gapBefore, boxes } = lay;
    const anchorY = (b) => b.y + Math.min(18, b.h / 2);
    let under = lay.height - MARGIN + 14, over = MARGIN - 16, back = 0;
    const placed = [];
    for (const l of labels) {
      const e = l.e, a = boxes.get(e.from), b = boxes.get(e.to);
      if (!a || !b) continue;
      let d, at;
      const ca = colOf.get(e.from), cb = colOf.get(e.to);
      const p0 = { x: a.x + a.w, y: anchorY(a) }, p1 = { x: b.x, y: anchorY(b) };
      if (!e.back && cb === ca + 1) {
        const dx = Math.max(30, (p1.x - p0.x) / 2);
        d = `M${p0.x},${p0.y} C${p0.x + dx},${p0.y} ${p1.x - dx},${p1.y} ${p1.x},${p1.y}`;
        at = curveAt(p0, p1, b.x - gapBefore[cb] / 2);
      } else if (!e.back && cb > ca) {
        const y = over, g1 = gapBefore[ca + 1], g2 = gapBefore[cb], x1 = p0.x + g1 / 2, x2 = p1.x - g2 / 2;
        over -= 18;
        d = `M${p0.x},${p0.y} C${p0.x + g1 / 4},${p0.y} ${x1 - g1 / 4},${y} ${x1},${y} L${x2},${y} C${x2 + g2 / 4},${y} ${p1.x - g2 / 4},${p1.y} ${p1.x},${p1.y}`;
        at = { x: (x1 + x2) / 2, y };
        lay.top = Math.min(lay.top, y - 10 - MARGIN);
      } else {
        // Out of the right of its column, under the graph, into the left
        // of its target's column: never across a node.
        const k = back++, ay = a.y + Math.min(26, a.h * 0.7), by = b.y + Math.min(26, b.h * 0.7);
        const xo = lay.colRight[ca] + 10 + 4 * k, xi = lay.colX[cb] - 10 - 4 * k, y = under, r = 6;
        under += 16;
        d = `M${a.x + a.w},${ay} L${xo - r},${ay} Q${xo},${ay} ${xo},${ay + r} L${xo},${y - r} Q${xo},${y} ${xo - r},${y} ` +
          `L${xi + r},${y} Q${xi},${y} ${xi},${y - r} L${xi},${by + r} Q${xi},${by} ${xi + r},${by} L${b.x},${by}`;
        at = { x: (xo + xi) / 2, y: y - 5 };
        lay.width = Math.max(lay.width, xo + MARGIN);
        lay.height = Math.max(lay.height, y + MARGIN);
      }
      into.append(svgEl("path", { d, class: "edge" + (e.on_failure ? " failure" : "") + (e.back ? " back" : ""), "data-edge": `${e.from}>${e.to}`,
        "marker-end": `url(#${e.on_failure ? "arrow-failure" : "arrow"})`, "stroke-dasharray": e.condition || e.optional ? "4 3" : null },
      svgEl("title", {}, document.createTextNode(`${e.from} → ${e.to}${l.full ? ": " + l.full : ""}`))));
      if (l.text) placed.push({ l, at });
    }
    return placed;
  }

  // drawLabels draws the labels where drawEdges put them, nudged apart
  // where they would overlap.
  function drawLabels(placed, lay, into) {
    placed.sort((p, q) => p.at.x - q.at.x || p.at.y - q.at.y);
    const taken = [];
    for (const p of placed) {
      let y = p.at.y;
      const hit = () => taken.find((t) => Math.abs(t.x - p.at.x) < (t.w + p.l.w) / 2 && Math.abs(t.y - y) < 14);
      for (let k = 0; k < 50 && hit(); k++) y = hit().y + 14;
      taken.push({ x: p.at.x, y, w: p.l.w });
      const bg = svgEl("rect", { x: p.at.x - p.l.w / 2, y: y - 8, width: p.l.w, height: 15, rx: 3, class: "edge-label-bg" });
      const t = svgEl("text", { x: p.at.x, y: y + 3, "text-anchor": "middle", class: "edge-label" + (p.l.e.on_failure ? " failure" : ""), "data-edge-label": `${p.l.e.from}>${p.l.e.to}` },
        document.createTextNode(p.l.text), svgEl("title", {}, document.createTextNode(p.l.full)));
      into.append(svgEl("g", {}, bg, t));
      lay.height = Math.max(lay.height, y + 8 + MARGIN);
    }
  }

  // zoomable fits svg to its box (fit is the whole drawing) and lets a
  // person pan and zoom it; box.graphView keeps what they chose.
  function zoomable(box, svg, tools, fit) {
    const avail = Math.max(200, svg.clientWidth || box.clientWidth || 600);
    const scale = Math.min(1, avail / fit.w);
    svg.style.height = Math.round(Math.min(Math.max(fit.h * scale, 120), 560)) + "px";
    let vb = box.graphView && box.graphView.fitW === fit.w && box.graphView.fitH === fit.h ? box.graphView.vb : null;
    const set = (v) => {
      vb = v;
      box.graphView = v ? { vb: v, fitW: fit.w, fitH: fit.h } : null;
      const s = v || fit;
      svg.setAttribute("viewBox", `${s.x} ${s.y} ${s.w} ${s.h}`);
      svg.dataset.zoomed = v ? "true" : "false";
    };
    set(vb);
    const cur = () => vb || fit;
    const toSvg = (cx, cy) => {
      const m = svg.getScreenCTM();
      if (!m) return { x: 0, y: 0 };
      const p = new DOMPoint(cx, cy).matrixTransform(m.inverse());
      return { x: p.x, y: p.y };
    };
    const zoom = (f, cx, cy) => {
      const v = cur(), r = svg.getBoundingClientRect();
      const p = cx === undefined ? { x: v.x + v.w / 2, y: v.y + v.h / 2 } : toSvg(cx, cy);
      const w = Math.min(Math.max(v.w * f, 40), fit.w * 20), k = w / v.w;
      set({ x: p.x - (p.x - v.x) * k, y: p.y - (p.y - v.y) * k, w, h: v.h * k });
      return r;
    };
    svg.addEventListener("wheel", (ev) => { ev.preventDefault(); zoom(Math.exp(ev.deltaY * 0.0015), ev.clientX, ev.clientY); }, { passive: false });
    let drag = null;
    svg.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0 || ev.target.closest(".node, button")) return;
      drag = { x: ev.clientX, y: ev.clientY, v: cur(), m: svg.getScreenCTM() };
      svg.setPointerCapture(ev.pointerId);
      svg.classList.add("dragging");
    });
    svg.addEventListener("pointermove", (ev) => {
      if (!drag || !drag.m) return;
      const k = 1 / drag.m.a;
      set({ x: drag.v.x - (ev.clientX - drag.x) * k, y: drag.v.y - (ev.clientY - drag.y) * k, w: drag.v.w, h: drag.v.h });
    });
    const end = () => { drag = null; svg.classList.remove("dragging"); };
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
    tools.querySelector('[data-graph="fit"]').addEventListener("click", () => set(null));
    tools.querySelector('[data-graph="in"]').addEventListener("click", () => zoom(1 / 1.25));
    tools.querySelector('[data-graph="out"]').addEventListener("click", () => zoom(1.25));
  }
})();
