// ensemble ui: the page's links. #/run/DB/ID is a run; #/run/DB/ID/AGENT/N
// is execution N of AGENT (its path for an agent of a child ensemble), with
// /T after it the turn it is in (which a child's agent and a skip need);
// #/run/DB/ID/turn:T is turn T. Each opens as it is, on a reload too.
"use strict";

(function () {
  const UI = (window.EnsembleUI = window.EnsembleUI || {});
  UI.parseRoute = function (h) {
    const m = h.match(/^#\/run\/(\d+)\/([^/]+)(?:\/(.*))?$/);
    if (!m) return null;
    const r = { db: +m[1], id: decodeURIComponent(m[2]) };
    const rest = m[3] || "";
    let x;
    if ((x = rest.match(/^turn:(\d+)$/))) r.turn = +x[1];
    else if ((x = rest.match(/^([^/]+)\/(\d+)(?:\/(\d+))?$/))) {
      r.agent = decodeURIComponent(x[1]);
      r.n = +x[2];
      r.turn = x[3] ? +x[3] : 0;
    }
    return r;
  };
  const runHref = (st) => `#/run/${st.db}/${encodeURIComponent(st.id)}`;
  UI.execHref = (st, agent, n, turn) => `${runHref(st)}/${encodeURIComponent(agent)}/${n}` + (turn ? `/${turn}` : "");
  UI.turnHref = (st, turn) => `${runHref(st)}/turn:${turn}`;
  // linkTo puts the execution chosen in the address bar (the back button
  // goes to the one before).
  UI.linkTo = function (st, agent, n, turn) {
    const h = UI.execHref(st, agent, n, turn);
    if (location.hash !== h) history.pushState(null, "", h);
  };
  // firstTurnOf is the turn after which the timeline's first page starts
  // for a link to turn T: the run's first page when T is in it.
  UI.firstTurnOf = (target, page) => (target.turn && target.turn > page ? Math.max(0, target.turn - 3) : 0);
  // showTurn scrolls the timeline to turn T, loading its page first when
  // it is not shown, and marks it.
  UI.showTurn = async function (st, turn, loadTurns) {
    if (!st.turns.some((t) => t.turn === turn)) await loadTurns(UI.firstTurnOf({ turn }, 0), true);
    document.querySelectorAll(".turn.target").forEach((e) => e.classList.remove("target"));
    const row = document.querySelector(`#timeline [data-turn="${turn}"]`);
    if (row) {
      row.classList.add("target");
      row.scrollIntoView({ block: "center" });
    }
  };
})();
