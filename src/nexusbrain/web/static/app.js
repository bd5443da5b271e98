/* nexusbrain web UI: helpers every page uses. Text from the API (hits, documents, names) is
   only ever put into the page as text nodes or attribute values, never parsed as HTML. */
"use strict";

const NB = (() => {
  // Lucene's English stopwords: the search drops them too, so they are never marked.
  const STOPWORDS = new Set(("a an and are as at be but by for if in into is it no not of on or " +
    "such that the their then there these they this to was will with").split(" "));
  const WORD = /[\p{L}\p{N}_]+/gu;

  /** An element: h("a", {href, class, text, onclick}, child, ...). */
  function h(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  /** GET a JSON route of the API. Errors throw with the API's own message. */
  async function api(path, params, signal) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== undefined && value !== null && value !== "") query.set(key, value);
    }
    const text = query.toString();
    const url = text ? `${path}?${text}` : path;
    const response = await fetch(url, { headers: { Accept: "application/json" }, signal });
    if (response.status === 401) {
      location.assign(`/app/login?next=${encodeURIComponent(location.pathname + location.search)}`);
      throw new Error("sign in first");
    }
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      throw new Error(body && body.error ? body.error.message : `HTTP ${response.status}`);
    }
    return body;
  }

  function debounce(fn, ms) {
    let timer = 0;
    return (...args) => {
      clearTimeout(timer);
      timer = setTimeout(() => fn(...args), ms);
    };
  }

  /** The query's words, lower-cased, stopwords dropped (unless nothing would be left), each
      cut to a rough stem so that "failing" also marks "failed". */
  function terms(query) {
    const words = [...new Set((query.toLowerCase().match(WORD) || []))];
    const kept = words.filter((w) => !STOPWORDS.has(w));
    return (kept.length ? kept : words).map((w) => w.replace(/(?:ing|ed|es|s)$/u, (end, at) => (at >= 3 ? "" : end)));
  }

  function termPattern(stems) {
    if (!stems.length) return null;
    const alternatives = [...stems].sort((a, b) => b.length - a.length).join("|");
    return new RegExp(`(?<![\\p{L}\\p{N}_])(?:${alternatives})[\\p{L}\\p{N}_]*`, "giu");
  }

  /** `text` as a fragment with every word starting with a query term in <mark>. */
  function marked(text, stems) {
    const fragment = document.createDocumentFragment();
    const pattern = termPattern(stems);
    let last = 0;
    if (pattern) {
      for (const match of text.matchAll(pattern)) {
        fragment.append(text.slice(last, match.index), h("mark", { text: match[0] }));
        last = match.index + match[0].length;
      }
    }
    fragment.append(text.slice(last));
    return fragment;
  }

  /** About `size` characters of `text` around its first marked term, cut at spaces. */
  function excerpt(text, stems, size = 320) {
    if (text.length <= size) return text;
    const pattern = termPattern(stems);
    const first = pattern ? text.search(pattern) : -1;
    let start = first > size / 3 ? text.lastIndexOf(" ", first - size / 4) : 0;
    start = Math.max(start, 0);
    let end = text.indexOf(" ", start + size);
    end = end < 0 ? text.length : end;
    return (start > 0 ? "…" : "") + text.slice(start, end).trim() + (end < text.length ? "…" : "");
  }

  /** A size in the units the envelopes use: binary (KiB, MiB, GiB) for the database,
      decimal (kB, MB, GB) for memory, as envelopes.py defines its limits. */
  function bytes(n, decimal = false) {
    const base = decimal ? 1000 : 1024;
    const units = decimal ? ["B", "kB", "MB", "GB", "TB"] : ["B", "KiB", "MiB", "GiB", "TiB"];
    let value = n;
    let unit = 0;
    while (value >= base && unit < units.length - 1) {
      value /= base;
      unit += 1;
    }
    const digits = unit && value < 10 && !Number.isInteger(value) ? 1 : 0;
    return `${value.toFixed(digits)} ${units[unit]}`;
  }

  /** A time from the API: the date alone at midnight UTC, else to the minute. */
  function when(iso) {
    if (!iso) return "";
    return iso.slice(10, 26) === "T00:00:00.000000" ? iso.slice(0, 10) : `${iso.slice(0, 16).replace("T", " ")} UTC`;
  }

  function number(value, digits) {
    return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  }

  function fail(status, error) {
    status.textContent = error.message;
    status.classList.add("error");
  }

  // "/" anywhere outside a field jumps to the page's main field.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input, select, textarea, [contenteditable]")) return;
    const field = document.querySelector("[data-slash], #q, main input");
    if (field) {
      event.preventDefault();
      field.focus();
    }
  });

  /** About `size` characters of markdown around the first line with a query term, in whole
      lines (with the heading just above it), so that it still renders as markdown; `before`
      and `after` say whether text was left out there. */
  function lineExcerpt(text, stems, size = 320) {
    if (text.length <= size) return { text, before: false, after: false };
    const lines = text.split("\n");
    const pattern = termPattern(stems);
    let start = pattern ? lines.findIndex((line) => line.search(pattern) >= 0) : 0;
    start = Math.max(start, 0);
    if (start > 0 && /^\s*#/.test(lines[start - 1])) start -= 1;
    if (lines[start].length > size) {
      const cut = excerpt(lines[start], stems, size);
      return { text: cut, before: start > 0, after: start < lines.length - 1 };
    }
    let end = start;
    let length = 0;
    while (end < lines.length && length + lines[end].length <= size) length += lines[end++].length + 1;
    const fences = lines.slice(0, start).filter((line) => /^\s*(```|~~~)/.test(line));
    const open = fences.length % 2 ? [fences[fences.length - 1].trim().slice(0, 3)] : []; // it starts in a code block
    return { text: [...open, ...lines.slice(start, end)].join("\n"), before: start > 0, after: end < lines.length };
  }

  return { h, api, debounce, terms, marked, excerpt, lineExcerpt, bytes, when, number, fail };
})();
