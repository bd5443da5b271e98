/* The status page: /stats in words, and the envelope check when the server reports one. */
"use strict";

(() => {
  const { h } = NB;
  const status = document.getElementById("stats-status");
  // What each envelope limit measures, and how its figures read (envelopes.py).
  const LIMITS = {
    documents: { label: "Documents", show: (n) => n.toLocaleString("en") },
    db_bytes: { label: "Database size", show: (n) => NB.bytes(n) },
    rss_bytes: { label: "Server memory (RSS)", show: (n) => NB.bytes(n, true) },
    p95_ms: { label: "Search latency (p95)", show: (n) => `${Number.isInteger(n) ? n : NB.number(n, 1)} ms` },
  };

  function facts(rows) {
    return rows.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]);
  }

  function limitLabel(key) {
    return (LIMITS[key] || { label: key }).label;
  }

  /** "121 MB of the desktop envelope's 512 MB limit (24%)". */
  function limitLine(env, key) {
    const { show } = LIMITS[key] || { show: String };
    const limit = env.limits[key];
    const value = env.observed[key];
    const theirs = `the ${env.name} envelope's ${show(limit)} limit`;
    if (value === null || value === undefined) {
      return h("span", {}, `not measured yet (too few searches since the server started); ${theirs}`);
    }
    const percent = (100 * value) / limit;
    const share = percent > 0 && percent < 1 ? "<1" : Math.round(percent);
    const over = value > limit ? ": over it" : "";
    return h("span", {}, `${show(value)} of ${theirs} (${share}%)${over}`);
  }

  function envelope(env) {
    const broken = new Set(env.breaches.map((b) => b.limit));
    const rows = Object.keys(env.limits).map((key) => {
      const value = env.observed[key];
      const meter = value === null || value === undefined ? null : h("meter", {
        min: 0, max: env.limits[key], value: Math.min(value, env.limits[key]), "aria-hidden": "true",
      });
      return h("li", { class: broken.has(key) ? "breach" : "", "data-limit": key },
        h("span", { class: "limit-name" }, limitLabel(key)), meter, limitLine(env, key));
    });
    return [
      h("p", {}, "The ", h("strong", {}, env.name), " envelope: the sizes this brain is expected to stay within. ",
        h("span", { class: env.ok ? "ok" : "breach" }, env.ok ? "Within every limit." : "Over a limit."),
        " The limits are soft: crossing one logs a warning, and writes go on."),
      h("ul", { class: "limits" }, rows),
      h("p", { class: "hint" }, "Another envelope: start the server with ", h("code", {}, "BRAIN_ENVELOPE"),
        " set to edge, desktop or enterprise."),
    ];
  }

  /** "1,234 of 5,762 chunks (21%), embedding in the background": how far the model has got.
      Returns whether chunks still wait for their vectors. */
  function vectors(stats) {
    const cell = document.getElementById("vectors");
    if (!cell || stats.embedded_chunks === null || stats.embedded_chunks === undefined) return false;
    const done = stats.embedded_chunks;
    const total = stats.chunks;
    const waiting = done < total;
    const percent = total ? Math.floor((100 * done) / total) : 100;
    const how = waiting
      ? (stats.embedding === "background" ? ", embedding in the background: until then keyword search covers the rest" : ": the rest are embedded on the next ingest-dir, import or serve")
      : "";
    cell.replaceChildren(
      h("meter", { min: 0, max: Math.max(total, 1), value: done, "aria-hidden": "true" }),
      h("span", {}, `${done.toLocaleString("en")} of ${total.toLocaleString("en")} chunks have their vectors (${percent}%)${how}`));
    return waiting && stats.embedding === "background";
  }

  async function load() {
    try {
      const stats = await NB.api("/stats");
      document.getElementById("stats").replaceChildren(...facts([
        ["Documents", stats.documents.toLocaleString("en")],
        ["Retired documents", stats.retired_documents.toLocaleString("en")],
        ["Chunks", stats.chunks.toLocaleString("en")],
        ["Database size", NB.bytes(stats.db_bytes)],
        ["Server memory (RSS)", NB.bytes(stats.rss_bytes, true)],
        ["Database", h("code", {}, stats.db_path)],
        ["Version", `${stats.version} (schema ${stats.schema_version})`],
      ]));
      if (stats.envelope) document.getElementById("envelope").replaceChildren(...envelope(stats.envelope));
      const waiting = vectors(stats);
      status.textContent = "";
      if (waiting) setTimeout(load, 5000); // until every chunk has its vector
    } catch (error) {
      NB.fail(status, error);
    }
  }

  load();
})();
