/* Drawing the delegation graph model (graph-model.js) with cytoscape and dagre.
 *
 * `createGraphView(container, {onSelect})` returns a view whose `render(model)` brings the
 * cytoscape graph in line with the model: elements added or removed, data (label, status)
 * updated in place. The dagre layout (top-down) runs again only when an element came or
 * went: a status change only restyles. Layouts are
 * at most one per LAYOUT_INTERVAL_MS, so a burst of spawns in a 1,000-worker session lays
 * out a few times, not a thousand. Callers batch envelopes per animation frame and call
 * `render` once per frame. Above DAGRE_MOST nodes, an O(n) tree layout of our own replaces
 * dagre, which takes seconds on a 1,000-worker session, and edges are drawn straight.
 *
 * The whole graph is laid out once (the first draw, or on request: `relayout`). From then
 * on a node keeps its place: one that arrives is put in the first free slot under the node
 * it hangs from (rows of WRAP, left to right from under it), a root to the right of the
 * rest, so nodes already drawn never jump when workers join or a group opens. A node that
 * goes (the scrubber, a group folding) and comes back takes its old place if it is free.
 *
 * Status is drawn as colour AND as text in the label ("[running]"), never colour alone;
 * queued delegations are dashed; approvals are small diamonds attached to the asking chat.
 */
