/* A deterministic layout for the neighbourhood graph: a force-directed layout that also pushes
   nodes off edges they are not part of, a repair pass that guarantees that clearance, then
   labels placed where they cover no node, no other label and as few edges as can be.
   Pure: no DOM, no randomness (the same graph always gets the same picture). */
"use strict";

const GraphLayout = (() => {
  const NODE_R = 10;
  const CENTRE_R = 13;
  const CLEAR = 16; // an edge passes no other node's centre closer than its radius + this
  const MARGIN = 24;
  const STEPS = 300;

  function ringStart(nodes, width, height) {
    const cx = width / 2;
    const cy = height / 2;
    const first = nodes.filter((n) => n.depth === 1);
    first.forEach((n, i) => {
      n.angle = (2 * Math.PI * i) / Math.max(first.length, 1) - Math.PI / 2;
      n.x = cx + 0.28 * width * Math.cos(n.angle);
      n.y = cy + 0.3 * height * Math.sin(n.angle);
    });
    const outer = nodes.filter((n) => n.depth > 1);
    outer.forEach((n, i) => {
      const parent = first.find((p) => p.name === n.parent);
      const base = parent ? parent.angle : (2 * Math.PI * i) / outer.length;
      const angle = base + 0.35 * ((i % 3) - 1);
      n.x = cx + 0.42 * width * Math.cos(angle);
      n.y = cy + 0.42 * height * Math.sin(angle);
    });
    nodes[0].x = cx;
    nodes[0].y = cy;
  }

  /** The point of segment ab nearest p, and its distance. */
  function nearest(p, a, b) {
    const dx = b.x - a.x;
    const dy = b.y - a.y;
    const length2 = dx * dx + dy * dy || 1;
    const t = Math.max(0, Math.min(1, ((p.x - a.x) * dx + (p.y - a.y) * dy) / length2));
    const x = a.x + t * dx;
    const y = a.y + t * dy;
    return { x, y, t, d: Math.hypot(p.x - x, p.y - y) };
  }

  /** Away from q, or, when p sits on q, a fixed direction that depends on `salt` only. */
  function away(p, q, salt) {
    const dx = p.x - q.x;
    const dy = p.y - q.y;
    const d = Math.hypot(dx, dy);
    if (d > 1e-6) return [dx / d, dy / d];
    const angle = salt * 2.399963; // the golden angle: distinct directions for distinct salts
    return [Math.cos(angle), Math.sin(angle)];
  }

  function simulate(nodes, links, width, height) {
    const k = 0.9 * Math.sqrt((width * height) / nodes.length);
    const cx = width / 2;
    const cy = height / 2;
    for (let step = 0; step < STEPS; step += 1) {
      const heat = (width / 8) * (1 - step / STEPS) + 0.5;
      const force = nodes.map(() => [0, 0]);
      nodes.forEach((a, i) => {
        for (let j = i + 1; j < nodes.length; j += 1) {
          const b = nodes[j];
          const [ux, uy] = away(a, b, i + j);
          const d = Math.max(Math.hypot(a.x - b.x, a.y - b.y), 1);
          const push = (k * k) / d;
          force[i][0] += ux * push; force[i][1] += uy * push;
          force[j][0] -= ux * push; force[j][1] -= uy * push;
        }
      });
      for (const [i, j] of links) {
        const a = nodes[i];
        const b = nodes[j];
        const d = Math.max(Math.hypot(a.x - b.x, a.y - b.y), 1);
        const pull = (d * d) / k;
        const ux = (b.x - a.x) / d;
        const uy = (b.y - a.y) / d;
        force[i][0] += ux * pull; force[i][1] += uy * pull;
        force[j][0] -= ux * pull; force[j][1] -= uy * pull;
      }
      // Nodes off the edges they are not on: the fault of a layout on lines.
      for (const [i, j] of links) {
        nodes.forEach((c, m) => {
          if (m === i || m === j) return;
          const near = nearest(c, nodes[i], nodes[j]);
          const room = 2.5 * (NODE_R + CLEAR);
          if (near.d >= room) return;
          const [ux, uy] = away(c, near, m + i * 7 + j * 13);
          const push = (k * (room - near.d)) / room;
          force[m][0] += ux * push; force[m][1] += uy * push;
          force[i][0] -= (ux * push) / 2; force[i][1] -= (uy * push) / 2;
          force[j][0] -= (ux * push) / 2; force[j][1] -= (uy * push) / 2;
        });
      }
      nodes.forEach((n, i) => {
        if (i === 0) return; // the entity stays in the middle
        force[i][0] += (cx - n.x) * 0.02 * k / 10;
        force[i][1] += (cy - n.y) * 0.02 * k / 10;
        const size = Math.hypot(force[i][0], force[i][1]);
        if (size < 1e-9) return;
        const move = Math.min(size, heat);
        n.x += (force[i][0] / size) * move;
        n.y += (force[i][1] / size) * move;
      });
    }
  }

  /** Scale into the drawing and centre it: each axis to fill its side (room kept for labels),
      the two scales at most twice each other, so a wide layout also fills a phone's tall box. */
  function fit(nodes, width, height) {
    const xs = nodes.map((n) => n.x);
    const ys = nodes.map((n) => n.y);
    const [left, right, top, bottom] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    let sx = Math.min((width - 2 * MARGIN - 80) / Math.max(right - left, 1), 3);
    let sy = Math.min((height - 2 * MARGIN - 30) / Math.max(bottom - top, 1), 3);
    sx = Math.min(sx, 2 * sy);
    sy = Math.min(sy, 2 * sx);
    const ox = (width - sx * (right - left)) / 2;
    const oy = (height - sy * (bottom - top)) / 2;
    for (const n of nodes) {
      n.x = ox + (n.x - left) * sx;
      n.y = oy + (n.y - top) * sy;
    }
  }

  function clamp(n, width, height) {
    n.x = Math.max(MARGIN + n.r, Math.min(width - MARGIN - n.r, n.x));
    n.y = Math.max(MARGIN + n.r, Math.min(height - MARGIN - n.r, n.y));
  }

  /** Moves nodes until no edge passes within radius + CLEAR of a node it does not join, and
      no two nodes touch; returns the pairs still too close (none, but for a crowded graph). */
  function repair(nodes, links, width, height) {
    let left = [];
    for (let pass = 0; pass < 60; pass += 1) {
      left = [];
      for (const [i, j] of links) {
        nodes.forEach((c, m) => {
          if (m === i || m === j) return;
          const near = nearest(c, nodes[i], nodes[j]);
          const want = c.r + CLEAR + 1;
          if (near.d >= want) return;
          left.push([m, i, j]);
          const [ux, uy] = away(c, near, m + pass);
          const gap = want - near.d + 1;
          if (m === 0) { // move the edge, not the entity in the middle
            for (const e of [nodes[i], nodes[j]]) { e.x -= ux * gap; e.y -= uy * gap; clamp(e, width, height); }
          } else {
            c.x += ux * gap; c.y += uy * gap; clamp(c, width, height);
          }
        });
      }
      nodes.forEach((a, i) => {
        for (let j = i + 1; j < nodes.length; j += 1) {
          const b = nodes[j];
          const want = a.r + b.r + 24;
          const d = Math.hypot(a.x - b.x, a.y - b.y);
          if (d >= want) continue;
          left.push([i, j]);
          const [ux, uy] = away(b, a, i + j + pass);
          b.x += ux * (want - d); b.y += uy * (want - d); clamp(b, width, height); // j > 0: never the entity
        }
      });
      if (!left.length) break;
    }
    return left;
  }

  // Label placement: boxes are {x, y, w, h} with x, y the top-left corner.

  function boxHitsCircle(box, c, pad) {
    const x = Math.max(box.x, Math.min(c.x, box.x + box.w));
    const y = Math.max(box.y, Math.min(c.y, box.y + box.h));
    return Math.hypot(c.x - x, c.y - y) < c.r + pad;
  }

  function boxesOverlap(a, b, pad) {
    return a.x < b.x + b.w + pad && b.x < a.x + a.w + pad && a.y < b.y + b.h + pad && b.y < a.y + a.h + pad;
  }

  function segmentHitsBox(a, b, box) {
    const steps = 12;
    for (let s = 0; s <= steps; s += 1) {
      const x = a.x + ((b.x - a.x) * s) / steps;
      const y = a.y + ((b.y - a.y) * s) / steps;
      if (x > box.x && x < box.x + box.w && y > box.y && y < box.y + box.h) return true;
    }
    return false;
  }

  function cost(box, world, skipEdge) {
    let total = 0;
    if (box.x < 2 || box.y < 2 || box.x + box.w > world.width - 2 || box.y + box.h > world.height - 2) total += 1000;
    for (const n of world.nodes) if (boxHitsCircle(box, n, 3)) total += 1000;
    for (const placed of world.labels) if (boxesOverlap(box, placed, 2)) total += 500;
    world.edges.forEach((e, i) => { if (i !== skipEdge && segmentHitsBox(e.a, e.b, box)) total += 40; });
    return total;
  }

  function best(candidates, world, skipEdge) {
    let chosen = null;
    candidates.forEach((box, order) => {
      const score = cost(box, world, skipEdge) + order;
      if (!chosen || score < chosen.score) chosen = { ...box, score };
    });
    return chosen;
  }

  function nodeLabel(n, w, h, world) {
    const gap = n.r + 4;
    const spots = [
      [-w / 2, gap], [-w / 2, -gap - h], [gap, -h / 2], [-gap - w, -h / 2],
      [gap * 0.7, gap * 0.7], [-gap * 0.7 - w, gap * 0.7], [gap * 0.7, -gap * 0.7 - h], [-gap * 0.7 - w, -gap * 0.7 - h],
      [-w / 2, gap + h + 2], [-w / 2, -gap - 2 * h - 2],
    ];
    return best(spots.map(([dx, dy]) => ({ x: n.x + dx, y: n.y + dy, w, h })), world, -1);
  }

  function edgeLabel(e, index, w, h, world) {
    const dx = e.b.x - e.a.x;
    const dy = e.b.y - e.a.y;
    const length = Math.hypot(dx, dy) || 1;
    const [nx, ny] = [-dy / length, dx / length];
    const spots = [];
    for (const t of [0.5, 0.4, 0.6, 0.3, 0.7]) {
      for (const off of [0, 10, -10, 18, -18]) {
        const x = e.a.x + dx * t + nx * off;
        const y = e.a.y + dy * t + ny * off;
        spots.push({ x: x - w / 2, y: y - h / 2, w, h });
      }
    }
    return best(spots, world, index);
  }

  /**
   * nodes: [{name, depth, parent?}] with the entity first; edges: [{from, to, text}].
   * measure(text, kind) gives a label's width in px ("node" 12 px text, "edge" 10 px).
   * Returns {width, height, nodes: [{name, depth, x, y, r, label}], edges: [{..., label}],
   * crowded}: every label a box {x, y, w, h, text} or null when it found no free place.
   */
  function layout(nodesIn, edgesIn, measure, width = 640, height = 440) {
    const nodes = nodesIn.map((n) => ({ ...n, r: n.depth ? NODE_R : CENTRE_R }));
    const index = new Map(nodes.map((n, i) => [n.name, i]));
    const links = edgesIn.map((e) => [index.get(e.from), index.get(e.to)]);
    ringStart(nodes, width, height);
    if (nodes.length > 1) {
      simulate(nodes, links, width, height);
      fit(nodes, width, height);
    }
    const crowded = repair(nodes, links, width, height).length > 0;
    const edges = edgesIn.map((e, i) => ({ ...e, a: nodes[links[i][0]], b: nodes[links[i][1]] }));
    const world = { width, height, nodes, edges, labels: [] };
    for (const n of nodes) {
      const text = n.name.length > 18 ? `${n.name.slice(0, 17)}…` : n.name;
      const box = nodeLabel(n, measure(text, "node"), 14, world);
      n.label = box.score < 500 ? { ...box, text } : null;
      if (n.label) world.labels.push(n.label);
    }
    edges.forEach((e, i) => {
      const text = e.text.length > 28 ? `${e.text.slice(0, 27)}…` : e.text;
      const box = edgeLabel(e, i, measure(text, "edge"), 12, world);
      e.label = box.score < 500 ? { ...box, text } : null;
      if (e.label) world.labels.push(e.label);
    });
    return { width, height, nodes, edges, crowded };
  }

  return { layout, nearest, CLEAR };
})();
