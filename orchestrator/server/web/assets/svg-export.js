/* The laid-out cytoscape graph as an SVG document (the page's "Download SVG").
 *
 * Written for this project instead of vendoring cytoscape-svg (GPL-3.0). It draws what the
 * graph view draws, from cytoscape's own computed positions and styles: each node as its
 * shape (rounded box, or a diamond for approvals) filled with its status colour, dashed when
 * the view dashes it, with its label's lines as text; each edge as a straight line between
 * its endpoints with an arrow head, in its colour and dash, with its label at the midpoint.
 * All text is escaped; the document is standalone (no scripts, no external references).
 */
(function (root) {
  "use strict";

  function esc(text) {
    return String(text)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }

  function dash(style) {
    if (style === "dashed") return ' stroke-dasharray="6 4"';
    if (style === "dotted") return ' stroke-dasharray="2 3"';
    return "";
  }

  function svgExport(cy) {
    const box = cy.elements().boundingBox({ includeLabels: true });
    const pad = 20;
    const x0 = box.x1 - pad;
    const y0 = box.y1 - pad;
    const width = Math.max(1, Math.ceil(box.w + 2 * pad));
    const height = Math.max(1, Math.ceil(box.h + 2 * pad));
    const out = [];
    out.push('<?xml version="1.0" encoding="UTF-8"?>');
    out.push(
      '<svg xmlns="http://www.w3.org/2000/svg" width="' + width + '" height="' + height +
        '" viewBox="' + x0 + " " + y0 + " " + width + " " + height +
        '" font-family="system-ui, sans-serif">'
    );
    out.push('<rect x="' + x0 + '" y="' + y0 + '" width="' + width + '" height="' + height + '" fill="#fff"/>');
    cy.edges().forEach(function (edge) {
      const s = edge.sourceEndpoint();
      const t = edge.targetEndpoint();
      const colour = edge.style("line-color");
      const w = parseFloat(edge.style("width")) || 1;
      out.push(
        '<line class="edge ' + esc(edge.data("kind") || "") + '" x1="' + s.x + '" y1="' + s.y +
          '" x2="' + t.x + '" y2="' + t.y + '" stroke="' + esc(colour) + '" stroke-width="' + w + '"' +
          dash(edge.style("line-style")) + "/>"
      );
      const angle = Math.atan2(t.y - s.y, t.x - s.x);
      const size = 8;
      const a1 = angle + Math.PI - 0.4;
      const a2 = angle + Math.PI + 0.4;
      out.push(
        '<polygon points="' + t.x + "," + t.y + " " + (t.x + size * Math.cos(a1)) + "," +
          (t.y + size * Math.sin(a1)) + " " + (t.x + size * Math.cos(a2)) + "," +
          (t.y + size * Math.sin(a2)) + '" fill="' + esc(colour) + '"/>'
      );
      const label = edge.data("label");
      if (label) {
        out.push(
          '<text x="' + (s.x + t.x) / 2 + '" y="' + (s.y + t.y) / 2 +
            '" font-size="9" text-anchor="middle">' + esc(label) + "</text>"
        );
      }
    });
    cy.nodes().forEach(function (node) {
      const p = node.position();
      const w = node.width();
      const h = node.height();
      const fill = node.style("background-color");
      const border = node.style("border-color");
      const borderWidth = parseFloat(node.style("border-width")) || 1;
      const opacity = node.style("background-opacity");
      const common =
        ' fill="' + esc(fill) + '" fill-opacity="' + opacity + '" stroke="' + esc(border) +
        '" stroke-width="' + borderWidth + '"' + dash(node.style("border-style"));
      out.push('<g class="node ' + esc(node.data("kind") || "") + '" data-id="' + esc(node.id()) + '">');
      if (node.style("shape") === "diamond") {
        out.push(
          '<polygon points="' + p.x + "," + (p.y - h / 2) + " " + (p.x + w / 2) + "," + p.y + " " +
            p.x + "," + (p.y + h / 2) + " " + (p.x - w / 2) + "," + p.y + '"' + common + "/>"
        );
      } else {
        out.push(
          '<rect x="' + (p.x - w / 2) + '" y="' + (p.y - h / 2) + '" width="' + w + '" height="' + h +
            '" rx="6"' + common + "/>"
        );
      }
      const lines = String(node.data("label") || "").split("\n");
      const size = parseFloat(node.style("font-size")) || 11;
      const top = p.y - ((lines.length - 1) * size * 1.2) / 2;
      out.push('<text font-size="' + size + '" text-anchor="middle" dominant-baseline="middle">');
      lines.forEach(function (line, i) {
        out.push('<tspan x="' + p.x + '" y="' + (top + i * size * 1.2) + '">' + esc(line) + "</tspan>");
      });
      out.push("</text></g>");
    });
    out.push("</svg>");
    return out.join("\n");
  }

  root.Orchestrator = root.Orchestrator || {};
  root.Orchestrator.svgExport = svgExport;
})(window);
