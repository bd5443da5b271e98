/* The web UI's markdown renderer for documents and snippets: web/markdown.py's blocks and
   inline rules (a test holds the two to the same output), building elements and text nodes
   only. No HTML in the text is ever parsed: the only elements made are the renderer's own, and
   a link or an image shows as its text (no URL is followed or loaded), reference definitions
   and HTML comments not at all. */
"use strict";

const MD = (() => {
  const { h } = NB;
  const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
  const ITEM = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)/;
  const SEPARATOR = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;
  const RULE = /^\s{0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const BOLD = /\*\*(.+?)\*\*/g;
  const EM = /(?<![\p{L}\p{N}_*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\p{L}\p{N}_*])|(?<![\p{L}\p{N}_])_(?![\s_])(.+?)(?<![\s_])_(?![\p{L}\p{N}_])/gu;
  // markdown.py's _RAW: a code span (kept whole), a comment (dropped), a link or an image by
  // any form (its text kept), a shortcut reference (its text, when its label is defined).
  const RAW = /`[^`]*`|<!--.*?-->|!?\[((?:[^\]`]|`[^`]*`)*)\](?:\([^()\s]*(?:\s+[^()]*)?\)|\[[^\]]*\])|\[([^\]]+)\]/g;
  const DEFINITION = /^ {0,3}\[([^\]]+)\]:\s*\S+(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*$/;
  const COMMENT = /^ {0,3}<!--/;
  const FENCES = ["```", "~~~"];
  const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&#34;": '"', "&#39;": "'" };

  const escape = (text) => text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;" })[c]);
  const unescape = (text) => text.replace(/&(?:amp|lt|gt|#34|#39);/g, (e) => ENTITIES[e]);

  /** markdown.py's _spans on escaped text, then only <strong> and <em> made into elements:
      every other character goes back into a text node. */
  function spans(text) {
    let html = escape(text).replace(BOLD, "<strong>$1</strong>");
    html = html.replace(EM, (_, star, line) => `<em>${star ?? line}</em>`);
    const root = document.createDocumentFragment();
    const stack = [root];
    for (const piece of html.split(/(<\/?(?:strong|em)>)/)) {
      const tag = /^<(\/?)(strong|em)>$/.exec(piece);
      if (!tag) {
        if (piece) stack[stack.length - 1].append(unescape(piece));
      } else if (tag[1]) {
        const open = stack.findLastIndex((node, n) => n > 0 && node.localName === tag[2]);
        if (open > 0) stack.length = open;
      } else {
        const node = h(tag[2]);
        stack[stack.length - 1].append(node);
        stack.push(node);
      }
    }
    return root;
  }

  const label = (text) => text.trim().split(/\s+/).join(" ").toLowerCase();

  /** markdown.py's _plain: links and images as their text, comments dropped, code kept. */
  function plain(text, defined) {
    return text.replace(RAW, (whole, linked, shortcut) => {
      if (linked !== undefined) return linked;
      if (shortcut !== undefined) return defined.has(label(shortcut)) ? shortcut : whole;
      return whole.startsWith("<!--") ? "" : whole;
    });
  }

  function inline(text, defined) {
    const parts = plain(text, defined).split("`");
    if (parts.length % 2 === 0) parts.splice(-2, 2, `${parts[parts.length - 2]}\`${parts[parts.length - 1]}`);
    const out = document.createDocumentFragment();
    parts.forEach((part, n) => out.append(n % 2 ? h("code", {}, part) : spans(part)));
    return out;
  }

  function cells(line) {
    const text = line.trim().replace(/^\|/, "").replace(/\|$/, "");
    return text.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll("\\|", "|"));
  }

  function frontMatterEnd(lines) {
    for (let n = 1; n < lines.length; n += 1) if (["---", "..."].includes(lines[n].trim())) return n;
    return null;
  }

  /** The line that closes the comment opened at line i when nothing follows it (markdown.py's
      _comment_end); null: the lines are read as a paragraph. */
  function commentEnd(lines, i) {
    let rest = lines[i].slice(lines[i].indexOf("<!--") + 4);
    let n = i;
    while (!rest.includes("-->")) {
      n += 1;
      if (n === lines.length) return null;
      rest = lines[n];
    }
    return rest.slice(rest.indexOf("-->") + 3).trim() ? null : n;
  }

  function blockAt(lines, i) {
    const line = lines[i].trim();
    if (FENCES.some((f) => line.startsWith(f))) return code;
    if (COMMENT.test(lines[i]) && commentEnd(lines, i) !== null) return comment;
    if (DEFINITION.test(lines[i])) return definitions;
    if (i === 0 && line === "---" && frontMatterEnd(lines) !== null) return frontMatter;
    if (HEADING.test(line)) return heading;
    if (RULE.test(lines[i])) return rule;
    if (line.startsWith("|") && i + 1 < lines.length && SEPARATOR.test(lines[i + 1])) return table;
    if (line.startsWith(">")) return quote;
    if (ITEM.test(lines[i])) return list;
    return paragraph;
  }

  // Each block takes (lines, i, out, shift, defined) and returns the index after it.

  const comment = (lines, i) => commentEnd(lines, i) + 1;

  function definitions(lines, i) {
    while (i < lines.length && DEFINITION.test(lines[i])) i += 1;
    return i;
  }

  function code(lines, i, out) {
    const fence = lines[i].trim().slice(0, 3);
    const body = [];
    i += 1;
    while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
    out.push(h("pre", {}, h("code", {}, body.join("\n"))));
    return i + 1;
  }

  function frontMatter(lines, i, out) {
    const end = frontMatterEnd(lines);
    out.push(h("pre", { class: "front-matter" }, h("code", {}, lines.slice(1, end).join("\n"))));
    return end + 1;
  }

  function heading(lines, i, out, shift, defined) {
    const match = HEADING.exec(lines[i].trim());
    out.push(h(`h${Math.min(match[1].length + shift, 6)}`, {}, inline(match[2], defined)));
    return i + 1;
  }

  function rule(lines, i, out) {
    out.push(h("hr"));
    return i + 1;
  }

  function table(lines, i, out, shift, defined) {
    const head = cells(lines[i]);
    const aligns = cells(lines[i + 1]).map((cell) => (cell.endsWith(":") ? "num" : null));
    const rows = [];
    i += 2;
    while (i < lines.length && lines[i].trim().startsWith("|")) rows.push(cells(lines[i++]));
    const row = (values, tag) => h("tr", {}, values.map((v, n) => h(tag, { class: aligns[n] || null }, inline(v, defined))));
    out.push(h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, row(head, "th")), h("tbody", {}, rows.map((r) => row(r, "td"))))));
    return i;
  }

  function quote(lines, i, out, shift, defined) {
    const inner = [];
    while (i < lines.length && lines[i].trim().startsWith(">")) {
      const text = lines[i++].trim().slice(1);
      inner.push(text.startsWith(" ") ? text.slice(1) : text);
    }
    out.push(h("blockquote", {}, blocks(inner, shift, defined)));
    return i;
  }

  function list(lines, i, out, shift, defined) {
    const first = ITEM.exec(lines[i]);
    const tag = first[1] ? "ul" : "ol";
    const items = [];
    while (i < lines.length) {
      const item = ITEM.exec(lines[i]);
      if (!item || (item[1] ? "ul" : "ol") !== tag) break;
      const text = [item[3]];
      i += 1;
      while (i < lines.length && continues(lines[i])) text.push(lines[i++].trim()); // wrapped lines
      items.push(h("li", {}, inline(text.join(" "), defined)));
    }
    const start = Number(first[2] || 1); // a list that starts at 10 is numbered from 10
    out.push(h(tag, { start: start !== 1 ? start : null }, items));
    return i;
  }

  const continues = (line) => /^[ \t]/.test(line) && line.trim() !== "" && !ITEM.test(line);

  function paragraph(lines, i, out, shift, defined) {
    const text = [];
    while (i < lines.length && lines[i].trim() && (!text.length || blockAt(lines, i) === paragraph)) {
      text.push(lines[i++].trim());
    }
    out.push(h("p", {}, inline(text.join(" "), defined)));
    return i;
  }

  /** The blocks of `lines`; with `numbered`, each carries data-lines="first-last" (1-based). */
  function blocks(lines, shift, defined, numbered = false) {
    const out = [];
    let i = 0;
    while (i < lines.length) {
      if (!lines[i].trim()) {
        i += 1;
        continue;
      }
      const start = i;
      const before = out.length;
      i = blockAt(lines, i)(lines, i, out, shift, defined);
      if (numbered && out.length > before) out[out.length - 1].dataset.lines = `${start + 1}-${Math.min(i, lines.length)}`;
    }
    return out;
  }

  /** `text` as elements in a fragment. headingShift moves headings down (as markdown.py);
      lines: true numbers each top-level block with the source lines it came from. */
  function render(text, { headingShift = 0, lines = false } = {}) {
    const fragment = document.createDocumentFragment();
    const all = text.split(/\r\n|\r|\n/);
    const defined = new Set(all.map((line) => DEFINITION.exec(line)).filter(Boolean).map((m) => label(m[1])));
    fragment.append(...blocks(all, headingShift, defined, lines));
    return fragment;
  }

  /** Marks the query's terms in every text node of `root` (NB.marked), code included. */
  function markTerms(root, stems) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    for (const node of texts) node.replaceWith(NB.marked(node.data, stems));
    return root;
  }

  return { render, markTerms, escape };
})();