(function (root) {
  "use strict";

  const LAYOUT_INTERVAL_MS = 250;
  // Above this many nodes the layout is treeLayout's (below), not dagre's.
  const DAGRE_MOST = 150;
  const MOST_FITTED_ZOOM = 1.2;
  // Labels are drawn at LABEL_PX and the first view never zooms out past 1: every label is
  // at least 11 px. A graph too big for the box shows its top (the coordinator, the first
  // rounds) and is panned, not shrunk.
  const LABEL_PX = 11;
  const LEAST_READABLE_ZOOM = 1;
  // Siblings of one delegation round from this many are drawn as one group node (failed
  // ones and those waiting for a decision stay drawn on their own).
  const GROUP_FROM = 6;
  const ALWAYS_SHOWN = new Set(["failed", "needs_approval", "needs_input", "blocked"]);

  const STATUS_COLOURS = {
    spawning: "#9ecae1",
    running: "#3182bd",
    waiting: "#fdae6b",
    needs_approval: "#e6550d",
    needs_input: "#e6550d",
    idle: "#a1d99b",
    completed: "#31a354",
    failed: "#ef5b54",
    killed: "#969696",
    cancelled: "#969696",
    queued: "#d9d9d9",
    pending: "#fd8d3c",
    approved: "#31a354",
    accepted: "#31a354",
    rejected: "#ef5b54",
    denied: "#ef5b54",
  };

  function statusColour(status) {
    return STATUS_COLOURS[status] || "#bdbdbd";
  }

  function shorten(text, most) {
    const value = String(text || "");
    return value.length > most ? value.slice(0, most - 1) + "…" : value;
  }

  function labelOf(node) {
    const status = root.Orchestrator.graphModel.statusText(node);
    if (node.kind === "approval") {
      const what = node.question ? shorten(node.summary, 28) : node.toolName || "";
      return (node.question ? "question" : "approval") + "\n" + what + "\n[" + status + "]";
    }
    if (node.kind === "queued") {
      return node.agentName + "\n" + (node.title ? shorten(node.title, 24) : "(queued task)") + "\n[queued]";
    }
    if (node.kind === "remote") {
      // A remote teammate: its card's name, and its remote task's state in words.
      return node.agentName + "\n(remote: " + shorten(node.cardName || node.role, 24) + ")\n[" + status + "]";
    }
    // A worker says its task (three researchers are told apart); the coordinator its role.
    const number = node.agentId ? " #" + String(node.agentId).replace(/^[^#]*#/, "") : "";
    const second = node.parent && node.title ? shorten(node.title, 24) : node.role;
    const used = node.usage && node.usage.modelCalls ? "\n" + compact(node.usage.inputTokens) + " in · " + compact(node.usage.outputTokens) + " out" : "";
    return node.agentName + number + (second ? "\n" + second : "") + "\n[" + status + "]" + used;
  }

  function compact(n) {
    const value = Number(n || 0);
    return value >= 10000 ? Math.round(value / 1000) + "k" : String(value);
  }

  const STYLE = [
    {
      selector: "node",
      style: {
        shape: "round-rectangle",
        "background-color": "data(colour)",
        label: "data(label)",
        "text-wrap": "wrap",
        "text-valign": "center",
        "text-halign": "center",
        "font-size": LABEL_PX,
        "font-family": "system-ui, sans-serif",
        color: "#111",
        width: 170,
        height: 64,
        "border-width": 1,
        "border-color": "#444",
        // A label that would be drawn under 11 px (the user zoomed out) is not drawn.
        "min-zoomed-font-size": LABEL_PX,
      },
    },
    {
      selector: "node.queued",
      style: { "border-style": "dashed", "border-width": 2, "background-opacity": 0.5 },
    },
    {
      selector: "node.approval",
      style: { shape: "diamond", width: 150, height: 72 },
    },
    {
      // A remote teammate (an A2A agent elsewhere): its own shape and a double border.
      selector: "node.remote",
      style: { shape: "cut-rectangle", "border-style": "double", "border-width": 4 },
    },
    {
      // Siblings of one delegation round, drawn as one node until it is clicked.
      selector: "node.group",
      style: { shape: "round-rectangle", "border-width": 3, "border-style": "double", width: 190, height: 64 },
    },
    { selector: "node.match", style: { "border-width": 4, "border-color": "#7a3e00" } },
    { selector: "node.unmatched", style: { opacity: 0.35 } },
    { selector: "node:selected", style: { "border-width": 4, "border-color": "#000" } },
    {
      selector: "edge",
      style: {
        width: 2,
        "curve-style": "bezier",
        "target-arrow-shape": "triangle",
        "line-color": "#555",
        "target-arrow-color": "#555",
        label: "data(label)",
        "font-size": LABEL_PX,
        "text-background-color": "#fff",
        "text-background-opacity": 0.8,
        "text-background-padding": 1,
        "min-zoomed-font-size": LABEL_PX,
      },
    },
    {
      selector: "edge.handoff",
      style: { "line-color": "#756bb1", "target-arrow-color": "#756bb1", "line-style": "solid", width: 3 },
    },
    {
      selector: "edge.review",
      style: { "line-color": "#b26a00", "target-arrow-color": "#b26a00", "line-style": "dashed", width: 2 },
    },
    {
      selector: "edge.resume",
      style: { "line-color": "#31a354", "target-arrow-color": "#31a354", "line-style": "dotted" },
    },
    { selector: "edge.queued", style: { "line-style": "dashed", "line-color": "#999" } },
    {
      selector: "edge.asks",
      style: { "line-color": "#e6550d", "target-arrow-color": "#e6550d", width: 1 },
    },
  ];

  // The dark theme (the system's): edges and their labels light on the dark surface; node
  // labels stay dark on their status fills.
  const DARK_STYLE = [
    {
      selector: "edge",
      style: { "line-color": "#9198a1", "target-arrow-color": "#9198a1", color: "#e6edf3", "text-background-color": "#161b22" },
    },
    { selector: "node:selected", style: { "border-color": "#e6edf3" } },
  ];

  function nodeData(node) {
    return {
      id: node.id,
      label: labelOf(node),
      colour: statusColour(node.kind === "queued" ? "queued" : node.status),
      kind: node.kind,
      status: node.status,
      up: node.parent || null, // not `parent`: cytoscape would take it for a compound parent
    };
  }

  /* A tree layout in O(n) for big graphs, where dagre takes seconds (about 1 s for 1,000
   * workers on a quiet machine, several on a busy one). Each node sits under the node it
   * hangs from (`up`: the delegating chat, the asking chat); leaves beyond WRAP siblings wrap
   * into rows, so a 1,000-worker fan-out is a block, not a line a hundred screens wide.
   * Handoff and resume edges are drawn between wherever their ends are. */
  const WRAP = 25;
  const CELL_W = 210;
  const CELL_H = 100;

  function treeLayout(cy) {
    const children = new Map();
    const roots = [];
    cy.nodes().forEach(function (node) {
      const up = node.data("up");
      if (up && cy.getElementById(up).nonempty() && up !== node.id()) {
        if (!children.has(up)) children.set(up, []);
        children.get(up).push(node.id());
      } else {
        roots.push(node.id());
      }
    });
    const size = new Map(); // id -> {w, h} of its subtree, in cells
    const seen = new Set();
    function measure(id) {
      if (seen.has(id)) return { w: 1, h: 1 }; // a cycle in bad data: draw it once
      seen.add(id);
      const kids = children.get(id) || [];
      let result;
      if (kids.length === 0) result = { w: 1, h: 1 };
      else {
        const leaves = kids.filter((k) => !(children.get(k) || []).length);
        const inner = kids.filter((k) => (children.get(k) || []).length);
        let w = 0;
        let h = 0;
        for (const k of inner) {
          const m = measure(k);
          w += m.w;
          h = Math.max(h, m.h);
        }
        for (const k of leaves) seen.add(k);
        if (leaves.length) {
          w += Math.min(leaves.length, WRAP);
          h = Math.max(h, Math.ceil(leaves.length / WRAP));
        }
        result = { w: Math.max(1, w), h: 1 + h };
      }
      size.set(id, result);
      return result;
    }
    const positions = {};
    function place(id, left, top) {
      const box = size.get(id) || { w: 1, h: 1 };
      positions[id] = { x: (left + box.w / 2) * CELL_W, y: top * CELL_H };
      const kids = children.get(id) || [];
      let x = left;
      const leaves = kids.filter((k) => !(children.get(k) || []).length);
      for (const k of kids) {
        if ((children.get(k) || []).length) {
          place(k, x, top + 1);
          x += size.get(k).w;
        }
      }
      leaves.forEach(function (k, i) {
        positions[k] = { x: (x + (i % WRAP) + 0.5) * CELL_W, y: (top + 1 + Math.floor(i / WRAP)) * CELL_H };
      });
    }
    let left = 0;
    for (const r of roots) {
      measure(r);
      place(r, left, 0);
      left += size.get(r).w;
    }
    // Positions set in one batch and the viewport fitted from them: a "preset" layout with
    // `fit` measures every element's bounding box, labels included (most of a second at
    // 1,000 nodes), where the extent of a grid of cells is known.
    cy.batch(function () {
      cy.nodes().positions(function (node) {
        return positions[node.id()] || { x: 0, y: 0 };
      });
    });
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (const id in positions) {
      const at = positions[id];
      minX = Math.min(minX, at.x);
      minY = Math.min(minY, at.y);
      maxX = Math.max(maxX, at.x);
      maxY = Math.max(maxY, at.y);
    }
    if (minX === Infinity) return;
    const width = maxX - minX + CELL_W;
    const height = maxY - minY + CELL_H;
    const zoom = Math.max(
      cy.minZoom(),
      Math.min(cy.maxZoom(), (cy.width() - 40) / width, (cy.height() - 40) / height)
    );
    cy.viewport({
      zoom: zoom,
      pan: {
        x: (cy.width() - (minX + maxX) * zoom) / 2,
        y: (cy.height() - (minY + maxY) * zoom) / 2,
      },
    });
  }

  function createGraphView(container, options) {
    const onSelect = (options && options.onSelect) || function () {};
    const dark = Boolean(root.matchMedia && root.matchMedia("(prefers-color-scheme: dark)").matches);
    const cy = root.cytoscape({
      container: container,
      style: dark ? STYLE.concat(DARK_STYLE) : STYLE,
      elements: [],
      wheelSensitivity: 0.3,
      hideEdgesOnViewport: true, // panning and zooming a big graph stays smooth
      minZoom: 0.05,
      maxZoom: 3,
      boxSelectionEnabled: false,
      autounselectify: false,
    });
    let lastLayoutAt = 0;
    let pendingLayout = null;
    let big = false;
    let laidOut = false; // the whole graph was laid out: from now on nodes keep their places
    const remembered = new Map(); // id -> the place of a node drawn before

    cy.on("tap", "node", function (event) {
      const id = event.target.id();
      if (event.target.data("kind") === "group") expand(id);
      else onSelect(id);
    });

    function straighten() {
      if (big || cy.nodes().length <= DAGRE_MOST) return;
      // Straight edges: a bezier edge's control points are worked out against every
      // other edge between the same nodes (a fifth of a 1,000-node graph's first draw).
      big = true;
      cy.style().selector("edge").style("curve-style", "straight").update();
    }

    function layout() {
      pendingLayout = null;
      lastLayoutAt = Date.now();
      if (cy.nodes().empty()) return; // nothing to place yet: the first nodes get the layout
      laidOut = true;
      remembered.clear();
      if (cy.nodes().length > DAGRE_MOST) {
        straighten();
        treeLayout(cy);
      } else {
        cy.layout({
          name: "dagre",
          rankDir: "TB",
          nodeSep: 30,
          rankSep: 60,
          animate: false,
          fit: true,
          padding: 20,
        }).run();
      }
      // A graph of two nodes fitted to the box would be drawn huge: no closer than 1.2.
      if (cy.zoom() > MOST_FITTED_ZOOM) {
        cy.zoom(MOST_FITTED_ZOOM);
        cy.center();
      }
      // One too big for the box is not shrunk past readable: its top is shown (the
      // coordinator centred, 40 px from the top edge), the rest a pan away.
      if (cy.zoom() < LEAST_READABLE_ZOOM) {
        const tops = cy.nodes().filter((n) => !n.data("up"));
        const top = (tops.nonempty() ? tops : cy.nodes()).boundingBox();
        cy.viewport({
          zoom: LEAST_READABLE_ZOOM,
          pan: { x: cy.width() / 2 - (top.x1 + top.x2) / 2, y: 40 - top.y1 },
        });
      }
    }

    // ── stable placement of the nodes that arrive after the first layout ──
    const BUCKET = 200; // the side of the buckets the drawn boxes are filed in, in model pixels
    const GAP_X = 30;
    const GAP_Y = 40;

    function sizeOf(node) {
      const kind = node.data("kind");
      if (kind === "approval") return { w: 150, h: 72 };
      if (kind === "group") return { w: 190, h: 64 };
      return { w: 170, h: 64 };
    }

    // A node's box with half the gaps around it: two nodes overlap when these do.
    function boxOf(at, size) {
      return { x1: at.x - size.w / 2 - GAP_X / 2, x2: at.x + size.w / 2 + GAP_X / 2, y1: at.y - size.h / 2 - GAP_Y / 2, y2: at.y + size.h / 2 + GAP_Y / 2 };
    }

    // The keys of the buckets a box touches.
    function bucketsOf(box) {
      const keys = [];
      for (let x = Math.floor(box.x1 / BUCKET); x <= Math.floor(box.x2 / BUCKET); x++) {
        for (let y = Math.floor(box.y1 / BUCKET); y <= Math.floor(box.y2 / BUCKET); y++) keys.push(x + ":" + y);
      }
      return keys;
    }

    /** Give each node of `fresh` (just added) a place, leaving every other node where it is. */
    function placeNew(fresh) {
      const occupied = new Map(); // bucket key -> the boxes in it
      // Boxes (gaps included) that overlap by less than this do not: dagre's spacing is not
      // exactly ours, and the nodes themselves stay 20 px apart.
      const EPSILON = 10;
      function mark(at, size) {
        const box = boxOf(at, size);
        for (const key of bucketsOf(box)) {
          if (!occupied.has(key)) occupied.set(key, []);
          occupied.get(key).push(box);
        }
      }
      function free(at, size) {
        const box = boxOf(at, size);
        return bucketsOf(box).every((key) =>
          (occupied.get(key) || []).every((o) => box.x2 - EPSILON <= o.x1 || o.x2 - EPSILON <= box.x1 || box.y2 - EPSILON <= o.y1 || o.y2 - EPSILON <= box.y1)
        );
      }
      const waiting = new Set(fresh.map((n) => n.id()));
      let right = -Infinity;
      let top = Infinity;
      cy.nodes().forEach(function (node) {
        if (waiting.has(node.id())) return;
        const at = node.position();
        const size = sizeOf(node);
        mark(at, size);
        right = Math.max(right, at.x + size.w / 2);
        top = Math.min(top, at.y - size.h / 2);
      });
      function put(node, at, size) {
        node.position(at);
        mark(at, size);
        right = Math.max(right, at.x + size.w / 2);
        top = Math.min(top, at.y - size.h / 2);
        waiting.delete(node.id());
      }
      // The first free slot in the rows under `parent`: they start where its children
      // drawn so far do (the row of the leftmost), else right under it.
      function underParent(node, parent, size) {
        const from = parent.position();
        let x0 = from.x;
        let y0 = from.y + sizeOf(parent).h / 2 + GAP_Y + size.h / 2;
        let first = null;
        cy.nodes().forEach(function (other) {
          if (other.data("up") !== parent.id() || waiting.has(other.id())) return;
          const at = other.position();
          if (first === null || at.y < first.y || (at.y === first.y && at.x < first.x)) first = at;
        });
        if (first !== null) {
          x0 = first.x;
          y0 = first.y;
        }
        const stepX = size.w + GAP_X;
        const stepY = size.h + GAP_Y;
        for (let row = 0; row < 10000; row++) {
          for (let i = 0; i < WRAP; i++) {
            const at = { x: x0 + i * stepX, y: y0 + row * stepY };
            if (free(at, size)) return at;
          }
        }
        return { x: x0, y: y0 };
      }
      // Parents before their children: a node waits while the node it hangs from does.
      let progress = true;
      while (waiting.size && progress) {
        progress = false;
        for (const node of fresh) {
          if (!waiting.has(node.id())) continue;
          const up = node.data("up");
          if (up && waiting.has(up) && up !== node.id()) continue;
          const size = sizeOf(node);
          const before = remembered.get(node.id());
          let at = null;
          if (before && free(before, size)) at = before;
          else {
            const parent = up ? cy.getElementById(up) : null;
            if (parent && parent.nonempty() && parent.id() !== node.id()) at = underParent(node, parent, size);
            else if (right === -Infinity) at = { x: 0, y: 0 };
            else at = { x: right + GAP_X + size.w / 2, y: top + size.h / 2 };
          }
          put(node, at, size);
          progress = true;
        }
      }
      for (const node of fresh) {
        if (waiting.has(node.id())) put(node, { x: right + GAP_X + 85, y: top + 32 }, sizeOf(node)); // a cycle in bad data
      }
    }

    // The view after nodes arrived (the camera moves; the nodes keep their places):
    // unchanged while the first of them is in it; else the whole graph fitted if it fits
    // at a readable size; else panned just enough to show that node, unless that would
    // take the coordinator (the top) out of view.
    function keepInView(fresh) {
      const view = cy.extent();
      const first = fresh[0].boundingBox({ includeLabels: false });
      if (first.x1 >= view.x1 && first.x2 <= view.x2 && first.y1 >= view.y1 && first.y2 <= view.y2) return;
      const box = cy.nodes().boundingBox({ includeLabels: false });
      const zoom = Math.min(MOST_FITTED_ZOOM, (cy.width() - 40) / box.w, (cy.height() - 40) / box.h);
      if (zoom >= LEAST_READABLE_ZOOM) {
        cy.viewport({
          zoom: zoom,
          pan: { x: (cy.width() - (box.x1 + box.x2) * zoom) / 2, y: (cy.height() - (box.y1 + box.y2) * zoom) / 2 },
        });
        return;
      }
      const margin = 20 / cy.zoom();
      const dx = first.x2 > view.x2 ? view.x2 - first.x2 - margin : first.x1 < view.x1 ? view.x1 - first.x1 + margin : 0;
      const dy = first.y2 > view.y2 ? view.y2 - first.y2 - margin : first.y1 < view.y1 ? view.y1 - first.y1 + margin : 0;
      const tops = cy.nodes().filter((n) => !n.data("up"));
      const top = (tops.nonempty() ? tops : cy.nodes()).boundingBox({ includeLabels: false });
      // Panned by (dx, dy) rendered, the view's extent moves by (-dx, -dy) in the graph.
      if (top.x1 < view.x1 - dx || top.x2 > view.x2 - dx || top.y1 < view.y1 - dy || top.y2 > view.y2 - dy) return;
      cy.panBy({ x: dx * cy.zoom(), y: dy * cy.zoom() });
    }

    // ── groups: the siblings of one delegation round ──
    // A click opens a group EXPAND_STEP members at a time (the rest stay a group): a
    // round of 1,000 at a readable size would be a graph of 5,000 by 4,000 pixels.
    const EXPAND_STEP = 50;
    const expanded = new Map(); // round key -> how many of its members are drawn
    const forced = new Set(); // nodes drawn whatever their group (selected, searched for)
    let lastModel = null;
    let groupOf = new Map(); // hidden node id -> its group node id
    let groupKeys = new Map(); // group node id -> round key

    function roundKey(node) {
      // A round's calls share a prefix (`<chat>-t0-r1-c7`: call 7 of round 1 of turn 0);
      // where ids say nothing of it, the siblings of one agent under one parent.
      const round = /^(.*)-c\d+$/.exec(node.toolCallId || "");
      return node.parent + "|" + node.agentName + "|" + (node.kind === "queued" ? "queued" : round ? round[1] : "");
    }

    function groupLabel(agentName, members, folded) {
      const counts = new Map();
      for (const member of members) {
        const status = member.kind === "queued" ? "queued" : member.status;
        counts.set(status, (counts.get(status) || 0) + 1);
      }
      const parts = [...counts].sort((a, b) => b[1] - a[1]).map(([status, n]) => (status === "completed" ? n + " ✔" : n + " " + status));
      const more = folded < members.length ? folded + " more: click to show " + Math.min(folded, 50) : "group: click to expand";
      return members.length + " × " + agentName + "\n" + parts.join(" · ") + "\n[" + more + "]";
    }

    /** What is drawn of `model`: every node, but the quiet siblings of a big round folded
     * into one group node. */
    function visible(model) {
      const parents = new Set();
      for (const node of model.nodes.values()) if (node.parent) parents.add(node.parent);
      const rounds = new Map();
      for (const node of model.nodes.values()) {
        if ((node.kind !== "chat" && node.kind !== "queued") || !node.parent) continue;
        const key = roundKey(node);
        if (!rounds.has(key)) rounds.set(key, []);
        rounds.get(key).push(node);
      }
      const hidden = new Map();
      const groups = [];
      for (const [key, members] of rounds) {
        if (members.length < GROUP_FROM) continue;
        const quiet = members.filter((n) => !ALWAYS_SHOWN.has(n.status) && !parents.has(n.id) && n.id !== selectedId && !forced.has(n.id));
        const folded = quiet.slice(expanded.get(key) || 0);
        if (folded.length < 2) continue;
        const id = "group:" + key;
        folded.forEach((n) => hidden.set(n.id, id));
        // Its colour is that of what it folds (the failed ones are drawn on their own).
        const busy = folded.some((n) => n.status === "running");
        const failed = folded.some((n) => n.status === "failed");
        groups.push({
          key: key,
          data: {
            id: id,
            label: groupLabel(members[0].agentName, members, folded.length),
            colour: statusColour(busy ? "running" : failed ? "failed" : folded.every((n) => n.status === "completed") ? "completed" : folded[0].status),
            kind: "group",
            status: busy ? "running" : "group",
            up: members[0].parent,
            size: members.length,
          },
          parent: members[0].parent,
        });
      }
      // An approval hangs from its chat: hidden with it.
      for (const node of model.nodes.values()) {
        if (node.kind === "approval" && node.parent && hidden.has(node.parent) && node.status !== "pending") hidden.set(node.id, hidden.get(node.parent));
      }
      return { hidden: hidden, groups: groups };
    }

    let selectedId = null;

    function render(model) {
      lastModel = model;
      const shown = visible(model);
      groupOf = shown.hidden;
      groupKeys = new Map(shown.groups.map((g) => [g.data.id, g.key]));
      const wanted = new Set();
      const added = [];
      let changed = false;
      let placed = null; // nodes placed among the others (the graph was laid out before)
      cy.batch(function () {
        const put = function (data, classes) {
          wanted.add(data.id);
          const existing = cy.getElementById(data.id);
          if (existing.nonempty()) {
            if (existing.data("label") !== data.label || existing.data("colour") !== data.colour) existing.data(data);
            if (!existing.hasClass(classes)) existing.classes(classes); // a chat found remote
          } else added.push({ group: "nodes", data: data, classes: classes });
        };
        for (const node of model.nodes.values()) {
          if (!shown.hidden.has(node.id)) put(nodeData(node), node.kind);
        }
        for (const group of shown.groups) put(group.data, "group");
        const edges = [...model.edges.values()].filter((e) => !shown.hidden.has(e.source) && !shown.hidden.has(e.target));
        for (const group of shown.groups) edges.push({ id: "spawn:" + group.parent + "->" + group.data.id, kind: "spawn", source: group.parent, target: group.data.id, label: "" });
        for (const edge of edges) {
          wanted.add(edge.id);
          const existing = cy.getElementById(edge.id);
          if (existing.empty()) {
            added.push({
              group: "edges",
              data: { id: edge.id, source: edge.source, target: edge.target, label: edge.label, kind: edge.kind },
              classes: edge.kind,
            });
          } else if (existing.data("label") !== edge.label) {
            existing.data("label", edge.label);
          }
        }
        const gone = cy.elements().filter((element) => !wanted.has(element.id()));
        if (gone.nonempty()) {
          gone.nodes().forEach((node) => {
            if (laidOut) remembered.set(node.id(), { x: node.position("x"), y: node.position("y") });
          });
          gone.remove();
          changed = true;
        }
        if (added.length) {
          const fresh = cy.add(added).nodes();
          changed = true;
          if (laidOut && fresh.nonempty()) {
            placeNew(fresh.toArray());
            placed = fresh.toArray();
          }
        }
      });
      if (placed !== null) {
        straighten();
        keepInView(placed);
        return;
      }
      // Lay out again only when elements came or went: a status change only restyles. Once
      // laid out, what arrives was placed above, and what went leaves the rest in place.
      if (changed && !laidOut) {
        const wait = LAYOUT_INTERVAL_MS - (Date.now() - lastLayoutAt);
        if (wait <= 0) {
          layout();
        } else if (pendingLayout === null) {
          pendingLayout = setTimeout(layout, wait);
        }
      }
    }

    /** Open the group node `id` (its members drawn one by one). */
    function expand(id) {
      const key = groupKeys.get(id);
      if (key === undefined || !lastModel) return false;
      expanded.set(key, (expanded.get(key) || 0) + EXPAND_STEP);
      if (pendingLayout !== null) {
        clearTimeout(pendingLayout);
        pendingLayout = null;
      }
      lastLayoutAt = 0;
      render(lastModel);
      return true;
    }

    // ── search: by agent, task or status ──
    function search(text) {
      const wanted = String(text || "").trim().toLowerCase();
      const found = [];
      if (lastModel && wanted) {
        for (const node of lastModel.nodes.values()) {
          const words = [node.agentName, node.agentId ? node.agentName + " #" + String(node.agentId).replace(/^[^#]*#/, "") : "", node.title, node.status, node.role, node.toolName].join("\n").toLowerCase();
          if (words.indexOf(wanted) >= 0) found.push(node.id);
        }
      }
      // A match folded in a group is drawn on its own (the first 200 matches).
      const folded = found.filter((nodeId) => groupOf.has(nodeId)).slice(0, 200);
      if (folded.length) {
        folded.forEach((nodeId) => forced.add(nodeId));
        lastLayoutAt = 0;
        render(lastModel);
      }
      const matched = new Set(found);
      cy.batch(function () {
        cy.nodes().forEach(function (node) {
          node.toggleClass("match", matched.has(node.id()));
          node.toggleClass("unmatched", wanted !== "" && !matched.has(node.id()));
        });
      });
      return found;
    }

    function select(id) {
      selectedId = id;
      // A node folded in a group is drawn on its own first.
      if (groupOf.has(id) && lastModel) {
        forced.add(id);
        lastLayoutAt = 0;
        render(lastModel);
      }
      cy.$(":selected").unselect();
      const node = cy.getElementById(id);
      if (node.nonempty()) {
        node.select();
        cy.animate({ center: { eles: node } }, { duration: 150 });
      }
    }

    function pngBlob() {
      return cy.png({ full: true, output: "blob", bg: "#ffffff", scale: 2 });
    }

    function svgText() {
      return root.Orchestrator.svgExport(cy);
    }

    function destroy() {
      if (pendingLayout !== null) clearTimeout(pendingLayout);
      cy.destroy();
    }

    return {
      cy: cy,
      render: render,
      select: select,
      pngBlob: pngBlob,
      svgText: svgText,
      destroy: destroy,
      resize: function () {
        cy.resize();
      },
      // Laid out again (and fitted): a graph first drawn in a hidden box (a phone's).
      relayout: layout,
      expand: expand,
      search: search,
      /** The id of the group node `id` is folded into, or null. */
      groupOf: (id) => groupOf.get(id) || null,
    };
  }

  root.Orchestrator = root.Orchestrator || {};
  root.Orchestrator.createGraphView = createGraphView;
  root.Orchestrator.statusColour = statusColour;
})(window);
