// The console: plain JavaScript served by the gateway as it is (only the import library is
// bundled, by the gateway; nothing is loaded from elsewhere). Every call carries the service key,
// which lives only in this tab's sessionStorage. Live progress comes from the job event streams,
// read with fetch() because EventSource cannot send a header (docs/console.md).

import { ApiError, KEY_ITEM, api, apiKey, followJob, onSignOut, signOut, sleep } from "./api.js";
import { $, announce, dash, fmtCost, fmtDate, fmtMs, fmtTimings, h, isActive, progressBar, s, setProgress, shortId, statusBadge, usageCost } from "./dom.js";
import { newJobView } from "./new-job.js";

/** Jobs read per kind for the list, which is then filtered and paged here (the listing route takes only `limit`). */
const LIST_FETCH = 500;
const JOBS_PER_PAGE = 25;
const MAX_LIVE_STREAMS = 20;
const ROWS_PER_PAGE = 100;
// Columns of the extraction table: every field a job can ask for (the indexer takes at most 100) and the bookkeeping ones.
const MAX_RECORD_COLUMNS = 120;
const PAPERS_PER_PAGE = 25;
const REFRESH_MS = 10_000;

// ---------------------------------------------------------------- views

let currentView;

function startView() {
  currentView?.abort();
  currentView = new AbortController();
  return currentView.signal;
}

onSignOut((reason) => {
  currentView?.abort();
  showLogin(reason);
});

function showLogin(reason) {
  $("#nav").hidden = true;
  $("#forget").hidden = true;
  $("#view").replaceChildren();
  $("#login").hidden = false;
  const error = $("#login-error");
  error.hidden = !reason;
  error.textContent = reason ?? "";
  $("#key").focus();
}

function render() {
  if (!apiKey()) return showLogin();
  $("#login").hidden = true;
  $("#nav").hidden = false;
  $("#forget").hidden = false;
  const hash = location.hash || "#/jobs";
  const job = /^#\/job\/(screening|indexer)\/([^/]+)$/.exec(hash);
  const section = job ? "jobs" : hash === "#/config" ? "config" : hash === "#/new" ? "new" : "jobs";
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const signal = startView();
  const view = $("#view");
  view.replaceChildren();
  const failed = (error) => {
    if (signal.aborted) return;
    view.append(h("p", { class: "alert", role: "alert", text: `Could not load: ${error.message}` }));
  };
  if (job) jobView(view, job[1], decodeURIComponent(job[2]), signal).catch(failed);
  else if (section === "config") configView(view, signal).catch(failed);
  else if (section === "new") newJobView(view, signal).catch(failed);
  else jobsView(view, signal).catch(failed);
}

// ---- jobs list

const DEMO_TOPICS = [
  "Reminder nudges to reduce antibiotic prescribing",
  "Audit and feedback on statin prescribing",
  "Default order sets in emergency departments",
  "Peer comparison letters to high prescribers",
  "Electronic alerts for drug interactions",
  "Education sessions on guideline adherence",
];
const DEMO_SETTINGS = ["primary care", "hospital wards", "nursing homes", "community pharmacies"];
const DEMO_DESIGNS = ["a cluster randomised trial", "an interrupted time series", "a before-after study", "an editorial"];
const DEMO_CRITERIA = [
  { name: "Population", type: "include", value: "Healthcare professionals (physicians, nurses, pharmacists)" },
  { name: "Intervention", type: "include", value: "A nudge: a change in choice architecture, defaults, reminders or feedback" },
  { name: "Design", type: "exclude", value: "Editorials and opinion pieces without results" },
];

function demoPapers(count) {
  return Array.from({ length: count }, (_, i) => {
    const topic = DEMO_TOPICS[i % DEMO_TOPICS.length];
    const setting = DEMO_SETTINGS[Math.floor(i / DEMO_TOPICS.length) % DEMO_SETTINGS.length];
    const design = DEMO_DESIGNS[(i * 7) % DEMO_DESIGNS.length];
    return {
      id: `demo-${i + 1}`,
      title: `${topic} in ${setting} (${i + 1})`,
      abstract: `We report ${design} of ${topic.toLowerCase()} among clinicians in ${setting}. Outcomes were prescribing behaviour and guideline adherence over twelve months.`,
    };
  });
}

const LIST_COLUMNS = {
  screening: ["Job", "Created", "Project", "Mode", "Status", "Progress", "Stage", "Model", "Papers", "Duration", "Cost", "Stage timings · spent · error"],
  indexer: ["Job", "Created", "Project", "Mode", "Status", "Progress", "Stage", "Model", "Records", "Duration", "Cost", "Stage timings · spent · error"],
};
const NUMERIC_COLUMNS = new Set(["Papers", "Records", "Duration", "Cost"]);

/**
 * The cost a person should see: none for a mock job, the actual cost once the job recorded one
 * (after completion too), else the creation-time estimate, marked as such.
 */
function costText(data, mock) {
  if (mock) return "none (mock)";
  if (typeof data.actual_cost_usd === "number") return fmtCost(data.actual_cost_usd);
  return typeof data.estimated_cost_usd === "number" ? `${fmtCost(data.estimated_cost_usd)} (est.)` : dash;
}

