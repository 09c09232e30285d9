/* Two sessions compared (`#/diff/A/B`): what `orchestrator diff A B` prints, side by side.
 *
 * `GET /api/sessions/A/diff?with=B` says where the two logs part, then, per chat (matched by
 * its place: the first chat that joined, the second...), each difference as {what, a, b}:
 * a row of a table whose columns are the two sessions. A fork's page links here with its
 * source as A.
 */
(function (root) {
  "use strict";
  const O = root.Orchestrator;
  const h = O.h;

  function diffPage(main, context) {
    let disposed = false;
    const a = context.a;
    const b = context.b;
    const title = h("h2", { id: "diff-title", text: "Compare two sessions" });
    const heads = h("p", { id: "diff-sessions", class: "meta" });
    const parted = h("p", { id: "diff-parted" });
    const body = h("div", { id: "diff-chats" }, h("p", { class: "notice", text: "Comparing…" }));
    main.appendChild(h("section", { class: "diff", "aria-labelledby": "diff-title" }, title, heads, parted, body));

    function link(id, summary) {
      const name = (summary && summary.title) || id;
      return h("a", { href: "#/sessions/" + encodeURIComponent(id), text: name + " (" + id.slice(0, 8) + ")" });
    }

    function where(side) {
      return side.sequence === null || side.sequence === undefined ? "its end" : "fact " + side.sequence + " (" + side.type + ")";
    }

    async function load() {
      let found;
      let summaries;
      try {
        [found, ...summaries] = await Promise.all([
          O.api("/api/sessions/" + encodeURIComponent(a) + "/diff?with=" + encodeURIComponent(b)),
          O.api("/api/sessions/" + encodeURIComponent(a)).catch(() => null),
          O.api("/api/sessions/" + encodeURIComponent(b)).catch(() => null),
        ]);
      } catch (error) {
        if (disposed) return;
        O.clear(body);
        body.appendChild(h("p", { class: "error", role: "alert", text: "Could not compare them: " + error.message }));
        return;
      }
      if (disposed) return;
      O.clear(heads);
      heads.append("A: ", link(a, summaries[0]), " · B: ", link(b, summaries[1]));
      if (found.same) parted.textContent = "They did the same.";
      else if (found.partedAt) parted.textContent = "They part at A's " + where(found.partedAt.a) + ", B's " + where(found.partedAt.b) + ".";
      else parted.textContent = "Their logs agree fact for fact; what their chats did differs.";
      O.clear(body);
      if (!found.chats.length) body.appendChild(h("p", { class: "notice", text: "Every chat did the same." }));
      for (const chat of found.chats) {
        const rows = (chat.sides || []).map((side) => h("tr", null, h("th", { scope: "row", text: side.what }), h("td", { class: "side-a", text: side.a }), h("td", { class: "side-b", text: side.b })));
        body.appendChild(
          h(
            "table",
            { class: "data diff-chat", "data-chat": chat.chat },
            h("caption", { text: chat.chat }),
            h("thead", null, h("tr", null, h("th", { scope: "col", text: "What" }), h("th", { scope: "col", text: "A" }), h("th", { scope: "col", text: "B" }))),
            h("tbody", null, rows)
          )
        );
      }
    }

    load();
    return function dispose() {
      disposed = true;
    };
  }

  O.pages = O.pages || {};
  O.pages.diff = diffPage;
})(window);
