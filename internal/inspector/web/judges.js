// ensemble ui: judge review on a test run's page (tests.js calls section).
// Each judge step's verdict of the test run, with the scenario run it
// judged, can be accepted (the judge was right) or overridden (pass or
// fail) by a person; the label is stored in the database, for test
// calibrate. Builds elements with textContent only, as app.js does.
"use strict";

(function () {
  const ui = () => window.ensembleUI;
  const enc = encodeURIComponent;
  const judged = (v) => v.passed ? "pass" : "fail";
  const other = (l) => l === "pass" ? "fail" : "pass";

  // labelText says what the label is, beside the judge's verdict.
  function labelText(v) {
    if (!v.label) return "unlabelled";
    return `labelled ${v.label} (${v.label === judged(v) ? "accepted" : "overridden"})`;
  }

  // section adds the judge review of test run id to root, when the test
  // run has judge verdicts; v is the view it belongs to.
  async function section(root, db, id, v) {
    const { el, api } = ui();
    let data;
    try { data = await api("/api/tests/verdicts?" + ui().q({ db, id })); } catch (e) {
      root.append(el("p", { class: "error", text: "judge verdicts: " + e.message }));
      return;
    }
    if (v !== ui().current() || !data.verdicts.length) return;
    const counts = el("span", { class: "muted", "data-field": "label-counts" });
    const box = el("div", { class: "card", id: "judge-review" }, el("h2", {}, "Judge review · ", counts),
      el("p", { class: "muted", text: "Accept a verdict when the judge was right, override it when it was wrong: test calibrate measures the judge against these labels." }));
    const tbody = el("tbody");
    const rows = data.verdicts.map((x) => row(db, x, () => count(data.verdicts, counts)));
    tbody.append(...rows);
    box.append(el("table", { id: "verdicts" },
      el("thead", {}, el("tr", {}, ["scenario run", "judge step", "the judge said", "label"].map((h) => el("th", { text: h })))),
      tbody));
    count(data.verdicts, counts);
    root.append(box);
  }

  function count(vs, counts) {
    const n = vs.filter((x) => x.label).length;
    counts.textContent = `${n} labelled, ${vs.length - n} unlabelled`;
    counts.dataset.labelled = String(n);
    counts.dataset.unlabelled = String(vs.length - n);
  }

  // row is one verdict with its buttons: accept, and override with the
  // other verdict; a labelled verdict can be labelled again.
  function row(db, x, changed) {
    const { el, api } = ui();
    const state = el("span", { "data-field": "label" });
    const err = el("div", { class: "error" });
    const tr = el("tr", { "data-verdict": x.id });
    const show = () => {
      tr.dataset.label = x.label || "";
      tr.dataset.judged = judged(x);
      state.textContent = labelText(x);
      state.className = "verdict-label " + (x.label ? "labelled" : "unlabelled");
    };
    const send = async (body) => {
      err.textContent = "";
      try {
        const r = await api("/api/tests/verdict?" + ui().q({ db, id: x.id }), body);
        x.label = r.verdict.label;
        show();
        changed();
      } catch (e) { err.textContent = e.message; }
    };
    const run = x.run ? el("a", { href: `#/run/${db}/${enc(x.run)}`, text: `#${x.repeat}` }) : `#${x.repeat}`;
    tr.append(
      el("td", {}, el("b", { text: x.scenario || "" }), " ", run, el("div", { class: "muted", text: x.status || "" })),
      el("td", {}, el("div", { text: x.step }),
        el("details", {}, el("summary", { text: "rubric" }), el("pre", { class: "rubric", text: x.rubric }))),
      el("td", {}, el("span", { class: "badge " + (x.passed ? "completed" : "failed"), text: judged(x) }),
        ` score ${x.score}` + (x.scale ? ` (${x.scale})` : "") + `, at least ${x.threshold}`,
        x.reason ? el("div", { class: "muted reason", text: x.reason }) : null),
      el("td", {}, state, el("div", { class: "verdict-actions" },
        el("button", { "data-action": "accept", title: `the judge was right: ${judged(x)}`, onclick: () => send({ accept: true }), text: "accept" }),
        el("button", { "data-action": "override", title: `the judge was wrong: ${other(judged(x))}`, onclick: () => send({ label: other(judged(x)) }), text: `override: ${other(judged(x))}` })),
        err));
    show();
    return tr;
  }

  window.ensembleJudges = { section };
})();
