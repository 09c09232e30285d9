/* The sessions list (`#/`): every session the journal holds, live ones updating in place.
 *
 * `GET /api/sessions` draws the list once; the AHP root channel (`WS /ahp`, `initialize`
 * with `ahp-root://` as its initial subscription) says when a session is added or its summary changes,
 * and the row is refetched from `GET /api/sessions/ID` (debounced per session), so a new
 * session appears without a reload. After a reconnection the whole list is fetched again
 * (what happened while the socket was down is in it). Filters (status, team) are applied in
 * the page; their choices are the values present.
 */
(function (root) {
  "use strict";
  const O = root.Orchestrator;
  const h = O.h;

  function sessionsPage(main, context) {
    const sessions = new Map(); // id -> summary
    let disposed = false;
    const status = h("p", { id: "connection", class: "connection", role: "status", "aria-live": "polite", text: "connecting…" });
    const statusFilter = h("select", { id: "filter-status" }, h("option", { value: "", text: "all" }));
    const teamFilter = h("select", { id: "filter-team" }, h("option", { value: "", text: "all" }));
    const body = h("tbody", { id: "sessions-body" });
    const empty = h("p", { id: "sessions-empty", class: "notice", text: "" });
    const table = h(
      "table",
      { id: "sessions", class: "data" },
      h("caption", { text: "Sessions, newest first" }),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["Status", "Team", "Title", "Started", "Duration", "Pending"].map(function (name) {
            return h("th", { scope: "col", text: name });
          })
        )
      ),
      body
    );
    if (context.canOperate) main.appendChild(newRunForm());
    main.appendChild(h("h2", { text: "Sessions" }));
    main.appendChild(
      h(
        "div",
        { class: "filters", role: "group", "aria-label": "Filters" },
        h("label", { for: "filter-status", text: "Status" }),
        statusFilter,
        h("label", { for: "filter-team", text: "Team" }),
        teamFilter,
        status
      )
    );
    main.appendChild(table);
    main.appendChild(empty);
    statusFilter.addEventListener("change", draw);
    teamFilter.addEventListener("change", draw);

    function options(select, values) {
      const current = select.value;
      const wanted = [""].concat([...values].sort());
      if ([...select.options].map((o) => o.value).join("\n") === wanted.join("\n")) return;
      O.clear(select);
      wanted.forEach(function (value) {
        select.appendChild(h("option", { value: value, text: value || "all" }));
      });
      select.value = wanted.indexOf(current) >= 0 ? current : "";
    }

    // ── a new run (operators): a team of the daemon's, a prompt ──
    function newRunForm() {
      const team = h("select", { id: "new-run-team", required: true });
      const prompt = h("textarea", { id: "new-run-prompt", rows: "3", required: true, placeholder: "What should the team do?" });
      const about = h("p", { id: "new-run-about", class: "meta" });
      // The model of the team's OpenAI-compatible agents, for this run only (`run --model`).
      const model = h("input", { type: "text", id: "new-run-model", autocomplete: "off", spellcheck: "false", "aria-describedby": "new-run-model-note" });
      const modelNote = h("p", { id: "new-run-model-note", class: "meta" });
      const problem = h("p", { id: "new-run-error", class: "error", role: "alert" });
      const start = h("button", { type: "submit", id: "new-run-start", class: "primary", text: "Start the run" });
      const form = h(
        "form",
        { id: "new-run", class: "new-run panel", "aria-labelledby": "new-run-title" },
        h("h2", { id: "new-run-title", text: "New run" }),
        h("div", { class: "field" }, h("label", { for: "new-run-team", text: "Team" }), team, about),
        h("div", { class: "field" }, h("label", { for: "new-run-model", text: "Model (optional)" }), model, modelNote),
        h("div", { class: "field" }, h("label", { for: "new-run-prompt", text: "Prompt" }), prompt),
        h("div", { class: "buttons" }, start),
        problem
      );
      const described = new Map();
      const models = new Map(); // team -> the model its OpenAI-compatible agents ask, or null
      function drawModel() {
        const asked = models.get(team.value);
        model.disabled = !asked;
        model.placeholder = asked || "";
        if (!asked) model.value = "";
        modelNote.textContent = asked
          ? "Empty: its agents ask " + asked + ", as the team file says. Another model is for this run only."
          : "Its agents take their models from the team file: it has no OpenAI-compatible agent.";
      }
      team.addEventListener("change", function () {
        about.textContent = described.get(team.value) || "";
        drawModel();
      });
      O.api("/api/teams").then(
        function (answer) {
          for (const t of answer.teams || []) {
            described.set(t.name, (t.description ? t.description + " " : "") + "Coordinator: " + t.coordinator + "; agents: " + (t.agents || []).join(", ") + ".");
            models.set(t.name, t.model || null);
            team.appendChild(h("option", { value: t.name, text: t.name }));
          }
          if (answer.default) team.value = answer.default;
          about.textContent = described.get(team.value) || "";
          drawModel();
          if (!team.options.length) problem.textContent = "This daemon serves no team a run can be started with.";
        },
        (error) => (problem.textContent = "The teams could not be listed: " + error.message)
      );
      form.addEventListener("submit", async function (event) {
        event.preventDefault();
        problem.textContent = "";
        if (!prompt.value.trim()) {
          problem.textContent = "Write a prompt first.";
          prompt.focus();
          return;
        }
        const chosen = model.disabled ? "" : model.value.trim();
        // The daemon's rule (it refuses the rest, naming ?model).
        if (chosen && !/^[^\s\x00-\x1f\x7f]{1,200}$/.test(chosen)) {
          problem.textContent = "A model name has no spaces and at most 200 characters.";
          model.focus();
          return;
        }
        start.disabled = true;
        start.textContent = "Starting…";
        try {
          const id = await startRun(team.value, prompt.value.trim(), chosen);
          location.hash = "#/sessions/" + encodeURIComponent(id);
        } catch (error) {
          problem.textContent = "Not started: " + error.message;
          start.disabled = false;
          start.textContent = "Start the run";
        }
      });
      return form;
    }

    /* Opens a session as every client does (`WS /ws?team=NAME`), sends the prompt and
     * waits for its turn to start (the `prompt` echo); the session page then attaches. */
    function startRun(teamName, text, modelName) {
      return new Promise(function (resolve, reject) {
        const query = "/ws?team=" + encodeURIComponent(teamName) + (modelName ? "&model=" + encodeURIComponent(modelName) : "");
        const ws = new WebSocket(O.wsUrl(query));
        let session = null;
        let settled = false;
        function settle(error) {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          if (error) reject(error);
          else resolve(session);
          ws.close();
        }
        const timer = setTimeout(() => settle(session ? null : new Error("the daemon did not answer")), 15000);
        ws.addEventListener("message", function (event) {
          let message;
          try {
            message = JSON.parse(event.data);
          } catch (error) {
            return;
          }
          if (message.type === "init" && message.sessionId) {
            session = message.sessionId;
            ws.send(JSON.stringify({ channel: "agent", type: "prompt", prompt: text }));
          } else if (message.type === "error" && message.code) settle(new Error(message.message || message.code));
          else if (session && message.channel === "agent" && message.type === "prompt") settle(null);
        });
        ws.addEventListener("close", function (event) {
          settle(session ? null : new Error(event.reason || "the daemon refused to open a session"));
        });
      });
    }

    const rows = new Map(); // session id -> its <tr>
    function set(element, text) {
      if (element.textContent !== text) element.textContent = text;
    }

    function draw() {
      const all = [...sessions.values()].sort(function (a, b) {
        return String(b.startedAt || "").localeCompare(String(a.startedAt || ""));
      });
      options(statusFilter, new Set(all.map((s) => s.status)));
      options(teamFilter, new Set(all.map((s) => s.team)));
      const shown = all.filter(function (s) {
        return (!statusFilter.value || s.status === statusFilter.value) && (!teamFilter.value || s.team === teamFilter.value);
      });
      // Rows are kept and updated in place (a click on a link being redrawn is not lost).
      const keep = new Set();
      for (const s of shown) {
        const id = O.sessionId(s.id || s.uri);
        keep.add(id);
        let tr = rows.get(id);
        if (!tr) {
          tr = h(
            "tr",
            { "data-session": id },
            h("td", null, h("span", { class: "badge" })),
            h("td"),
            h("th", { scope: "row" }, h("a", { href: "#/sessions/" + encodeURIComponent(id) })),
            h("td", null, h("time")),
            h("td"),
            h("td")
          );
          rows.set(id, tr);
        }
        const cells = tr.children;
        // An open conversation is idle between prompts; one not in memory waits for its
        // next message too (the daemon takes it up when it is opened).
        const status = s.status !== "running" ? s.status : s.live && s.activity === "busy" ? "running" : "idle";
        set(cells[0].firstChild, status);
        cells[0].firstChild.className = "badge status-" + s.status;
        set(cells[1], s.team || "");
        set(cells[2].firstChild, s.title || id);
        set(cells[3].firstChild, O.formatTime(s.startedAt));
        cells[3].firstChild.setAttribute("datetime", s.startedAt || "");
        set(cells[4], O.formatDuration(s.startedAt, s.endedAt));
        // Approvals and questions alike wait for someone (a daemon before `pending` counted
        // approvals only).
        const waiting = s.pending !== undefined ? s.pending : s.pendingApprovals || 0;
        set(cells[5], String(waiting));
        cells[5].title = (s.pendingApprovals || 0) + " approval(s), " + (s.pendingQuestions || 0) + " question(s)";
        cells[5].className = waiting ? "attention" : "";
        body.appendChild(tr); // in order: an existing row moves, a new one is added
      }
      for (const [id, tr] of rows) {
        if (!keep.has(id)) {
          tr.remove();
          rows.delete(id);
        }
      }
      // What waits anywhere, in the tab's title and favicon.
      O.showWaiting(
        all.reduce((n, s) => n + (s.live && s.status === "running" ? s.pending || 0 : 0), 0),
        "Sessions · Orchestrator"
      );
      empty.textContent = all.length === 0 ? "No sessions yet." : shown.length === 0 ? "No session matches these filters." : "";
    }

    async function loadAll() {
      try {
        const answer = await O.api("/api/sessions");
        if (disposed) return;
        sessions.clear();
        for (const s of answer.sessions || []) sessions.set(O.sessionId(s.id || s.uri), s);
        draw();
      } catch (error) {
        if (!disposed) empty.textContent = "Could not load the sessions: " + error.message;
      }
    }

    const refetchers = new Map();
    function refetch(idOrUri) {
      const id = O.sessionId(idOrUri);
      if (!refetchers.has(id)) {
        refetchers.set(
          id,
          O.debounce(async function () {
            try {
              const summary = await O.api("/api/sessions/" + encodeURIComponent(id));
              if (disposed) return;
              sessions.set(id, summary);
              draw();
            } catch (error) {
              /* a session gone in between: the next full load drops it */
            }
          }, 200)
        );
      }
      refetchers.get(id)();
    }

    let nextId = 1;
    const socket = O.liveSocket("/ahp", {
      onState: function (kind, seconds) {
        status.textContent = "Updates: " + O.connectionText(kind, seconds);
        status.className = "connection " + kind;
      },
      onOpen: function (send) {
        send({
          jsonrpc: "2.0",
          id: nextId++,
          method: "initialize",
          params: {
            channel: "ahp-root://",
            protocolVersions: ["0.7.0"],
            clientId: "web-" + Math.random().toString(36).slice(2),
            clientInfo: { name: "orchestrator-web", version: "1" },
            initialSubscriptions: ["ahp-root://"],
          },
        });
        loadAll();
      },
      onMessage: function (message) {
        // Notifications: root/sessionAdded {summary: {resource, ...}}, root/sessionRemoved
        // {session}, root/sessionSummaryChanged {session, changes}.
        const params = message.params || {};
        const method = message.method || "";
        if (method === "root/sessionAdded") {
          if (params.summary && params.summary.resource) refetch(params.summary.resource);
        } else if (method === "root/sessionSummaryChanged" || method === "root/sessionRemoved") {
          if (params.session) refetch(params.session); // removed: it ended, its row says so
        }
      },
    });

    const ticker = setInterval(draw, 10000); // durations of running sessions
    return function dispose() {
      disposed = true;
      O.showWaiting(0);
      clearInterval(ticker);
      for (const r of refetchers.values()) r.cancel();
      socket.close();
    };
  }

  O.pages = O.pages || {};
  O.pages.sessions = sessionsPage;
})(window);
