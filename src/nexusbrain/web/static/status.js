/* The status page: /stats as a list, and the envelope check when the server reports one. */
"use strict";

(() => {
  const { h } = NB;
  const status = document.getElementById("stats-status");

  function facts(rows) {
    return rows.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]);
  }

  function envelope(env) {
    const names = Object.keys(env.limits);
    const broken = new Set(env.breaches.map((b) => b.limit));
    const show = (name, value) => (value === null || value === undefined ? "–" : /bytes/.test(name) ? NB.bytes(value) : value.toLocaleString());
    return [
      h("p", {}, `Envelope `, h("code", {}, env.name), ": ",
        h("span", { class: env.ok ? "ok" : "breach" }, env.ok ? "within its limits" : "over a limit")),
      h("div", { class: "table-wrap" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Limit"), h("th", { scope: "col", class: "num" }, "Observed"),
          h("th", { scope: "col", class: "num" }, "Maximum"))),
        h("tbody", {}, names.map((name) => h("tr", { class: broken.has(name) ? "breach" : "" },
          h("th", { scope: "row" }, name), h("td", { class: "num" }, show(name, env.observed[name])),
          h("td", { class: "num" }, show(name, env.limits[name]))))))),
      ...env.breaches.map((b) => h("p", { class: "breach" }, b.message)),
    ];
  }

  async function load() {
    try {
      const stats = await NB.api("/stats");
      document.getElementById("stats").replaceChildren(...facts([
        ["Documents", stats.documents.toLocaleString()],
        ["Retired documents", stats.retired_documents.toLocaleString()],
        ["Chunks", stats.chunks.toLocaleString()],
        ["Database size", NB.bytes(stats.db_bytes)],
        ["Server memory (RSS)", NB.bytes(stats.rss_bytes)],
        ["Database", h("code", {}, stats.db_path)],
        ["Version", `${stats.version} (schema ${stats.schema_version})`],
      ]));
      if (stats.envelope) document.getElementById("envelope").replaceChildren(...envelope(stats.envelope));
      status.textContent = "";
    } catch (error) {
      NB.fail(status, error);
    }
  }

  load();
})();
