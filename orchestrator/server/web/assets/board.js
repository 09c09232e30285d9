/* The board page (`#/sessions/ID/board`): a session's work items in columns by status.
 *
 * It reads `GET /api/sessions/ID/board` (every 2 s while open) and draws one column per item
 * status. An operator moves an item by dragging its card to another column, or by its
 * "Move to" list (the same request, for the keyboard): both send the board operation the
 * move stands for (`POST /api/sessions/ID/board` with `{"op": "move", "item", "status"}`),
 * never a status written directly. The daemon records the facts, attributed to the person
 * signed in, or refuses the move and says why: the refusal is shown, and the card stays.
 */
(function (root) {
  "use strict";
  const O = root.Orchestrator;
  const h = O.h;
  const STATUSES = ["open", "claimed", "running", "blocked", "reviewing", "done"];
  // Where a person may move a card: running is the runtime's (it starts the agents).
  const TARGETS = ["open", "claimed", "blocked", "reviewing", "done"];
  const REFRESH_MS = 2000;

  function board(main, context) {
    const id = context.id;
    const url = "/api/sessions/" + encodeURIComponent(id) + "/board";
    let disposed = false;
    let timer = null;
    const status = h("p", { id: "board-status", class: "connection", role: "status", "aria-live": "polite", text: "loading…" });
    const columns = h("div", { id: "board-columns", class: "board-columns" });
    main.appendChild(
      h(
        "section",
        { class: "board", "aria-labelledby": "board-title" },
        h("h2", { id: "board-title", text: "Board" }),
        h("p", { class: "meta" }, h("a", { href: "#/sessions/" + encodeURIComponent(id), text: "Back to the session" })),
        status,
        columns
      )
    );

    async function move(item, target) {
      try {
        await O.postJson(url, { op: "move", item: item, status: target });
        status.textContent = "moved " + item + " to " + target;
      } catch (error) {
        status.textContent = String(error.message);
      }
      await load();
    }

    function card(item) {
      const who = item.assignee ? (item.assigneeKind === "person" ? "@" : "") + item.assignee : "unassigned";
      const parts = [
        h("h4", { text: item.title }),
        h("p", { class: "meta", text: item.id + " · " + item.priority + " · " + who }),
      ];
      if (item.claimedBy && item.status !== "done") parts.push(h("p", { class: "meta", text: "by " + item.claimedBy }));
      if (item.status === "blocked") {
        parts.push(h("p", { class: "meta", text: "blocked: " + item.blockedReason + (item.waitingFor ? " (waiting for " + item.waitingFor + ")" : "") }));
      }
      (item.comments || []).slice(-2).forEach(function (comment) {
        parts.push(h("p", { class: "comment", text: comment.by + ": " + comment.text }));
      });
      const element = h("li", { class: "board-card", id: "item-" + item.id, "data-item": item.id }, parts);
      if (context.canOperate && item.status !== "done") {
        element.setAttribute("draggable", "true");
        element.addEventListener("dragstart", function (event) {
          event.dataTransfer.setData("text/plain", item.id);
        });
        const select = h(
          "select",
          { id: "move-" + item.id, "aria-label": "Move " + item.title + " to" },
          h("option", { value: "", text: "Move to…" }),
          TARGETS.filter((t) => t !== item.status).map((t) => h("option", { value: t, text: t }))
        );
        select.addEventListener("change", function () {
          if (select.value) move(item.id, select.value);
        });
        element.appendChild(select);
      }
      return element;
    }

    function draw(data) {
      O.clear(columns);
      STATUSES.forEach(function (name) {
        const items = data.items.filter((item) => item.status === name);
        const list = h("ul", { class: "plain board-list", id: "column-" + name, "data-status": name }, items.map(card));
        const column = h("section", { class: "board-column", "aria-labelledby": "column-title-" + name }, h("h3", { id: "column-title-" + name, text: name + " (" + items.length + ")" }), list);
        if (context.canOperate && TARGETS.indexOf(name) >= 0) {
          list.addEventListener("dragover", function (event) {
            event.preventDefault();
          });
          list.addEventListener("drop", function (event) {
            event.preventDefault();
            const item = event.dataTransfer.getData("text/plain");
            if (item) move(item, name);
          });
        }
        columns.appendChild(column);
      });
    }

    async function load() {
      if (disposed) return;
      try {
        draw(await O.api(url));
        if (status.textContent === "loading…") status.textContent = "live";
      } catch (error) {
        status.textContent = String(error.message);
      }
    }

    load();
    timer = setInterval(load, REFRESH_MS);
    return function dispose() {
      disposed = true;
      clearInterval(timer);
    };
  }

  O.pages = O.pages || {};
  O.pages.board = board;
})(window);
