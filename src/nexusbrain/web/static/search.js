/* The search page: results as you type, the search kept in the address bar, and an
   explanation of each hit drawn from its trace and from /explain. */
"use strict";

(() => {
  const { h } = NB;
  const form = document.getElementById("search-form");
  const results = document.getElementById("results");
  const status = document.getElementById("search-status");
  const match = document.getElementById("search-match");
  const empty = document.getElementById("search-empty");
  let controller = null;
  let shown = null;

  function fields() {
    const out = {};
    for (const [key, value] of new FormData(form)) {
      const text = String(value).trim();
      if (text) out[key] = text;
    }
    return out;
  }

  async function run() {
    const params = fields();
    const query = new URLSearchParams(params).toString();
    history.replaceState(null, "", query ? `/app?${query}` : "/app");
    document.title = `${params.q ? `${params.q} · ` : ""}Search · nexusbrain`;
    if (query === shown) return;
    if (controller) controller.abort();
    const hollow = empty.dataset.documents === "0";
    empty.hidden = Boolean(params.q) && !hollow;
    if (!params.q) {
      shown = query;
      results.replaceChildren();
      status.textContent = "";
      match.textContent = "";
      return;
    }
    controller = new AbortController();
    status.classList.remove("error");
    status.textContent = "Searching…";
    try {
      const body = await NB.api("/search", params, controller.signal);
      shown = query;
      render(body, params);
    } catch (error) {
      if (error.name === "AbortError") return;
      shown = null;
      results.replaceChildren();
      match.textContent = "";
      NB.fail(status, error);
    }
  }

  function render(body, params) {
    const stems = NB.terms(params.q);
    const count = body.hits.length;
    const coverage = count ? body.hits[0].trace.dense_coverage : null;
    const notes = count ? (body.hits[0].trace.notes || []).map((n) => ` · ${n}.`).join("") : "";
    status.textContent = (count ? `${count} hit${count === 1 ? "" : "s"} (${body.mode})` : "") + notes + (coverage ? ` ${coverageText(coverage)}` : "");
    // How good a match the hits are, in the server's words (retrieval/confidence.py).
    match.textContent = count ? body.match : "";
    match.classList.toggle("weak", Boolean(body.confidence && body.confidence.weak));
    const names = body.lists || {};
    results.replaceChildren(...(count ? body.hits.map((hit) => hitItem(hit, stems, params, names)) : [noHits(params, body)]));
  }

  /** What to try when nothing came back: the filters first, since they narrow every search;
      then conservative mode, which returns nothing when nothing matches well. */
  function noHits(params, body) {
    const filters = ["domain", "path_prefix"].filter((name) => params[name]);
    const strict = body.mode === "conservative";
    const advice = empty.dataset.documents === "0" ? "There are no documents in this brain yet."
      : filters.length
      ? `The ${filters.map((f) => f.replace("_", " ")).join(" and ")} filter${filters.length > 1 ? "s" : ""} may be too narrow: clear ${filters.length > 1 ? "them" : "it"} to search everything.`
      : strict
      ? "Conservative mode returns nothing when nothing matches well. Balanced shows its best guesses, marked as such."
      : "Try other words, fewer words, or the tokenmax mode, which looks deeper.";
    const title = strict ? `No good match for “${params.q}”` : `No hits for “${params.q}”`;
    return h("li", { class: "empty-state no-hits" }, h("h2", {}, title), h("p", {}, advice));
  }

  /** "#2 · keywords #1, meaning #4": where the hit ranked, and in which lists. The fused score
      is a sum of z-scores or an RRF sum, meaningful only against the other hits of this
      search, so it stays in the explanation and the tooltip; how good a match the hits are
      is the line above them. */
  function rankText(hit, names) {
    const lists = hit.trace.retrievers.filter((r) => r.rank).map((r) => `${names[r.retriever] || r.retriever} #${r.rank}`);
    const r = hit.trace.rerank;
    const rerank = r && r.rank_before !== r.rank_after ? `, reranked from #${r.rank_before}` : "";
    const pending = hit.trace.dense_coverage && !hit.trace.dense_coverage.has_vector ? " (no vector yet: keywords only)" : "";
    const said = hit.trace.day ? ` · said on ${hit.trace.day}, as asked` : "";
    return `#${hit.rank}${lists.length ? ` · ${lists.join(", ")}` : ""}${rerank}${pending}${said}`;
  }

  /** While a slow model embeds in the background: how far the meaning list reached. */
  function coverageText(c) {
    return `· Meaning covered ${c.embedded.toLocaleString("en")} of ${c.chunks.toLocaleString("en")} chunks so far: the others are found by keywords alone until their vectors are made.`;
  }

  /** The hit's text around its first query term, as rendered markdown with the terms marked. */
  function snippet(text, stems) {
    const cut = NB.lineExcerpt(text, stems);
    const classes = ["snippet", "markdown", cut.before ? "cut-before" : "", cut.after ? "cut-after" : ""];
    return h("div", { class: classes.filter(Boolean).join(" ") }, MD.markTerms(MD.render(cut.text, { headingShift: 2 }), stems));
  }

  function hitItem(hit, stems, params, names) {
    const link = `/app/doc/${hit.document_id}?${new URLSearchParams({ chunk: hit.chunk_id, q: params.q, mode: params.mode || "" })}`;
    const panelId = `explain-${hit.chunk_id}`;
    const panel = h("div", { id: panelId, class: "explain", hidden: true });
    const toggle = h("button", {
      type: "button", class: "explain-toggle", "aria-expanded": "false", "aria-controls": panelId,
      onclick: () => {
        const open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        panel.hidden = !open;
        if (open && !panel.childElementCount) explain(panel, hit, params, names);
      },
    }, "Why this hit?");
    const span = hit.span;
    return h("li", { class: "hit" },
      h("h2", {}, h("a", { href: link }, hit.title || hit.uri)),
      h("p", { class: "meta" },
        h("code", { class: "path" }, hit.uri),
        hit.unit ? ` · ${hit.unit}` : "",
        " · revision ", h("code", { title: hit.revision }, hit.revision.slice(0, 12)),
        hit.page != null ? ` · page ${hit.page}` : "",
        ` · lines ${span.line_start}–${span.line_end}`,
        hit.heading_path.length ? ` · ${hit.heading_path.join(" › ")}` : "",
        " · ", h("span", { class: "rank", title: `fused score ${NB.number(hit.score, 4)} (${hit.trace.fusion_method || "one list"})` }, rankText(hit, names))),
      snippet(hit.text, stems),
      alsoIn(hit, params),
      h("p", { class: "actions" }, toggle, h("a", { href: link }, "Open the document at this span")),
      panel);
  }

  /** Where else the hit's text lives: the search shows a repeated text once. */
  function alsoIn(hit, params) {
    if (!hit.also_in || !hit.also_in.length) return "";
    const places = hit.also_in.map((c) => {
      const href = `/app/doc/${c.document_id}?${new URLSearchParams({ chunk: c.chunk_id, q: params.q, mode: params.mode || "" })}`;
      const page = c.page != null ? `, page ${c.page}` : "";
      return h("li", {}, h("a", { href }, `${c.uri}:${c.span.line_start}–${c.span.line_end}${page}`));
    });
    return h("div", { class: "also-in" }, "Also in: ", h("ul", { class: "inline" }, places));
  }

  /** The hit's own trace as a bar chart of fusion contributions, then where the whole document
      ranks in each list (from /explain). */
  async function explain(panel, hit, params, names) {
    panel.append(traceChart(hit.trace, hit, names));
    const note = h("p", { class: "hint" }, "Looking at the whole document…");
    panel.append(note);
    const { q, ...filters } = params;
    try {
      note.replaceWith(documentSummary(await NB.api("/explain", { q, doc: hit.document_id, ...filters })));
    } catch (error) {
      note.textContent = `No document explanation: ${error.message}`;
    }
  }

  function traceChart(trace, hit, names) {
    const fusion = trace.fusion || [];
    const listed = [...new Set([...trace.retrievers.map((r) => r.retriever), ...fusion.map((f) => f.retriever)])];
    const zscore = trace.fusion_method === "zscore";
    const largest = Math.max(...fusion.map((f) => Math.abs(f.contribution)), 0);
    const rows = listed.map((name) => {
      const found = trace.retrievers.find((r) => r.retriever === name);
      const share = fusion.find((f) => f.retriever === name);
      const fill = h("span", { class: "bar-fill" });
      fill.style.width = share && largest ? `${(100 * Math.abs(share.contribution)) / largest}%` : "0";
      if (share && share.contribution < 0) fill.classList.add("negative");
      return h("tr", {},
        h("th", { scope: "row" }, names[name] || name),
        h("td", { class: "num" }, found ? `#${found.rank}` : "–"),
        h("td", { class: "num" }, found ? NB.number(found.score, 3) : "–"),
        h("td", { class: "bar-cell" }, h("span", { class: "bar", "aria-hidden": "true" }, fill)),
        h("td", { class: "num" }, share ? NB.number(share.contribution, 4) : "–"));
    });
    const method = zscore ? "Z-score fusion (weight × standardised score)" : "Reciprocal rank fusion";
    const caption = fusion.length
      ? `${method}: fused score ${NB.number(hit.score, 4)}, fused rank ${trace.fused_rank ?? hit.rank}. The fused score only orders the hits of this search${zscore ? ": each list's scores are taken relative to the mean of its top hits" : ""}.`
      : "Each retriever's rank and raw score";
    const parts = [h("div", { class: "chart-wrap" }, h("table", { class: "chart" },
      h("caption", {}, caption),
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, "List"), h("th", { scope: "col", class: "num" }, "Rank"),
        h("th", { scope: "col", class: "num" }, "Score"), h("th", { scope: "col" }, "Share"),
        h("th", { scope: "col", class: "num" }, zscore ? "w×z" : "w/(k+r)"))),
      h("tbody", {}, rows)))];
    if (trace.prf_terms && trace.prf_terms.length) {
      parts.push(h("p", {}, "Expansion terms (PRF):"),
        h("ul", { class: "chips", "aria-label": "Expansion terms" }, trace.prf_terms.map((t) => h("li", {}, t))));
    }
    if (trace.rerank) {
      const r = trace.rerank;
      const moved = r.rank_before === r.rank_after ? `kept #${r.rank_after}` : `#${r.rank_before} → #${r.rank_after}`;
      parts.push(h("p", { class: "rerank" }, `Reranked by ${r.model}: ${moved}, its score ${NB.number(r.score, 3)}.`));
    } else {
      parts.push(h("p", { class: "hint" }, "No reranker ran."));
    }
    for (const note of trace.notes || []) parts.push(h("p", { class: "hint" }, `Note: ${note}.`));
    return h("div", { class: "trace" }, parts);
  }

  function documentSummary(ex) {
    const lists = ex.lists.map((l) => (l.rank ? `${l.label} #${l.rank}` : `${l.label}: not in its top ${ex.depth}`));
    const why = {
      retired: "retired", filtered: `excluded by ${ex.excluded_by.join(", ")}`,
      not_a_candidate: "in no list", below_floor: "under the score floor", below_k: `not in the top ${ex.k}`,
    };
    const verdict = ex.returned ? `hit #${ex.rank} of the top ${ex.k}` : why[ex.verdict];
    return h("p", { class: "doc-explain" },
      `Whole document: ${verdict}, fused rank ${ex.fused_rank ?? "–"}; best chunk per list: ${lists.join(", ")}.`);
  }

  const later = NB.debounce(run, 250);
  form.addEventListener("input", later);
  form.addEventListener("change", later);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    shown = null;
    run();
  });
  if (form.elements.q.value.trim()) run();
})();
