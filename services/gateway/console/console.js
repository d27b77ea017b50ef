// The console: plain JavaScript served by the gateway as it is (no build step, nothing loaded
// from elsewhere). Every call carries the service key, which lives only in this tab's
// sessionStorage. Live progress comes from the job event streams, read with fetch() because
// EventSource cannot send a header (docs/console.md).

const KEY_ITEM = "litrev.console.apiKey";
const LIST_LIMIT = 25;
const MAX_LIVE_STREAMS = 20;
const ROWS_PER_PAGE = 100;
const REFRESH_MS = 10_000;

const $ = (selector) => document.querySelector(selector);
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Builds an element: props are attributes (`class`, `aria-*`, …), `text`, or `on<event>` handlers. */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  el.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false).map((c) => (c instanceof Node ? c : String(c))));
  return el;
}
const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, props = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  el.append(...children.flat().filter((c) => c !== null && c !== undefined).map((c) => (c instanceof Node ? c : String(c))));
  return el;
}
function setProps(el, props) {
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") el.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

// ---------------------------------------------------------------- formatting

const dash = "—";
const fmtCost = (usd) => (typeof usd === "number" ? `$${usd.toFixed(usd > 0 && usd < 0.01 ? 4 : 2)}` : dash);
const fmtMs = (ms) => (typeof ms === "number" ? (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`) : dash);
const fmtDate = (iso) => (iso ? new Date(iso).toLocaleString() : dash);
const fmtPct = (p) => `${Math.round((p ?? 0) * 100)}%`;
const shortId = (id) => String(id).slice(0, 8);
const fmtTimings = (timings) =>
  Object.entries(timings ?? {})
    .map(([stage, ms]) => `${stage} ${fmtMs(ms)}`)
    .join(" · ") || dash;
const usageCost = (usage) => (usage && typeof usage.cost_usd === "number" ? usage.cost_usd : usage && typeof usage.estimated_cost_usd === "number" ? usage.estimated_cost_usd : null);
const isActive = (status) => status === "pending" || status === "running";

function statusBadge(status) {
  return h("span", { class: `status status-${status}`, "data-status": status, text: status });
}

function progressBar(progress, label) {
  const bar = h("progress", { max: "1", value: String(progress ?? 0), "aria-label": label });
  const out = h("output", { text: fmtPct(progress) });
  return h("div", { class: "progress" }, bar, out);
}
function setProgress(container, progress) {
  const bar = container.querySelector("progress");
  const out = container.querySelector("output");
  if (!bar || progress < Number(bar.value)) return; // progress never goes back
  bar.value = progress;
  out.textContent = fmtPct(progress);
}

function announce(text) {
  $("#announcer").textContent = text;
}

// ---------------------------------------------------------------- key and API

class ApiError extends Error {
  constructor(status, body) {
    const detail = body?.detail;
    const message = typeof detail === "string" ? detail : detail?.message ?? (Array.isArray(detail) ? detail.map((d) => d.msg).join("; ") : `HTTP ${status}`);
    super(message);
    this.status = status;
    this.body = body;
  }
}

const apiKey = () => sessionStorage.getItem(KEY_ITEM);

function signOut(reason) {
  sessionStorage.removeItem(KEY_ITEM);
  currentView?.abort();
  showLogin(reason);
}

async function api(path, { method = "GET", body, signal } = {}) {
  const headers = { "X-API-Key": apiKey() ?? "" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { detail: text };
  }
  if (res.status === 401) {
    signOut("The service key was refused.");
    throw new ApiError(401, parsed);
  }
  if (!res.ok) throw new ApiError(res.status, parsed);
  return parsed;
}

/** Splits complete server-sent events off the front of `buffer`; returns the rest. */
function parseEvents(buffer, onEvent) {
  let rest = buffer;
  for (;;) {
    const end = rest.search(/\r?\n\r?\n/);
    if (end < 0) return rest;
    const block = rest.slice(0, end);
    rest = rest.slice(end + (rest[end] === "\r" ? 4 : 2));
    const event = { event: "message", id: undefined, data: [] };
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue; // heartbeat
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (name === "event") event.event = value;
      else if (name === "id") event.id = value;
      else if (name === "data") event.data.push(value);
    }
    if (event.data.length) onEvent({ ...event, data: event.data.join("\n") });
  }
}

/**
 * Follows a job's event stream until its end event: `onState` with each state, `onEnd` with the
 * finished job's poll body. A dropped connection is resumed with Last-Event-ID (no repeats).
 */
async function followJob(kind, jobId, { onState, onEnd, onProblem, signal }) {
  let lastId;
  for (let attempt = 0; attempt < 30 && !signal.aborted; attempt++) {
    try {
      const headers = { "X-API-Key": apiKey() ?? "", Accept: "text/event-stream" };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const res = await fetch(`/v1/${kind}/jobs/${encodeURIComponent(jobId)}/events`, { headers, signal });
      if (res.status === 204) return;
      if (res.status === 401) return signOut("The service key was refused.");
      if (!res.ok) {
        const body = await res.json().catch(() => null);
        onProblem?.(new ApiError(res.status, body));
        if (res.status !== 503) return;
      } else {
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        let ended = false;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer = parseEvents(buffer + value, (event) => {
            if (event.id) lastId = event.id;
            const data = JSON.parse(event.data);
            if (event.event === "state") onState(data);
            else if (event.event === "end") {
              ended = true;
              onEnd(data);
            } else if (event.event === "error") {
              ended = true;
              onProblem?.(new ApiError(500, data));
            }
          });
        }
        if (ended) return;
      }
    } catch (error) {
      if (signal.aborted) return;
      onProblem?.(error);
    }
    await sleep(2_000, signal); // the gateway went away or is full: try again (any replica will do)
  }
}

// ---------------------------------------------------------------- views

let currentView;

function startView() {
  currentView?.abort();
  currentView = new AbortController();
  return currentView.signal;
}

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
  const section = job ? "jobs" : hash === "#/config" ? "config" : "jobs";
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
  screening: ["Job", "Status", "Progress", "Stage", "Model", "Papers", "Duration", "Estimated cost", "Stage timings · spent · error"],
  indexer: ["Job", "Status", "Progress", "Stage", "Model", "Records", "Duration", "Estimated cost", "Stage timings · spent · error"],
};

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
  const sections = ["screening", "indexer"].map((kind) => {
    const tbody = h("tbody");
    tables[kind] = { tbody, rows: new Map(), streams: new Map() };
    const title = kind === "screening" ? "Screening jobs" : "Extraction jobs";
    return h(
      "section",
      { "aria-labelledby": `${kind}-title` },
      h("h2", { id: `${kind}-title`, text: title }),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: `${kind}-jobs` },
          h("caption", { text: `The ${LIST_LIMIT} newest ${kind === "screening" ? "screening" : "extraction"} jobs; running ones update live.` }),
          h("thead", {}, h("tr", {}, LIST_COLUMNS[kind].map((c, i) => h("th", { scope: "col", class: i >= 5 && i <= 7 ? "num" : undefined, text: c })))),
          tbody,
        ),
      ),
    );
  });
  view.append(
    h("h1", { text: "Jobs" }),
    h(
      "section",
      { class: "panel", "aria-labelledby": "mock-title" },
      h("h2", { id: "mock-title", text: "Try it" }),
      form,
      h("p", { id: "mock-hint", class: "hint", text: "Mock mode: no provider key and no cost; the same input always gives the same output." }),
      status,
    ),
    ...sections,
  );

  const refresh = async () => {
    const [screening, indexer] = await Promise.all([
      api(`/v1/screening/jobs?limit=${LIST_LIMIT}`, { signal }),
      api(`/v1/indexer/jobs?limit=${LIST_LIMIT}`, { signal }),
    ]);
    fillTable("screening", tables.screening, screening, signal);
    fillTable("indexer", tables.indexer, indexer, signal);
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
  if (items.length === 0 && !table.tbody.querySelector(".empty")) {
    table.tbody.append(h("tr", { class: "empty" }, h("td", { colspan: "9", class: "muted", text: "No jobs yet." })));
  } else if (items.length > 0) table.tbody.querySelector(".empty")?.remove();
}

function listRow(kind, item) {
  const link = h("a", { href: `#/job/${kind}/${encodeURIComponent(item.job_id)}`, class: "mono", title: item.job_id, "aria-label": `Job ${item.job_id}`, text: shortId(item.job_id) });
  const tr = h(
    "tr",
    { "data-job-id": item.job_id },
    h("td", {}, link),
    h("td", { "data-cell": "status" }, statusBadge(item.status)),
    h("td", { "data-cell": "progress" }, progressBar(item.progress, `Progress of job ${shortId(item.job_id)}`)),
    h("td", { "data-cell": "stage", text: item.stage || dash }),
    h("td", { "data-cell": "model", text: item.model || dash }),
    h("td", { class: "num", text: String(item.papers_count ?? item.record_count ?? dash) }),
    h("td", { class: "num", "data-cell": "duration", text: fmtMs(item.duration_ms) }),
    h("td", { class: "num", "data-cell": "cost", text: fmtCost(item.estimated_cost_usd) }),
    h("td", { "data-cell": "details", class: "muted", text: dash }),
  );
  return { tr };
}

/** Applies a listing item, a state event or a poll body to a row. */
function updateRow(tr, data) {
  const cell = (name) => tr.querySelector(`[data-cell="${name}"]`);
  if (data.status) cell("status").replaceChildren(statusBadge(data.status));
  if (typeof data.progress === "number") setProgress(cell("progress"), data.progress);
  if (data.stage !== undefined) cell("stage").textContent = data.stage || dash;
  if (data.duration_ms !== undefined) cell("duration").textContent = fmtMs(data.duration_ms);
  if (data.estimated_cost_usd !== undefined) cell("cost").textContent = fmtCost(data.estimated_cost_usd);
  if (data.fromListing) return;
  const details = [fmtTimings(data.stage_timings)];
  // A screening job's poll body has no usage: the last state event's figure stays.
  const spent = usageCost(data.usage) ?? (tr.dataset.spent ? Number(tr.dataset.spent) : null);
  if (spent !== null) {
    tr.dataset.spent = String(spent);
    details.push(`spent ${fmtCost(spent)}`);
  }
  if (data.error) details.push(`Error: ${data.error}${data.error_category ? ` (${data.error_category})` : ""}`);
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
  view.append(
    h("p", {}, h("a", { href: "#/jobs", text: "← All jobs" })),
    h("h1", {}, `${title} `, h("span", { class: "mono", text: jobId })),
    h("section", { class: "panel", "aria-label": "Progress" }, progress, facts, errorBox),
    h("section", { "aria-labelledby": "timings-title" }, h("h2", { id: "timings-title", text: "Stage timings" }), timings),
    results,
  );
  const show = (data) => {
    setProgress(progress, data.status === "completed" ? 1 : data.progress);
    const spent = usageCost(data.usage);
    const rows = [
      ["Status", statusBadge(data.status)],
      ["Stage", data.stage || (kind === "indexer" ? "extraction" : dash)],
      ["Model", data.model_version || dash],
      ["Created", fmtDate(data.created_at)],
      ["Completed", fmtDate(data.completed_at)],
      ["Duration", fmtMs(data.duration_ms)],
      ["Estimated cost", fmtCost(data.estimated_cost_usd)],
    ];
    if (spent !== null) rows.push([isActive(data.status) ? "Cost so far" : "Cost", fmtCost(spent)]);
    if (data.usage && typeof data.usage.input_tokens === "number") rows.push(["Tokens in / out", `${data.usage.input_tokens} / ${data.usage.output_tokens ?? 0}`]);
    if (typeof data.items_total === "number") rows.push(["Records done", `${data.items_done ?? 0} of ${data.items_total}`]);
    facts.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", { "data-fact": k.toLowerCase() }, v)]));
    timings.replaceChildren(stageTimingsTable(data.stage_timings, data.status));
    errorBox.replaceChildren(
      ...(data.error
        ? [h("p", { class: "alert", role: "alert" }, `Error (${data.error_category ?? "unknown"}${data.error_retryable ? ", retryable" : ""}): ${data.error}`)]
        : []),
    );
  };
  const finish = (data) => {
    show(data);
    if (kind === "screening") renderScreeningResults(results, data);
    else renderIndexerResults(results, data);
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

function renderScreeningResults(container, job) {
  if (!Array.isArray(job.results)) {
    container.replaceChildren(h("p", { class: "muted", text: isActive(job.status) ? "Results appear here when the job completes." : "This job has no results." }));
    return;
  }
  const clusters = [...(job.clusters ?? [])].sort((a, b) => b.count - a.count);
  const labels = new Map(clusters.map((c) => [c.cluster_id, c.label]));
  const criteria = job.results[0]?.criteria_verdicts?.map((v) => ({ name: v.name, type: v.type })) ?? [];
  container.replaceChildren(
    h("section", { "aria-labelledby": "clusters-title" }, h("h2", { id: "clusters-title", text: "Reason clusters" }), clusterChart(clusters)),
    h("section", { "aria-labelledby": "verdicts-title" }, h("h2", { id: "verdicts-title", text: "Verdicts per criterion" }), verdictSummary(job.results, criteria)),
    h("section", { "aria-labelledby": "papers-title" }, h("h2", { id: "papers-title", text: `Papers (${job.results.length})` }), papersTable(job, criteria, labels)),
  );
  // validation.js adds its panel on this event.
  container.dispatchEvent(new CustomEvent("screening-results", { bubbles: true, detail: job }));
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

function verdictSummary(results, criteria) {
  if (criteria.length === 0) return h("p", { class: "muted", text: "The job had no criteria." });
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
            const part = h("span", { class: `s-${v}` });
            part.style.width = `${(100 * counts[c][v]) / total}%`;
            stack.append(part);
          }
          return h(
            "tr",
            {},
            h("th", { scope: "row", text: criterion.name || `Criterion ${c + 1}` }),
            h("td", { text: criterion.type }),
            ...VERDICTS.map((v) => h("td", { class: "num", text: String(counts[c][v]) })),
            h("td", {}, stack),
          );
        }),
      ),
    ),
  );
}