async function jobsView(view, signal) {
  const status = h("p", { class: "hint", role: "status" });
  const papers = h("input", { id: "mock-papers", type: "number", min: "1", max: "5000", value: "300", required: true });
  const reps = h("input", { id: "mock-reps", type: "number", min: "1", max: "5", value: "3", required: true });
  const start = h("button", { type: "submit", id: "start-mock", text: "Start a mock screening job" });
  const form = h(
    "form",
    {
      class: "toolbar",
      "aria-describedby": "mock-hint",
      onsubmit: async (event) => {
        event.preventDefault();
        start.disabled = true;
        status.textContent = "Starting…";
        try {
          const created = await api("/v1/screening/jobs", {
            method: "POST",
            body: {
              papers: demoPapers(Number(papers.value)),
              criteria: DEMO_CRITERIA,
              questions: ["Do nudges change prescribing by clinicians?"],
              repetitions: Number(reps.value),
              mock: true,
            },
            signal,
          });
          status.textContent = `Started job ${created.job_id}.`;
          announce(`Started screening job ${shortId(created.job_id)}`);
          await refresh();
        } catch (error) {
          status.textContent = `Could not start the job: ${error.message}`;
        } finally {
          start.disabled = false;
        }
      },
    },
    h("label", { for: "mock-papers" }, "Papers", papers),
    h("label", { for: "mock-reps" }, "Repetitions", reps),
    start,
  );
  const tables = {};
  // The listing route pages by `limit` only: the newest LIST_FETCH jobs are filtered and paged here.
  const filters = { kind: "all", status: "all", text: "" };
  const kindFilter = h("select", { id: "jobs-kind" }, [["all", "All kinds"], ["screening", "Screening"], ["indexer", "Extraction"]].map(([value, text]) => h("option", { value, text })));
  const statusFilter = h("select", { id: "jobs-status" }, ["all", "pending", "running", "completed", "failed"].map((value) => h("option", { value, text: value === "all" ? "Any status" : value })));
  const textFilter = h("input", { id: "jobs-text", type: "search", placeholder: "job id, project, model, error" });
  const filterBar = h(
    "div",
    { class: "toolbar", role: "search", "aria-label": "Filter the jobs" },
    h("label", { for: "jobs-kind" }, "Kind", kindFilter),
    h("label", { for: "jobs-status" }, "Status", statusFilter),
    h("label", { for: "jobs-text" }, "Find", textFilter),
  );
  const sections = ["screening", "indexer"].map((kind) => {
    const tbody = h("tbody");
    const info = h("span", { id: `${kind}-jobs-page`, role: "status" });
    const prev = h("button", { type: "button", class: "quiet", text: "Newer jobs", "aria-label": `Newer ${kind} jobs`, onclick: () => (table.page--, draw(kind)) });
    const next = h("button", { type: "button", class: "quiet", text: "Older jobs", "aria-label": `Older ${kind} jobs`, onclick: () => (table.page++, draw(kind)) });
    const table = (tables[kind] = { tbody, rows: new Map(), streams: new Map(), items: [], page: 0, info, prev, next });
    const title = kind === "screening" ? "Screening jobs" : "Extraction jobs";
    const section = h(
      "section",
      { "aria-labelledby": `${kind}-title`, "data-kind": kind },
      h("h2", { id: `${kind}-title`, text: title }),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: `${kind}-jobs` },
          h("caption", { text: `${kind === "screening" ? "Screening" : "Extraction"} jobs, newest first; running ones update live.` }),
          h("thead", {}, h("tr", {}, LIST_COLUMNS[kind].map((c) => h("th", { scope: "col", class: NUMERIC_COLUMNS.has(c) ? "num" : undefined, text: c })))),
          tbody,
        ),
      ),
      h("div", { class: "toolbar pager" }, prev, info, next),
    );
    table.section = section;
    return section;
  });
  const matches = (item) => {
    if (filters.status !== "all" && item.status !== filters.status) return false;
    const q = filters.text.toLowerCase();
    return !q || [item.job_id, item.project_id, item.model, item.error, item.stage].some((v) => v !== undefined && v !== null && String(v).toLowerCase().includes(q));
  };
  const draw = (kind) => {
    const table = tables[kind];
    table.section.hidden = filters.kind !== "all" && filters.kind !== kind;
    const items = table.items.filter(matches);
    const pages = Math.max(1, Math.ceil(items.length / JOBS_PER_PAGE));
    table.page = Math.max(0, Math.min(table.page, pages - 1));
    fillTable(kind, table, items.slice(table.page * JOBS_PER_PAGE, (table.page + 1) * JOBS_PER_PAGE), signal);
    table.info.textContent = items.length === table.items.length ? `Page ${table.page + 1} of ${pages} · ${items.length} jobs` : `Page ${table.page + 1} of ${pages} · ${items.length} of ${table.items.length} jobs`;
    table.prev.disabled = table.page === 0;
    table.next.disabled = table.page >= pages - 1;
  };
  const drawAll = () => (draw("screening"), draw("indexer"));
  const refilter = () => {
    for (const table of Object.values(tables)) table.page = 0;
    drawAll();
  };
  kindFilter.addEventListener("change", () => ((filters.kind = kindFilter.value), refilter()));
  statusFilter.addEventListener("change", () => ((filters.status = statusFilter.value), refilter()));
  textFilter.addEventListener("input", () => ((filters.text = textFilter.value.trim()), refilter()));
  view.append(
    h("h1", { text: "Jobs" }),
    h(
      "section",
      { class: "panel", "aria-labelledby": "mock-title" },
      h("h2", { id: "mock-title", text: "Try it" }),
      form,
      h("p", { id: "mock-hint", class: "hint", text: "Mock mode: no provider key and no cost; the same input always gives the same output." }),
      status,
      h("p", { class: "hint" }, "To screen your own references (RIS, NBIB, CSV) open ", h("a", { href: "#/new", text: "New job" }), "."),
    ),
    filterBar,
    ...sections,
  );

  const refresh = async () => {
    // A gateway whose MAX_LIST_LIMIT is below LIST_FETCH refuses it (400): then its default page.
    const list = (kind) =>
      api(`/v1/${kind}/jobs?limit=${LIST_FETCH}`, { signal }).catch((error) => {
        if (error instanceof ApiError && error.status === 400) return api(`/v1/${kind}/jobs`, { signal });
        throw error;
      });
    const [screening, indexer] = await Promise.all([list("screening"), list("indexer")]);
    tables.screening.items = screening;
    tables.indexer.items = indexer;
    drawAll();
  };
  await refresh();
  (async () => {
    while (!signal.aborted) {
      await sleep(REFRESH_MS, signal);
      if (!signal.aborted) await refresh().catch(() => undefined);
    }
  })();
}

