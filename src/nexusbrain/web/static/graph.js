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

  /** Nodes on rings: the entity in the middle, its neighbours around it, theirs outside. */
  function layout(walk, incoming) {
    const nodes = new Map([[walk.from.name, { name: walk.from.name, depth: 0, x: 320, y: 220 }]]);
    const edges = [];
    const add = (name, depth, parent) => {
      if (!nodes.has(name) && nodes.size < 40) nodes.set(name, { name, depth, parent });
    };
    for (const hop of walk.hops) {
      const r = hop.relationship;
      add(r.to, hop.depth, r.from);
      edges.push(r);
    }
    for (const r of incoming) {
      add(r.from, 1, walk.from.name);
      edges.push(r);
    }
    const first = [...nodes.values()].filter((n) => n.depth === 1);
    first.forEach((n, i) => {
      n.angle = (2 * Math.PI * i) / first.length - Math.PI / 2;
      n.x = 320 + 125 * Math.cos(n.angle);
      n.y = 220 + 115 * Math.sin(n.angle);
    });
    for (const parent of first) {
      const children = [...nodes.values()].filter((n) => n.depth === 2 && n.parent === parent.name);
      const step = Math.min((2 * Math.PI) / Math.max(first.length, 1) / Math.max(children.length, 1), 0.45);
      children.forEach((n, i) => {
        const angle = parent.angle + (i - (children.length - 1) / 2) * step;
        n.x = 320 + 260 * Math.cos(angle);
        n.y = 220 + 185 * Math.sin(angle);
      });
    }
    const seen = new Set();
    const drawn = edges.filter((r) => {
      const key = `${r.from}\u0000${r.type}\u0000${r.to}`;
      const shown = nodes.get(r.from) && nodes.get(r.to) && nodes.get(r.from).x !== undefined && nodes.get(r.to).x !== undefined;
      if (!shown || seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    return { nodes: [...nodes.values()].filter((n) => n.x !== undefined), edges: drawn };
  }

  function network(walk, incoming) {
    const { nodes, edges } = layout(walk, incoming);
    const byName = new Map(nodes.map((n) => [n.name, n]));
    const lines = edges.map((r) => {
      const a = byName.get(r.from);
      const b = byName.get(r.to);
      const length = Math.hypot(b.x - a.x, b.y - a.y) || 1;
      const cut = (d) => [(b.x - a.x) * (d / length), (b.y - a.y) * (d / length)];
      const [sx, sy] = cut(14);
      const [ex, ey] = cut(length - 16);
      const group = svg("g", {},
        svg("line", { x1: a.x + sx, y1: a.y + sy, x2: a.x + ex, y2: a.y + ey, "marker-end": "url(#arrow)" }),
        svg("title", {}, `${r.from} ${r.type} ${r.to}`));
      if (edges.length <= 16) {
        group.append(svg("text", { class: "edge-label", x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 3 }, r.type));
      }
      return group;
    });
    const circles = nodes.map((n) => {
      const short = n.name.length > 18 ? `${n.name.slice(0, 17)}…` : n.name;
      const body = [svg("circle", { cx: n.x, cy: n.y, r: n.depth ? 10 : 13 }),
        svg("text", { x: n.x, y: n.y + (n.y < 220 ? -17 : 26) }, short), svg("title", {}, n.name)];
      if (!n.depth) return svg("g", { class: "center" }, ...body);
      return svg("a", { href: `/app/graph?${new URLSearchParams({ entity: n.name, as_of: dateInput.value })}` }, ...body);
    });
    const arrow = svg("defs", {}, svg("marker", {
      id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
    }, svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "currentColor" })));
    const names = nodes.slice(1).map((n) => n.name).join(", ");
    const picture = svg("svg", {
      viewBox: "0 0 640 440", role: "img",
      "aria-label": `${walk.from.name} and its neighbourhood: ${names || "no neighbours"}`,
    }, arrow, ...lines, ...circles);
    const note = walk.truncated || nodes.length >= 40 ? h("p", { class: "hint" }, "Only part of the neighbourhood is drawn.") : null;
    document.getElementById("network").replaceChildren(picture, note || "");
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