function papersTable(job, criteria, labels) {
  const threshold = typeof job.config?.threshold === "number" ? job.config.threshold : 1;
  const tbody = h("tbody");
  let shown = 0;
  const more = h("button", { type: "button", class: "quiet", text: `Show ${ROWS_PER_PAGE} more` });
  const addRows = () => {
    for (const item of job.results.slice(shown, shown + ROWS_PER_PAGE)) {
      const decision = item.decision ?? (typeof item.final_score === "number" && item.final_score >= threshold ? "include" : "exclude");
      tbody.append(
        h(
          "tr",
          {},
          h("th", { scope: "row", class: "mono", text: String(item.id) }),
          h("td", { text: decision }),
          h("td", { class: "num", text: item.final_score ?? dash }),
          h("td", { text: item.cluster_id >= 0 ? labels.get(item.cluster_id) ?? `#${item.cluster_id}` : dash }),
          ...criteria.map((_, c) => {
            const verdict = item.criteria_verdicts?.[c]?.verdict;
            return h("td", { class: `verdict-${verdict}`, text: VERDICT_TEXT[verdict] ?? dash });
          }),
          h("td", { class: "reason", text: item.reasoning || dash }),
        ),
      );
    }
    shown = Math.min(job.results.length, shown + ROWS_PER_PAGE);
    more.hidden = shown >= job.results.length;
  };
  more.addEventListener("click", addRows);
  addRows();
  const heads = ["Paper", "Decision", "Score", "Cluster", ...criteria.map((c, i) => c.name || `Criterion ${i + 1}`), "Reasoning"];
  return h(
    "div",
    {},
    h(
      "div",
      { class: "table-wrap" },
      h("table", { id: "papers" }, h("thead", {}, h("tr", {}, heads.map((c) => h("th", { scope: "col", class: c === "Score" ? "num" : undefined, text: c })))), tbody),
    ),
    more,
  );
}

