// ensemble ui: the test runs (test --state). Routes: #/tests (the test
// runs), #/tests/DB/ID (a test run: its scenarios, their pass rates and
// each repeat's run), #/tests/DB/ID/diverge/RUN[/WITH] (where a failing run
// departs from a passing run of the same scenario). app.js routes here and
// lends its helpers (window.ensembleUI); this file only builds elements
// with textContent, as app.js does.
"use strict";

(function () {
  const ui = () => window.ensembleUI;
  const enc = encodeURIComponent;

  function pct(rate) { return rate === null || rate === undefined ? "—" : Math.round(rate * 100) + "%"; }
  function where(s) { return `${s.feature}:${s.line}` + (s.example ? ` row ${s.example}` : ""); }
  function rateBar(rate) {
    const { el } = ui();
    const bar = el("span", { class: "rate" }, el("span", { class: "rate-fill" }));
    bar.firstChild.style.width = rate === null || rate === undefined ? "0" : Math.round(rate * 100) + "%";
    return bar;
  }

  // route shows the view of hash h (a #/tests route) as view v.
  function route(h, v) {
    let m = h.match(/^#\/tests\/(\d+)\/([^/]+)\/diverge\/([^/]+)(?:\/([^/]+))?$/);
    if (m) return showDivergence(+m[1], decodeURIComponent(m[2]), decodeURIComponent(m[3]), m[4] ? decodeURIComponent(m[4]) : "", v);
    m = h.match(/^#\/tests\/(\d+)\/([^/]+)$/);
    if (m) return showTestRun(+m[1], decodeURIComponent(m[2]), v);
    return showTestRuns(v);
  }

  function failed(box, e) { box.replaceChildren(ui().el("p", { class: "error", text: e.message })); }
  // again shows the view again in a second while it is the one shown: a
  // test run that is still running (or was killed: it never ends) grows.
  function again(v, show) { setTimeout(() => { if (v === ui().current()) show(); }, 1000); }

  // --- the test runs ---
  async function showTestRuns(v) {
    const { el, api, main, crumb, fmtTime, fmtDur, badge } = ui();
    crumb.textContent = "test runs";
    const tbody = el("tbody");
    const msg = el("p", { class: "muted" });
    main.replaceChildren(
      el("table", { id: "test-runs" },
        el("thead", {}, el("tr", {}, ["test run", "started", "status", "duration", "scenario runs", "passed", "failed", "pass rate", "feature files"].map((h) => el("th", { text: h })))),
        tbody),
      msg);
    let data;
    try { data = await api("/api/tests"); } catch (e) { return failed(main, e); }
    if (v !== ui().current()) return;
    tbody.replaceChildren(...data.test_runs.slice().reverse().map((t) => {
      const href = `#/tests/${t.db}/${enc(t.id)}`;
      const counted = t.passed + t.failed;
      const dur = t.finished_at ? (new Date(t.finished_at) - new Date(t.started_at)) / 1000 : null;
      return el("tr", { "data-test-run": t.id, "data-status": t.status || "running", onclick: () => { location.hash = href; } },
        el("td", {}, el("a", { href, text: t.id }), el("div", { class: "muted", text: t.db_path })),
        el("td", { text: fmtTime(t.started_at) }),
        el("td", {}, badge(t.status || "running")),
        el("td", { class: "num", text: dur === null ? "" : fmtDur(dur) }),
        el("td", { class: "num", text: t.results }),
        el("td", { class: "num", text: t.passed }),
        el("td", { class: "num", text: t.failed }),
        el("td", {}, rateBar(counted ? t.passed / counted : null), " ", pct(counted ? t.passed / counted : null)),
        el("td", { class: "files", text: t.files.join(", ") }));
    }));
    msg.textContent = data.test_runs.length ? "" : "No test run saved: test --state FILE saves one.";
    if (data.test_runs.some((t) => !t.status)) again(v, () => showTestRuns(v));
  }

  // --- a test run ---
  async function showTestRun(db, id, v) {
    const { el, api, main, crumb, fmtTime, fmtDur, badge } = ui();
    crumb.replaceChildren(el("a", { href: "#/tests", text: "test runs" }), " / ", id);
    const root = el("div", { id: "test-run", "data-test-run": id });
    main.replaceChildren(root);
    let data;
    try { data = await api("/api/tests/run?" + ui().q({ db, id })); } catch (e) { return failed(root, e); }
    if (v !== ui().current()) return;
    const t = data.test_run;
    root.dataset.status = t.status || "running";
    const rows = data.scenarios.map((s) => el("tr", { "data-scenario": where(s), "data-pass-rate": s.pass_rate === null ? "" : String(s.pass_rate) },
      el("td", {}, el("b", { text: s.scenario }), el("div", { class: "muted", text: where(s) })),
      el("td", {}, rateBar(s.pass_rate), " ", pct(s.pass_rate),
        el("div", { class: "muted", text: `${s.passed} passed, ${s.failed} failed` + (s.cancelled ? `, ${s.cancelled} not counted` : "") })),
      el("td", {}, el("div", { class: "repeats" }, s.runs.map((r) => repeatEl(db, id, r))))));
    root.append(
      el("div", { class: "card" },
        el("h2", {}, `test run ${t.id} `, badge(t.status || "running")),
        el("div", { class: "summary" },
          el("div", {}, el("b", { text: "started" }), fmtTime(t.started_at)),
          el("div", {}, el("b", { text: "duration" }), t.finished_at ? fmtDur((new Date(t.finished_at) - new Date(t.started_at)) / 1000) : "running, or stopped"),
          el("div", {}, el("b", { text: "scenario runs" }), `${t.results}: ${t.passed} passed, ${t.failed} failed` + (t.cancelled ? `, ${t.cancelled} not counted` : "")),
          el("div", {}, el("b", { text: "database" }), t.db_path),
          el("div", {}, el("b", { text: "feature files" }), t.files.join(", ")))),
      el("table", { id: "scenarios" },
        el("thead", {}, el("tr", {}, ["scenario", "pass rate", "runs (open one; diff: where a failing run departs from a passing one)"].map((h) => el("th", { text: h })))),
        el("tbody", {}, rows)));
    if (window.ensembleJudges) window.ensembleJudges.section(root, db, id, v); // judge review (judges.js)
    if (!t.status) again(v, () => showTestRun(db, id, v));
  }

  // repeatEl is one run of a scenario: its link, and for a failing run the
  // link to its divergence.
  function repeatEl(db, testRun, r) {
    const { el } = ui();
    const label = `#${r.repeat}`;
    const title = r.status === "passed" ? "passed" : `${r.status}: ${r.step ? r.step + ": " : ""}${r.message || ""}`;
    const run = r.run ? el("a", { class: "repeat " + r.status, href: `#/run/${db}/${enc(r.run)}`, title, text: label }) : el("span", { class: "repeat " + r.status, title, text: label });
    return el("span", { class: "repeat-box", "data-result-run": r.run || "", "data-status": r.status }, run,
      r.status === "failed" && r.run ? el("a", { class: "diverge", "data-diverge": r.run, href: `#/tests/${db}/${enc(testRun)}/diverge/${enc(r.run)}`, text: "diff" }) : null);
  }

  // --- where a failing run departs from a passing one ---
  async function showDivergence(db, testRun, id, withRun, v) {
    const { el, api, main, crumb } = ui();
    crumb.replaceChildren(el("a", { href: "#/tests", text: "test runs" }), " / ",
      el("a", { href: `#/tests/${db}/${enc(testRun)}`, text: testRun }), " / ", `${id}: divergence`);
    const root = el("div", { id: "divergence", "data-run-id": id });
    main.replaceChildren(root);
    const p = { db, id };
    if (withRun) p.with = withRun;
    let d;
    try { d = await api("/api/tests/divergence?" + ui().q(p)); } catch (e) { return failed(root, e); }
    if (v !== ui().current()) return;
    root.dataset.turn = String(d.turn);
    root.dataset.passing = d.passing.run;
    const side = (s, what) => el("div", { class: "side " + what },
      el("h3", {}, `${what} run `, el("a", { href: `#/run/${db}/${enc(s.run)}`, "data-side": what, text: s.run }), ` (repeat ${s.result.repeat})`),
      el("div", { class: "muted", text: `${s.turns} turns, ${s.completion_reason || "unfinished"}` }),
      what === "failing" && s.result.step ? el("div", { class: "error", "data-field": "failed-step", text: `${s.result.step}: ${s.result.message}` }) : null);
    const others = (d.others || []).length ? el("p", { class: "muted" }, "Compare with another passing run: ",
      d.others.map((o) => el("a", { href: `#/tests/${db}/${enc(testRun)}/diverge/${enc(id)}/${enc(o)}`, text: o + " " }))) : null;
    root.append(
      el("div", { class: "card" },
        el("h2", { text: d.turn ? `First divergent turn: ${d.turn}` : "No turn differs" }),
        el("p", { "data-field": "note", text: d.note }),
        el("div", { class: "sides" }, side(d.failing, "failing"), side(d.passing, "passing")),
        d.compared > 1 && !withRun ? el("p", { class: "muted", text: `Of the ${d.compared} passing runs compared, the one that follows the failing run longest.` }) : null,
        others),
      d.turn ? turnDiff(d) : null);
  }

  // turnDiff is the divergent turn's executions, the failing run's beside
  // the passing run's: each pair's input and output, as a line diff.
  function turnDiff(d) {
    const { el, pretty, diffView } = ui();
    const fr = d.failing.records || [], pr = d.passing.records || [];
    const n = Math.max(fr.length, pr.length);
    const out = (r) => r ? (r.error ? "error: " + r.error : r.skipped ? "skipped" : pretty(r.output_data)) : "(no execution)";
    const inp = (r) => r ? pretty(r.input_data) : "(no execution)";
    const name = (r) => r ? `${r.agent_name} #${r.execution}` : "none";
    const pairs = [];
    for (let k = 0; k < n; k++) {
      const f = fr[k], p = pr[k];
      const same = f && p && name(f) === name(p) && inp(f) === inp(p) && out(f) === out(p);
      pairs.push(el("div", { class: "card pair" + (same ? " same" : ""), "data-pair": String(k + 1), "data-differs": same ? "no" : "yes" },
        el("h3", { text: name(f) === name(p) ? name(f) : `${name(f)} (failing) · ${name(p)} (passing)` + (same ? ": the same" : "") }),
        same ? el("p", { class: "muted", text: "The same execution in both runs." }) : [
          el("h4", { text: "input" }), diffView(inp(f), inp(p), "failing", "passing"),
          el("h4", { text: "output" }), diffView(out(f), out(p), "failing", "passing")]));
    }
    return el("div", { "data-field": "divergent-turn" }, pairs);
  }

  // runNote adds to a run's page, when the run is a scenario's, which test
  // run and scenario it belongs to, and for a failing one its divergence.
  async function runNote(root, db, id, v) {
    const { el, api } = ui();
    let of;
    try { of = await api("/api/tests/of?" + ui().q({ db, id })); } catch { return; }
    if (v !== ui().current() || !of.test_run) return;
    const r = of.result;
    const tr = `#/tests/${db}/${enc(of.test_run)}`;
    root.prepend(el("div", { class: "card test-note", "data-field": "test-result", "data-status": r.status },
      "Scenario ", el("b", { text: r.scenario }), ` (${where(r)}), repeat ${r.repeat}, ${r.status}, of test run `,
      el("a", { href: tr, text: of.test_run }),
      r.status === "failed" ? [". ", el("a", { href: `${tr}/diverge/${enc(id)}`, "data-diverge": id, text: "Where it departs from a passing run" })] : null,
      r.step ? el("div", { class: "error", text: `${r.step}: ${r.message}` }) : null));
  }

  window.ensembleTests = { route, runNote };
})();
