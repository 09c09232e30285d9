/* Drawing the delegation graph model (graph-model.js) with cytoscape and dagre.
 *
 * `createGraphView(container, {onSelect})` returns a view whose `render(model)` brings the
 * cytoscape graph in line with the model: elements added or removed, data (label, status)
 * updated in place. The dagre layout (top-down) runs again only when the model's `structure`
 * counter moved (a node or edge came or went): a status change only restyles. Layouts are
 * at most one per LAYOUT_INTERVAL_MS, so a burst of spawns in a 1,000-worker session lays
 * out a few times, not a thousand. Callers batch envelopes per animation frame and call
 * `render` once per frame.
 *
 * Status is drawn as colour AND as text in the label ("[running]"), never colour alone;
 * queued delegations are dashed; approvals are small diamonds attached to the asking chat.
 */
(function (root) {
  "use strict";

  const LAYOUT_INTERVAL_MS = 250;

  const STATUS_COLOURS = {
    spawning: "#9ecae1",
    running: "#3182bd",
    waiting: "#fdae6b",
    needs_approval: "#e6550d",
    needs_input: "#e6550d",
    idle: "#a1d99b",
    completed: "#31a354",
    failed: "#de2d26",
    killed: "#969696",
    cancelled: "#969696",
    queued: "#d9d9d9",
    pending: "#fd8d3c",
    approved: "#31a354",
    accepted: "#31a354",
    rejected: "#de2d26",
    denied: "#de2d26",
  };

  function statusColour(status) {
    return STATUS_COLOURS[status] || "#bdbdbd";
  }

  function labelOf(node) {
    const status = root.Orchestrator.graphModel.statusText(node);
    if (node.kind === "approval") {
      return (node.question ? "question" : "approval") + "\n" + (node.toolName || "") + "\n[" + status + "]";
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
    };
  }

  function createGraphView(container, options) {
    const onSelect = (options && options.onSelect) || function () {};
    const cy = root.cytoscape({
      container: container,
      style: STYLE,
      elements: [],
      wheelSensitivity: 0.3,
      minZoom: 0.05,
      maxZoom: 3,
      boxSelectionEnabled: false,
      autounselectify: false,
    });
    let laidOutStructure = -1;
    let lastLayoutAt = 0;
    let pendingLayout = null;

    cy.on("tap", "node", function (event) {
      onSelect(event.target.id());
    });

    function layout() {
      pendingLayout = null;
      lastLayoutAt = Date.now();
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

    function render(model) {
      const wanted = new Set();
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
            cy.add({ group: "nodes", data: data, classes: node.kind });
          }
        }
        for (const edge of model.edges.values()) {
          wanted.add(edge.id);
          const existing = cy.getElementById(edge.id);
          if (existing.empty()) {
            cy.add({
              group: "edges",
              data: { id: edge.id, source: edge.source, target: edge.target, label: edge.label, kind: edge.kind },
              classes: edge.kind,
            });
          } else if (existing.data("label") !== edge.label) {
            existing.data("label", edge.label);
          }
        }
        cy.elements().forEach(function (element) {
          if (!wanted.has(element.id())) element.remove();
        });
      });
      if (model.structure !== laidOutStructure) {
        laidOutStructure = model.structure;
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
    };
  }

  root.Orchestrator = root.Orchestrator || {};
  root.Orchestrator.createGraphView = createGraphView;
  root.Orchestrator.statusColour = statusColour;
})(window);
