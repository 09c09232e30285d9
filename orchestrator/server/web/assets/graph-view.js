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
 * Status is drawn as colour AND as text in the label ("[running]"), never colour alone;
 * queued delegations are dashed; approvals are small diamonds attached to the asking chat.
 */
(function (root) {
  "use strict";

  const LAYOUT_INTERVAL_MS = 250;
  // Above this many nodes the layout is treeLayout's (below), not dagre's.
  const DAGRE_MOST = 150;
  const MOST_FITTED_ZOOM = 1.2;

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
      return node.agentName + "\n(queued task)\n[queued]";
    }
    return node.agentName + (node.role ? "\n" + node.role : "") + "\n[" + status + "]";
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
        "font-size": 11,
        "font-family": "system-ui, sans-serif",
        color: "#111",
        width: 150,
        height: 56,
        "border-width": 1,
        "border-color": "#444",
        // Labels too small to read are not drawn (a 1,000-node graph fitted to the screen).
        "min-zoomed-font-size": 5,
      },
    },
    {
      selector: "node.queued",
      style: { "border-style": "dashed", "border-width": 2, "background-opacity": 0.5 },
    },
    {
      selector: "node.approval",
      style: { shape: "diamond", width: 130, height: 64, "font-size": 9 },
    },
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
        "font-size": 9,
        "text-background-color": "#fff",
        "text-background-opacity": 0.8,
        "text-background-padding": 1,
        "min-zoomed-font-size": 5,
      },
    },
    {
      selector: "edge.handoff",
      style: { "line-color": "#756bb1", "target-arrow-color": "#756bb1", "line-style": "solid", width: 3 },
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
  const CELL_W = 170;
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
    const cy = root.cytoscape({
      container: container,
      style: STYLE,
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

    cy.on("tap", "node", function (event) {
      onSelect(event.target.id());
    });

    function layout() {
      pendingLayout = null;
      lastLayoutAt = Date.now();
      if (cy.nodes().length > DAGRE_MOST) {
        if (!big) {
          // Straight edges: a bezier edge's control points are worked out against every
          // other edge between the same nodes (a fifth of a 1,000-node graph's first draw).
          big = true;
          cy.style().selector("edge").style("curve-style", "straight").update();
        }
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
    }

    function render(model) {
      const wanted = new Set();
      const added = [];
      let changed = false;
      cy.batch(function () {
        for (const node of model.nodes.values()) {
          wanted.add(node.id);
          const data = nodeData(node);
          const existing = cy.getElementById(node.id);
          if (existing.nonempty()) {
            if (existing.data("label") !== data.label || existing.data("colour") !== data.colour) {
              existing.data(data);
            }
          } else {
            added.push({ group: "nodes", data: data, classes: node.kind });
          }
        }
        for (const edge of model.edges.values()) {
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
          gone.remove();
          changed = true;
        }
        if (added.length) {
          cy.add(added);
          changed = true;
        }
      });
      // Lay out again only when elements came or went: a status change only restyles.
      if (changed) {
        const wait = LAYOUT_INTERVAL_MS - (Date.now() - lastLayoutAt);
        if (wait <= 0) {
          layout();
        } else if (pendingLayout === null) {
          pendingLayout = setTimeout(layout, wait);
        }
      }
    }

    function select(id) {
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
    };
  }

  root.Orchestrator = root.Orchestrator || {};
  root.Orchestrator.createGraphView = createGraphView;
  root.Orchestrator.statusColour = statusColour;
})(window);
