// One kind's table of jobs on the jobs screen: filtered and paged in the page, its running jobs
// followed live through their event streams.

import { followJob } from "./api.js";
import { announce, dash, fmtCost, fmtDate, fmtMs, fmtTimings, h, isActive, progressBar, setProgress, shortId, statusBadge, table, usageCost } from "./dom.js";

const JOBS_PER_PAGE = 25;
const MAX_LIVE_STREAMS = 20;
const ITEMS = "(items)";
const COLUMNS = ["Job", "Created", "Project", "Mode", "Status", "Progress", "Stage", "Model", ITEMS, "Duration", "Cost", "Stage timings · spent · error"];
const NUMERIC_COLUMNS = new Set([ITEMS, "Duration", "Cost"]);

/**
 * The cost a person should see: none for a mock job, the actual cost once the job recorded one
 * (after completion too), else the creation-time estimate, marked as such.
 */
function costText(data, mock) {
  if (mock) return "none (mock)";
  if (typeof data.actual_cost_usd === "number") return fmtCost(data.actual_cost_usd);
  return typeof data.estimated_cost_usd === "number" ? `${fmtCost(data.estimated_cost_usd)} (est.)` : dash;
}

/**
 * The table of a kind's jobs (its name, title and item noun, from kinds.js): set `items` and call
 * `draw()`; `filters` ({kind, status, text}) is read at each draw.
 */
export function jobTable({ name: kind, title, noun }, filters, signal) {
  const columns = COLUMNS.map((c) => ({ text: c === ITEMS ? noun.charAt(0).toUpperCase() + noun.slice(1) : c, numeric: NUMERIC_COLUMNS.has(c) }));
  const tbody = h("tbody");
  const info = h("span", { id: `${kind}-jobs-page`, role: "status" });
  const prev = h("button", { type: "button", class: "quiet", text: "Newer jobs", "aria-label": `Newer ${kind} jobs`, onclick: () => (state.page--, draw()) });
  const next = h("button", { type: "button", class: "quiet", text: "Older jobs", "aria-label": `Older ${kind} jobs`, onclick: () => (state.page++, draw()) });
  const section = h(
    "section",
    { "aria-labelledby": `${kind}-title`, "data-kind": kind },
    h("h2", { id: `${kind}-title`, text: `${title} jobs` }),
    table({ id: `${kind}-jobs`, caption: `${title} jobs, newest first; running ones update live.` }, columns.map((c) => h("th", { scope: "col", class: c.numeric ? "num" : undefined, text: c.text })), tbody),
    h("div", { class: "toolbar pager" }, prev, info, next),
  );
  const state = { items: [], page: 0, rows: new Map(), streams: new Map() };
  const matches = (item) => {
    if (filters.status !== "all" && item.status !== filters.status) return false;
    const q = filters.text.toLowerCase();
    return !q || [item.job_id, item.project_id, item.model, item.error, item.stage].some((v) => v !== undefined && v !== null && String(v).toLowerCase().includes(q));
  };
  const draw = () => {
    section.hidden = filters.kind !== "all" && filters.kind !== kind;
    const items = state.items.filter(matches);
    const pages = Math.max(1, Math.ceil(items.length / JOBS_PER_PAGE));
    state.page = Math.max(0, Math.min(state.page, pages - 1));
    show(items.slice(state.page * JOBS_PER_PAGE, (state.page + 1) * JOBS_PER_PAGE));
    info.textContent = `Page ${state.page + 1} of ${pages} · ${items.length === state.items.length ? "" : `${items.length} of `}${state.items.length} jobs`;
    prev.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
  };
  const show = (items) => {
    const seen = new Set();
    for (const item of items) {
      seen.add(item.job_id);
      let tr = state.rows.get(item.job_id);
      if (!tr) state.rows.set(item.job_id, (tr = listRow(kind, item)));
      else if (!state.streams.has(item.job_id)) updateRow(tr, { ...item, fromListing: true });
      tbody.append(tr); // keeps the listing's order
      if (isActive(item.status) && !state.streams.has(item.job_id) && state.streams.size < MAX_LIVE_STREAMS) {
        state.streams.set(item.job_id, true);
        followJob(kind, item.job_id, {
          signal,
          onState: (data) => updateRow(tr, data),
          onEnd: (job) => {
            updateRow(tr, { ...job, progress: job.status === "completed" ? 1 : job.progress });
            announce(`${title} job ${shortId(job.job_id)} ${job.status}`);
          },
          onProblem: (error) => (tr.querySelector('[data-cell="details"]').textContent = error.message),
        }).finally(() => state.streams.delete(item.job_id));
      }
    }
    for (const [id, tr] of state.rows) {
      if (!seen.has(id)) {
        tr.remove();
        state.rows.delete(id);
      }
    }
    tbody.querySelector(".empty")?.remove();
    if (items.length === 0) tbody.append(h("tr", { class: "empty" }, h("td", { colspan: String(columns.length), class: "muted", text: state.items.length ? "No job matches." : "No jobs yet." })));
  };
  return Object.assign(state, { section, draw });
}