function renderIndexerResults(container, job) {
  const records = job.partial_results ?? [];
  const keys = [...new Set(records.slice(0, 50).flatMap((r) => Object.keys(r)))].slice(0, 10);
  const tbody = h("tbody");
  for (const record of records.slice(0, ROWS_PER_PAGE)) {
    tbody.append(h("tr", {}, keys.map((k) => h("td", { text: cellText(record[k]) }))));
  }
  container.replaceChildren(
    h(
      "section",
      { "aria-labelledby": "records-title" },
      h("h2", { id: "records-title", text: `Records (${records.length}${isActive(job.status) ? " so far" : ""})` }),
      records.length === 0
        ? h("p", { class: "muted", text: "No records yet." })
        : h("div", { class: "table-wrap" }, h("table", { id: "records" }, h("thead", {}, h("tr", {}, keys.map((k) => h("th", { scope: "col", text: k })))), tbody)),
    ),
    h(
      "section",
      { "aria-labelledby": "errors-title" },
      h("h2", { id: "errors-title", text: `Errors (${(job.errors ?? []).length})` }),
      (job.errors ?? []).length === 0 ? h("p", { class: "muted", text: "None." }) : h("ul", {}, job.errors.slice(0, 200).map((e) => h("li", { text: e }))),
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

// ---- configuration

async function configView(view, signal) {
  const [services, models, prompts] = await Promise.all([
    api("/v1/config/services", { signal }),
    api("/v1/config/models", { signal }),
    api("/v1/config/prompts", { signal }),
  ]);
  const table = (id, heads, rows) =>
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { id },
        h("thead", {}, h("tr", {}, heads.map((c) => h("th", { scope: "col", text: c })))),
        h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c, i) => (i === 0 ? h("th", { scope: "row", text: c }) : h("td", { text: c })))))),
      ),
    );
  const aliases = Object.entries(models.aliases ?? {}).sort(([a], [b]) => a.localeCompare(b));
  view.append(
    h("h1", { text: "Configuration" }),
    h("h2", { text: "Services" }),
    table(
      "services",
      ["Service", "Model", "Temperature", "Max output tokens", "Prompt template", "System prompt"],
      services.map((c) => [c.service_id, c.model, String(c.temperature), String(c.max_output_tokens), c.prompt_template_id || dash, c.system_prompt ? `${c.system_prompt.slice(0, 80)}${c.system_prompt.length > 80 ? "…" : ""}` : dash]),
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
