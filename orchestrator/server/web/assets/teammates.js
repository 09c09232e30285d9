/* Background teammates (`#/teammates`) over `WS /teammates`.
 *
 * On every (re)connection the page sends `subscribe` and `list`. The subscription's events
 * (each teammate's `task.changed` / `agent.changed` envelopes, at every change) only say that
 * something changed: the page then asks `list` again (debounced) and redraws from the answer,
 * which has every column (state, schedule, next wake, last run, running run). A teammate's
 * runs are asked for with `history` when its "History" button is pressed, and refreshed with
 * the list while shown; each run links to its session. Trigger / Pause / Resume / Stop are
 * drawn for operators only (the daemon refuses a viewer's anyway: `forbidden`).
 */
(function (root) {
  "use strict";
  const O = root.Orchestrator;
  const h = O.h;

  function runText(run) {
    if (!run) return "never";
    const outcome = run.outcome || "running";
    return outcome + (run.end ? " at " + O.formatTime(run.end) : " since " + O.formatTime(run.start));
  }

  function sessionLink(uri) {
    if (!uri) return "";
    const id = O.sessionId(uri);
    return h("a", { href: "#/sessions/" + encodeURIComponent(id), class: "session-link", text: id.slice(0, 8) });
  }

  function teammatesPage(main, context) {
    let disposed = false;
    let nextId = 1;
    let teammates = [];
    const histories = new Map(); // "team/name" -> runs (shown) ; absent: hidden
    const status = h("p", { id: "connection", class: "connection", role: "status", "aria-live": "polite", text: "connecting…" });
    const message = h("p", { id: "teammates-message", class: "notice", role: "status" });
    const body = h("tbody", { id: "teammates-body" });
    const table = h(
      "table",
      { id: "teammates", class: "data" },
      h("caption", { text: "Background teammates" }),
      h(
        "thead",
        null,
        h("tr", null, ["Teammate", "State", "Schedule", "Next wake", "Last run", "Running", "Actions"].map((n) => h("th", { scope: "col", text: n })))
      ),
      body
    );
    main.appendChild(h("h2", { text: "Teammates" }));
    main.appendChild(status);
    main.appendChild(message);
    main.appendChild(table);

    function key(t) {
      return t.team + "/" + t.name;
    }

    function control(t, action, label) {
      return h("button", {
        type: "button",
        "data-action": action,
        text: label,
        "aria-label": label + " " + key(t),
        onclick: function () {
          socket.send({ type: action, name: key(t), id: action + "-" + nextId++ });
        },
      });
    }

    let drawn = null;
    function draw() {
      // Redrawn only when something shown changed (a button rebuilt under the pointer
      // would lose its click).
      const signature = JSON.stringify([teammates, [...histories]]);
      if (signature === drawn) return;
      drawn = signature;
      O.clear(body);
      if (teammates.length === 0) {
        body.appendChild(h("tr", null, h("td", { colspan: "7", class: "notice", text: "No background teammates (add [[background]] to a team file)." })));
        return;
      }
      for (const t of teammates) {
        const name = key(t);
        const shown = histories.has(name);
        const buttons = h("div", { class: "buttons" });
        if (context.canOperate) {
          buttons.appendChild(control(t, "trigger", "Trigger"));
          buttons.appendChild(t.paused ? control(t, "resume", "Resume") : control(t, "pause", "Pause"));
          if (t.running) buttons.appendChild(control(t, "stop", "Stop"));
        }
        buttons.appendChild(
          h("button", {
            type: "button",
            "data-action": "history",
            "aria-expanded": shown ? "true" : "false",
            text: shown ? "Hide history" : "History",
            onclick: function () {
              if (histories.has(name)) {
                histories.delete(name);
                draw();
              } else {
                histories.set(name, null);
                askHistory(name);
                draw();
              }
            },
          })
        );
        body.appendChild(
          h(
            "tr",
            { "data-teammate": name },
            h("th", { scope: "row", text: name }),
            h("td", null, h("span", { class: "badge status-" + t.state, text: t.state + (t.paused ? " (paused)" : "") })),
            h("td", { text: t.schedule || "" }),
            h("td", null, t.nextWake ? h("time", { datetime: t.nextWake, text: O.formatTime(t.nextWake) }) : "-"),
            h("td", null, runText(t.lastRun), " ", t.lastRun ? sessionLink(t.lastRun.session) : ""),
            h("td", null, t.running ? ["since " + O.formatTime(t.running.start) + " ", sessionLink(t.running.session)] : "-"),
            h("td", null, buttons)
          )
        );
        if (shown) body.appendChild(h("tr", { class: "history", "data-history": name }, h("td", { colspan: "7" }, historyTable(name, histories.get(name)))));
      }
    }

    function historyTable(name, runs) {
      if (runs === null) return h("p", { class: "notice", text: "Loading the runs…" });
      if (runs.length === 0) return h("p", { class: "notice", text: name + " has not run yet." });
      return h(
        "table",
        { class: "data runs" },
        h("caption", { text: "Runs of " + name + ", newest first" }),
        h("thead", null, h("tr", null, ["Start", "End", "Outcome", "Reason", "Session"].map((n) => h("th", { scope: "col", text: n })))),
        h(
          "tbody",
          null,
          runs
            .slice()
            .reverse()
            .map((run) =>
              h(
                "tr",
                null,
                h("td", { text: O.formatTime(run.start) }),
                h("td", { text: run.end ? O.formatTime(run.end) : "-" }),
                h("td", null, h("span", { class: "badge status-" + (run.outcome || "running"), text: run.outcome || "running" })),
                h("td", { text: run.reason || "" }),
                h("td", null, sessionLink(run.session))
              )
            )
        )
      );
    }

    function askList() {
      socket.send({ type: "list", id: "list-" + nextId++ });
    }
    function askHistory(name) {
      socket.send({ type: "history", name: name, limit: 50, id: "history-" + nextId++ });
    }
    const refresh = O.debounce(function () {
      askList();
      for (const name of histories.keys()) askHistory(name);
    }, 250);

    const socket = O.liveSocket("/teammates", {
      onState: function (kind, seconds) {
        status.textContent = "Updates: " + O.connectionText(kind, seconds);
        status.className = "connection " + kind;
      },
      onOpen: function (send) {
        send({ type: "subscribe", id: "subscribe-" + nextId++ });
        askList();
      },
      onMessage: function (m) {
        if (disposed) return;
        if (m.type === "teammates") {
          teammates = m.teammates || [];
          draw();
        } else if (m.type === "history") {
          if (histories.has(m.teammate)) {
            histories.set(m.teammate, m.runs || []);
            draw();
          }
        } else if (m.type === "event") {
          refresh();
        } else if (m.type === "done") {
          message.textContent = m.action + " " + ((m.teammate && key(m.teammate)) || "") + (m.decision ? ": " + m.decision : m.changed === false ? ": nothing to change" : ": done");
          refresh();
        } else if (m.type === "error") {
          message.textContent = m.code + ": " + m.message;
        }
      },
    });

    return function dispose() {
      disposed = true;
      refresh.cancel();
      socket.close();
    };
  }

  O.pages = O.pages || {};
  O.pages.teammates = teammatesPage;
})(window);