function fillTable(kind, table, items, signal) {
  const seen = new Set();
  for (const item of items) {
    seen.add(item.job_id);
    let row = table.rows.get(item.job_id);
    if (!row) {
      row = listRow(kind, item);
      table.rows.set(item.job_id, row);
    } else if (!table.streams.has(item.job_id)) updateRow(row.tr, { ...item, fromListing: true });
    table.tbody.append(row.tr); // keeps the listing's order
    if (isActive(item.status) && !table.streams.has(item.job_id) && table.streams.size < MAX_LIVE_STREAMS) {
      table.streams.set(item.job_id, true);
      followJob(kind, item.job_id, {
        signal,
        onState: (state) => updateRow(row.tr, state),
        onEnd: (job) => {
          updateRow(row.tr, { ...job, progress: job.status === "completed" ? 1 : job.progress });
          announce(`${kind === "screening" ? "Screening" : "Extraction"} job ${shortId(job.job_id)} ${job.status}`);
        },
        onProblem: (error) => (row.tr.querySelector('[data-cell="details"]').textContent = error.message),
      }).finally(() => table.streams.delete(item.job_id));
    }
  }
  for (const [id, row] of table.rows) {
    if (!seen.has(id)) {
      row.tr.remove();
      table.rows.delete(id);
    }
  }
  table.tbody.querySelector(".empty")?.remove();
  if (items.length === 0) {
    table.tbody.append(h("tr", { class: "empty" }, h("td", { colspan: String(LIST_COLUMNS[kind].length), class: "muted", text: table.items.length ? "No job matches." : "No jobs yet." })));
  }
}

function listRow(kind, item) {
  const link = h("a", { href: `#/job/${kind}/${encodeURIComponent(item.job_id)}`, class: "mono", title: item.job_id, "aria-label": `Job ${item.job_id}`, text: shortId(item.job_id) });
  const tr = h(
    "tr",
    { "data-job-id": item.job_id },
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
  if (item.mock) tr.dataset.mock = "true";
  return { tr };
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

// ---- one job

async function jobView(view, kind, jobId, signal) {
  const job = await api(`/v1/${kind}/jobs/${encodeURIComponent(jobId)}`, { signal });
  const title = kind === "screening" ? "Screening job" : "Extraction job";
  const facts = h("dl", { class: "facts" });
  const progress = progressBar(job.progress, `Progress of job ${shortId(jobId)}`);
  const timings = h("div");
  const errorBox = h("div");
  const results = h("div", { id: "results" });
  const links = h("div");
  view.append(
    h("p", {}, h("a", { href: "#/jobs", text: "← All jobs" })),
    h("h1", {}, `${title} `, h("span", { class: "mono", text: jobId })),
    links,
    h("section", { class: "panel", "aria-label": "Progress" }, progress, facts, errorBox),
    h("section", { "aria-labelledby": "timings-title" }, h("h2", { id: "timings-title", text: "Stage timings" }), timings),
    results,
  );
  const mock = job.config?.mock === true;
  const show = (data) => {
    setProgress(progress, data.status === "completed" ? 1 : data.progress);
    const spent = usageCost(data.usage);
    const rows = [
      ["Status", statusBadge(data.status)],
      ["Stage", data.stage || (kind === "indexer" ? "extraction" : dash)],
      ["Model", data.model_version || dash],
      ["Resolved model", data.provenance?.model_resolved ?? "not recorded"],
      ["Mode", mock ? "mock (no provider, no cost)" : "live"],
      ["Created", fmtDate(data.created_at)],
      ["Completed", fmtDate(data.completed_at)],
      ["Duration", fmtMs(data.duration_ms)],
      ["Estimated cost", mock ? "none (mock job)" : fmtCost(data.estimated_cost_usd)],
    ];
    if (mock) rows.push(["Actual cost", "none (mock job)"]);
    else if (isActive(data.status)) {
      if (spent !== null) rows.push(["Cost so far", fmtCost(data.actual_cost_usd ?? spent)]);
    } else rows.push(["Actual cost", typeof data.actual_cost_usd === "number" ? fmtCost(data.actual_cost_usd) : spent !== null ? fmtCost(spent) : "not recorded"]);
    if (data.usage && typeof data.usage.input_tokens === "number") rows.push(["Tokens in / out", `${data.usage.input_tokens} / ${data.usage.output_tokens ?? 0}`]);
    if (typeof data.items_total === "number") rows.push(["Records done", `${data.items_done ?? 0} of ${data.items_total}`]);
    facts.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", { "data-fact": k.toLowerCase() }, v)]));
    timings.replaceChildren(stageTimingsTable(data.stage_timings, data.status));
    errorBox.replaceChildren(
      ...(data.error
        ? [h("p", { class: "alert", role: "alert" }, `Error (${data.error_reason ?? data.error_category ?? "unknown"}${data.error_retryable ? ", retryable" : ""}): ${data.error}`)]
        : []),
    );
  };
  const base = `/v1/${kind}/jobs/${encodeURIComponent(jobId)}`;
  const actionNote = h("span", { class: "hint", role: "status" });
  const cancel = h("button", {
    type: "button",
    class: "quiet",
    id: "cancel-job",
    text: "Cancel the job",
    onclick: async () => {
      cancel.disabled = true;
      try {
        finish(await api(`${base}/cancel`, { method: "POST", body: {}, signal }));
      } catch (error) {
        actionNote.textContent = `Could not cancel: ${error.message}`;
        cancel.disabled = false;
      }
    },
  });
  const remove = h("button", {
    type: "button",
    class: "quiet",
    id: "delete-job",
    text: "Delete the job",
    onclick: async () => {
      if (!window.confirm("Delete this job with its papers, results and report? This cannot be undone.")) return;
      try {
        await api(base, { method: "DELETE", signal });
        announce(`Job ${shortId(jobId)} deleted`);
        location.hash = "#/jobs";
      } catch (error) {
        actionNote.textContent = `Could not delete: ${error.message}`;
      }
    },
  });
  view.insertBefore(h("div", { class: "toolbar", id: "job-actions" }, cancel, remove, actionNote), links);
  const finish = (data) => {
    show(data);
    cancel.hidden = !isActive(data.status);
    links.replaceChildren(jobLinks(kind, jobId, data.status, signal));
    if (kind === "screening") {
      // Titles come from the JSON Lines export (the poll body holds ids only); until they arrive, ids.
      // The map is filled in place and the paper table redrawn, so nothing the reader started is lost.
      const titles = new Map();
      renderScreeningResults(results, data, titles);
      if (Array.isArray(data.results) && !isActive(data.status)) {
        loadTitles(kind, jobId, signal)
          .then((loaded) => {
            if (signal.aborted || loaded.size === 0) return;
            for (const [id, title] of loaded) titles.set(id, title);
            results.refreshTitles?.();
          })
          .catch(() => undefined);
      }
    } else {
      renderIndexerResults(results, data);
      // Titles come from the export, as for screening; the table is drawn again once they arrive.
      if (!isActive(data.status) && data.partial_results?.length) {
        loadTitles(kind, jobId, signal)
          .then((loaded) => {
            if (!signal.aborted && loaded.size > 0) renderIndexerResults(results, data, loaded);
          })
          .catch(() => undefined);
      }
    }
  };
  finish(job);
  if (isActive(job.status)) {
    followJob(kind, jobId, {
      signal,
      onState: show,
      onEnd: (done) => {
        finish(done);
        announce(`Job ${shortId(jobId)} ${done.status}`);
      },
      onProblem: (error) => errorBox.replaceChildren(h("p", { class: "alert", role: "alert", text: error.message })),
    });
  }
}

function stageTimingsTable(timings, status) {
  const entries = Object.entries(timings ?? {});
  if (entries.length === 0) return h("p", { class: "muted", text: isActive(status) ? "No stage has finished yet." : "This job reports no stage timings." });
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id: "stage-timings" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col", text: "Stage" }), h("th", { scope: "col", class: "num", text: "Time" }))),
      h("tbody", {}, entries.map(([stage, ms]) => h("tr", {}, h("th", { scope: "row", text: stage }), h("td", { class: "num", text: fmtMs(ms) })))),
    ),
  );
}

