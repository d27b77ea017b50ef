// An extraction job's records, paged, and its errors.

import { dash, h, isActive, table } from "./dom.js";

const ROWS_PER_PAGE = 100;
// Columns of the extraction table: every field a job can ask for (the indexer takes at most 100) and the bookkeeping ones.
const MAX_RECORD_COLUMNS = 120;

/** An extraction job's results into `container`; titles (id → title, from the export) once loaded. */
export function renderIndexerResults(container, job, titles = new Map()) {
  const records = job.partial_results ?? [];
  // Every field the records carry (the table scrolls sideways): the record's id, its title (from the
  // export, once loaded) and status first.
  const fields = [...new Set(records.flatMap((r) => Object.keys(r)))].filter((k) => k !== "ID" && k !== "indexing_status");
  const TITLE = Symbol("title");
  const keys = ["ID", ...(titles.size ? [TITLE] : []), "indexing_status", ...fields].slice(0, MAX_RECORD_COLUMNS);
  const valueOf = (record, k) => (k === TITLE ? (titles.get(String(record.ID)) ?? dash) : cellText(record[k]));
  const tbody = h("tbody");
  const pages = Math.max(1, Math.ceil(records.length / ROWS_PER_PAGE));
  let page = 0;
  const info = h("span", { id: "records-page", role: "status" });
  const prev = h("button", { type: "button", class: "quiet", text: "Previous records", onclick: () => (page--, draw()) });
  const next = h("button", { type: "button", class: "quiet", text: "Next records", onclick: () => (page++, draw()) });
  const draw = () => {
    tbody.replaceChildren(...records.slice(page * ROWS_PER_PAGE, (page + 1) * ROWS_PER_PAGE).map((record) => h("tr", {}, keys.map((k) => h("td", { text: valueOf(record, k) })))));
    info.textContent = `Page ${page + 1} of ${pages} · ${records.length} records`;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  };
  draw();
  const errors = job.errors ?? [];
  container.replaceChildren(
    h(
      "section",
      { "aria-labelledby": "records-title" },
      h("h2", { id: "records-title", text: `Records (${records.length}${isActive(job.status) ? " so far" : ""})` }),
      records.length === 0
        ? h("p", { class: "muted", text: "No records yet." })
        : [table({ id: "records" }, keys.map((k) => (k === TITLE ? "Title" : k)), tbody), h("div", { class: "toolbar pager" }, prev, info, next)],
    ),
    h(
      "section",
      { "aria-labelledby": "errors-title" },
      h("h2", { id: "errors-title", text: `Errors (${errors.length})` }),
      errors.length === 0 ? h("p", { class: "muted", text: "None." }) : h("ul", {}, errors.slice(0, 200).map((e) => h("li", { text: e }))),
    ),
  );
}

function cellText(value) {
  if (value === null || value === undefined) return dash;
  // An extracted field: its value and the model's confidence (the evidence is in the API's answer).
  if (typeof value === "object" && !Array.isArray(value) && "value" in value) {
    const confidence = typeof value.confidence === "number" ? ` (confidence ${value.confidence})` : "";
    return `${cellText(value.value)}${confidence}`;
  }
  if (typeof value === "object") {
    const text = JSON.stringify(value);
    return text.length > 160 ? `${text.slice(0, 159)}…` : text;
  }
  return String(value);
}
