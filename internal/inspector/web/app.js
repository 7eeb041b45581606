// ensemble ui: the page. Plain JavaScript, no build step, nothing fetched
// but this server's API. Routes: #/ (the runs), #/run/DB/ID (a run), #/tests… (tests.js).
"use strict";

(function () {
  const params = new URLSearchParams(location.search);
  if (params.get("token")) sessionStorage.setItem("ensemble-token", params.get("token"));
  const token = params.get("token") || sessionStorage.getItem("ensemble-token") || "";
  // ui --open opens the page with a one-time code, which is exchanged once
  // for a cookie holding the token (the page cannot read it; the server
  // takes it from requests that carry X-Ensemble-Cookie).
  const code = params.get("code");
  const main = document.getElementById("main");
  const crumb = document.getElementById("crumb");
  const live = document.getElementById("live");
  const PAGE = 50;
  // The keys of a record's fields (the Go package state's RecordKeys, which
  // a test holds this list to): a record's other keys are its details.
  const RECORD_KEYS = ["turn_number", "agent_name", "instance", "of", "execution", "skipped", "input_data", "output_data", "error", "stderr", "execution_time", "timestamp", "stop_reason", "usage", "handles"];
  let timer = null; // the poll of the current view
  let view = 0;     // bumped at every route: a stale poll does nothing

  // --- helpers ---
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  async function api(path, body) {
    const opts = { headers: token ? { "X-Ensemble-Token": token } : { "X-Ensemble-Cookie": "1" } };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    const data = await r.json().catch(() => ({ error: r.statusText }));
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }
  // put replaces box's children with kids, leaving out the null ones.
  function put(box, ...kids) { box.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false)); }
  const q = (o) => new URLSearchParams(o).toString();
  function fmtDur(s) {
    if (s === undefined || s === null) return "";
    if (s < 1) return Math.round(s * 1000) + " ms";
    if (s < 90) return s.toFixed(1) + " s";
    if (s < 5400) return (s / 60).toFixed(1) + " min";
    return (s / 3600).toFixed(1) + " h";
  }
  function fmtTime(t) {
    if (!t || t.startsWith("0001")) return "";
    const d = new Date(t);
    return d.toLocaleString();
  }
  function fmtUsage(u) {
    if (!u || !u.requests) return "";
    let s = `${u.requests} req, ${u.input_tokens + u.output_tokens} tok`;
    if (u.cost) s += `, $${u.cost.toFixed(4)}`;
    return s;
  }
  function pretty(v) {
    if (v === undefined) return "";
    if (typeof v === "string") return v;
    return JSON.stringify(v, null, 2);
  }
  // statusNote says more of a run's status, where its badge is not all.
  function statusNote(r) {
    if (r.status === "failed") return `completed; ${r.failures} agent${r.failures > 1 ? "s" : ""} failed last`;
    if (r.status === "suspended") return "waits for an answer";
    if (r.status === "unfinished") return "stopped before it ended: resume goes on";
    const limits = { max_total_turns: "stopped at its turn limit", timeout: "stopped at its timeout", budget_exceeded: "stopped: a budget was spent", cancelled: "interrupted: resume goes on", expectation_failed: "completed, but an expectation of its final state is false", strict_warning: "stopped by --strict: an expression read a key its value does not have" };
    if (limits[r.status]) return limits[r.status];
    if (r.completion_reason && r.completion_reason !== r.status && r.status !== "running") return r.completion_reason;
    return "";
  }
  function parses(v) { try { JSON.parse(v); return true; } catch { return false; } }
  function badge(status) { return el("span", { class: "badge " + status, text: status }); }
  function stopPoll() { if (timer) clearTimeout(timer); timer = null; }
  function poll(fn, v) {
    const tick = async () => {
      if (v !== view) return;
      try { await fn(); live.textContent = "live · " + new Date().toLocaleTimeString(); }
      catch (e) { live.textContent = "update failed: " + e.message; }
      if (v === view) timer = setTimeout(tick, 1000);
    };
    timer = setTimeout(tick, 1000);
  }

  // tests.js (the test runs' pages) builds with these.
  window.ensembleUI = { el, api, put, q, fmtDur, fmtTime, badge, pretty, diffView, main, crumb, current: () => view };
  // The helpers the page's other scripts (graph.js, search.js, chart.js)
  // use, and its links (links.js).
  const UI = (window.EnsembleUI = window.EnsembleUI || {});
  Object.assign(UI, { el, api, q, put, fmtDur, fmtUsage, badge, pretty });

  // --- routing ---
  // #/run/DB/ID is a run, #/run/DB/ID/AGENT/N[/T] one of its executions
  // (T its turn), #/run/DB/ID/turn:T one of its turns (UI.parseRoute).
  let shown = null; // the run shown: {db, id, st, v}
  function route() {
    const r = UI.parseRoute(location.hash || "#/");
    if (r && shown && shown.v === view && shown.db === r.db && shown.id === r.id) return shown.st.goTo(r); // the same run
    stopPoll();
    view++;
    const h = location.hash || "#/";
    if (h.startsWith("#/tests") && window.ensembleTests) return window.ensembleTests.route(h, view);
    if (r) return showRun(r, view);
    return showRuns(view);
  }
  window.addEventListener("hashchange", route);

  // --- the runs ---
  const filters = { q: "", status: "", db: "" };
  async function showRuns(v) {
    crumb.textContent = "runs";
    const search = el("input", { type: "search", placeholder: "search id, ensemble, batch, parent", value: filters.q, "aria-label": "search" });
    const status = el("select", { "aria-label": "status" },
      ["", "running", "suspended", "completed", "failed", "unfinished", "cancelled", "timeout", "max_total_turns", "budget_exceeded", "expectation_failed", "strict_warning"]
        .map((s) => el("option", { value: s, text: s || "any status", selected: s === filters.status })));
    const dbSel = el("select", { "aria-label": "database" }, el("option", { value: "", text: "every database" }));
    const tbody = el("tbody");
    const msg = el("p", { class: "muted" });
    main.replaceChildren(
      el("div", { class: "filters" }, search, status, dbSel),
      el("table", { id: "runs" },
        el("thead", {}, el("tr", {}, ["run", "ensemble", "started", "status", "turns", "duration", "usage", "batch", "parent"].map((h) => el("th", { text: h })))),
        tbody),
      msg);
    let dbsShown = false;
    const load = async () => {
      const p = {};
      if (filters.q) p.q = filters.q;
      if (filters.status) p.status = filters.status;
      if (filters.db) p.db = filters.db;
      const data = await api("/api/runs?" + q(p));
      if (v !== view) return;
      if (!dbsShown) {
        dbsShown = true;
        data.dbs.forEach((d, i) => dbSel.append(el("option", { value: String(i), text: d, selected: String(i) === filters.db })));
      }
      tbody.replaceChildren(...data.runs.slice().reverse().map((r) => el("tr", {
        "data-run-id": r.id, "data-status": r.status, "data-db": r.db,
        onclick: () => { location.hash = `#/run/${r.db}/${encodeURIComponent(r.id)}`; },
      },
      el("td", {}, el("a", { href: `#/run/${r.db}/${encodeURIComponent(r.id)}`, text: r.id }), data.dbs.length > 1 ? el("div", { class: "muted", text: r.db_path }) : null),
      el("td", { text: r.ensemble }),
      el("td", { text: fmtTime(r.started_at) }),
      el("td", {}, badge(r.status), statusNote(r) ? el("div", { class: "muted", text: statusNote(r) }) : null,
        r.job && r.job.startsWith("error") ? el("div", { class: "error", text: r.job }) : null),
      el("td", { class: "num", text: r.turns }),
      el("td", { class: "num", text: fmtDur(r.duration_seconds) }),
      el("td", { class: fmtUsage(r.usage) ? "" : "muted", text: (fmtUsage(r.usage) || "—") + (r.partial ? " (counting…)" : "") }),
      el("td", { text: r.batch || "" }),
      el("td", {}, r.parent ? el("a", { href: `#/run/${r.db}/${encodeURIComponent(r.parent)}`, text: `${r.parent} @ ${r.parent_turn}`, onclick: (e) => e.stopPropagation() }) : ""))));
      msg.textContent = data.runs.length ? "" : "No run matches.";
    };
    const reload = () => load().catch((e) => { msg.className = "error"; msg.textContent = e.message; });
    search.addEventListener("input", () => { filters.q = search.value.trim(); reload(); });
    status.addEventListener("change", () => { filters.status = status.value; reload(); });
    dbSel.addEventListener("change", () => { filters.db = dbSel.value; reload(); });
    await reload();
    poll(load, v);
  }

  // --- a run ---
  async function showRun(target, v) {
    const { db, id } = target;
    crumb.replaceChildren(el("a", { href: "#/", text: "runs" }), " / ", id);
    const root = el("div", { id: "run", "data-run-id": id, "data-db": db });
    main.replaceChildren(root);
    const st = { db, id, turns: [], last: 0, firstLoaded: 0, loadedTo: 0, follow: true, data: null, selected: null };
    shown = { db, id, st, v };
    const head = el("div", { class: "card" });
    const questions = el("div");
    const graph = el("div", { class: "card graph" }, el("h2", { text: "Graph" }));
    const timeline = el("div", { class: "card" });
    const execution = el("div", { class: "card", id: "execution" }, el("p", { class: "muted", text: "Choose an execution in the timeline." }));
    root.append(head, questions, graph, el("div", { class: "layout" }, el("div", {}, timeline), el("div", {}, UI.searchCard(st), execution, UI.acrossCard(st))));
    const expanded = new Set();

    const fetchRun = () => api("/api/run?" + q({ db, id }));
    const fetchTurns = (after) => api("/api/run/turns?" + q({ db, id, after, limit: PAGE }));
    async function loadRun(got) {
      const data = await (got || fetchRun());
      if (v !== view) return;
      st.data = data;
      root.dataset.status = data.run.status;
      renderHead(head, data);
      renderQuestions(questions, data, st);
      renderGraph(graph, data, expanded, select);
      st.last = data.run.turns;
    }
    async function loadTurns(after, replace, got) {
      const page = await (got || fetchTurns(after));
      if (v !== view) return;
      if (replace) st.turns = page.turns;
      else st.turns = st.turns.concat(page.turns);
      st.last = page.last;
      st.firstLoaded = st.turns.length ? st.turns[0].turn : 0;
      st.loadedTo = st.turns.length ? st.turns[st.turns.length - 1].turn : after;
      renderTimeline(timeline, st, loadTurns, select);
    }
    st.open = (agent, n, turn) => select(agent, n, turn);
    // goTo shows what a link of this run names: an execution, a turn.
    st.goTo = (r) => {
      if (r.agent) select(r.agent, r.n, r.turn, true);
      else if (r.turn) UI.showTurn(st, r.turn, loadTurns);
    };
    function select(agent, n, turn, fromLink) {
      if (!fromLink) UI.linkTo(st, agent, n, turn);
      st.selected = `${agent}#${n}`;
      timeline.querySelectorAll(".bar.selected").forEach((b) => b.classList.remove("selected"));
      const b = timeline.querySelector(`[data-execution="${CSS.escape(st.selected)}"]`);
      if (b) b.classList.add("selected");
      showExecution(execution, st, agent, n, turn);
    }
    try {
      // The run and its first turns are asked for at once (one round trip
      // for the first screen), then shown in order: the timeline marks a
      // fork's copied turns from the run.
      // A link to a turn past the first page opens that page.
      const from = UI.firstTurnOf(target, PAGE);
      const run = fetchRun(), turns = fetchTurns(from);
      turns.catch(() => {}); // awaited below; a failure of the run's is the one said
      await loadRun(run);
      await loadTurns(from, true, turns);
      if (window.ensembleTests) window.ensembleTests.runNote(root, db, id, v);
      if (target.agent || target.turn) st.goTo(target);
    } catch (e) {
      root.replaceChildren(el("p", { class: "error", text: e.message }));
      return;
    }
    poll(async () => {
      const before = st.last;
      await loadRun();
      // New turns are appended while the page shows the run's end.
      if (st.last > before || st.loadedTo < st.last) {
        if (st.loadedTo >= before && st.turns.length < 10 * PAGE) await loadTurns(st.loadedTo, false);
        else renderTimeline(timeline, st, loadTurns, select);
      }
    }, v);
  }

  function renderHead(head, data) {
    const r = data.run, h = data.head;
    const item = (label, value, cls) => el("div", { class: cls }, el("b", { text: label }), value);
    put(head,
      el("h2", {}, `${r.ensemble} · ${r.id} `, badge(r.status)),
      el("div", { class: "summary" },
        item("completion reason", r.completion_reason || (r.status === "running" ? "none yet: it is running" : "none: it stopped before it ended")),
        item("started", fmtTime(r.started_at)),
        item("saved", fmtTime(r.saved_at)),
        item("duration", fmtDur(r.duration_seconds)),
        item("turns", String(r.turns)),
        item("usage", (fmtUsage(r.usage) || "none") + (r.partial ? " (its last turns: counting the rest…)" : "")),
        item("ensemble file", h.ensemble.path, "wide"),
        r.batch ? item("batch", r.batch) : null,
        r.parent ? item("forked from", el("a", { href: `#/run/${r.db}/${encodeURIComponent(r.parent)}`, text: `${r.parent} at turn ${r.parent_turn}` })) : null,
        item("input", el("span", { title: h.input, text: h.input.length > 120 ? h.input.slice(0, 120) + "…" : h.input }))),
      h.stopped && h.stopped.errors && h.stopped.errors.length ? el("div", { class: "error", "data-field": "stopped" },
        el("b", { text: `The turn it cut short (${r.completion_reason || "stopped"}), not saved as a turn: resume runs it again` }),
        h.stopped.errors.map((e) => el("p", { text: `turn ${e.turn_number} · ${e.agent_name}: ${e.message}` }))) : null,
      renderExpectations(h.stopped && h.stopped.expectations),
      data.job_error ? el("p", { class: "error", "data-field": "job-error",
        text: "This run, gone on with in the background by this page, stopped: " + data.job_error + ". See what it saved below; resume on the command line tells more." }) : null,
      data.warnings && data.warnings.length ? el("div", { class: "warnings", "data-field": "warnings" },
        el("b", { text: data.warnings_count > data.warnings.length ? `Warnings (the first ${data.warnings.length} of ${data.warnings_count})` : "Warnings" }),
        data.warnings.map((w) => el("p", { "data-kind": w.kind || "condition", text: `turn ${w.turn_number} · ${w.agent_name}: ${w.message}` }))) : null,
      data.graph.changed ? el("p", { class: "muted", text: "The ensemble file changed since this run was saved: the graph is the file as it is now." }) : null,
      data.graph.error ? el("p", { class: "muted", text: "The graph is the agents the history names: " + data.graph.error }) : null);
  }

  // renderExpectations is the run's expectations that did not hold, each
  // with its expression, where it was written, why it could not be
  // evaluated, and the values it read from the final state; null when
  // every one held (or none was checked).
  function renderExpectations(list) {
    const failed = (list || []).filter((x) => !x.held);
    if (!failed.length) return null;
    const value = (v) => {
      if (v.missing) return "missing";
      const s = typeof v.value === "string" && !v.cut ? JSON.stringify(v.value) : (typeof v.value === "string" ? v.value : JSON.stringify(v.value));
      return s === undefined ? "null" : s;
    };
    return el("div", { class: "error", "data-field": "expectations" },
      el("b", { text: failed.length === list.length ? (failed.length === 1 ? "The expectation of its final state is false" : `The ${failed.length} expectations of its final state are false`) :
        `${failed.length} of its ${list.length} expectations of its final state ${failed.length === 1 ? "is" : "are"} false` }),
      failed.map((x) => el("div", { class: "expectation", "data-expectation": x.expression },
        el("p", {}, el("code", { text: x.expression }), x.where ? el("span", { class: "muted", text: ` (${x.where})` }) : null),
        x.error ? el("p", { "data-field": "expectation-error", text: x.error }) : null,
        x.values && x.values.length ? el("ul", {}, x.values.map((v) => el("li", { "data-path": v.path },
          el("code", { text: v.path }), " = ", el("code", { text: value(v) }), v.cut ? " (cut)" : null))) : null)));
  }

  function renderQuestions(box, data, st) {
    const qs = data.questions || [];
    const key = JSON.stringify(qs.map((x) => x.agent)) + data.run.status;
    if (box.dataset.key === key) return; // keep what is being typed
    box.dataset.key = key;
    if (data.questions_error) {
      box.replaceChildren(el("div", { class: "card" }, el("h2", { text: "Waiting for a person" }), el("p", { class: "error", text: data.questions_error })));
      return;
    }
    if (!qs.length || data.run.status !== "suspended") { box.replaceChildren(); return; }
    const msg = el("p", { class: "muted" });
    const form = el("form", { id: "answer", class: "card" }, el("h2", { text: "Waiting for a person" }),
      qs.map((x) => el("div", { class: "q" },
        el("label", { for: "answer-" + x.agent }, el("b", { text: x.agent }), ": ", x.question),
        x.dependencies && Object.keys(x.dependencies).length ? el("details", {}, el("summary", { text: "what it is given" }), el("pre", { text: pretty(x.dependencies) })) : null,
        x.deadline ? el("p", { class: "muted", text: "Waits until " + new Date(x.deadline).toLocaleString() + "; then its on_timeout applies." }) : null,
        el("textarea", { name: x.agent, id: "answer-" + x.agent, required: true, placeholder: "the answer: text, or JSON" }))),
      el("button", { type: "submit", class: "primary", text: "Answer and resume" }), msg);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const answers = {};
      for (const t of form.querySelectorAll("textarea")) answers[t.name] = t.value;
      // An answer that looks like JSON but is none would go as text: say
      // so once, and send it as it is at the second press.
      const bad = Object.entries(answers).filter(([, v]) => /^\s*[{\[]/.test(v) && !parses(v)).map(([k]) => k);
      const asked = bad.join("\n");
      if (bad.length && form.dataset.warned !== asked) {
        form.dataset.warned = asked;
        msg.className = "error";
        msg.textContent = `The answer for ${bad.join(", ")} looks like JSON but does not parse: it would be sent as text. Fix it, or press again to send it as text.`;
        return;
      }
      form.querySelector("button").disabled = true;
      msg.className = "muted"; msg.textContent = "Resuming…";
      try {
        // The turn they answer: a run that has gone on since refuses them.
        await api("/api/run/answer?" + q({ db: st.db, id: st.id }), { answers, turns: data.run.turns });
        msg.textContent = "Resumed: the run goes on in the background.";
      } catch (e) {
        msg.className = "error"; msg.textContent = e.message;
        form.querySelector("button").disabled = false;
      }
    });
    box.replaceChildren(form);
  }

  // --- the graph (graph.js lays it out) ---
  // openOf is what clicking the node of agent a (at path) opens: its last
  // execution, or nothing when it never ran.
  function openOf(a, path, tally, open) {
    if (a.last) return () => open(a.last.agent, a.last.n, a.last.turn);
    const t = tally[path];
    if (!t || !t.executions) return null;
    return () => open(path, t.executions, t.last === "skipped" ? 0 : t.last_turn);
  }
  function nodeEl(a, prefix, expanded, rerender, open) {
    const path = prefix + a.name;
    const meta = [];
    if (a.kind) meta.push(a.kind);
    if (a.executions) meta.push(`${a.executions} run${a.executions > 1 ? "s" : ""}`);
    if (a.failures) meta.push(`${a.failures} failed`);
    if (a.skips) meta.push(`${a.skips} skipped`);
    const tally = (window.__tally || {});
    const go = openOf(a, path, prefix ? {} : tally, open);
    const n = el("div", { class: "node" + (go ? " opens" : ""), "data-agent": path, "data-status": a.status,
      title: `${path}: ${a.status.replace("_", " ")}` + (go ? " (click: its last execution)" : ""),
      onclick: go ? (ev) => { ev.stopPropagation(); go(); } : null },
      el("div", { class: "name", text: a.name }), el("div", { class: "meta", text: meta.join(" · ") || a.status.replace("_", " ") }),
      a.when ? el("div", { class: "when", "data-when": a.when, title: "when: " + a.when, text: "when: " + a.when }) : null);
    const expandable = (a.instances && a.instances.length) || (a.children && a.children.length);
    if (expandable) {
      const isOpen = expanded.has(path);
      const what = a.instances && a.instances.length ? `${a.instances.length} instances` : a.children.length > 1 ? `${a.children.length} child ensembles` : "child ensemble";
      n.append(el("button", { type: "button", class: "expand", "data-expand": path, "aria-expanded": String(isOpen), text: (isOpen ? "− " : "+ ") + what,
        onclick: (ev) => { ev.stopPropagation(); isOpen ? expanded.delete(path) : expanded.add(path); rerender(); } }));
      if (isOpen) {
        if (a.instances && a.instances.length) {
          n.append(el("div", { class: "instances" }, a.instances.map((i) => {
            let status, goI = null;
            if (prefix) { // a child's instance: the graph says
              const last = (a.instance_last || {})[i];
              status = (a.instance_status || {})[i] || "not_run";
              if (last) goI = (ev) => { ev.stopPropagation(); open(last.agent, last.n, last.turn); };
            } else {
              const t = tally[i] || {};
              status = t.last === "ok" ? "completed" : t.last || "not_run";
              if (t.executions) goI = (ev) => { ev.stopPropagation(); open(i, t.executions, t.last === "skipped" ? 0 : t.last_turn); };
            }
            return el("div", { class: "node" + (goI ? " opens" : ""), "data-agent": prefix + i, "data-status": status, title: `${i}: ${status.replace("_", " ")}`, text: i.slice(a.name.length), onclick: goI });
          })));
        }
        for (const c of a.children || []) {
          const dispatch = a.children.length > 1;
          n.append(el("div", { class: "child" + (dispatch && !c.ran ? " not-ran" : ""), "data-child": path + ":" + c.name },
            el("div", { class: "meta", text: "ensemble " + c.name + (dispatch ? (c.ran ? " (ran last)" : " (did not run last)") : "") }),
            el("div", { class: "child-layers" }, UI.byLayer(c.agents).map((col) => el("div", { class: "child-layer" },
              col.map((ca) => nodeEl(ca, path + "/", expanded, rerender, open)))))));
        }
      }
    }
    return n;
  }
  function renderGraph(box, data, expanded, open) {
    const g = data.graph;
    window.__tally = data.agents || {};
    const rerender = () => renderGraph(box, data, expanded, open);
    const key = JSON.stringify([g, data.agents, [...expanded]]);
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    UI.renderGraph(box, g, (a) => nodeEl(a, "", expanded, rerender, open), g.source === "file" ? "Graph" : "Agents (from the history)");
  }
  // --- the timeline: a row a turn, a bar an execution, placed by when it ran ---
  function recStatus(r) { return r.skipped ? "skipped" : r.error ? "failed" : "ok"; }
  function renderTimeline(box, st, loadTurns, select) {
    const rows = st.turns.map((t) => {
      const recs = t.records || [];
      const ends = recs.map((r) => new Date(r.timestamp).getTime());
      const starts = recs.map((r, i) => ends[i] - (r.execution_time || 0) * 1000);
      const t0 = Math.min(...starts), t1 = Math.max(...ends);
      const span = Math.max(t1 - t0, 1);
      // A fan-out's gathering record (its instances' outputs as one list,
      // which its dependents read) ran nothing itself: it is shown under
      // its instances, across them, and said to be what it is.
      const instancesOf = (r) => r.of ? [] : recs.filter((x) => x.of === r.agent_name);
      const bars = el("div", { class: "bars" }, recs.map((r, i) => {
        const id = `${r.agent_name}#${r.execution}`;
        const inst = instancesOf(r);
        const gather = inst.length > 0;
        let title = `${r.agent_name} execution ${r.execution}: ${fmtDur(r.execution_time)}${r.error ? " — " + r.error : ""}`;
        let text = `${r.agent_name} #${r.execution} · ${fmtDur(r.execution_time)}`;
        if (gather) {
          title = `${r.agent_name} execution ${r.execution}: the gathering of its ${inst.length} instances' outputs, in order, which its dependents read (it ran nothing itself)${r.error ? " — " + r.error : ""}`;
          text = `${r.agent_name} #${r.execution} · gathers ${inst.length} instance${inst.length > 1 ? "s" : ""}`;
        }
        const b = el("button", { type: "button", class: "bar " + recStatus(r) + (gather ? " gather" : "") + (st.selected === id ? " selected" : ""), "data-execution": id,
          "data-gather": gather ? String(inst.length) : null, title, text,
          onclick: () => select(r.agent_name, r.execution, t.turn) });
        if (recs.length > 1 && isFinite(span)) {
          let s0 = starts[i], s1 = ends[i];
          if (gather) { // across its instances
            s0 = Math.min(...inst.map((x) => starts[recs.indexOf(x)]));
            s1 = Math.max(...inst.map((x) => ends[recs.indexOf(x)]));
          }
          const w = gather ? Math.max((s1 - s0) / span * 100, 55) : Math.max(((s1 - s0) / span) * 60, 55);
          b.style.width = w.toFixed(1) + "%";
          b.style.marginLeft = ((s0 - t0) / span * (100 - w)).toFixed(1) + "%";
        }
        return { b, gather };
      }).sort((x, y) => x.gather - y.gather).map((x) => x.b));
      const run = (st.data && st.data.run) || {};
      const copied = run.parent && t.turn <= run.parent_turn;
      return el("div", { class: "turn" + (copied ? " copied" : ""), "data-turn": t.turn },
        el("span", { class: "no", title: copied ? `copied from ${run.parent}: it did not run again` : null },
          el("a", { href: UI.turnHref(st, t.turn), "data-turn-link": t.turn, text: "turn " + t.turn }), copied ? el("div", { class: "tag", text: "copied" }) : null),
        bars,
        el("button", { type: "button", "data-fork-turn": t.turn, title: `a new run whose first ${t.turn} turns are this run's, which goes on from there`, text: "run again from here",
          onclick: () => fork(st, t.turn) }));
    });
    const pager = el("div", { class: "pager" },
      el("span", { class: "muted", text: st.turns.length ? `turns ${st.firstLoaded}–${st.loadedTo} of ${st.last}` : "no turn yet" }),
      st.firstLoaded > 1 ? el("button", { type: "button", "data-page": "first", text: "first turns", onclick: () => loadTurns(0, true) }) : null,
      st.loadedTo < st.last ? el("button", { type: "button", "data-page": "more", text: "more", onclick: () => loadTurns(st.loadedTo, false) }) : null,
      st.loadedTo < st.last ? el("button", { type: "button", "data-page": "last", text: "last turns", onclick: () => loadTurns(Math.max(0, st.last - PAGE), true) }) : null);
    box.replaceChildren(el("h2", { text: "Timeline" }), el("div", { id: "timeline" }, rows), pager);
  }

  async function fork(st, turn) {
    try {
      const r = await api("/api/run/fork?" + q({ db: st.db, id: st.id }), { turn });
      location.hash = `#/run/${r.db}/${encodeURIComponent(r.id)}`;
    } catch (e) {
      alert("The fork failed: " + e.message);
    }
  }

  // --- an execution ---
  function lineDiff(a, b) {
    // The longest common subsequence of lines (bounded: long texts are
    // compared as they are).
    const x = a.split("\n"), y = b.split("\n");
    if (x.length * y.length > 4e6) return null;
    const n = x.length, m = y.length;
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    // Rows of [left, right], each [text, class]: a changed block's
    // removed and added lines side by side.
    const rows = [];
    let dels = [], adds = [];
    const flush = () => {
      for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
        rows.push([k < dels.length ? [dels[k], "del"] : null, k < adds.length ? [adds[k], "add"] : null]);
      }
      dels = []; adds = [];
    };
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { flush(); rows.push([[x[i], ""], [y[j], ""]]); i++; j++; }
      else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) { adds.push(y[j]); j++; }
      else { dels.push(x[i]); i++; }
    }
    flush();
    return rows;
  }
  function diffView(a, b, la, lb) {
    if (a === b) return el("p", { class: "muted", "data-field": "diff", text: "The same in both." });
    const rows = lineDiff(a, b);
    if (!rows) return el("p", { class: "muted", text: "Too long to compare line by line." });
    const cell = (c) => el("div", { class: "line " + (c ? c[1] : "gap"), text: c ? c[0] || " " : " " });
    return el("div", { class: "diff", "data-field": "diff" }, el("h3", { text: la }), el("h3", { text: lb }),
      rows.flatMap(([l, r]) => [cell(l), cell(r)]));
  }
  // childRun is the run of a child ensemble an execution of the agent at
  // path (in the run's turn) ran: a loop's iterations, each a list of its
  // agents' executions, which open in the panel. before counts, by agent,
  // the executions of the child's agents in the executions of path before
  // this one in the turn (a child's child: their numbers go on from there).
  function childRun(c, path, turn, st, before) {
    const runs = (c.earlier_iterations || []).concat([c]);
    const seen = {};
    const box = el("div", { "data-field": "child" }, el("h3", { text: `Child ensemble ${c.ensemble}: ${c.completion_reason || "unfinished"}` +
      (runs.length > 1 ? `, ${runs.length} iterations` : "") }));
    runs.forEach((run, k) => {
      const recs = run.conversation_history || [];
      box.append(el("div", { class: "child-run" }, runs.length > 1 ? el("span", { class: "muted", text: `iteration ${k + 1}` }) : null,
        recs.map((cr) => {
          const p = `${path}/${cr.agent_name}`;
          const m = (seen[p] = (seen[p] || 0) + 1) + ((before || {})[cr.agent_name] || 0);
          const id = `${p}#${m}`;
          const attrs = { class: "bar " + recStatus(cr) + (st.selected === id ? " selected" : ""),
            title: `${p}: the child's turn ${cr.turn_number}, ${fmtDur(cr.execution_time)}${cr.error ? " — " + cr.error : ""}`,
            text: `${cr.agent_name} · ${fmtDur(cr.execution_time)}` };
          return el("button", Object.assign(attrs, { type: "button", "data-execution": id, onclick: () => st.open(p, m, turn) }));
        })));
    });
    return box;
  }
  // gatherNote says, of a fan-out's gathering record, what it is (it is
  // found among the turn's records shown: instances name it as their of).
  function gatherNote(r, st) {
    const t = st.turns.find((x) => x.turn === r.turn_number);
    const inst = t ? (t.records || []).filter((x) => x.of === r.agent_name) : [];
    if (!inst.length) return null;
    return el("p", { class: "muted", "data-field": "gather", text: `The gathering of ${r.agent_name}'s ${inst.length} instances (${inst.map((x) => x.agent_name).join(", ")}): their outputs as one list, in order, which the agents that depend on ${r.agent_name} read. It ran nothing itself.` });
  }
  async function showExecution(box, st, agent, n, turn) {
    box.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
    delete box.dataset.shown;
    let ex;
    try { ex = await api("/api/run/execution?" + q({ db: st.db, id: st.id, agent, n, turn })); }
    catch (e) { box.replaceChildren(el("p", { class: "error", text: e.message })); return; }
    const r = ex.record;
    const section = (label, field, value) => el("div", {}, el("h3", { text: label }), el("pre", { "data-field": field, text: value }));
    // An error or stderr is shown when there is one; "none" is said once.
    const none = [r.error ? null : "error", r.stderr ? null : "stderr"].filter(Boolean);
    const known = new Set([...RECORD_KEYS, "child", "model_requests"]);
    const details = Object.fromEntries(Object.entries(r).filter(([k]) => !known.has(k)));
    const path = ex.path || r.agent_name;
    const tally = (st.data && st.data.agents && st.data.agents[agent]) || {};
    const count = ex.path ? ex.count : (tally.executions || 0);
    const others = [];
    for (let k = 1; k <= count; k++) if (k !== n) others.push(k);
    const cmp = el("select", { id: "compare", "data-compare": agent },
      el("option", { value: "", text: others.length ? `another execution of ${path}…` : `no other execution of ${path}` + (ex.path ? " in this turn" : "") }), others.map((k) => el("option", { value: k, text: "#" + k })));
    const diffBox = el("div");
    cmp.addEventListener("change", async () => {
      if (!cmp.value) { diffBox.replaceChildren(); return; }
      try {
        const o = await api("/api/run/execution?" + q({ db: st.db, id: st.id, agent, n: cmp.value, turn: ex.path ? ex.turn : 0 }));
        const text = (rec) => pretty(rec.output_data) + (rec.error ? "\nerror: " + rec.error : "");
        put(diffBox, el("h3", { text: "Output" }), o.slim ? el("p", { class: "muted", text: `#${cmp.value} is an earlier iteration of a loop: its input and output are not kept.` }) : null,
          diffView(text(o.record), text(r), `#${cmp.value} (turn ${o.record.turn_number})`, `#${n} (turn ${r.turn_number})`),
          el("h3", { text: "Input" }), diffView(pretty(o.record.input_data), pretty(r.input_data), `#${cmp.value}`, `#${n}`));
      } catch (e) { diffBox.replaceChildren(el("p", { class: "error", text: e.message })); }
    });
    box.dataset.shown = `${agent}#${n}`; // a hook for tests: what the panel shows
    put(box,
      el("h2", {}, ex.path ? `${path} · ${n} of ${ex.count} in turn ${ex.turn} · its ensemble's turn ${r.turn_number} ` : `${r.agent_name} · execution ${r.execution} · turn ${r.turn_number} `,
        badge(recStatus(r) === "ok" ? "completed" : recStatus(r))),
      ex.slim ? el("p", { class: "muted", "data-field": "slim", text: "An earlier iteration of a loop: a run keeps its timing, usage and error, not its input, output nor stderr." }) : null,
      el("div", { class: "summary" },
        ex.parent ? el("div", {}, el("b", { text: "run by" }), el("a", { href: "#", "data-parent": ex.parent.agent + "#" + ex.parent.n,
          text: `${ex.parent.agent} #${ex.parent.n} (turn ${ex.parent.turn})`, onclick: (ev) => { ev.preventDefault(); st.open(ex.parent.agent, ex.parent.n, ex.parent.turn); } })) : null,
        el("div", {}, el("b", { text: "took" }), fmtDur(r.execution_time)),
        el("div", {}, el("b", { text: "ended" }), fmtTime(r.timestamp)),
        el("div", {}, el("b", { text: "usage" }), fmtUsage(r.usage) || "none"),
        r.stop_reason ? el("div", {}, el("b", { text: "stop reason" }), r.stop_reason) : null,
        r.handles ? el("div", {}, el("b", { text: "handles" }), r.handles.map((h) => `${h.agent_name}#${h.execution}`).join(", ")) : null),
      !ex.path && !r.of ? gatherNote(r, st) : null,
      section("Output", "output", pretty(r.output_data)),
      r.error ? section("Error", "error", r.error) : null,
      ex.requests ? conversation(ex.requests, r.model_requests || {}) : null,
      section(ex.requests ? "Messages this execution added" : "Input as sent", "input", pretty(r.input_data)),
      r.stderr ? section("Stderr", "stderr", r.stderr) : null,
      none.length ? el("p", { class: "muted", "data-field": "none", text: `No ${none.join(" and no ")}.` }) : null,
      r.child ? childRun(r.child, path, ex.path ? ex.turn : r.turn_number, st, ex.child_before) : null,
      Object.keys(details).length ? section("Details (fallback, retries…)", "details", pretty(details)) : null,
      ex.memory ? section("Model messages and tool calls (the agent's memory after this turn)", "memory", pretty(ex.memory)) : null,
      el("div", { class: "compare" }, el("label", { for: "compare", text: "Compare with" }), cmp), diffBox);
  }

  // conversation shows an LLM execution's model requests as the model got
  // them: one block per request, its messages by role, text as text, tool
  // calls and results folded; parameters and usage above, raw JSON folded.
  function conversation(reqs, trace) {
    const text = (v) => el("div", { class: "msg-text", text: typeof v === "string" ? v : pretty(v) });
    const argText = (a) => { try { return pretty(JSON.parse(a)); } catch (e) { return String(a); } };
    const message = (m) => {
      const role = m.role || "?";
      const body = [];
      if (role === "tool") {
        body.push(el("details", { "data-tool-result": m.tool_call_id || "" },
          el("summary", { text: `result of ${m.tool_name || "tool"}${m.is_error ? " (error)" : ""}` }), text(m.content || "")));
      } else {
        if (m.content) body.push(text(m.content));
        for (const c of m.tool_calls || []) {
          body.push(el("details", { "data-tool-call": c.id || "" }, el("summary", { text: `calls ${c.name}` }), text(argText(c.arguments))));
        }
      }
      return el("div", { class: "msg msg-" + role, "data-role": role }, el("div", { class: "msg-role", text: role }), body);
    };
    const params = (x) => {
      const p = { model: x.model, profile: x.profile, provider: x.provider };
      if (x.temperature !== undefined) p.temperature = x.temperature;
      if (x.max_tokens) p.max_tokens = x.max_tokens;
      if (x.options) p.options = x.options;
      return Object.entries(p).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ");
    };
    // A request after the first repeats what the one before it sent: that
    // part is folded, and built only when opened.
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    const shown = (x, i) => {
      const msgs = x.messages || [];
      const prev = i > 0 ? reqs[i - 1].messages || [] : [];
      let k = 0;
      while (i > 0 && k < msgs.length && k < prev.length && same(msgs[k], prev[k])) k++;
      if (k < 2) return msgs.map(message);
      const fold = el("details", { "data-earlier": k }, el("summary", { text: `${k} messages, as request ${i} sent them` }));
      fold.addEventListener("toggle", () => { if (fold.open && fold.children.length === 1) fold.append(...msgs.slice(0, k).map(message)); });
      return [fold, ...msgs.slice(k).map(message)];
    };
    const blocks = reqs.map((x, i) => {
      let reply = null;
      if (x.reply) reply = message(x.reply);
      return el("div", { class: "request", "data-request": i + 1 },
        el("h4", { text: `Request ${i + 1} of ${reqs.length}` + (x.latency_ms !== undefined ? ` · ${fmtDur(x.latency_ms / 1000)}` : "") }),
        el("p", { class: "muted", "data-field": "params", text: params(x) }),
        el("p", { class: "muted", "data-field": "request-usage", text: (x.usage ? `${x.usage.input_tokens} in, ${x.usage.output_tokens} out` + (x.usage.cost ? `, $${x.usage.cost.toFixed(4)}` : "") : "no usage") + (x.stop_reason ? ` · ${x.stop_reason}` : "") }),
        x.error ? el("p", { class: "error", text: x.error }) : null,
        x.incomplete ? el("p", { class: "muted", text: "Part of the memory sent is not at hand (an agent of a child ensemble's memory is not kept)." }) : null,
        x.cut ? el("p", { class: "muted", "data-field": "cut", text: "The messages of this request are left out: the requests before it are as large as the page shows (the raw record has their ranges)." }) : null,
        shown(x, i),
        reply ? el("div", { class: "reply" }, el("div", { class: "muted", text: "reply" }), reply) : null,
        el("details", { "data-raw": i + 1 }, el("summary", { text: "raw JSON" }), el("pre", { text: pretty(x) })));
    });
    const offered = [];
    if (trace.tools) offered.push(el("details", { "data-field": "tools" }, el("summary", { text: "tools: " + trace.tools.map((t) => t.name).join(", ") }), el("pre", { text: pretty(trace.tools) })));
    if (trace.response_format) offered.push(el("details", { "data-field": "response-format" }, el("summary", { text: "response_format: " + trace.response_format.name }), el("pre", { text: pretty(trace.response_format) })));
    if (trace.memory_from) offered.push(el("p", { class: "muted", "data-field": "memory-from", text: `memory: ${trace.memory_from.messages} messages, as execution ${trace.memory_from.execution} (turn ${trace.memory_from.turn}) left them` }));
    return el("div", { class: "conversation", "data-field": "conversation" }, el("h3", { text: "Model requests, as sent" }), offered, blocks);
  }

  async function start() {
    if (code) {
      history.replaceState(null, "", location.pathname + location.hash);
      const r = await fetch("/auth/code?" + q({ code }), { method: "POST" }).catch(() => null);
      if (!r || !r.ok) {
        main.replaceChildren(el("p", { class: "error", text: "This link was used already or has expired: open the URL ui printed (it ends with ?token=…)." }));
        return;
      }
      sessionStorage.setItem("ensemble-cookie", "1");
    }
    if (!token && !sessionStorage.getItem("ensemble-cookie")) main.replaceChildren(el("p", { class: "error", text: "No token: open the URL ui printed (it ends with ?token=…)." }));
    else route();
  }
  start();
})();
