/* One session (`#/sessions/ID`): the delegation graph live, its table, transcript, timeline,
 * pending approvals and questions, the sequence scrubber and the exports.
 *
 * Where the envelopes come from:
 * - an offline copy: the embedded data, nothing else;
 * - any other: first `GET /api/sessions/ID/envelopes` (one gzipped answer, with the
 *   session's summary: a 1,000-worker session's 9,000 envelopes are 300 KiB on the wire,
 *   where a replay over the socket would be 9,000 messages). An ended one (`live: false`)
 *   needs no socket;
 * - a live one then opens `WS /ws?session=ID` and sends `{"channel": "team", "type":
 *   "subscribe", "fromSequence": N}` with N the last sequence it has. When the socket closes
 *   (the session ended, or the daemon stopped: both say `session_ended`), the page asks
 *   `GET /api/sessions/ID` again, backing off 1 s doubling to 10 s while the daemon is
 *   unreachable: still live, it reattaches and resubscribes from N (no gap; the model ignores
 *   anything at or below N, so no duplicate); ended, it fetches the envelopes after N. A
 *   "not live" is believed only from a healthy daemon (`/healthz` 200: a stopping one drops
 *   its sessions before its HTTP), and for an unfinished status only after three asks
 *   (meanwhile the page says it waits, not that the daemon is unreachable: it answered).
 *   A session another process runs (an `orchestrator run` on the daemon's SQLite file) is
 *   live too: the daemon follows it, read-only, and the header says who runs it
 *   (`runBy`); its decisions are that process's, so the page offers none.
 *
 * Envelopes are queued as they arrive and folded once per animation frame: the model
 * (graph-model.js) takes them all, then the graph, the table, the timeline, the controls and
 * the scrubber are brought up to date once. The scrubber (`input type=range` over the
 * envelopes' sequences) shows the graph folded up to the chosen fact; at its right end it
 * follows the live model.
 *
 * Approve / Deny / Answer appear only for a principal with `operate`, on a live session.
 * The agent channel carries them: `approve` / `reject` with the approval id as `requestId`,
 * `tool_response` with the question's `toolCallId`. What waits (approvals and questions
 * alike) is read from the model, so a card stays until its `action.resolved` arrives: an
 * answer the daemon refuses leaves it up, with the reason, to be answered again.
 *
 * The side panel shows the selected chat's transcript (`GET .../transcript?thread=`), with a
 * "trace" link for the agent and each tool call when the daemon names a trace UI; fetched
 * again (debounced) when an envelope of that chat or any agent-channel activity arrives.
 */
