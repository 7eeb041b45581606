// ensemble ui: search inside a run's outputs, inputs, errors, stderr and
// model messages. The server looks (GET /api/run/search), a page of
// matches at a time; each match links to its execution.
"use strict";

(function () {
  const UI = (window.EnsembleUI = window.EnsembleUI || {});
  // marked is text with each place it holds needle (case aside) marked.
  function marked(text, needle) {
    const out = [], low = text.toLowerCase(), n = needle.toLowerCase();
    let i = 0;
    for (let j = low.indexOf(n); j >= 0 && n; j = low.indexOf(n, i)) {
      out.push(text.slice(i, j), UI.el("mark", { text: text.slice(j, j + n.length) }));
      i = j + n.length;
    }
    out.push(text.slice(i));
    return out;
  }
  UI.searchCard = function (st) {
    const { el, api, q } = UI;
    const input = el("input", { type: "search", placeholder: "text in outputs, inputs, errors, messages", "aria-label": "search in this run", "data-field": "search" });
    const msg = el("p", { class: "muted", "data-field": "search-status" });
    const list = el("ol", { class: "matches", "data-field": "search-results" });
    const more = el("button", { type: "button", "data-search": "more", text: "search further", hidden: true });
    let asked = "", after = 0, found = 0;
    const row = (m, needle) => el("li", {},
      el("a", { href: UI.execHref(st, m.agent, m.n, m.turn), "data-match": `${m.agent}#${m.n}`, "data-match-field": m.field },
        `turn ${m.turn} · ${m.agent} #${m.n} · ${m.field}${m.role ? " (" + m.role + ")" : ""}${m.count > 1 ? ` · ${m.count} times` : ""}`),
      el("div", { class: "snippet" }, marked(m.snippet, needle)));
    async function search(needle, from) {
      msg.className = "muted";
      msg.textContent = "Searching…";
      more.hidden = true;
      try {
        const r = await api("/api/run/search?" + q({ db: st.db, id: st.id, q: needle, after: from }));
        if (needle !== asked) return;
        list.append(...r.matches.map((m) => row(m, needle)));
        found += r.matches.length;
        after = r.searched;
        more.hidden = !r.more;
        msg.textContent = (found ? `${found} match${found > 1 ? "es" : ""}` : "No match") +
          (r.more ? ` in turns 1–${r.searched} of ${r.last}` : ` in the run's ${r.last} turns`) + ".";
      } catch (e) {
        msg.className = "error";
        msg.textContent = e.message;
      }
    }
    const form = el("form", { class: "search-form", role: "search" }, input, el("button", { type: "submit", text: "search" }));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const needle = input.value;
      if (!needle.trim()) return;
      asked = needle; after = 0; found = 0;
      list.replaceChildren();
      search(needle, 0);
    });
    more.addEventListener("click", () => search(asked, after));
    return el("div", { class: "card", id: "search" }, el("h2", { text: "Search this run" }), form, msg, list, more);
  };
})();
