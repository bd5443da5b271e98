/* The document page: the whole text with the chosen chunk's span highlighted and scrolled
   into view, its chunks and its revisions. Markdown is shown rendered (its source a button
   away); every other kind as the text stored, which for a PDF or an HTML page is the text
   taken out of the file: a span's characters point into it, and a PDF's span names its page. */
"use strict";

(() => {
  const { h } = NB;
  const root = document.getElementById("document");
  const status = document.getElementById("doc-status");
  const id = root.dataset.id;
  const chunkId = root.dataset.chunk ? Number(root.dataset.chunk) : null;
  // The kinds whose text is markdown (a conversation's turns are written as markdown too).
  const MARKDOWN = new Set(["markdown", "memory", "conversation"]);
  const EXTRACTED = new Set(["pdf", "html"]);

  /** "Page 4, lines 40–52" (a PDF's chunk), else "Lines 40–52". */
  function where(chunk) {
    const lines = `${chunk.span.line_start}–${chunk.span.line_end}`;
    return chunk.meta && chunk.meta.page != null ? `Page ${chunk.meta.page}, lines ${lines}` : `Lines ${lines}`;
  }

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
      ...(doc.metadata.pages != null ? [["Pages", String(doc.metadata.pages)]] : []),
      ...(doc.metadata.language ? [["Language", doc.metadata.language]] : []),
      ["Updated", NB.when(doc.updated_at)], ["Created", NB.when(doc.created_at)],
    ];
    if (doc.deleted_at) rows.push(["Retired", h("span", { class: "error" }, NB.when(doc.deleted_at))]);
    return rows.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]);
  }

  /** The document rendered as markdown, the blocks holding the chunk's lines highlighted;
      returns the first of them. */
  function rendered(doc, chunk) {
    const box = document.getElementById("content");
    if (!doc.content.trim()) {
      box.replaceChildren(h("p", { class: "empty" }, "This document has no text."));
      return null;
    }
    box.replaceChildren(MD.render(doc.content, { headingShift: 2, lines: true }));
    if (!chunk) return null;
    const { line_start: first, line_end: last } = chunk.span;
    const blocks = [...box.children].filter((block) => {
      const [from, to] = block.dataset.lines.split("-").map(Number);
      return from <= last && to >= first;
    });
    blocks.forEach((block) => block.classList.add("span"));
    if (!blocks.length) return null;
    Object.assign(blocks[0], { id: "span", tabIndex: -1 });
    blocks[0].setAttribute("aria-label", `Lines ${first} to ${last}, the chosen span, begin here`);
    return blocks[0];
  }

  /** The markdown source, the chunk's exact characters marked. */
  function source(doc, chunk) {
    const pre = document.getElementById("source");
    if (!chunk) {
      pre.replaceChildren(doc.content);
      return null;
    }
    const [start, end] = utf16(doc.content, [chunk.span.char_start, chunk.span.char_end]);
    const mark = h("mark", {
      id: "source-span", class: "span", tabindex: "-1",
      "aria-label": `${where(chunk).replace("–", " to ")}, the chosen span`,
    }, doc.content.slice(start, end));
    pre.replaceChildren(doc.content.slice(0, start), mark, doc.content.slice(end));
    return mark;
  }

  function show(mark) {
    if (!mark) return;
    mark.scrollIntoView({ block: "center" });
    mark.focus({ preventScroll: true });
  }

  function toggleSource(renderedMark, sourceMark) {
    const button = document.getElementById("source-toggle");
    const box = document.getElementById("content");
    const pre = document.getElementById("source");
    button.hidden = false;
    button.addEventListener("click", () => {
      const showSource = button.getAttribute("aria-pressed") !== "true";
      button.setAttribute("aria-pressed", String(showSource));
      button.textContent = showSource ? "Show it rendered" : "Show the markdown source";
      box.hidden = showSource;
      pre.hidden = !showSource;
      show(showSource ? sourceMark : renderedMark);
    });
  }

  /** A chunk's first words as a reader sees them: its markdown rendered, then as text. */
  function preview(text) {
    const box = h("div", {}, MD.render(text.slice(0, 400)));
    const words = [...box.children].map((block) => block.textContent.trim()).join(" · ");
    return words.length > 90 ? `${words.slice(0, 90)}…` : words;
  }

  function plainPreview(text) {
    const words = text.slice(0, 400).split(/\s+/).join(" ").trim();
    return words.length > 90 ? `${words.slice(0, 90)}…` : words;
  }

  /** A document that is not markdown: its stored text as it is, the span's characters marked. */
  function plain(doc, chunk) {
    document.getElementById("content").hidden = true;
    document.getElementById("source").hidden = false;
    document.getElementById("content-heading").textContent = EXTRACTED.has(doc.kind)
      ? `Text taken from the ${doc.kind === "pdf" ? "PDF" : "page"}` : "Content";
    return source(doc, chunk);
  }

  function chunkList(doc, chosen) {
    return doc.chunks.map((c) => {
      const link = `?${new URLSearchParams({ chunk: c.id, q: root.dataset.q })}`;
      const label = `${where(c)}${c.heading_path.length ? ` · ${c.heading_path.join(" › ")}` : ""}${c.unit ? ` · ${c.unit}` : ""}`;
      const markdown = MARKDOWN.has(doc.kind);
      return h("li", {},
        h("a", { href: link, "aria-current": chosen && c.id === chosen.id ? "true" : false }, label),
        h("span", { class: "preview" }, markdown ? preview(c.text) : plainPreview(c.text)));
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
      const list = document.getElementById("chunks");
      list.style.setProperty("--digits", String(String(chunks.length).length)); // app.css .chunks
      list.replaceChildren(...(chunks.length ? chunks
        : [h("li", { class: "empty" }, "No chunks: nothing in this document is searchable.")]));
      const rows = historyRows(history.revisions);
      document.querySelector("#history tbody").replaceChildren(...(rows.length ? rows
        : [h("tr", {}, h("td", { class: "empty", colspan: 3 }, "No revisions recorded."))]));
      let mark;
      if (MARKDOWN.has(doc.kind)) {
        mark = rendered(doc, chunk);
        if (doc.content.trim()) toggleSource(mark, source(doc, chunk));
      } else {
        mark = plain(doc, chunk);
      }
      status.textContent = chunk
        ? `Showing ${where(chunk).toLowerCase()} of ${doc.chunks.length} chunk${doc.chunks.length === 1 ? "" : "s"}.`
        : chunkId ? "That chunk is no longer part of this revision." : "";
      show(mark);
    } catch (error) {
      NB.fail(status, error);
    }
  }

  load();
})();