function listRow(kind, item) {
  const link = h("a", { href: `#/job/${kind}/${encodeURIComponent(item.job_id)}`, class: "mono", title: item.job_id, "aria-label": `Job ${item.job_id}`, text: shortId(item.job_id) });
  return h(
    "tr",
    { "data-job-id": item.job_id, "data-mock": item.mock ? "true" : undefined },
    h("td", {}, link),
    h("td", { "data-cell": "created", text: fmtDate(item.created_at) }),
    h("td", { "data-cell": "project", text: item.project_id ?? dash }),
    h("td", { "data-cell": "mode", text: item.mock ? "mock" : "live" }),
    h("td", { "data-cell": "status" }, statusBadge(item.status)),
    h("td", { "data-cell": "progress" }, progressBar(item.progress, `Progress of job ${shortId(item.job_id)}`)),
    h("td", { "data-cell": "stage", text: item.stage || dash }),
    h("td", { "data-cell": "model", text: item.model || dash }),
    h("td", { class: "num", text: String(item.papers_count ?? item.record_count ?? dash) }),
    h("td", { class: "num", "data-cell": "duration", text: fmtMs(item.duration_ms) }),
    h("td", { class: "num", "data-cell": "cost", text: costText(item, item.mock) }),
    h("td", { "data-cell": "details", class: "muted", text: item.error ? `Error: ${item.error}` : dash }),
  );
}

/** Applies a listing item, a state event or a poll body to a row. */
function updateRow(tr, data) {
  const cell = (name) => tr.querySelector(`[data-cell="${name}"]`);
  if (data.status) cell("status").replaceChildren(statusBadge(data.status));
  if (typeof data.progress === "number") setProgress(cell("progress"), data.progress);
  if (data.stage !== undefined) cell("stage").textContent = data.stage || dash;
  if (data.duration_ms !== undefined) cell("duration").textContent = fmtMs(data.duration_ms);
  if (data.estimated_cost_usd !== undefined || data.actual_cost_usd !== undefined) cell("cost").textContent = costText(data, tr.dataset.mock === "true");
  if (data.fromListing) {
    if (data.error) cell("details").textContent = `Error: ${data.error}`;
    return;
  }
  const details = [fmtTimings(data.stage_timings)];
  // A screening job's poll body has no usage: the last state event's figure stays.
  const spent = usageCost(data.usage) ?? (tr.dataset.spent ? Number(tr.dataset.spent) : null);
  if (spent !== null && tr.dataset.mock !== "true") {
    tr.dataset.spent = String(spent);
    details.push(`spent ${fmtCost(spent)}`);
  }
  if (data.error) details.push(`Error: ${data.error}${data.error_reason ?? data.error_category ? ` (${data.error_reason ?? data.error_category})` : ""}`);
  cell("details").textContent = details.join(" · ");
}
