// ensemble ui: each agent's time, tokens and cost across the runs of one
// ensemble (GET /api/run/across), a small bar chart an agent, drawn as SVG
// by hand. Read when opened: the run's first screen does not wait for it.
"use strict";

(function () {
  const UI = (window.EnsembleUI = window.EnsembleUI || {});
  const SVG = "http://www.w3.org/2000/svg";
  const W = 200, H = 40;
  const metrics = {
    latency: { label: "time per execution", of: (a) => (a.executions ? a.seconds / a.executions : null), fmt: (v) => (v < 1 ? +(v * 1000).toPrecision(2) + " ms" : UI.fmtDur(v)) },
    tokens: { label: "tokens", of: (a) => a.input_tokens + a.output_tokens, fmt: (v) => String(Math.round(v)) },
    cost: { label: "cost", of: (a) => a.cost, fmt: (v) => "$" + v.toFixed(4) },
  };
  function svgEl(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
    for (const k of kids) e.append(k);
    return e;
  }
  // chart is the bars of one agent's values across runs, the run shown
  // marked; a bar opens its run.
  function chart(st, agent, runs, m) {
    const vals = runs.map((r) => (r.agents[agent] ? m.of(r.agents[agent]) : null));
    const top = Math.max(0, ...vals.filter((v) => v !== null));
    const bw = W / Math.max(runs.length, 1);
    const svg = svgEl("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, "data-chart-agent": agent });
    svg.append(svgEl("line", { x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5, class: "axis" }));
    runs.forEach((r, i) => {
      const v = vals[i];
      if (v === null) return;
      const h = top > 0 ? Math.max(1, (v / top) * (H - 4)) : 1;
      const bar = svgEl("rect", { x: i * bw + 1, y: H - h, width: Math.max(1, bw - 2), height: h, "data-run": r.id, class: "bar-run" + (r.id === st.id ? " current" : "") },
        svgEl("title", {}, document.createTextNode(`${r.id}: ${m.fmt(v)}${r.partial ? " (its last turns: counting)" : ""}`)));
      bar.addEventListener("click", () => { location.hash = `#/run/${st.db}/${encodeURIComponent(r.id)}`; });
      svg.append(bar);
    });
    const known = vals.filter((v) => v !== null);
    const mean = known.length ? known.reduce((s, v) => s + v, 0) / known.length : 0;
    const mine = vals[runs.findIndex((r) => r.id === st.id)];
    const said = known.length ? (mine !== null && mine !== undefined ? `this run ${m.fmt(mine)} · ` : "") + `mean ${m.fmt(mean)} over ${known.length} run${known.length === 1 ? "" : "s"}` : "it did not run";
    return UI.el("div", { class: "across-row", "data-across-agent": agent },
      UI.el("div", {}, UI.el("div", { class: "name", text: agent }), UI.el("div", { class: "muted", text: said })), svg);
  }
  UI.acrossCard = function (st) {
    const { el, api, q } = UI;
    const body = el("div", { "data-field": "across-body" }, el("p", { class: "muted", text: "Loading…" }));
    const box = el("details", { class: "card", id: "across", "data-field": "across" },
      el("summary", { text: "Agents across the runs of this ensemble: time, tokens, cost" }), body);
    let data = null, metric = "latency";
    const draw = () => {
      const agents = [...new Set(data.runs.flatMap((r) => Object.keys(r.agents)))].sort();
      const pick = el("div", { class: "metric" }, Object.entries(metrics).map(([k, m]) =>
        el("button", { type: "button", "data-metric": k, "aria-pressed": String(k === metric), class: k === metric ? "primary" : null, text: m.label,
          onclick: () => { metric = k; draw(); } })));
      UI.put(body,
        el("p", { class: "muted", text: `The last ${data.runs.length} of the ${data.total} runs of ${data.ensemble} in this database, oldest first; the run shown is dark. A bar opens its run.` }),
        pick, agents.length ? agents.map((a) => chart(st, a, data.runs, metrics[metric])) : el("p", { class: "muted", text: "No agent ran." }));
    };
    box.addEventListener("toggle", async () => {
      if (!box.open || data) return;
      try {
        data = await api("/api/run/across?" + q({ db: st.db, id: st.id }));
        draw();
      } catch (e) {
        body.replaceChildren(el("p", { class: "error", text: e.message }));
      }
    });
    return box;
  };
})();