/** A finished job's items from its JSON Lines export (a failed or cancelled job's: those that finished); empty when it has none. */
async function exportItems(kind, jobId, signal) {
  const res = await fetch(`/v1/${kind}/jobs/${encodeURIComponent(jobId)}/export?format=jsonl`, { headers: { "X-API-Key": apiKey() ?? "" }, signal });
  if (!res.ok) return [];
  return (await res.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

/** id → title of export items (empty when the export carries no titles). */
function titlesOf(items) {
  const titles = new Map();
  for (const item of items) {
    const id = item.id ?? item.ID;
    // `_title` when an extraction field is itself called `title` (the export's rule).
    const title = typeof item._title === "string" ? item._title : (item.title ?? item.Title);
    if (id !== undefined && typeof title === "string" && title) titles.set(String(id), title);
  }
  return titles;
}

/** id → title from a finished job's JSON Lines export. */
async function loadTitles(kind, jobId, signal) {
  return titlesOf(await exportItems(kind, jobId, signal));
}

/** What a criterion's verdict does to the paper: an exclusion criterion that is met excludes it. */
function verdictEffect(type, verdict) {
  if (verdict === "unclear" || !VERDICTS.includes(verdict)) return "unclear";
  return (verdict === "met") === (type !== "exclude") ? "keeps" : "rejects";
}
const effectText = (type, verdict) => {
  const text = VERDICT_TEXT[verdict];
  if (!text) return dash;
  const effect = verdictEffect(type, verdict);
  return type === "exclude" && effect === "rejects" ? `${text} (excludes)` : text;
};

/**
 * Why a paper's decision disagrees with its own verdicts, or null: included although an exclusion
 * criterion is met or an inclusion criterion is not; excluded although every criterion keeps it.
 */
function contradiction(item) {
  const verdicts = item.criteria_verdicts ?? [];
  if (verdicts.length === 0 || item.error) return null;
  const rejecting = verdicts.filter((v) => verdictEffect(v.type, v.verdict) === "rejects");
  if (item.decision === "include" && rejecting.length) return `included although ${rejecting.map((v) => `“${v.name || v.type}” ${v.type === "exclude" ? "is met" : "is not met"}`).join(", ")}`;
  if (item.decision === "exclude" && verdicts.every((v) => verdictEffect(v.type, v.verdict) === "keeps")) return "excluded although every criterion keeps it";
  return null;
}

function renderScreeningResults(container, job, titles) {
  if (!Array.isArray(job.results)) {
    if (job.status === "failed" || job.status === "cancelled") return renderPartialScreening(container, job);
    container.replaceChildren(h("p", { class: "muted", text: isActive(job.status) ? "Results appear here when the job completes." : "This job has no results." }));
    return;
  }
  const clusters = [...(job.clusters ?? [])].sort((a, b) => b.count - a.count);
  const labels = new Map(clusters.map((c) => [c.cluster_id, c.label]));
  const criteria = job.results[0]?.criteria_verdicts?.map((v) => ({ name: v.name, type: v.type })) ?? [];
  const threshold = typeof job.config?.threshold === "number" ? job.config.threshold : 1;
  const browser = paperBrowser(job, criteria, labels, titles);
  container.replaceChildren(
    h("section", { "aria-labelledby": "clusters-title" }, h("h2", { id: "clusters-title", text: "Reason clusters" }), clusterChart(clusters)),
    h("section", { "aria-labelledby": "verdicts-title" }, h("h2", { id: "verdicts-title", text: "Verdicts per criterion" }), verdictSummary(job.results, criteria, threshold)),
    h("section", { "aria-labelledby": "papers-title" }, h("h2", { id: "papers-title", text: `Papers (${job.results.length})` }), browser),
  );
  container.refreshTitles = browser.refreshTitles;
  // validation.js adds its panel on this event (and names papers by their titles when they are known).
  container.dispatchEvent(new CustomEvent("screening-results", { bubbles: true, detail: Object.assign(job, { titles }) }));
}

/**
 * A failed or cancelled screening job keeps the papers that finished (its export holds them,
 * marked partial): shown as such, with their titles, and without the clusters and validation of a
 * whole job, which it never reached.
 */
function renderPartialScreening(container, job) {
  // The end event and the last poll may both hand over the finished job: one load, whose answer stays
  // (a second call put "loading…" back over the partial results the first had shown).
  if (container.dataset.partialFor === job.job_id) return;
  container.dataset.partialFor = job.job_id;
  const why = job.status === "cancelled" || job.error_reason === "cancelled" ? "This job was cancelled before it finished" : "This job failed before it finished";
  container.replaceChildren(h("p", { class: "muted", id: "partial-results", text: `${why}; loading the papers that finished…` }));
  exportItems("screening", job.job_id)
    .then((items) => {
      if (items.length === 0) return container.replaceChildren(h("p", { class: "muted", id: "partial-results", text: `${why}: no paper finished, so it has no results.` }));
      const partial = { ...job, results: items };
      const browser = paperBrowser(partial, items[0]?.criteria_verdicts?.map((v) => ({ name: v.name, type: v.type })) ?? [], new Map(), titlesOf(items));
      container.replaceChildren(
        h("p", { class: "alert", id: "partial-results", text: `${why}: partial results, ${items.length} ${items.length === 1 ? "paper" : "papers"} of ${job.config?.papers_count ?? "its"} finished. The downloads above hold the same papers, marked partial.` }),
        h("section", { "aria-labelledby": "papers-title" }, h("h2", { id: "papers-title", text: `Papers (${items.length}, partial)` }), browser),
      );
    })
    .catch((error) => container.replaceChildren(h("p", { class: "alert", role: "alert", text: `${why}; its partial results could not be loaded: ${error.message}` })));
}

/** The clusters as a horizontal bar chart (inline SVG), with the numbers as a table for screen readers. */
function clusterChart(clusters) {
  if (clusters.length === 0) return h("p", { class: "muted", text: "No clusters." });
  const width = 760;
  const labelWidth = 300;
  const barHeight = 24;
  const gap = 10;
  const height = clusters.length * (barHeight + gap) + gap;
  const max = Math.max(1, ...clusters.map((c) => c.count));
  const scale = (width - labelWidth - 60) / max;
  const chart = s(
    "svg",
    { viewBox: `0 0 ${width} ${height}`, width: String(width), height: String(height), role: "img", "aria-labelledby": "clusters-chart-title", id: "clusters-chart" },
    s("title", { id: "clusters-chart-title", text: `Papers per reason cluster: ${clusters.map((c) => `${c.label} ${c.count}`).join(", ")}` }),
    clusters.map((cluster, i) => {
      const y = gap + i * (barHeight + gap);
      const label = cluster.label.length > 44 ? `${cluster.label.slice(0, 43)}…` : cluster.label;
      return s(
        "g",
        {},
        s("title", { text: `${cluster.label}: ${cluster.count}` }),
        s("text", { x: String(labelWidth - 8), y: String(y + barHeight / 2 + 4), "text-anchor": "end", text: label }),
        s("rect", { class: "bar", x: String(labelWidth), y: String(y), width: String(Math.max(2, cluster.count * scale)), height: String(barHeight), rx: "2" }),
        s("text", { x: String(labelWidth + Math.max(2, cluster.count * scale) + 6), y: String(y + barHeight / 2 + 4), text: String(cluster.count) }),
      );
    }),
  );
  const table = h(
    "table",
    {},
    h("thead", {}, h("tr", {}, h("th", { scope: "col", text: "Cluster" }), h("th", { scope: "col", class: "num", text: "Papers" }))),
    h("tbody", {}, clusters.map((c) => h("tr", {}, h("td", { text: c.label }), h("td", { class: "num", text: String(c.count) })))),
  );
  return h("figure", { class: "chart panel" }, chart, h("details", {}, h("summary", { text: "The numbers as a table" }), table));
}

const VERDICTS = ["met", "not_met", "unclear"];
const VERDICT_TEXT = { met: "met", not_met: "not met", unclear: "unclear" };

function verdictSummary(results, criteria, threshold) {
  if (criteria.length === 0) return h("p", { class: "muted", text: "The job had no criteria." });
  const contradicting = results.filter((item) => contradiction(withDecision(item, threshold))).length;
  const counts = criteria.map(() => ({ met: 0, not_met: 0, unclear: 0 }));
  for (const item of results) item.criteria_verdicts?.forEach((v, c) => counts[c] && VERDICTS.includes(v.verdict) && counts[c][v.verdict]++);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id: "verdicts" },
      h("caption", { text: "The majority verdict of each paper, per criterion." }),
      h("thead", {}, h("tr", {}, ["Criterion", "Type", "Met", "Not met", "Unclear", "Share"].map((c, i) => h("th", { scope: "col", class: i >= 2 && i <= 4 ? "num" : undefined, text: c })))),
      h(
        "tbody",
        {},
        criteria.map((criterion, c) => {
          const total = VERDICTS.reduce((sum, v) => sum + counts[c][v], 0) || 1;
          const stack = h("div", { class: "stack", role: "img", "aria-label": VERDICTS.map((v) => `${VERDICT_TEXT[v]} ${counts[c][v]}`).join(", ") });
          for (const v of VERDICTS) {
            const part = h("span", { class: `s-${verdictEffect(criterion.type, v)}` });
            part.style.width = `${(100 * counts[c][v]) / total}%`;
            stack.append(part);
          }
          return h(
            "tr",
            {},
            h("th", { scope: "row", text: criterion.name || `Criterion ${c + 1}` }),
            h("td", { text: criterion.type === "exclude" ? "exclude (met excludes)" : criterion.type }),
            ...VERDICTS.map((v) => h("td", { class: `num verdict-${verdictEffect(criterion.type, v)}`, text: String(counts[c][v]) })),
            h("td", {}, stack),
          );
        }),
      ),
    ),
    h(
      "p",
      { id: "contradictions", class: contradicting ? "alert" : "hint" },
      contradicting
        ? `${contradicting} papers have a decision their own verdicts contradict (marked ⚠ in the table; "Show" → "Contradicted" lists them).`
        : "No paper's decision contradicts its verdicts.",
    ),
  );
}

