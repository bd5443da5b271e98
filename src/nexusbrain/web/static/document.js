/* The document page: the whole text with the chosen chunk's span highlighted and scrolled
   into view, its chunks and its revisions. */
"use strict";

(() => {
  const { h } = NB;
  const root = document.getElementById("document");
  const status = document.getElementById("doc-status");
  const id = root.dataset.id;
  const chunkId = root.dataset.chunk ? Number(root.dataset.chunk) : null;

  /** UTF-16 positions of code point offsets (the API counts code points, as Python does). */
  function utf16(text, points) {
    const out = [];
    let point = 0;
    let unit = 0;
    for (const target of points) {
      while (point < target && unit < text.length) {
        const code = text.charCodeAt(unit);
        unit += code >= 0xd800 && code <= 0xdbff ? 2 : 1;
        point += 1;
      }
      out.push(Math.min(unit, text.length));
    }
    return out;
  }

  function facts(doc) {
    const rows = [
      ["Path", h("code", {}, doc.uri)],
      ["Revision", h("code", {}, doc.revision)],
      ["Kind", doc.kind], ["Domain", doc.domain],
      ["Updated", NB.when(doc.updated_at)], ["Created", NB.when(doc.created_at)],
    ];
    if (doc.deleted_at) rows.push(["Retired", h("span", { class: "error" }, NB.when(doc.deleted_at))]);
    return rows.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]);
  }

  function content(doc, chunk) {
    const pre = document.getElementById("content");
    if (!doc.content.trim()) {
      pre.replaceChildren(h("span", { class: "empty" }, "This document has no text."));
      return null;
    }
    if (!chunk) {
      pre.replaceChildren(doc.content);
      return null;
    }
    const [start, end] = utf16(doc.content, [chunk.span.char_start, chunk.span.char_end]);
    const mark = h("mark", {
      id: "span", class: "span", tabindex: "-1",
      "aria-label": `Lines ${chunk.span.line_start} to ${chunk.span.line_end}, the chosen span`,
    }, doc.content.slice(start, end));
    pre.replaceChildren(doc.content.slice(0, start), mark, doc.content.slice(end));
    return mark;
  }

  function chunkList(doc, chosen) {
    return doc.chunks.map((c) => {
      const link = `?${new URLSearchParams({ chunk: c.id, q: root.dataset.q })}`;
      const where = `Lines ${c.span.line_start}–${c.span.line_end}${c.heading_path.length ? ` · ${c.heading_path.join(" › ")}` : ""}${c.unit ? ` · ${c.unit}` : ""}`;
      return h("li", {},
        h("a", { href: link, "aria-current": chosen && c.id === chosen.id ? "true" : false }, where),
        h("span", { class: "preview" }, c.text.length > 90 ? `${c.text.slice(0, 90)}…` : c.text));
    });
  }

  function historyRows(revisions) {
    return revisions.slice().reverse().map((r) => h("tr", {},
      h("td", {}, NB.when(r.recorded_at)), h("td", {}, r.event),
      h("td", {}, h("code", { title: r.revision }, r.revision.slice(0, 12)))));
  }

  async function load() {
    try {
      const [doc, history] = await Promise.all([
        NB.api(`/documents/${id}`, { chunks: "true" }),
        NB.api(`/documents/${id}/history`),
      ]);
      const chunk = doc.chunks.find((c) => c.id === chunkId) || null;
      document.getElementById("doc-title").textContent = doc.title || doc.uri;
      document.title = `${doc.title || doc.uri} · nexusbrain`;
      document.getElementById("doc-meta").replaceChildren(...facts(doc));
      const chunks = chunkList(doc, chunk);
      document.getElementById("chunks").replaceChildren(...(chunks.length ? chunks
        : [h("li", { class: "empty" }, "No chunks: nothing in this document is searchable.")]));
      const rows = historyRows(history.revisions);
      document.querySelector("#history tbody").replaceChildren(...(rows.length ? rows
        : [h("tr", {}, h("td", { class: "empty", colspan: 3 }, "No revisions recorded."))]));
      const mark = content(doc, chunk);
      status.textContent = chunk
        ? `Showing lines ${chunk.span.line_start}–${chunk.span.line_end} of ${doc.chunks.length} chunk${doc.chunks.length === 1 ? "" : "s"}.`
        : chunkId ? "That chunk is no longer part of this revision." : "";
      if (mark) {
        mark.scrollIntoView({ block: "center" });
        mark.focus({ preventScroll: true });
      }
    } catch (error) {
      NB.fail(status, error);
    }
  }

  load();
})();