(function (root) {
  "use strict";
  const O = root.Orchestrator;
  const h = O.h;
  const GM = O.graphModel;

  const TIMELINE_CAP = 500;
  const FINISHED = new Set(["completed", "failed", "cancelled", "ended"]);
  const NOT_LIVE_CHECKS = 3;
  const AGENT_ACTIVITY = new Set(["text", "thinking", "tool_invocation", "tool_result", "result", "done", "question"]);
  // Envelopes after which what the agents used is fetched again.
  const USAGE_CHANGES = new Set(["agent.completed", "agent.failed", "task.changed", "worker.notification", "run.finished", "run.failed"]);
  // What a person decides (a withdrawn request was nobody's decision).
  const DECISIONS = new Set(["approved", "rejected", "denied", "answered", "declined"]);
  const FIRST_RETRY_MS = 1000;
  const LAST_RETRY_MS = 10000;
  // The node table draws only the rows in view from this many rows on, each ROW_PX high
  // (app.css says the same), with OVERSCAN rows more above and below.
  const VIRTUAL_FROM = 250;
  const ROW_PX = 32;
  const OVERSCAN = 10;

  function sessionPage(main, context) {
    O.clear(main);
    const offline = context.offline || null;
    const id = context.id;
    let disposed = false;
    let summary = null;
    const envelopes = []; // every envelope folded, in sequence order
    const model = GM.createModel();
    let queue = [];
    let frame = null;
    let scrubAt = null; // null: follow live; else the sequence shown
    let selected = null;
    let socket = null;
    let ended = false;
    const refusals = new Map(); // toolCallId -> why the daemon refused the last answer sent
    let answering = null; // the toolCallId of the answer sent last, until its reply
    const timers = [];

    // ── the page's parts ──
    const title = h("h2", { id: "session-title", text: "Session" });
    const meta = h("p", { id: "session-meta", class: "meta" });
    const connection = h("p", { id: "connection", class: "connection", role: "status", "aria-live": "polite", text: offline ? "offline copy" : "loading…" });
    const graphBox = h("div", {
      id: "graph",
      class: "graph",
      role: "img",
      "aria-label": "Delegation graph (loading)",
      "aria-describedby": "nodes-caption",
    });
    const tableBody = h("tbody", { id: "nodes-body" });
    // A big table draws only the rows in view: rows of one fixed height between two spacers
    // standing for the rows above and below, redrawn as it scrolls (1,001 rows drawn whole
    // cost the first draw 0.7 s of layout and paint). Small tables are drawn whole (the
    // browser's find-in-page still sees every row).
    const spaceAbove = h("tbody", { class: "spacer", "aria-hidden": "true" }, h("tr", null, h("td", { colspan: "8" })));
    const spaceBelow = h("tbody", { class: "spacer", "aria-hidden": "true" }, h("tr", null, h("td", { colspan: "8" })));
    const nodesTable = h(
      "table",
      { id: "nodes", class: "data nodes" },
      h("caption", { id: "nodes-caption", text: "Every node of the delegation graph: agent, role, status, parent, and what it used" }),
      h(
        "thead",
        null,
        h("tr", null, ["Agent", "Role", "Status", "Parent", "Tokens in", "Tokens out", "Model calls", "Time"].map((name) => h("th", { scope: "col", text: name })))
      ),
      spaceAbove,
      tableBody,
      spaceBelow
    );
    const scrubber = h("input", { id: "scrubber", type: "range", min: "0", max: "0", value: "0", step: "1", "aria-describedby": "scrubber-label" });
    const scrubLabel = h("output", { id: "scrubber-label", for: "scrubber", text: "at fact 0" });
    const liveButton = h("button", { type: "button", id: "scrubber-live", text: "Latest" });
    const exportSvg = h("button", { type: "button", id: "export-svg", text: "Download SVG" });
    const exportPng = h("button", { type: "button", id: "export-png", text: "Download PNG" });
    // Ends the conversation: completed if it waits for its next message, else cancelled.
    const endButton = h("button", { type: "button", id: "end-session", text: "End conversation", hidden: true, onclick: endConversation });
    const actionsCount = h("span", { id: "actions-count" });
    const actions = h("section", { id: "actions", class: "actions", "aria-labelledby": "actions-title" }, h("h3", { id: "actions-title" }, "Waiting for a decision", actionsCount));
    const actionsList = h("ul", { id: "actions-list", class: "plain" });
    actions.appendChild(actionsList);
    // Decisions taken while the page is open (here or by another client), newest first.
    const decidedList = h("ul", { id: "decided-list", class: "plain", "aria-live": "polite" });
    const decidedBox = h("div", { id: "decided", hidden: true }, h("h4", { text: "Decided" }), decidedList);
    actions.appendChild(decidedBox);
    const panel = h("aside", { id: "transcript", class: "transcript", "aria-labelledby": "transcript-title", "aria-live": "polite" }, h("h3", { id: "transcript-title", text: "Transcript" }), h("p", { class: "notice", text: "Select a node (in the graph or the table) to read its chat." }));
    // Groups of lines, one per agent and turn (see drawTimeline), each a list of lines.
    const timelineList = h("div", { id: "timeline-list", class: "timeline" });
    const timelineNote = h("p", { id: "timeline-note", class: "meta" });
    const timeline = h("section", { id: "timeline", "aria-labelledby": "timeline-title" }, h("h3", { id: "timeline-title", text: "Timeline" }), timelineNote, timelineList);
    const errorBox = h("p", { id: "session-error", class: "error", role: "alert" });

    // ── run and steer: the answer as it streams, what was used, the next message ──
    const resultPrompt = h("p", { id: "result-prompt", class: "meta" });
    // Focusable: a long answer scrolls, and the keyboard must reach it too.
    const resultText = h("div", { id: "result-text", class: "result-text", "aria-live": "polite", tabindex: "0", role: "region", "aria-label": "The coordinator's answer" });
    const resultState = h("p", { id: "result-state", class: "meta" });
    const usageTotal = h("p", { id: "usage-total", class: "usage" });
    const composerText = h("textarea", { id: "composer-text", rows: "3", "aria-describedby": "composer-mode" });
    const composerMode = h("p", { id: "composer-mode", class: "meta" });
    const composerSend = h("button", { type: "button", id: "composer-send", class: "primary", text: "Send", onclick: sendMessage });
    const cancelRun = h("button", { type: "button", id: "cancel-run", class: "deny", text: "Cancel run", hidden: true, onclick: cancelTheRun });
    // While the coordinator works, the message is either queued (its next turn) or steers
    // the running turn (read at its next model round): the agent channel's prompt kinds.
    const sendQueued = h("input", { type: "radio", name: "composer-kind", id: "composer-queued", value: "queued", checked: true, onchange: drawSteer });
    const sendSteering = h("input", { type: "radio", name: "composer-kind", id: "composer-steering", value: "steering", onchange: drawSteer });
    const composerKind = h(
      "fieldset",
      { id: "composer-kind", class: "composer-kind", hidden: true },
      h("legend", { text: "Send it as" }),
      h("label", { for: "composer-queued" }, sendQueued, " the next turn (queued)"),
      h("label", { for: "composer-steering" }, sendSteering, " steering for the running turn")
    );
    const composer = h(
      "div",
      { id: "composer", class: "composer", hidden: true },
      h("label", { for: "composer-text", text: "Next message" }),
      composerText,
      composerKind,
      composerMode,
      h("div", { class: "buttons" }, composerSend, cancelRun)
    );
    composerText.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        sendMessage();
      }
    });
    const result = h(
      "section",
      { id: "result", class: "result panel", "aria-labelledby": "result-title" },
      h("h3", { id: "result-title", text: "Result" }),
      resultPrompt,
      resultText,
      resultState,
      usageTotal,
      composer
    );
    // On a phone the graph is drawn on request (the decisions and the agents come first).
    const graphToggle = h("button", { type: "button", id: "graph-toggle", class: "graph-toggle", "aria-expanded": "false", "aria-controls": "graph-wrap", text: "Show the graph" });
    // Search by agent, task or status: matches are outlined, the rest faded; Enter goes
    // from one match to the next (a match folded in a group opens it).
    const searchBox = h("input", { type: "search", id: "graph-search", placeholder: "agent, task or status", "aria-describedby": "graph-search-count" });
    const searchCount = h("output", { id: "graph-search-count", for: "graph-search", "aria-live": "polite" });
    let searchFound = [];
    let searchAt = -1;
    function runSearch() {
      searchFound = view.search(searchBox.value);
      searchAt = -1;
      searchCount.textContent = searchBox.value.trim() ? searchFound.length + " found" + (searchFound.length ? " (Enter: next)" : "") : "";
    }
    const searchLater = O.debounce(runSearch, 200);
    searchBox.addEventListener("input", searchLater);
    searchBox.addEventListener("keydown", function (event) {
      if (event.key !== "Enter") return;
      event.preventDefault();
      searchLater.cancel();
      if (searchAt === -1) runSearch();
      if (!searchFound.length) return;
      searchAt = (searchAt + 1) % searchFound.length;
      selectNode(searchFound[searchAt]);
      searchCount.textContent = searchAt + 1 + " of " + searchFound.length;
    });
    const graphWrap = h(
      "div",
      { id: "graph-wrap", class: "graph-wrap" },
      h("div", { class: "search", role: "search" }, h("label", { for: "graph-search", text: "Find" }), searchBox, searchCount),
      h(
        "div",
        { class: "scrub", role: "group", "aria-label": "Sequence scrubber" },
        h("label", { for: "scrubber", text: "Graph as it stood" }),
        scrubber,
        scrubLabel,
        liveButton
      ),
      graphBox
    );
    graphToggle.addEventListener("click", function () {
      const shown = graphWrap.classList.toggle("shown");
      graphToggle.setAttribute("aria-expanded", String(shown));
      graphToggle.textContent = shown ? "Hide the graph" : "Show the graph";
      if (shown) {
        view.resize();
        view.relayout();
      }
    });

    main.appendChild(
      h(
        "div",
        { class: "session-head" },
        h("div", null, title, meta, connection, h("div", { class: "buttons" }, endButton, h("a", { id: "board-link", href: "#/sessions/" + encodeURIComponent(id) + "/board", text: "Board" }))),
        h("div", { class: "exports", role: "group", "aria-label": "Export the graph" }, exportSvg, exportPng)
      )
    );
    main.appendChild(errorBox);
    // In reading order: what waits for a decision, the answer, the agents, the graph, the
    // selected chat; the stylesheet lays them out side by side where there is room.
    const tableWrap = h("div", { class: "table-wrap" }, nodesTable);
    main.appendChild(
      h(
        "div",
        { class: "session-grid" },
        actions,
        result,
        tableWrap,
        graphToggle,
        graphWrap,
        panel
      )
    );
    main.appendChild(timeline);

    const view = O.createGraphView(graphBox, { onSelect: selectNode });
    O.currentGraph = view; // for the console and the browser tests

    // ── drawing ──
    function shownModel() {
      if (scrubAt === null) return model;
      return GM.foldEnvelopes(envelopes, scrubAt);
    }

    const rowOf = new Map(); // the rows made so far (drawn or not), by node id
    let tableList = []; // every row of the table, in its order
    let virtual = false;
    function drawTable(m) {
      tableList = GM.tableRows(m);
      virtual = tableList.length >= VIRTUAL_FROM;
      nodesTable.classList.toggle("virtual", virtual);
      nodesTable.setAttribute("aria-rowcount", String(tableList.length + 1));
      if (rowOf.size > tableList.length) {
        const ids = new Set(tableList.map((row) => row.id));
        for (const nodeId of [...rowOf.keys()]) if (!ids.has(nodeId)) rowOf.delete(nodeId);
      }
      drawRows(-1);
    }

    // The rows to draw, [first, last): those in view (the wrap's box and the window's both
    // clip it) and OVERSCAN more each side; and row ``must`` when there is one.
    function rowWindow(must) {
      const count = tableList.length;
      if (!virtual) return [0, count];
      const wrapBox = tableWrap.getBoundingClientRect();
      const zero = spaceAbove.getBoundingClientRect().top; // where the first row's top is
      // The rows the wrap shows; when it is taller than the window (a phone's layout, where
      // the page scrolls), those in the window too.
      let viewTop = wrapBox.top;
      let viewBottom = wrapBox.bottom;
      if (wrapBox.height > root.innerHeight) {
        viewTop = Math.max(wrapBox.top, 0);
        viewBottom = Math.min(wrapBox.bottom, root.innerHeight);
        if (viewBottom <= viewTop) viewBottom = viewTop + root.innerHeight; // out of view
      }
      let first = 0;
      let shown = 40; // not laid out (hidden): a screenful
      if (wrapBox.height > 0 && viewBottom > viewTop) {
        first = Math.floor((viewTop - zero) / ROW_PX);
        shown = Math.ceil((viewBottom - viewTop) / ROW_PX) + 1;
      }
      if (must >= 0 && (must < first || must >= first + shown)) first = must - Math.floor(shown / 2);
      const from = Math.min(Math.max(first - OVERSCAN, 0), count);
      return [from, Math.min(Math.max(first, 0) + shown + OVERSCAN, count)];
    }

    function rowFor(row) {
      let tr = rowOf.get(row.id);
      if (!tr) {
        // The button is the keyboard's way in (Enter, Space); a click anywhere on the row
        // (the button's included: it bubbles) selects the node.
        const button = h("button", { type: "button", class: "link node-select", "data-node": row.id });
        tr = h("tr", { "data-node": row.id, class: "kind-" + row.kind }, h("th", { scope: "row" }, button), h("td"), h("td", null, h("span", { class: "badge" })), h("td"), h("td", { class: "num" }), h("td", { class: "num" }), h("td", { class: "num" }), h("td", { class: "num" }));
        tr.addEventListener("click", function () {
          selectNode(row.id);
        });
        rowOf.set(row.id, tr);
      }
      const cells = tr.children;
      const button = cells[0].firstChild;
      const agentText = row.agent + (row.agentId ? " " + row.agentId.replace(/^[^#]*#/, "#") : "");
      if (button.textContent !== agentText) button.textContent = agentText;
      if (cells[1].textContent !== row.role) cells[1].textContent = row.role;
      const badge = cells[2].firstChild;
      if (badge.textContent !== row.status) {
        badge.textContent = row.status;
        badge.className = "badge status-" + row.status.split(" ")[0];
      }
      if (cells[3].textContent !== row.parent) cells[3].textContent = row.parent;
      const used = usageByChat.get(row.id);
      const figures = used ? [O.formatCount(used.inputTokens), O.formatCount(used.outputTokens), String(used.modelCalls), O.formatMs(used.durationMs)] : ["", "", "", ""];
      for (let i = 0; i < 4; i += 1) if (cells[4 + i].textContent !== figures[i]) cells[4 + i].textContent = figures[i];
      tr.classList.toggle("selected", row.id === selected);
      return tr;
    }

    // Draws the rows of the window (with row ``must`` in it, -1 for none), in order.
    function drawRows(must) {
      const [first, last] = rowWindow(must);
      // The rows leaving go first: those staying are then in order and are not moved (a
      // moved row would lose the keyboard's focus).
      const staying = new Set();
      for (let i = first; i < last; i += 1) staying.add(tableList[i].id);
      for (const tr of [...tableBody.children]) if (!staying.has(tr.getAttribute("data-node"))) tr.remove();
      let at = tableBody.firstChild;
      for (let i = first; i < last; i += 1) {
        const tr = rowFor(tableList[i]);
        if (virtual) tr.setAttribute("aria-rowindex", String(i + 2));
        else tr.removeAttribute("aria-rowindex");
        if (tr === at) at = at.nextSibling;
        else tableBody.insertBefore(tr, at);
      }
      while (at) {
        const next = at.nextSibling;
        at.remove();
        at = next;
      }
      spaceAbove.firstChild.firstChild.style.height = virtual ? first * ROW_PX + "px" : "0px";
      spaceBelow.firstChild.firstChild.style.height = virtual ? (tableList.length - last) * ROW_PX + "px" : "0px";
    }

    let rowsFrame = null;
    function onTableScroll() {
      if (!virtual || rowsFrame !== null) return;
      rowsFrame = requestAnimationFrame(function () {
        rowsFrame = null;
        if (!disposed) drawRows(-1);
      });
    }
    tableWrap.addEventListener("scroll", onTableScroll, { passive: true });
    root.addEventListener("scroll", onTableScroll, { passive: true });
    root.addEventListener("resize", onTableScroll);

    // The keyboard goes from row to row (arrows, Page Up/Down, Home, End), drawing the rows
    // it reaches: Tab alone would leave a drawn window's last row for what follows the table.
    const ROW_KEYS = { ArrowDown: 1, ArrowUp: -1, PageDown: 10, PageUp: -10 };
    tableBody.addEventListener("keydown", function (event) {
      const key = event.key;
      if (!(key in ROW_KEYS) && key !== "Home" && key !== "End") return;
      const tr = event.target.closest("tr");
      if (!tr || event.altKey || event.ctrlKey || event.metaKey) return;
      const index = tableList.findIndex((row) => row.id === tr.getAttribute("data-node"));
      if (index === -1) return;
      event.preventDefault();
      const to = key === "Home" ? 0 : key === "End" ? tableList.length - 1 : Math.min(Math.max(index + ROW_KEYS[key], 0), tableList.length - 1);
      drawRows(to);
      const target = rowOf.get(tableList[to].id);
      target.scrollIntoView({ block: "nearest", behavior: "instant" });
      drawRows(to);
      target.querySelector("button").focus();
    });

    let actionsDrawn = null;
    // Who asks: "researcher #3" (name and number: six analysts are told apart).
    function askerName(node) {
      return node.requestedBy;
    }
    const decidedHere = new Set(); // decision keys this page sent
    let pendingBefore = new Map(); // id -> node, what waited at the last draw
    const decided = []; // what was decided while the page was open, newest first

    function pendingNodes() {
      return [...model.nodes.values()].filter((node) => node.kind === "approval" && node.status === "pending");
    }

    /** The number of things waiting for someone (approvals and questions), live only. */
    function waitingCount() {
      const live = !offline && summary && summary.live && !ended;
      return live ? pendingNodes().length : 0;
    }

    function drawActions() {
      const live = !offline && summary && summary.live && !ended;
      const operate = context.canOperate && live && !runElsewhere();
      const pending = pendingNodes();
      if (answering !== null && !pending.some((node) => decisionKey(node) === answering)) answering = null; // taken
      // Taken since the last draw (here or by another client): the card says so, live.
      const now = new Set(pending.map((node) => node.id));
      for (const [nodeId, node] of pendingBefore) {
        if (now.has(nodeId)) continue;
        const done = model.nodes.get(nodeId) || node;
        decided.unshift({ node: done, here: decidedHere.has(decisionKey(done)) });
      }
      pendingBefore = new Map(pending.map((node) => [node.id, node]));
      decided.length = Math.min(decided.length, 10);
      // Redrawn only when what waits changed: a button rebuilt under the pointer of a busy
      // session would lose its click, an answer being typed its text.
      const signature = JSON.stringify([operate, live, pending.map((node) => node.id + "|" + node.summary), [...refusals], decided.map((d) => d.node.id + d.node.status)]);
      if (signature === actionsDrawn) return;
      actionsDrawn = signature;
      const typed = new Map([...actionsList.querySelectorAll("input.answer")].map((input) => [input.id, input.value]));
      O.clear(actionsList);
      for (const node of pending) {
        actionsList.appendChild(node.question ? questionItem(node, operate, typed) : approvalItem(node, operate));
      }
      if (pending.length === 0) actionsList.appendChild(h("li", { class: "notice", text: "Nothing is waiting." }));
      else if (live && runElsewhere()) actionsList.appendChild(h("li", { class: "notice", text: "Decide in the process that runs this session." }));
      O.clear(decidedList);
      for (const entry of decided) decidedList.appendChild(decidedItem(entry));
      decidedBox.hidden = decided.length === 0;
      actionsCount.textContent = pending.length ? " (" + pending.length + ")" : "";
      O.showWaiting(waitingCount());
    }

    function decisionKey(node) {
      return node.question ? questionCall(node) : node.actionId;
    }

    // The heading lines of a card: who asks (name and number), for which task, what it
    // wants to run with which input, and who decides (by name, never a chat URI).
    function cardHead(node, asks) {
      const parts = [h("p", { class: "card-who" }, h("strong", { class: "asker", text: askerName(node) }), " " + asks)];
      if (node.taskTitle) parts.push(h("p", { class: "card-task" }, h("span", { class: "label", text: "Task: " }), node.taskTitle));
      return parts;
    }

    function refusal(node) {
      const key = decisionKey(node);
      return refusals.has(key) ? h("p", { class: "error", role: "alert", text: "Not taken: " + refusals.get(key) }) : null;
    }

    function approvalItem(node, operate) {
      const call = (node.toolName || "an action") + (node.input ? "(" + node.input + ")" : "");
      const item = h(
        "li",
        { class: "approval card", "data-approval": node.actionId },
        cardHead(node, "asks to run"),
        h("p", { class: "card-call" }, h("code", { text: call })),
        h("p", { class: "card-routed" }, h("span", { class: "label", text: "Routed to: " }), node.routedTo),
        refusal(node)
      );
      if (operate) {
        const what = (node.toolName || "") + " asked by " + askerName(node);
        item.appendChild(
          h(
            "div",
            { class: "buttons" },
            h("button", { type: "button", class: "approve", "data-action": "approve", text: "Approve", "aria-label": "Approve " + what, onclick: () => decide(node, "approve") }),
            h("button", { type: "button", class: "deny", "data-action": "deny", text: "Deny", "aria-label": "Deny " + what, onclick: () => decide(node, "reject") })
          )
        );
      }
      return item;
    }

    function decidedItem(entry) {
      const node = entry.node;
      const what = node.question ? "question of " + askerName(node) : (node.toolName || "action") + " asked by " + askerName(node);
      const outcome = GM.statusText(node);
      return h(
        "li",
        { class: "decided card", "data-decided": node.actionId },
        h("span", { class: "badge status-" + node.status.split(" ")[0], text: node.status }),
        " " + what + ": " + outcome + (entry.here || !DECISIONS.has(node.status) ? "" : " (decided elsewhere)")
      );
    }

    function questionCall(node) {
      return node.toolCallId || node.actionId.replace(/^input-/, "");
    }

    function sendAnswer(node, text) {
      const toolCallId = questionCall(node);
      // The card stays until the answer is recorded (action.resolved): one the daemon
      // refuses comes back as an error, said on the card.
      if (socket && socket.send({ channel: "agent", type: "tool_response", toolCallId: toolCallId, result: text })) {
        answering = toolCallId;
        decidedHere.add(toolCallId);
        refusals.delete(toolCallId);
        actionsDrawn = null;
        drawActions();
      } else errorBox.textContent = "Not connected: the answer was not sent.";
    }

    // The answer's controls as the question defines them: yes / no and single choice as
    // buttons, several choices as checkboxes, numbers and free text as a field.
    function answerControls(node, typed) {
      const toolCallId = questionCall(node);
      const question = node.questions[0] || { kind: "text" };
      const kind = question.kind || "text";
      const options = question.options || [];
      const who = askerName(node);
      if (kind === "boolean") {
        return h(
          "div",
          { class: "buttons", role: "group", "aria-label": "Answer " + who },
          h("button", { type: "button", class: "approve", "data-action": "answer", "data-answer": "yes", text: "Yes", onclick: () => sendAnswer(node, "yes") }),
          h("button", { type: "button", class: "deny", "data-action": "answer", "data-answer": "no", text: "No", onclick: () => sendAnswer(node, "no") })
        );
      }
      if (kind === "single-select" && options.length) {
        return h(
          "div",
          { class: "buttons", role: "group", "aria-label": "Answer " + who },
          options.map((option) => h("button", { type: "button", "data-action": "answer", "data-answer": option, text: option, onclick: () => sendAnswer(node, option) }))
        );
      }
      if (kind === "multi-select" && options.length) {
        const boxes = options.map((option, i) => {
          const boxId = "choice-" + toolCallId + "-" + i;
          return h("label", { class: "choice", for: boxId }, h("input", { type: "checkbox", id: boxId, value: option }), " " + option);
        });
        const group = h("fieldset", { class: "choices" }, h("legend", { text: "Choose any" }), boxes);
        const send = h("button", {
          type: "button",
          "data-action": "answer",
          text: "Send choices",
          onclick: () => sendAnswer(node, [...group.querySelectorAll("input:checked")].map((box) => box.value).join(", ")),
        });
        return h("div", null, group, send);
      }
      const inputId = "answer-" + toolCallId;
      const numeric = kind === "number" || kind === "integer";
      // A number is typed as text (inputmode brings the phone's digits): the daemon says
      // what it expects of an answer it cannot take.
      const input = h("input", { type: "text", inputmode: numeric ? (kind === "integer" ? "numeric" : "decimal") : null, id: inputId, class: "answer" });
      input.value = typed.get(inputId) || "";
      input.addEventListener("keydown", function (event) {
        if (event.key === "Enter") sendAnswer(node, input.value);
      });
      return h(
        "div",
        { class: "answer-row" },
        h("label", { for: inputId, text: "Answer" }),
        input,
        h("button", { type: "button", "data-action": "answer", text: "Answer", onclick: () => sendAnswer(node, input.value) })
      );
    }

    function questionItem(node, operate, typed) {
      const toolCallId = questionCall(node);
      const item = h(
        "li",
        { class: "question card", "data-question": toolCallId },
        cardHead(node, "asks:"),
        h("p", { class: "card-call" }, h("strong", { text: node.summary })),
        h("p", { class: "card-routed" }, h("span", { class: "label", text: "Routed to: " }), node.routedTo),
        refusal(node)
      );
      if (operate) item.appendChild(answerControls(node, typed));
      return item;
    }

    // Another process runs the session (the daemon follows it): it takes no commands here.
    function runElsewhere() {
      return Boolean(summary && summary.runBy && summary.runBy.pid !== undefined);
    }

    function runByText(by) {
      const parts = [];
      if (by.program) parts.push(h("code", { text: by.program }));
      if (by.pid) parts.push((by.program ? ", " : "") + "pid " + by.pid);
      if (by.node) parts.push("node " + by.node);
      if (parts.length === 0) parts.push("another process");
      return h("span", { id: "session-run-by" }, " · run by ", parts);
    }

    function endConversation() {
      if (!sendOrWake({ channel: "agent", type: "end" })) {
        errorBox.textContent = "Not connected: the conversation was not ended.";
      }
    }

    /** The coordinator's roster status ("idle" between prompts), if the model has it. */
    function coordinatorStatus() {
      for (const node of model.nodes.values()) {
        if (node.kind === "chat" && !node.parent && node.agentName === model.run.coordinator) return node.status;
      }
      return null;
    }

    function decide(node, type) {
      if (!socket || !socket.send({ channel: "agent", type: type, requestId: node.actionId })) {
        errorBox.textContent = "Not connected: the decision was not sent.";
        return;
      }
      // A refusal (taken already, say) comes back as an error: said on this card.
      answering = node.actionId;
      decidedHere.add(node.actionId);
      refusals.delete(node.actionId);
    }

    // ── run and steer ──
    let wantLastAnswer = false; // once the envelopes are folded: the coordinator's last answer
    const usageByChat = new Map(); // chat URI -> {inputTokens, outputTokens, modelCalls, durationMs}
    let usageAsked = 0;
    async function loadUsage() {
      if (offline) return;
      const asked = ++usageAsked;
      try {
        const used = await O.api("/api/sessions/" + encodeURIComponent(id) + "/usage");
        if (disposed || asked !== usageAsked) return;
        usageByChat.clear();
        for (const chat of Object.keys(used.chats || {})) usageByChat.set(chat, used.chats[chat]);
        for (const node of model.nodes.values()) node.usage = usageByChat.get(node.id) || null;
        const t = used.total || {};
        usageTotal.textContent =
          "Total: " + O.formatCount(t.inputTokens || 0) + " tokens in, " + O.formatCount(t.outputTokens || 0) + " out · " +
          (t.modelCalls || 0) + " model call" + (t.modelCalls === 1 ? "" : "s") + " · " + O.formatMs(t.durationMs || 0) + " of agent time";
        drawAll([]);
      } catch (error) {
        /* the figures come with the next change */
      }
    }
    const refreshUsage = O.debounce(loadUsage, 500);

    function coordinatorNode() {
      for (const node of model.nodes.values()) {
        if (node.kind === "chat" && !node.parent && node.agentName === model.run.coordinator) return node;
      }
      return null;
    }

    function mayCommand() {
      const reachable = summary && (summary.live || resting);
      return Boolean(context.canOperate && !offline && reachable && !ended && !runElsewhere());
    }

    /** Send ``message`` on the socket; a conversation at rest is woken first (attaching
     * over /ws takes it up), and the message goes once the socket opens. */
    function sendOrWake(message) {
      if (socket) return socket.send(message);
      if (!resting) return false;
      wakeWith.push(message);
      attach();
      return true;
    }

    const BUSY = new Set(["running", "waiting", "needs_approval", "needs_input", "spawning", "blocked"]);
    function drawSteer() {
      if (offline && model.run.result && !resultText.textContent) {
        resultText.textContent = String(model.run.result);
        resultState.textContent = "answered";
      }
      const operate = mayCommand() && model.run.status === "running";
      composer.hidden = !operate;
      const lead = coordinatorNode();
      const busy = Boolean(lead && BUSY.has(lead.status));
      composerKind.hidden = !busy;
      const who = (lead && lead.agentName) || "the coordinator";
      composerMode.textContent = !busy
        ? "Starts " + who + "'s next turn. (Ctrl+Enter sends.)"
        : sendSteering.checked
          ? who + " is at work: this message steers its running turn, read at its next model call. (Ctrl+Enter sends.)"
          : who + " is at work: this message is queued and becomes its next turn. (Ctrl+Enter sends.)";
      cancelRun.hidden = !(operate && busy && lead && lead.taskId);
    }

    function sendMessage() {
      const text = composerText.value.trim();
      if (!text) {
        errorBox.textContent = "Write a message first.";
        composerText.focus();
        return;
      }
      // Steering only while a turn runs: an idle coordinator takes the message as its turn.
      const steering = !composerKind.hidden && sendSteering.checked;
      const message = { channel: "agent", type: "prompt", prompt: text };
      if (steering) message.kind = "steering";
      if (!sendOrWake(message)) {
        errorBox.textContent = "Not connected: the message was not sent.";
        return;
      }
      errorBox.textContent = "";
      composerText.value = "";
      resultState.textContent = (steering ? "Steered with: " : "Sent: ") + O.shorten(text, 120);
    }

    function abortTask(taskId, what) {
      if (!socket || !socket.send({ channel: "agent", type: "abort", taskId: taskId })) {
        errorBox.textContent = "Not connected: " + what + " was not cancelled.";
      }
    }

    function cancelTheRun() {
      const lead = coordinatorNode();
      if (lead && lead.taskId) abortTask(lead.taskId, "the run");
    }

    // The coordinator's answer as the agent channel streams it: `prompt` starts a turn,
    // `text` adds to it, `result` is its final text, `error` / `done` end it.
    function onAgentEvent(event) {
      if (event.type === "prompt") {
        resultPrompt.textContent = "Asked: " + O.shorten(String(event.prompt || ""), 300);
        resultText.textContent = "";
        resultState.textContent = "answering…";
      } else if (event.type === "text") {
        resultText.textContent += String(event.content || "");
      } else if (event.type === "result") {
        if (event.summary) resultText.textContent = String(event.summary);
        resultState.textContent = "answered";
      } else if (event.type === "error") {
        resultState.textContent = "ended: " + String(event.message || "error");
      } else if (event.type === "done") {
        if (resultState.textContent === "answering…") resultState.textContent = "answered";
        refreshUsage();
      }
    }

    // An ended session: the answer is the coordinator's last turn, from its transcript.
    async function loadLastAnswer() {
      const lead = coordinatorNode();
      if (!lead || offline) return;
      try {
        const transcript = await O.api("/api/sessions/" + encodeURIComponent(id) + "/transcript?thread=" + encodeURIComponent(lead.id));
        if (disposed) return;
        const turns = transcript.turns || [];
        const last = turns[turns.length - 1];
        if (last && last.events) last.events.forEach(onAgentEvent);
      } catch (error) {
        /* the panel stays empty */
      }
    }

    // ── the timeline, in words ──
    // Each envelope is a sentence naming agents as people do ("researcher #3 asked to run
    // publish(target=release page)"), with a link to its node (and so its transcript); a
    // filter keeps the lines with some text, a kind; "Raw envelopes" shows them as sent.
    const timelineRows = [];
    function nameOf(chat, fallback) {
      const node = chat ? model.nodes.get(chat) : null;
      if (!node || node.kind !== "chat") return fallback || "?";
      return node.agentName + (node.agentId ? " #" + String(node.agentId).replace(/^[^#]*#/, "") : "");
    }

    /** [kind, sentence] of an envelope; kind is "decision", "agent" or "run". */
    function sentence(env) {
      const p = env.payload || {};
      const who = nameOf(env.threadId, p.requestedByName || p.agentName);
      switch (env.type) {
        case "run.started":
          return ["run", "The run started" + (p.prompt ? ": " + O.shorten(String(p.prompt), 120) : "")];
        case "run.finished":
        case "run.failed":
          return ["run", "The run " + (p.status || (env.type === "run.failed" ? "failed" : "finished")) + (p.error ? ": " + p.error : "")];
        case "agent.spawned":
          return env.parentThreadId
            ? ["agent", nameOf(env.parentThreadId) + " delegated to " + who + (p.title || (model.nodes.get(env.threadId) || {}).title ? ": " + O.shorten(p.title || model.nodes.get(env.threadId).title, 100) : "")]
            : ["agent", who + " joined as " + (p.role || "a member")];
        case "agent.changed":
          return ["agent", who + " is " + (p.status || "changed") + (p.waitingFor ? " (" + p.waitingFor + ")" : "")];
        case "agent.completed":
        case "agent.failed":
          return ["agent", who + " " + (p.status || "ended") + (p.summary ? ": " + O.shorten(String(p.summary), 140) : "")];
        case "worker.notification":
          return ["agent", who + " reported back (" + (p.status || "done") + ")" + (env.parentThreadId ? " to " + nameOf(env.parentThreadId) : "")];
        case "agent.handoff":
          return ["agent", (p.fromAgent || "?") + " handed over to " + (p.toAgent || "?") + (p.reason ? ": " + p.reason : "")];
        case "action.required": {
          const asked = p.questions && p.questions.length
            ? "asked: " + (p.message || p.questions.map((q) => q.message || q.id).join(" / "))
            : "asked to run " + (p.toolName || "a tool") + (p.inputSummary ? "(" + p.inputSummary + ")" : "");
          return ["decision", (p.requestedByName || who) + " " + asked + " — routed to " + (p.routedToName || p.routedTo || "?")];
        }
        case "action.resolved": {
          const what = p.toolName ? (p.requestedByName || who) + "'s " + p.toolName : (p.requestedByName || who) + "'s question";
          const outcome = p.answer !== undefined ? "answered " + p.answer : p.decision || p.response || "resolved";
          return ["decision", what + ": " + outcome + (p.resolvedByName ? " by " + p.resolvedByName : "")];
        }
        case "task.changed":
          if (p.runtimeEntity === "external_task") return ["task", (p.agentName || who) + "'s remote task is " + String(p.runtimeStatus || "changed").replace(/_/g, " ")];
          return ["task", "Task " + (p.title ? "“" + O.shorten(p.title, 80) + "”" : env.taskId || "") + " is " + (p.status || "changed")];
        case "artifact.changed":
          return ["artifact", (p.agentName || who) + " sent artifact " + (p.name || env.artifactId || "") + (p.mediaType ? " (" + p.mediaType + ")" : "") + (p.lastChunk === false ? ", more to come" : "")];
        default:
          return ["other", env.type + (p.status ? " (" + p.status + ")" : "")];
      }
    }

    // Lines are grouped by agent and turn: an agent's turn begins when it joins, and again
    // each time it goes to work from a rest (a conversation's coordinator, idle between
    // prompts, starts its next turn). The run's own lines are a group of their own. Groups
    // come in the order they began; lines keep their order within one.
    const REST = new Set(["idle", "completed", "failed", "cancelled", "killed"]);
    const turnOf = new Map(); // chat -> {turn, status}
    const groups = new Map(); // "chat turn" -> {element, list}
    function groupOf(env) {
      const chat = env.threadId || "";
      let at = turnOf.get(chat);
      if (!at) turnOf.set(chat, (at = { turn: 1, status: null }));
      const status = (env.payload || {}).status;
      if (chat && env.type === "agent.changed" && status) {
        if (!REST.has(status) && at.status !== null && REST.has(at.status)) at.turn += 1;
        at.status = status;
      } else if (chat && (env.type === "agent.completed" || env.type === "agent.failed")) {
        at.status = status || "completed";
      }
      const key = chat + " " + at.turn;
      let group = groups.get(key);
      if (!group) {
        const title = chat ? nameOf(chat) + " · turn " + at.turn : "The run";
        const list = h("ol", { class: "timeline-lines" });
        const count = h("span", { class: "count" });
        const element = h(
          "details",
          { class: "turn-group", open: true, "data-chat": chat, "data-turn": String(at.turn) },
          h("summary", null, h("span", { class: "group-title", text: title }), " ", count),
          list
        );
        group = { element: element, list: list, count: count };
        groups.set(key, group);
        timelineList.appendChild(element);
      }
      return group;
    }
    function drawGroup(group) {
      const lines = group.list.children;
      let shown = 0;
      for (const li of lines) if (!li.hidden) shown += 1;
      group.element.hidden = shown === 0;
      group.count.textContent = "(" + (shown === lines.length ? lines.length : shown + " of " + lines.length) + (lines.length === 1 ? " event)" : " events)");
    }
    function refilterAll() {
      timelineRows.forEach(filterRow);
      groups.forEach(drawGroup);
    }

    function drawTimeline(fresh) {
      // Only the newest TIMELINE_CAP are ever made: a 1,000-worker session has 10,000.
      const touched = new Set();
      for (const env of fresh.length > TIMELINE_CAP ? fresh.slice(-TIMELINE_CAP) : fresh) {
        const [kind, words] = sentence(env);
        const group = groupOf(env);
        const link = env.threadId && model.nodes.has(env.threadId)
          ? h("button", { type: "button", class: "link", "data-node": env.threadId, text: nameOf(env.threadId), onclick: () => selectNode(env.threadId) })
          : null;
        const li = h(
          "li",
          { "data-sequence": env.sequence, "data-kind": kind, "data-chats": [env.threadId, env.parentThreadId].filter(Boolean).join(" "), class: "kind-" + kind },
          h("span", { class: "seq", text: "#" + env.sequence }),
          " ",
          h("time", { datetime: env.timestamp || "", text: O.formatTime(env.timestamp).slice(11) || O.formatTime(env.timestamp) }),
          " ",
          h("span", { class: "words", text: words }),
          link ? [" ", link] : null
        );
        li.envelope = env; // its raw text is made when asked for (500 lines of JSON cost)
        if (timelineRaw.checked) showRaw(li);
        li.group = group;
        group.list.appendChild(li);
        timelineRows.push(li);
        filterRow(li);
        touched.add(group);
      }
      while (timelineRows.length > TIMELINE_CAP) {
        const gone = timelineRows.shift();
        gone.remove();
        touched.add(gone.group);
      }
      for (const [key, group] of groups) {
        if (!group.list.children.length) {
          group.element.remove();
          groups.delete(key);
          touched.delete(group);
        }
      }
      touched.forEach(drawGroup);
      listAgents();
      timelineNote.textContent =
        envelopes.length > TIMELINE_CAP
          ? "The last " + TIMELINE_CAP + " of " + envelopes.length + " events, newest last."
          : envelopes.length + " events, newest last.";
    }

    function filterRow(li) {
      const text = timelineFilter.value.trim().toLowerCase();
      const kind = timelineKind.value;
      const agent = timelineAgent.value;
      const shown =
        (!kind || li.dataset.kind === kind) &&
        (!agent || li.dataset.chats.split(" ").indexOf(agent) >= 0) &&
        (!text || li.textContent.toLowerCase().indexOf(text) >= 0);
      li.hidden = !shown;
    }

    const timelineFilter = h("input", { type: "search", id: "timeline-filter", placeholder: "agent, tool, status…" });
    const timelineKind = h(
      "select",
      { id: "timeline-kind" },
      [["", "everything"], ["decision", "decisions"], ["agent", "agents"], ["task", "tasks"], ["run", "the run"], ["other", "other"]].map(([value, text]) => h("option", { value: value, text: text }))
    );
    const timelineRaw = h("input", { type: "checkbox", id: "timeline-raw" });
    // One agent's lines (what it did, and what was delegated to it or by it).
    const timelineAgent = h("select", { id: "timeline-agent" }, h("option", { value: "", text: "every agent" }));
    let agentsListed = -1;
    function listAgents() {
      if (agentsListed === model.structure) return;
      agentsListed = model.structure;
      const current = timelineAgent.value;
      while (timelineAgent.options.length > 1) timelineAgent.remove(1);
      for (const node of model.nodes.values()) {
        if (node.kind === "chat") timelineAgent.appendChild(h("option", { value: node.id, text: nameOf(node.id) }));
      }
      timelineAgent.value = current;
    }
    timelineAgent.addEventListener("change", refilterAll);
    const refilter = O.debounce(refilterAll, 150);
    timelineFilter.addEventListener("input", refilter);
    timelineKind.addEventListener("change", refilterAll);
    function showRaw(li) {
      if (!li.querySelector(".raw")) li.appendChild(h("code", { class: "raw", text: JSON.stringify(li.envelope) }));
    }
    timelineRaw.addEventListener("change", function () {
      if (timelineRaw.checked) timelineRows.forEach(showRaw);
      timelineList.classList.toggle("raw-shown", timelineRaw.checked);
    });
    timeline.insertBefore(
      h(
        "div",
        { class: "filters", role: "group", "aria-label": "Filter the timeline" },
        h("label", { for: "timeline-filter", text: "Filter" }),
        timelineFilter,
        h("label", { for: "timeline-kind", text: "Show" }),
        timelineKind,
        h("label", { for: "timeline-agent", text: "by" }),
        timelineAgent,
        h("label", { for: "timeline-raw" }, timelineRaw, " Raw envelopes")
      ),
      timelineNote
    );

    function drawScrubber() {
      const last = envelopes.length ? envelopes[envelopes.length - 1].sequence : 0;
      scrubber.max = String(last);
      scrubber.min = envelopes.length ? "1" : "0";
      if (scrubAt === null) scrubber.value = String(last);
      const at = scrubAt === null ? last : scrubAt;
      scrubLabel.textContent = "at fact " + at + (scrubAt === null ? " (latest)" : " of " + last);
      liveButton.disabled = scrubAt === null;
    }

    function drawAll(fresh) {
      const m = shownModel();
      view.render(m);
      if (searchBox.value.trim() && fresh && fresh.length) view.search(searchBox.value);
      graphBox.setAttribute("aria-label", GM.describe(m) + (scrubAt === null ? "" : " (at fact " + scrubAt + ")"));
      drawTable(m);
      drawActions();
      drawTimeline(fresh || []);
      drawScrubber();
      drawMeta();
      drawSteer();
    }

    function drawMeta() {
      if (!summary) return;
      title.textContent = summary.title || O.sessionId(summary.id || summary.uri);
      O.showWaiting(waitingCount(), title.textContent + " · Orchestrator");
      let status = ended && summary.live ? "ended" : summary.status || model.run.status || "";
      const open = status === "running" && !ended && !offline && model.run.status === "running";
      // Between prompts a conversation waits for its next message: it is idle, not running.
      if (open && coordinatorStatus() === "idle") status = "idle";
      endButton.hidden = !open;
      meta.textContent = "";
      meta.appendChild(h("span", { class: "badge status-" + status, id: "session-status", text: status }));
      meta.appendChild(document.createTextNode(" team " + (summary.team || model.run.team || "?") + " · started " + O.formatTime(summary.startedAt) + (summary.endedAt ? " · ended " + O.formatTime(summary.endedAt) : "")));
      if (model.run.model) {
        meta.appendChild(document.createTextNode(" · model "));
        meta.appendChild(h("code", { id: "session-model", text: model.run.model }));
      }
      if (summary.runBy && !ended) meta.appendChild(runByText(summary.runBy));
      // A fork names its source, and compares itself with it.
      const source = summary.forkedFrom;
      if (source && source.session && !offline) {
        const sourceId = O.sessionId(source.session);
        const point = source.turnId ? "turn " + source.turnId : "fact " + source.sequence;
        meta.appendChild(
          h(
            "span",
            { id: "session-forked-from" },
            " · forked from ",
            h("a", { href: "#/sessions/" + encodeURIComponent(sourceId), text: sourceId.slice(0, 8) }),
            " at " + point + " · ",
            h("a", { id: "compare-with-source", href: "#/diff/" + encodeURIComponent(sourceId) + "/" + encodeURIComponent(id), text: "compare with its source" })
          )
        );
      }
    }

    // ── envelopes in, once per frame ──
    function receive(list) {
      for (const env of list) queue.push(env);
      if (frame === null) {
        frame = document.hidden ? setTimeout(flush, 50) : requestAnimationFrame(flush);
      }
    }

    const threadsTouched = new Set();
    function flush() {
      frame = null;
      if (disposed) return;
      const fresh = [];
      const batch = queue;
      queue = [];
      for (const env of batch) {
        if (GM.applyEnvelope(model, env)) {
          envelopes.push(env);
          fresh.push(env);
          if (env.threadId) threadsTouched.add(env.threadId);
        }
      }
      if (fresh.length === 0) return;
      for (const node of model.nodes.values()) if (node.usage === undefined) node.usage = usageByChat.get(node.id) || null;
      drawAll(fresh);
      if (fresh.some((env) => USAGE_CHANGES.has(env.type))) refreshUsage();
      if (wantLastAnswer) {
        wantLastAnswer = false;
        loadLastAnswer();
      }
      if (selected && threadsTouched.has(selected)) refreshTranscript();
      threadsTouched.clear();
    }

    // ── the side panel ──
    function selectNode(nodeId) {
      selected = nodeId;
      view.select(nodeId);
      for (const [rowId, tr] of rowOf) tr.classList.toggle("selected", rowId === nodeId);
      showDetails();
    }

    const refreshTranscript = O.debounce(showDetails, 300);
    let transcriptAsked = 0;

    let panelNode = null; // the node the panel shows
    function fillPanel(parts) {
      const top = panel.scrollTop; // a refresh while reading keeps the place
      O.clear(panel);
      parts.forEach((part) => panel.appendChild(part));
      panel.scrollTop = top;
    }

    async function showDetails() {
      const node = shownModel().nodes.get(selected);
      if (!node) {
        O.clear(panel);
        panelNode = null;
        return;
      }
      // A remote teammate is a chat too: its transcript is its remote task's states and
      // artifacts, in words.
      const isChat = node.kind === "chat" || node.kind === "remote";
      const heading = h("h3", { id: "transcript-title", text: isChat ? "Transcript: " + node.agentName : node.agentName });
      const facts = h("dl", { class: "facts" });
      const add = (k, v) => {
        if (v) {
          facts.appendChild(h("dt", { text: k }));
          facts.appendChild(h("dd", { text: String(v) }));
        }
      };
      add("Status", GM.statusText(node));
      add("Role", node.role);
      add("Agent id", node.agentId);
      add("Task", node.title || node.taskId);
      if (node.kind === "approval") {
        add("Asked by", node.requestedBy);
        add("Routed to", node.routedTo);
        add("Decided by", node.resolvedBy);
        add("Decision", node.decision);
      }
      add("Summary", node.summary);
      const used = usageByChat.get(node.id);
      if (used) add("Used", O.formatCount(used.inputTokens) + " tokens in, " + O.formatCount(used.outputTokens) + " out · " + used.modelCalls + " model calls · " + O.formatMs(used.durationMs));
      // A running worker can be cancelled on its own (its subtree with it; a remote
      // teammate's task at its agent with it).
      const controls = h("div", { class: "buttons" });
      if (isChat && node.parent && node.taskId && BUSY.has(node.status) && mayCommand()) {
        const who = node.agentName + (node.agentId ? " " + node.agentId.replace(/^[^#]*#/, "#") : "");
        controls.appendChild(h("button", { type: "button", id: "cancel-worker", class: "deny", text: "Cancel " + who, onclick: () => abortTask(node.taskId, who) }));
      }
      if (!isChat || offline) {
        fillPanel([heading, facts, controls]);
        panelNode = node.id;
        return;
      }
      if (panelNode !== node.id) {
        // Another node: say so at once; a refresh of the same one keeps what is shown.
        fillPanel([heading, facts, controls, h("div", { class: "turns", text: "Loading the transcript…" })]);
        panelNode = node.id;
      }
      const asked = ++transcriptAsked;
      const turns = h("div", { class: "turns" });
      try {
        const transcript = await O.api("/api/sessions/" + encodeURIComponent(id) + "/transcript?thread=" + encodeURIComponent(node.id));
        if (disposed || asked !== transcriptAsked) return; // a later answer is coming
        const agentTrace = transcript.traces && transcript.traces.agent;
        if (agentTrace && agentTrace.url) {
          facts.appendChild(h("dt", { text: "Trace" }));
          facts.appendChild(h("dd", null, traceLink(agentTrace, "agent-trace")));
        }
        drawTranscript(turns, transcript);
      } catch (error) {
        if (disposed || asked !== transcriptAsked) return;
        turns.textContent = "The transcript could not be loaded: " + error.message;
      }
      fillPanel([heading, facts, controls, turns]);
    }

    function drawTranscript(target, transcript) {
      drawReviews(target, transcript.reviews || []);
      const turns = transcript.turns || [];
      if (turns.length === 0) target.appendChild(h("p", { class: "notice", text: "No turns yet." }));
      for (const turn of turns) {
        const section = h("section", { class: "turn", "data-turn": turn.id }, h("h4", { text: "Turn " + turn.id + " (" + turn.state + ")" }));
        // An operator can go back to any turn that ended and run on from there.
        if (context.canOperate && !offline && turn.state !== "running") {
          const failed = h("p", { class: "error", role: "alert" });
          const button = h("button", {
            type: "button",
            class: "fork-here",
            "data-turn": turn.id,
            text: "Fork from here",
            title: "A new session with this session's content up to the end of this turn",
            onclick: () => forkAt(turn.id, button, failed),
          });
          section.appendChild(h("div", { class: "buttons" }, button, failed));
        }
        if (turn.events) drawEvents(section, turn.events, (transcript.traces && transcript.traces.toolCalls) || {});
        else drawParts(section, turn);
        if (turn.error) section.appendChild(h("p", { class: "error", text: "Error: " + turn.error }));
        target.appendChild(section);
      }
    }

    // The review lane of a worker (the reviews of its work) or of a reviewer (its reviews):
    // each round's verdict, what it asked to fix and its evidence (quotes, tool results,
    // links, facts of the session), as the review facts recorded them.
    const VERDICT_WORDS = { requested: "requested", reviewing: "being reviewed", passed: "passed", changes_requested: "changes requested", failed: "failed" };
    function drawReviews(target, reviews) {
      if (reviews.length === 0) return;
      const lane = h("section", { class: "review-lane", "aria-labelledby": "review-lane-title" }, h("h4", { id: "review-lane-title", text: "Reviews" }));
      for (const review of reviews) {
        const verdict = VERDICT_WORDS[review.status] || review.status;
        const item = h("article", { class: "review verdict-" + review.status, "data-review": review.id },
          h("p", { class: "review-verdict" }, h("strong", { text: "Round " + review.round + ": " + verdict }), " by " + review.reviewer));
        if (review.summary) item.appendChild(h("p", { class: "review-summary", text: review.summary }));
        if (review.error) item.appendChild(h("p", { class: "error", text: review.error }));
        if (review.fixes && review.fixes.length) {
          item.appendChild(h("p", { class: "review-label", text: "Fixes asked" }));
          item.appendChild(h("ul", { class: "review-fixes" }, ...review.fixes.map((fix) => h("li", { text: fix }))));
        }
        if (review.evidence && review.evidence.length) {
          item.appendChild(h("p", { class: "review-label", text: "Evidence" }));
          item.appendChild(h("ul", { class: "review-evidence" }, ...review.evidence.map(evidenceItem)));
        }
        lane.appendChild(item);
      }
      target.appendChild(lane);
    }

    function evidenceItem(evidence) {
      const kind = h("span", { class: "evidence-kind", text: evidence.kind.replace("_", " ") + ": " });
      const ref = evidence.ref;
      if (ref && /^https?:\/\//.test(ref)) {
        return h("li", null, kind, h("a", { href: ref, target: "_blank", rel: "noopener noreferrer", text: evidence.text || ref }));
      }
      const body = evidence.kind === "quote" ? h("q", { text: evidence.text }) : h("span", { text: evidence.text });
      return h("li", null, kind, body, ref ? h("span", { class: "evidence-ref", text: " (" + ref + ")" }) : null);
    }

    /* "Fork from here": the new session is made as every client makes one, over AHP
     * (`createSession` with `fork: {session, turnId}`); then its page opens. */
    function forkAt(turnId, button, failed) {
      button.disabled = true;
      failed.textContent = "";
      const fork = "ahp-session:/" + newUuid();
      const ws = new WebSocket(O.wsUrl("/ahp"));
      let done = false;
      function finish(error) {
        if (done) return;
        done = true;
        clearTimeout(timer);
        ws.close();
        button.disabled = false;
        if (error) failed.textContent = "Not forked: " + error;
        else location.hash = "#/sessions/" + encodeURIComponent(O.sessionId(fork));
      }
      const timer = setTimeout(() => finish("the daemon did not answer"), 15000);
      ws.addEventListener("open", function () {
        const clientId = "web-" + Math.random().toString(36).slice(2);
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { channel: "ahp-root://", protocolVersions: ["0.7.0"], clientId: clientId, clientInfo: { name: "orchestrator-web", version: "1" } } }));
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "createSession", params: { channel: fork, fork: { session: "ahp-session:/" + id, turnId: turnId } } }));
      });
      ws.addEventListener("message", function (event) {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch (error) {
          return;
        }
        if (message.id === 1 && message.error) finish(message.error.message);
        else if (message.id === 2) finish(message.error ? message.error.message : null);
      });
      ws.addEventListener("close", (event) => finish(event.reason || "the connection closed"));
    }

    function newUuid() {
      if (root.crypto && root.crypto.randomUUID) return root.crypto.randomUUID();
      const b = root.crypto.getRandomValues(new Uint8Array(16));
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
      return x.slice(0, 8) + "-" + x.slice(8, 12) + "-" + x.slice(12, 16) + "-" + x.slice(16, 20) + "-" + x.slice(20);
    }

    // A link to a span in the trace UI (daemon.toml's tracing.trace_url), in a new tab.
    function traceLink(trace, cls) {
      return h("a", { href: trace.url, class: "trace-link " + cls, target: "_blank", rel: "noopener noreferrer", title: "trace " + trace.traceId + ", span " + trace.spanId, text: "trace" });
    }

    function toolBox(name, status, input, trace) {
      const state = h("span", { class: "tool-status", text: " [" + status + "]" });
      const link = trace && trace.url ? [" ", traceLink(trace, "tool-trace")] : null;
      const box = h("div", { class: "tool" }, h("p", null, h("strong", { text: "Tool " + name }), state, link), h("pre", { text: input }));
      box.state = state;
      return box;
    }

    function asText(value) {
      if (value === undefined || value === null) return "";
      return typeof value === "string" ? value : JSON.stringify(value, null, 2);
    }

    // A turn as agent-channel events (what GET .../transcript answers): the prompt,
    // steering messages (with who sent them) where the turn took them in, reasoning, text,
    // tool calls with their results, questions, the result or error.
    function drawEvents(section, events, traces) {
      const tools = new Map();
      let text = null;
      for (const event of events) {
        if (event.type !== "text") text = null;
        if (event.type === "prompt") section.appendChild(h("p", { class: "user" }, h("strong", { text: "Asked: " }), asText(event.prompt)));
        else if (event.type === "steering") section.appendChild(h("p", { class: "user steering", "data-message": event.messageId }, h("strong", { text: "Steered by " + (event.principal || "the user") + ": " }), asText(event.text)));
        else if (event.type === "thinking") section.appendChild(h("details", { class: "reasoning" }, h("summary", { text: "Reasoning" }), h("p", { text: asText(event.content) })));
        else if (event.type === "text") {
          if (text === null) {
            text = h("p", { class: "text" });
            section.appendChild(text);
          }
          text.textContent += asText(event.content);
        } else if (event.type === "tool_invocation") {
          const box = toolBox(event.toolName, "called", asText(event.args), traces[event.toolCallId]);
          box.setAttribute("data-tool-call", event.toolCallId);
          tools.set(event.toolCallId, box);
          section.appendChild(box);
        } else if (event.type === "tool_result") {
          const box = tools.get(event.toolCallId);
          const output = h("pre", { class: "output", text: asText(event.result) });
          if (box) {
            box.state.textContent = " [done]";
            box.appendChild(output);
          } else section.appendChild(output);
        } else if (event.type === "question") section.appendChild(h("p", { class: "question" }, h("strong", { text: "Question: " }), (event.questions || []).map(asText).join(" / ")));
        else if (event.type === "permission_request") section.appendChild(h("p", null, h("strong", { text: "Asked to run " + (event.toolName || "a tool") + ": " }), asText(event.summary)));
        else if (event.type === "result") section.appendChild(h("p", { class: "result" }, h("strong", { text: "Result: " }), asText(event.summary)));
        else if (event.type === "error") section.appendChild(h("p", { class: "error", text: "Error: " + asText(event.message || event.error) }));
        // A remote teammate's task state, an artifact: the daemon says them in words.
        else if (event.type === "remote_task") section.appendChild(h("p", { class: "remote-task", "data-state": event.state || "" }, h("strong", { text: "Remote task: " }), String(event.text || "")));
        else if (event.type === "artifact") section.appendChild(h("p", { class: "artifact", "data-artifact": event.artifactId || "" }, h("strong", { text: "Artifact: " }), String(event.text || "")));
      }
    }

    // The contract's first shape: parts of kind text, reasoning and tool.
    function drawParts(section, turn) {
      if (turn.user) section.appendChild(h("p", { class: "user" }, h("strong", { text: "Asked: " }), turn.user));
      for (const part of turn.parts || []) {
        if (part.kind === "text") section.appendChild(h("p", { class: "text", text: part.text }));
        else if (part.kind === "reasoning") section.appendChild(h("details", { class: "reasoning" }, h("summary", { text: "Reasoning" }), h("p", { text: part.text })));
        else if (part.kind === "tool") {
          const box = toolBox(part.name, part.status, part.input || "");
          if (part.output !== null && part.output !== undefined) box.appendChild(h("pre", { class: "output", text: part.output }));
          section.appendChild(box);
        }
      }
    }

    // ── controls ──
    scrubber.addEventListener("input", function () {
      const value = Number(scrubber.value);
      const last = envelopes.length ? envelopes[envelopes.length - 1].sequence : 0;
      scrubAt = value >= last ? null : value;
      drawAll([]);
    });
    liveButton.addEventListener("click", function () {
      scrubAt = null;
      drawAll([]);
    });
    exportSvg.addEventListener("click", function () {
      O.download("session-" + id + ".svg", new Blob([view.svgText()], { type: "image/svg+xml" }));
    });
    exportPng.addEventListener("click", async function () {
      O.download("session-" + id + ".png", await view.pngBlob());
    });

    // ── loading ──
    function showConnection(kind, seconds) {
      connection.textContent = O.connectionText(kind, seconds);
      connection.className = "connection " + kind;
    }

    async function loadEnded(after) {
      const answer = await O.api("/api/sessions/" + encodeURIComponent(id) + "/envelopes" + (after ? "?after=" + after : ""));
      if (disposed) return;
      summary = answer.session || summary;
      receive(answer.envelopes || []);
      wantLastAnswer = true;
      loadUsage();
      showConnection(summary && summary.live ? "open" : "ended");
      connection.textContent = "ended: loaded from the journal";
    }

    let retry = FIRST_RETRY_MS;
    let notLive = 0;
    // An unfinished conversation nobody runs (put away when idle, or not yet taken up since
    // the daemon started): at rest, not ended. Reading it takes nothing up; a message or
    // its end sent from here attaches, which takes it up, and goes once attached.
    let resting = false;
    const wakeWith = [];
    function rest() {
      resting = true;
      retry = FIRST_RETRY_MS;
      notLive = 0;
      showConnection("resting");
      drawAll([]);
    }
    function later(fn, kind) {
      // Backoff: 1 s, doubling to 10 s; the countdown is shown. ``kind``: "retrying" (the
      // daemon did not answer) or "waiting" (it did: the session is not live there yet).
      const state = kind || "retrying";
      let left = Math.round(retry / 1000);
      showConnection(state, left);
      const tick = setInterval(() => (left > 1 ? showConnection(state, --left) : null), 1000);
      timers.push(tick);
      timers.push(
        setTimeout(function () {
          clearInterval(tick);
          fn();
        }, retry)
      );
      retry = Math.min(retry * 2, LAST_RETRY_MS);
    }

    async function check() {
      // After a close: live again (reattach) or ended (read the rest from the journal)?
      if (disposed) return;
      try {
        summary = await O.api("/api/sessions/" + encodeURIComponent(id));
      } catch (error) {
        if (error.status === 404) {
          errorBox.textContent = "No such session: " + id;
          return;
        }
        later(check);
        return;
      }
      drawMeta();
      drawActions(); // who may decide can change with the summary (a session taken up here)
      if (summary.live) {
        retry = FIRST_RETRY_MS;
        notLive = 0;
        attach();
        return;
      }
      // Not live: ended; or a daemon stopping (its sessions go before its HTTP does); or
      // one just started that has not taken the session up yet. Only a healthy daemon's
      // word is taken, and an unfinished status is asked again a few times.
      const healthy = await fetch("/healthz").then(
        (response) => response.ok,
        () => false
      );
      if (disposed) return;
      if (healthy && summary.resting) {
        rest();
        return;
      }
      if (!healthy || (!FINISHED.has(summary.status) && notLive < NOT_LIVE_CHECKS)) {
        notLive += 1;
        later(check, healthy ? "waiting" : "retrying");
        return;
      }
      ended = true;
      drawActions();
      await loadEnded(model.lastSequence);
    }

    function attach() {
      let opened = false;
      socket = O.liveSocket("/ws?session=" + encodeURIComponent(id), {
        onState: function (kind, seconds) {
          showConnection(kind, seconds);
        },
        onOpen: function (send) {
          opened = true;
          retry = FIRST_RETRY_MS;
          send({ channel: "team", type: "subscribe", fromSequence: lastQueued() });
          resting = false;
          while (wakeWith.length) send(wakeWith.shift());
        },
        onMessage: function (message) {
          if (message.channel === "agent") {
            if (message.type === "history") (message.messages || []).forEach(onAgentEvent);
            else onAgentEvent(message);
          }
          if (message.channel === "team" && message.type === "event" && message.event) {
            receive([message.event]);
          } else if (message.type === "session_ended") {
            /* the close that follows says what next */
          } else if (message.type === "error" && message.code) {
            // A request refused (its `code` says so); a turn's own end in error has none.
            const text = message.code + ": " + (message.message || "error");
            if (answering !== null) {
              refusals.set(answering, message.message || text); // said on its card
              answering = null;
              drawActions();
            } else errorBox.textContent = text;
          }
          // Text and tool calls stream on the agent channel, not as envelopes: an open
          // transcript is fetched again after them too (debounced).
          if (selected && AGENT_ACTIVITY.has(message.type)) refreshTranscript();
        },
        onClose: function () {
          socket = null;
          answering = null;
          // Ended or the daemon going away: ask the daemon which (it may be down a while).
          // A socket that never opened waits its turn first, so a refusing daemon is not
          // asked in a loop.
          if (opened) check();
          else later(check);
          return false;
        },
      });
    }

    function lastQueued() {
      return Math.max(model.lastSequence, queue.length ? queue[queue.length - 1].sequence : 0);
    }

    async function start() {
      if (offline) {
        summary = offline.session || {};
        receive(offline.envelopes || []);
        drawMeta();
        return;
      }
      let answer;
      const path = "/api/sessions/" + encodeURIComponent(id) + "/envelopes";
      try {
        answer = await ((O.takePrefetched && O.takePrefetched(path)) || O.api(path));
      } catch (error) {
        if (error.status === 404) {
          errorBox.textContent = "No such session: " + id;
          showConnection("closed");
          return;
        }
        check();
        return;
      }
      if (disposed) return;
      summary = answer.session || {};
      receive(answer.envelopes || []);
      drawMeta();
      loadUsage();
      if (!summary.live) wantLastAnswer = true; // a live one's comes with the socket's history
      if (summary.live) attach();
      else if (summary.resting) rest();
      else if (FINISHED.has(summary.status)) {
        ended = true;
        showConnection("ended");
        connection.textContent = "ended: loaded from the journal";
      } else check(); // not live yet unfinished: a daemon starting or stopping, ask again
    }

    drawAll([]);
    start();

    const onResize = O.debounce(() => view.resize(), 150);
    root.addEventListener("resize", onResize);
    return function dispose() {
      disposed = true;
      O.showWaiting(0);
      if (frame !== null) {
        cancelAnimationFrame(frame);
        clearTimeout(frame);
      }
      timers.forEach((t) => {
        clearTimeout(t);
        clearInterval(t);
      });
      refreshTranscript.cancel();
      refreshUsage.cancel();
      searchLater.cancel();
      refilter.cancel();
      root.removeEventListener("resize", onResize);
      root.removeEventListener("scroll", onTableScroll);
      root.removeEventListener("resize", onTableScroll);
      if (rowsFrame !== null) cancelAnimationFrame(rowsFrame);
      if (socket) {
        const s = socket;
        socket = null;
        s.close();
      }
      view.destroy();
    };
  }

  O.pages = O.pages || {};
  O.pages.session = sessionPage;
})(window);
