// The papers of a screening job: sort, filter, search, pages, and one paper's detail.

import { col, dash, h, table } from "./dom.js";
import { VERDICTS, contradiction, effectText, verdictEffect, withDecision } from "./component-verdicts.js";

const PAPERS_PER_PAGE = 25;
const PAPER_SORTS = {
  id: (a, b) => String(a.id).localeCompare(String(b.id), undefined, { numeric: true }),
  decision: (a, b) => String(a.decision).localeCompare(String(b.decision)),
  score: (a, b) => (a.final_score ?? -1) - (b.final_score ?? -1),
  cluster: (a, b) => a.cluster_id - b.cluster_id,
};
const clusterText = (item, labels) => (item.cluster_id >= 0 ? (labels.get(item.cluster_id) ?? `#${item.cluster_id}`) : dash);

/**
 * The paper table of `job.results`, titles from `titles` (filled in place later: the returned
 * element's `refreshTitles` redraws it without losing what the reader started).
 */
export function paperBrowser(job, criteria, labels, titles) {
  const threshold = typeof job.config?.threshold === "number" ? job.config.threshold : 1;
  const papers = job.results.map((item, index) => {
    const paper = { ...withDecision(item, threshold), index, title: "" };
    paper.contradiction = contradiction(paper);
    return paper;
  });
  const fillTitles = () => {
    for (const paper of papers) paper.title = titles.get(String(paper.id)) ?? "";
  };
  fillTitles();
  const state = { sort: "index", direction: 1, filter: "all", query: "", page: 0 };
  const search = h("input", { id: "paper-search", type: "search", placeholder: "id, title, reasoning or cluster" });
  const filters = [["all", "All papers"], ["include", "Included"], ["exclude", "Excluded"], ["contradicted", "Contradicted"], ["error", "With an error"]];
  const filter = h("select", { id: "paper-filter" }, filters.map(([value, text]) => h("option", { value, text })));
  const tbody = h("tbody");
  const pageInfo = h("span", { id: "papers-page", role: "status" });
  const prev = h("button", { type: "button", class: "quiet", text: "Previous page" });
  const next = h("button", { type: "button", class: "quiet", text: "Next page" });
  const detail = h("section", { id: "paper-detail", "aria-labelledby": "paper-detail-title", class: "panel", hidden: true });
  const heads = [["id", "Paper"], [null, "Title"], ["decision", "Decision"], ["score", "Score"], ["cluster", "Cluster"], ...criteria.map((c, i) => [null, c.name || `Criterion ${i + 1}`]), [null, "Reasoning"]];
  const headCells = heads.map(([key, text]) =>
    key ? h("th", { scope: "col", "data-sort": key, class: key === "score" ? "num" : undefined }, h("button", { type: "button", class: "sort", text, onclick: () => sortBy(key) })) : col(text),
  );

  const visible = () => {
    const q = state.query.toLowerCase();
    const shown = (p) => state.filter === "all" || (state.filter === "error" ? Boolean(p.error) : state.filter === "contradicted" ? Boolean(p.contradiction) : p.decision === state.filter);
    const rows = papers.filter((p) => shown(p) && (!q || `${p.id} ${p.title} ${p.reasoning ?? ""} ${labels.get(p.cluster_id) ?? ""}`.toLowerCase().includes(q)));
    const compare = PAPER_SORTS[state.sort] ?? ((a, b) => a.index - b.index);
    return rows.sort((a, b) => state.direction * compare(a, b) || a.index - b.index);
  };
  const row = (item) =>
    h(
      "tr",
      { "data-paper-id": String(item.id), class: item.error ? "has-error" : undefined },
      h("th", { scope: "row", class: "mono" }, h("button", { type: "button", class: "link", "aria-label": `Details of paper ${item.id}`, text: String(item.id), onclick: () => open(item) })),
      h("td", { class: "title", text: item.title || dash }),
      h("td", {}, item.decision, item.contradiction ? h("span", { class: "flag", title: item.contradiction, "aria-label": `contradicted: ${item.contradiction}`, text: " ⚠" }) : null),
      h("td", { class: "num", text: item.final_score ?? dash }),
      h("td", { text: clusterText(item, labels) }),
      criteria.map((criterion, c) => {
        const verdict = item.criteria_verdicts?.[c]?.verdict;
        return h("td", { class: `verdict-${verdictEffect(criterion.type, verdict)}`, text: effectText(criterion.type, verdict) });
      }),
      h("td", { class: "reason", text: item.error ? `Error: ${item.error}` : item.reasoning || dash }),
    );
  const draw = () => {
    const rows = visible();
    const pages = Math.max(1, Math.ceil(rows.length / PAPERS_PER_PAGE));
    state.page = Math.min(state.page, pages - 1);
    tbody.replaceChildren(...rows.slice(state.page * PAPERS_PER_PAGE, (state.page + 1) * PAPERS_PER_PAGE).map(row));
    pageInfo.textContent = rows.length === 0 ? "No paper matches." : `Page ${state.page + 1} of ${pages} · ${rows.length} papers`;
    prev.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
    for (const th of headCells) {
      if (th.dataset.sort === state.sort) th.setAttribute("aria-sort", state.direction > 0 ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    }
  };
  const sortBy = (key) => {
    state.direction = state.sort === key ? -state.direction : 1;
    state.sort = key;
    state.page = 0;
    draw();
  };
  const open = (item) => {
    detail.hidden = false;
    detail.replaceChildren(...paperDetail(item, labels));
    detail.scrollIntoView?.();
  };
  search.addEventListener("input", () => ((state.query = search.value.trim()), (state.page = 0), draw()));
  filter.addEventListener("change", () => ((state.filter = filter.value), (state.page = 0), draw()));
  prev.addEventListener("click", () => (state.page--, draw()));
  next.addEventListener("click", () => (state.page++, draw()));
  draw();
  const browser = h(
    "div",
    {},
    h("div", { class: "toolbar" }, h("label", { for: "paper-search" }, "Search", search), h("label", { for: "paper-filter" }, "Show", filter)),
    table({ id: "papers" }, headCells, tbody),
    h("div", { class: "toolbar pager" }, prev, pageInfo, next),
    detail,
  );
  browser.refreshTitles = () => (fillTitles(), draw());
  return browser;
}

/** One paper's detail: its votes, each criterion's verdict with the vote counts, reasoning, error. */
function paperDetail(item, labels) {
  const votes = item.votes ?? [];
  const facts = [
    ["Decision", item.decision, "decision"],
    ["Votes", votes.length ? `${votes.filter((v) => v === "include").length} of ${votes.length} include (${votes.join(", ")})` : dash, "votes"],
    ["Score", item.final_score ?? dash],
    ["Cluster", clusterText(item, labels)],
    ["Reasoning", item.reasoning || dash, "reasoning"],
    ["Error", item.error || "none", "error"],
  ];
  const verdicts = (item.criteria_verdicts ?? []).map((v, c) =>
    h(
      "tr",
      {},
      h("th", { scope: "row", text: v.name || `Criterion ${c + 1}` }),
      h("td", { text: v.type }),
      h("td", { class: `verdict-${verdictEffect(v.type, v.verdict)}`, text: effectText(v.type, v.verdict) }),
      VERDICTS.map((k) => h("td", { class: "num", text: String(v[k] ?? dash) })),
    ),
  );
  return [
    h("h3", { id: "paper-detail-title" }, "Paper ", h("span", { class: "mono", text: String(item.id) })),
    item.title ? h("p", { class: "paper-title", "data-detail": "title", text: item.title }) : null,
    item.contradiction ? h("p", { class: "alert", "data-detail": "contradiction", text: `Contradiction: ${item.contradiction}.` }) : null,
    h("dl", { class: "facts" }, facts.map(([term, text, key]) => [h("dt", { text: term }), h("dd", { "data-detail": key, text })])),
    verdicts.length === 0 ? h("p", { class: "muted", text: "No verdicts per criterion." }) : table({ id: "paper-verdicts", bare: true }, ["Criterion", "Type", "Majority verdict", "Met", "Not met", "Unclear"], verdicts),
  ].filter(Boolean);
}
