/* The entity page: its relationships as of a date, each one's history, and a node-link view
   of its neighbourhood to depth 2. */
"use strict";

(() => {
  const { h } = NB;
  const form = document.getElementById("graph-form");
  const entity = form.elements.entity.value.trim();
  if (!entity) return;
  const dateInput = document.getElementById("as-of");
  const slider = document.getElementById("as-of-slider");
  const label = document.getElementById("as-of-label");
  const status = document.getElementById("graph-status");
  const SVG = "http://www.w3.org/2000/svg";
  let stops = []; // dates at which what holds changes, ascending; the slider's end is "current"
  let ticket = 0;

  function entityLink(name) {
    if (name.toLowerCase() === entity.toLowerCase()) return h("strong", {}, name);
    return h("a", { href: `/app/graph?${new URLSearchParams({ entity: name, as_of: dateInput.value })}` }, name);
  }

  function validText(r) {
    if (!r.valid_at && !r.invalid_at) return "valid at any time";
    return `valid ${r.valid_at ? NB.when(r.valid_at) : "…"} → ${r.invalid_at ? NB.when(r.invalid_at) : "open"}`;
  }

  function relItem(r) {
    const panelId = `history-${r.id}`;
    const panel = h("div", { id: panelId, class: "history", hidden: true });
    const button = h("button", {
      type: "button", "aria-expanded": "false", "aria-controls": panelId,
      onclick: async () => {
        const open = button.getAttribute("aria-expanded") !== "true";
        button.setAttribute("aria-expanded", String(open));
        panel.hidden = !open;
        if (open && !panel.childElementCount) await history(panel, r.id);
      },
    }, "History");
    const ended = !dateInput.value && r.invalid_at && r.invalid_at.slice(0, 19) < new Date().toISOString().slice(0, 19);
    return h("li", { class: "rel", "data-id": r.id },
      entityLink(r.from), h("span", { class: "type" }, r.type), entityLink(r.to),
      h("span", { class: "when" }, validText(r), ended ? h("span", { class: "ended" }, " (ended)") : "",
        ` · #${r.id}`, r.source ? ` · from ${r.source}` : ""),
      button, panel);
  }

  async function history(panel, id) {
    panel.append(h("p", { class: "hint" }, "Loading…"));
    try {
      const lineage = await NB.api(`/graph/relationships/${id}/history`);
      const rows = lineage.versions.map((v) => h("tr", { class: v.current ? "current" : "" },
        h("td", {}, `#${v.id}${v.current ? " (current)" : ""}`), h("td", {}, validText(v)),
        h("td", {}, NB.when(v.created_at)), h("td", {}, NB.when(v.superseded_at) || "–"),
        h("td", {}, v.reason || "–"), h("td", {}, v.source || "–")));
      panel.replaceChildren(h("div", { class: "table-wrap" }, h("table", {},
        h("caption", { class: "visually-hidden" }, `Versions of relationship ${id}, oldest first`),
        h("thead", {}, h("tr", {}, ["Version", "Window", "Learned", "Retired", "Why retired", "Source"]
          .map((name) => h("th", { scope: "col" }, name)))),
        h("tbody", {}, rows))));
    } catch (error) {
      panel.replaceChildren(h("p", { class: "error" }, error.message));
    }
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    node.append(...children);
    return node;
  }

  /** The nodes (the entity first) and one edge per pair of nodes, whatever its direction:
      two relationships between the same two entities share a line and a label. */
  function neighbourhood(walk, incoming) {
    const nodes = new Map([[walk.from.name, { name: walk.from.name, depth: 0 }]]);
    const add = (name, depth, parent) => {
      if (!nodes.has(name) && nodes.size < 40) nodes.set(name, { name, depth, parent });
    };
    const relationships = [];
    for (const hop of walk.hops) {
      add(hop.relationship.to, hop.depth, hop.relationship.from);
      relationships.push(hop.relationship);
    }
    for (const r of incoming) {
      add(r.from, 1, walk.from.name);
      relationships.push(r);
    }
    const pairs = new Map();
    for (const r of relationships) {
      if (!nodes.has(r.from) || !nodes.has(r.to) || r.from === r.to) continue;
      const key = [r.from, r.to].sort().join("\u0000");
      const pair = pairs.get(key) || { from: r.from, to: r.to, types: [], forward: false, backward: false, titles: [] };
      if (r.from === pair.from) pair.forward = true;
      else pair.backward = true;
      if (!pair.types.includes(r.type)) pair.types.push(r.type);
      const title = `${r.from} ${r.type} ${r.to}`;
      if (!pair.titles.includes(title)) pair.titles.push(title);
      pairs.set(key, pair);
    }
    const edges = [...pairs.values()].map((p) => ({ ...p, text: p.types.join(", ") }));
    return { nodes: [...nodes.values()], edges };
  }

  function measurer(picture) {
    const probe = svg("text", {});
    picture.append(probe);
    return (text, kind) => {
      probe.setAttribute("class", kind === "edge" ? "edge-label" : "node-label");
      probe.textContent = text;
      return probe.getComputedTextLength() + 4;
    };
  }

  /** The picture's size in CSS pixels: as wide as its box (640 at most), so that its text is
      never scaled down; taller than wide on a phone. */
  function size(holder, count) {
    const width = Math.round(Math.max(300, Math.min(640, holder.clientWidth || 640)));
    if (width < 520) return [width, Math.round(width * (count > 14 ? 1.6 : 1.25))];
    return [width, count > 14 ? 560 : 440];
  }

  let drawnFor = null; // the last walk drawn, to draw again when the box changes width

  function network(walk, incoming) {
    drawnFor = [walk, incoming];
    const { nodes, edges } = neighbourhood(walk, incoming);
    const holder = document.getElementById("network");
    const [width, height] = size(holder, nodes.length);
    const names = nodes.slice(1).map((n) => n.name).join(", ");
    const picture = svg("svg", {
      viewBox: `0 0 ${width} ${height}`, role: "img", "data-width": width,
      "aria-label": `${walk.from.name} and its neighbourhood: ${names || "no neighbours"}`,
    });
    holder.replaceChildren(picture);
    const measure = measurer(picture);
    const drawn = GraphLayout.layout(nodes, edges, measure, width, height);
    picture.replaceChildren(svg("defs", {}, svg("marker", {
      id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
    }, svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "currentColor" }))));
    for (const e of drawn.edges) {
      const length = Math.hypot(e.b.x - e.a.x, e.b.y - e.a.y) || 1;
      const ux = (e.b.x - e.a.x) / length;
      const uy = (e.b.y - e.a.y) / length;
      const line = svg("line", {
        x1: e.a.x + ux * (e.a.r + 3), y1: e.a.y + uy * (e.a.r + 3),
        x2: e.b.x - ux * (e.b.r + 3), y2: e.b.y - uy * (e.b.r + 3),
        "data-from": e.from, "data-to": e.to,
      });
      if (e.forward) line.setAttribute("marker-end", "url(#arrow)");
      if (e.backward) line.setAttribute("marker-start", "url(#arrow)");
      const group = svg("g", { class: "edge" }, line, svg("title", {}, e.titles.join("; ")));
      if (e.label) {
        group.append(svg("text", { class: "edge-label", x: e.label.x + e.label.w / 2, y: e.label.y + e.label.h - 2 }, e.label.text));
      }
      picture.append(group);
    }
    for (const n of drawn.nodes) {
      const body = [svg("circle", { cx: n.x, cy: n.y, r: n.r, "data-node": n.name }), svg("title", {}, n.name)];
      if (n.label) body.push(svg("text", { class: "node-label", x: n.label.x + n.label.w / 2, y: n.label.y + n.label.h - 3 }, n.label.text));
      picture.append(n.depth
        ? svg("a", { href: `/app/graph?${new URLSearchParams({ entity: n.name, as_of: dateInput.value })}` }, ...body)
        : svg("g", { class: "center" }, ...body));
    }
    const partial = walk.truncated || nodes.length >= 40;
    const hidden = drawn.edges.some((e) => !e.label) || drawn.nodes.some((n) => !n.label);
    const notes = [partial ? "Only part of the neighbourhood is drawn." : "", hidden ? "Some labels are left out where they would cover the picture; hover a line or a node for it, or read the list." : ""]
      .filter(Boolean).map((text) => h("p", { class: "hint" }, text));
    holder.append(...notes);
  }

  function dayBefore(date) {
    const d = new Date(`${date}T00:00:00Z`);
    d.setUTCDate(d.getUTCDate() - 1);
    return d.toISOString().slice(0, 10);
  }

  async function loadStops() {
    const [out, into] = await Promise.all([
      NB.api("/graph/relations", { from: entity }),
      NB.api("/graph/relations", { to: entity }),
    ]);
    const dates = new Set();
    for (const r of [...out.relationships, ...into.relationships]) {
      for (const t of [r.valid_at, r.invalid_at]) if (t) dates.add(t.slice(0, 10));
    }
    stops = [...dates].sort();
    if (stops.length) stops.unshift(dayBefore(stops[0]));
    slider.max = String(stops.length);
    slider.disabled = !stops.length;
    syncSlider();
  }

  function syncSlider() {
    const date = dateInput.value;
    let index = stops.length;
    if (date) {
      index = 0;
      stops.forEach((stop, i) => { if (stop <= date) index = i; });
    }
    slider.value = String(index);
    label.textContent = date ? `as of ${date}` : "current";
    slider.setAttribute("aria-valuetext", label.textContent);
  }

  async function show() {
    const asOf = dateInput.value;
    const query = new URLSearchParams({ entity });
    if (asOf) query.set("as_of", asOf);
    window.history.replaceState(null, "", `/app/graph?${query}`);
    syncSlider();
    const when = asOf ? { as_of_valid: asOf } : {};
    const mine = ++ticket;
    status.classList.remove("error");
    status.textContent = "Loading…";
    try {
      const [out, into, walk] = await Promise.all([
        NB.api("/graph/relations", { from: entity, ...when }),
        NB.api("/graph/relations", { to: entity, ...when }),
        NB.api("/graph/traverse", { from: entity, depth: 2, ...when }),
      ]);
      if (mine !== ticket) return;
      const none = (text) => h("li", { class: "empty" }, text);
      const outItems = out.relationships.map(relItem);
      const inItems = into.relationships.map(relItem);
      document.getElementById("outgoing").replaceChildren(...(outItems.length ? outItems : [none("None.")]));
      document.getElementById("incoming").replaceChildren(...(inItems.length ? inItems : [none("None.")]));
      network(walk, into.relationships);
      const count = outItems.length + inItems.length;
      status.textContent = `${count} relationship${count === 1 ? "" : "s"} ${asOf ? `held on ${asOf}` : "are current"}.`;
    } catch (error) {
      if (mine === ticket) NB.fail(status, error);
    }
  }

  window.addEventListener("resize", NB.debounce(() => {
    const picture = document.querySelector("#network svg");
    const holder = document.getElementById("network");
    if (drawnFor && picture && Math.abs(Number(picture.dataset.width) - size(holder, 0)[0]) > 40) network(...drawnFor);
  }, 200));
  dateInput.addEventListener("change", show);
  slider.addEventListener("input", () => {
    const index = Number(slider.value);
    dateInput.value = index >= stops.length ? "" : stops[index];
    show();
  });
  document.getElementById("as-of-now").addEventListener("click", () => {
    dateInput.value = "";
    show();
  });
  form.addEventListener("submit", (event) => {
    if (form.elements.entity.value.trim() === entity) {
      event.preventDefault();
      show();
    }
  });
  loadStops().catch(() => {}).finally(show);
})();