// ---- exports and the methods report of one job

/** Fetches a route with the key (a plain link cannot send it) and saves the answer as a file. */
async function download(path, filename, signal) {
  const res = await fetch(path, { headers: { "X-API-Key": apiKey() ?? "" }, signal });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const url = URL.createObjectURL(await res.blob());
  const a = h("a", { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The methods paragraph as HTML to paste: plain text, the "{For you to fill in: …}" parts marked. */
function methodsParagraph(text) {
  const parts = text.split(/(\{For you to fill in:[^{}]*\})/).filter(Boolean);
  return h("p", { id: "methods-paragraph", class: "methods" }, parts.map((part) => (part.startsWith("{For you to fill in:") ? h("mark", { text: part }) : part)));
}

/** "Download CSV", "Download JSON Lines" and "Methods report": available once the job has finished. */
function jobLinks(kind, jobId, status, signal) {
  if (isActive(status)) return h("p", { class: "hint", id: "job-links", text: "Downloads and the methods report are available when the job has finished." });
  const base = `/v1/${kind}/jobs/${encodeURIComponent(jobId)}`;
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const report = h("section", { id: "report", "aria-labelledby": "report-title", hidden: true });
  const fail = (error) => {
    problem.hidden = false;
    problem.textContent = `Could not download: ${error.message}`;
  };
  const link = (text, path, filename) =>
    h("a", {
      href: path,
      download: filename,
      class: "button",
      text,
      onclick: (event) => {
        event.preventDefault();
        problem.hidden = true;
        download(path, filename, signal).catch(fail);
      },
    });
  const showReport = h("a", {
    href: `${base}/report`,
    class: "button",
    text: "Methods report",
    onclick: async (event) => {
      event.preventDefault();
      problem.hidden = true;
      try {
        const [res, fields] = await Promise.all([fetch(`${base}/report`, { headers: { "X-API-Key": apiKey() ?? "" }, signal }), api(`${base}/report?format=json`, { signal })]);
        const text = await res.text();
        if (!res.ok) throw new ApiError(res.status, JSON.parse(text || "null"));
        report.hidden = false;
        report.replaceChildren(
          h("h2", { id: "report-title", text: "Methods report" }),
          ...(fields.methods_paragraph ? [h("h3", { text: "Methods paragraph" }), h("p", { class: "hint", text: "Select and copy it into your manuscript; the marked parts are for you to fill in." }), methodsParagraph(fields.methods_paragraph)] : []),
          h("p", { class: "hint" }, "Markdown to paste into a methods section and its appendix. ", link("Download it (.md)", `${base}/report`, `${kind}-${jobId}-report.md`)),
          h("pre", { class: "report", text }),
        );
        report.scrollIntoView?.();
      } catch (error) {
        fail(error);
      }
    },
  });
  // A failed or cancelled job exports the items that finished, marked partial (docs/reporting.md).
  const partial = status === "completed" ? "" : "-partial";
  const downloads = [
    link(`Download CSV${partial ? " (partial)" : ""}`, `${base}/export?format=csv`, `${kind}-${jobId}${partial}.csv`),
    link(`Download CSV for scripts${partial ? " (partial)" : ""}`, `${base}/export?format=csv&csv=plain`, `${kind}-${jobId}${partial}-plain.csv`),
    link(`Download RIS${partial ? " (partial)" : ""}`, `${base}/export?format=ris`, `${kind}-${jobId}${partial}.ris`),
    link(`Download JSON Lines${partial ? " (partial)" : ""}`, `${base}/export?format=jsonl`, `${kind}-${jobId}${partial}.jsonl`),
  ];
  return h("div", { id: "job-links" }, h("nav", { class: "toolbar links", "aria-label": "Exports" }, ...downloads, showReport), problem, report);
}

// ---- the papers of a screening job: sort, filter, search, pages, detail

const PAPER_SORTS = {
  id: (a, b) => String(a.id).localeCompare(String(b.id), undefined, { numeric: true }),
  decision: (a, b) => String(a.decision).localeCompare(String(b.decision)),
  score: (a, b) => (a.final_score ?? -1) - (b.final_score ?? -1),
  cluster: (a, b) => a.cluster_id - b.cluster_id,
};

/** A result with its decision: the job's own, else the score against the threshold. */
const withDecision = (item, threshold) => ({
  ...item,
  decision: item.decision ?? (typeof item.final_score === "number" && item.final_score >= threshold ? "include" : "exclude"),
});

function paperBrowser(job, criteria, labels, titles) {
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
  const state = { sort: "index", direction: 1, filter: "all", query: "", page: 0, selected: null };
  const search = h("input", { id: "paper-search", type: "search", placeholder: "id, title, reasoning or cluster" });
  const filter = h(
    "select",
    { id: "paper-filter" },
    [["all", "All papers"], ["include", "Included"], ["exclude", "Excluded"], ["contradicted", "Contradicted"], ["error", "With an error"]].map(([value, text]) => h("option", { value, text })),
  );
  const tbody = h("tbody");
  const pageInfo = h("span", { id: "papers-page", role: "status" });
  const prev = h("button", { type: "button", class: "quiet", text: "Previous page" });
  const next = h("button", { type: "button", class: "quiet", text: "Next page" });
  const detail = h("section", { id: "paper-detail", "aria-labelledby": "paper-detail-title", class: "panel", hidden: true });
  const heads = [
    ["id", "Paper"],
    [null, "Title"],
    ["decision", "Decision"],
    ["score", "Score"],
    ["cluster", "Cluster"],
    ...criteria.map((c, i) => [null, c.name || `Criterion ${i + 1}`]),
    [null, "Reasoning"],
  ];
  const headCells = heads.map(([key, text]) =>
    key
      ? h("th", { scope: "col", "data-sort": key, class: key === "score" ? "num" : undefined }, h("button", { type: "button", class: "sort", text, onclick: () => sortBy(key) }))
      : h("th", { scope: "col", text }),
  );

  const visible = () => {
    const q = state.query.toLowerCase();
    const rows = papers.filter(
      (p) =>
        (state.filter === "all" ||
          (state.filter === "error" ? Boolean(p.error) : state.filter === "contradicted" ? Boolean(p.contradiction) : p.decision === state.filter)) &&
        (!q || `${p.id} ${p.title} ${p.reasoning ?? ""} ${labels.get(p.cluster_id) ?? ""}`.toLowerCase().includes(q)),
    );
    const compare = PAPER_SORTS[state.sort] ?? ((a, b) => a.index - b.index);
    return rows.sort((a, b) => state.direction * compare(a, b) || a.index - b.index);
  };
  const draw = () => {
    const rows = visible();
    const pages = Math.max(1, Math.ceil(rows.length / PAPERS_PER_PAGE));
    state.page = Math.min(state.page, pages - 1);
    tbody.replaceChildren(
      ...rows.slice(state.page * PAPERS_PER_PAGE, (state.page + 1) * PAPERS_PER_PAGE).map((item) =>
        h(
          "tr",
          { "data-paper-id": String(item.id), class: item.error ? "has-error" : undefined },
          h("th", { scope: "row", class: "mono" }, h("button", { type: "button", class: "link", "aria-label": `Details of paper ${item.id}`, text: String(item.id), onclick: () => open(item) })),
          h("td", { class: "title", text: item.title || dash }),
          h("td", {}, item.decision, item.contradiction ? h("span", { class: "flag", title: item.contradiction, "aria-label": `contradicted: ${item.contradiction}`, text: " ⚠" }) : null),
          h("td", { class: "num", text: item.final_score ?? dash }),
          h("td", { text: item.cluster_id >= 0 ? labels.get(item.cluster_id) ?? `#${item.cluster_id}` : dash }),
          ...criteria.map((criterion, c) => {
            const verdict = item.criteria_verdicts?.[c]?.verdict;
            return h("td", { class: `verdict-${verdictEffect(criterion.type, verdict)}`, text: effectText(criterion.type, verdict) });
          }),
          h("td", { class: "reason", text: item.error ? `Error: ${item.error}` : item.reasoning || dash }),
        ),
      ),
    );
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
    h("div", { class: "table-wrap" }, h("table", { id: "papers" }, h("thead", {}, h("tr", {}, headCells)), tbody)),
    h("div", { class: "toolbar pager" }, prev, pageInfo, next),
    detail,
  );
  browser.refreshTitles = () => (fillTitles(), draw());
  return browser;
}

/** One paper's detail: its votes, each criterion's verdict with the vote counts, reasoning, error. */
function paperDetail(item, labels) {
  const votes = item.votes ?? [];
  return [
    h("h3", { id: "paper-detail-title" }, "Paper ", h("span", { class: "mono", text: String(item.id) })),
    item.title ? h("p", { class: "paper-title", "data-detail": "title", text: item.title }) : null,
    item.contradiction ? h("p", { class: "alert", "data-detail": "contradiction", text: `Contradiction: ${item.contradiction}.` }) : null,
    h(
      "dl",
      { class: "facts" },
      h("dt", { text: "Decision" }),
      h("dd", { "data-detail": "decision", text: item.decision }),
      h("dt", { text: "Votes" }),
      h("dd", { "data-detail": "votes", text: votes.length ? `${votes.filter((v) => v === "include").length} of ${votes.length} include (${votes.join(", ")})` : dash }),
      h("dt", { text: "Score" }),
      h("dd", { text: item.final_score ?? dash }),
      h("dt", { text: "Cluster" }),
      h("dd", { text: item.cluster_id >= 0 ? labels.get(item.cluster_id) ?? `#${item.cluster_id}` : dash }),
      h("dt", { text: "Reasoning" }),
      h("dd", { "data-detail": "reasoning", text: item.reasoning || dash }),
      h("dt", { text: "Error" }),
      h("dd", { "data-detail": "error", text: item.error || "none" }),
    ),
    (item.criteria_verdicts ?? []).length === 0
      ? h("p", { class: "muted", text: "No verdicts per criterion." })
      : h(
          "table",
          { id: "paper-verdicts" },
          h("thead", {}, h("tr", {}, ["Criterion", "Type", "Majority verdict", "Met", "Not met", "Unclear"].map((c) => h("th", { scope: "col", text: c })))),
          h(
            "tbody",
            {},
            item.criteria_verdicts.map((v, c) =>
              h(
                "tr",
                {},
                h("th", { scope: "row", text: v.name || `Criterion ${c + 1}` }),
                h("td", { text: v.type }),
                h("td", { class: `verdict-${verdictEffect(v.type, v.verdict)}`, text: effectText(v.type, v.verdict) }),
                ...VERDICTS.map((k) => h("td", { class: "num", text: String(v[k] ?? dash) })),
              ),
            ),
          ),
        ),
  ];
}

function renderIndexerResults(container, job, titles = new Map()) {
  const records = job.partial_results ?? [];
  // Every field the records carry (the table scrolls sideways): the record's id, its title (from the
  // export, once loaded) and status first.
  const fields = [...new Set(records.flatMap((r) => Object.keys(r)))].filter((k) => k !== "ID" && k !== "indexing_status");
  const TITLE = Symbol("title");
  const keys = ["ID", ...(titles.size ? [TITLE] : []), "indexing_status", ...fields].slice(0, MAX_RECORD_COLUMNS);
  const headerOf = (k) => (k === TITLE ? "Title" : k);
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
  container.replaceChildren(
    h(
      "section",
      { "aria-labelledby": "records-title" },
      h("h2", { id: "records-title", text: `Records (${records.length}${isActive(job.status) ? " so far" : ""})` }),
      records.length === 0
        ? h("p", { class: "muted", text: "No records yet." })
        : [
            h("div", { class: "table-wrap" }, h("table", { id: "records" }, h("thead", {}, h("tr", {}, keys.map((k) => h("th", { scope: "col", text: headerOf(k) })))), tbody)),
            h("div", { class: "toolbar pager" }, prev, info, next),
          ],
    ),
    h(
      "section",
      { "aria-labelledby": "errors-title" },
      h("h2", { id: "errors-title", text: `Errors (${(job.errors ?? []).length})` }),
      (job.errors ?? []).length === 0 ? h("p", { class: "muted", text: "None." }) : h("ul", {}, job.errors.slice(0, 200).map((e) => h("li", { text: e }))),
    ),
  );
}

/** A long text that opens in full: its first line as the summary, all of it inside. */
function fullText(text) {
  if (text.length <= 80) return text;
  return h("details", { class: "full-text" }, h("summary", { text: `${text.slice(0, 79)}…` }), h("pre", { class: "report", text }));
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

// ---- configuration

async function configView(view, signal) {
  const [services, models, prompts] = await Promise.all([
    api("/v1/config/services", { signal }),
    api("/v1/config/models", { signal }),
    api("/v1/config/prompts", { signal }),
  ]);
  // A cell is text, or an element (a system prompt opens in full).
  const cell = (c, i) => (i === 0 ? h("th", { scope: "row", text: c }) : h("td", {}, c));
  const table = (id, heads, rows) =>
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { id },
        h("thead", {}, h("tr", {}, heads.map((c) => h("th", { scope: "col", text: c })))),
        h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map(cell)))),
      ),
    );
  const aliases = Object.entries(models.aliases ?? {}).sort(([a], [b]) => a.localeCompare(b));
  view.append(
    h("h1", { text: "Configuration" }),
    h("h2", { text: "Services" }),
    table(
      "services",
      ["Service", "Model", "Temperature", "Max output tokens", "Prompt template", "System prompt"],
      services.map((c) => [c.service_id, c.model, String(c.temperature), String(c.max_output_tokens), c.prompt_template_id || dash, c.system_prompt ? fullText(c.system_prompt) : dash]),
    ),
    h("h2", { text: "Model aliases" }),
    table(
      "aliases",
      ["Alias", "Model", "Source"],
      aliases.map(([alias, model]) => [alias, model, alias in (models.overrides ?? {}) ? "changed through the API" : "built in or environment"]),
    ),
    h("h2", { text: `Prompts (${prompts.length})` }),
    table(
      "prompts",
      ["Name", "Service", "Role", "Variables", "Description"],
      prompts.map((p) => [p.name, p.service, p.system_or_user, p.has_variables ? "yes" : "no", p.description]),
    ),
  );
}

// ---------------------------------------------------------------- start

function init() {
  $("#login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = $("#key").value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY_ITEM, key);
    $("#key").value = "";
    try {
      // One cheap call checks the key before the console opens.
      await api("/v1/config/prompts");
      render();
      $("#main").focus();
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) showLogin(`Could not reach the service: ${error.message}`);
    }
  });
  $("#forget").addEventListener("click", () => signOut());
  window.addEventListener("hashchange", () => {
    render();
    $("#main").focus();
  });
  render();
}

init();
