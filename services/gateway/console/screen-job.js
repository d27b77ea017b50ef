// One job's page: its progress followed live, its facts and stage timings, the downloads and the
// methods report once finished, and its results (a screening job's clusters, verdicts, papers and
// validation panels; an extraction job's records).

import { api, exportItems, followJob } from "./api.js";
import { announce, col, dash, fmtCost, fmtDate, fmtMs, h, isActive, progressBar, setProgress, shortId, statusBadge, table, usageCost } from "./dom.js";
import { cancelButton } from "./component-cancel-button.js";
import { clusterChart } from "./component-cluster-chart.js";
import { jobLinks } from "./component-job-links.js";
import { paperBrowser } from "./component-paper-browser.js";
import { renderIndexerResults } from "./component-records.js";
import { samplePanel } from "./component-validation-sample.js";
import { validationPanel } from "./component-validation-labels.js";
import { verdictSummary } from "./component-verdicts.js";

export async function jobView(view, kind, jobId, signal) {
  const job = await api(`/v1/${kind}/jobs/${encodeURIComponent(jobId)}`, { signal });
  const base = `/v1/${kind}/jobs/${encodeURIComponent(jobId)}`;
  const facts = h("dl", { class: "facts" });
  const progress = progressBar(job.progress, `Progress of job ${shortId(jobId)}`);
  const timings = h("div");
  const errorBox = h("div");
  const results = h("div", { id: "results" });
  const links = h("div");
  const actionNote = h("span", { class: "hint", role: "status" });
  const cancel = cancelButton(base, signal, actionNote, (data) => finish(data), "cancel-job");
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
  view.append(
    h("p", {}, h("a", { href: "#/jobs", text: "← All jobs" })),
    h("h1", {}, `${kind === "screening" ? "Screening job" : "Extraction job"} `, h("span", { class: "mono", text: jobId })),
    h("div", { class: "toolbar", id: "job-actions" }, cancel, remove, actionNote),
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
    const why = data.error && `Error (${data.error_reason ?? data.error_category ?? "unknown"}${data.error_retryable ? ", retryable" : ""}): ${data.error}`;
    errorBox.replaceChildren(...(why ? [h("p", { class: "alert", role: "alert" }, why)] : []));
  };
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
  return table({ id: "stage-timings" }, ["Stage", col("Time", true)], entries.map(([stage, ms]) => h("tr", {}, h("th", { scope: "row", text: stage }), h("td", { class: "num", text: fmtMs(ms) }))));
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
const loadTitles = async (kind, jobId, signal) => titlesOf(await exportItems(kind, jobId, signal));

const criteriaOf = (item) => item?.criteria_verdicts?.map((v) => ({ name: v.name, type: v.type })) ?? [];

function renderScreeningResults(container, job, titles) {
  if (!Array.isArray(job.results)) {
    if (job.status === "failed" || job.status === "cancelled") return renderPartialScreening(container, job);
    container.replaceChildren(h("p", { class: "muted", text: isActive(job.status) ? "Results appear here when the job completes." : "This job has no results." }));
    return;
  }
  const clusters = [...(job.clusters ?? [])].sort((a, b) => b.count - a.count);
  const labels = new Map(clusters.map((c) => [c.cluster_id, c.label]));
  const criteria = criteriaOf(job.results[0]);
  const threshold = typeof job.config?.threshold === "number" ? job.config.threshold : 1;
  const browser = paperBrowser(job, criteria, labels, titles);
  container.replaceChildren(
    h("section", { "aria-labelledby": "clusters-title" }, h("h2", { id: "clusters-title", text: "Reason clusters" }), clusterChart(clusters)),
    h("section", { "aria-labelledby": "verdicts-title" }, h("h2", { id: "verdicts-title", text: "Verdicts per criterion" }), verdictSummary(job.results, criteria, threshold)),
    h("section", { "aria-labelledby": "papers-title" }, h("h2", { id: "papers-title", text: `Papers (${job.results.length})` }), browser),
  );
  container.refreshTitles = browser.refreshTitles;
  // A completed job can be validated; the panels name papers by their titles once they are known.
  if (job.status === "completed") container.append(samplePanel(job, titles), validationPanel(job, titles));
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
      const browser = paperBrowser({ ...job, results: items }, criteriaOf(items[0]), new Map(), titlesOf(items));
      container.replaceChildren(
        h("p", { class: "alert", id: "partial-results", text: `${why}: partial results, ${items.length} ${items.length === 1 ? "paper" : "papers"} of ${job.config?.papers_count ?? "its"} finished. The downloads above hold the same papers, marked partial.` }),
        h("section", { "aria-labelledby": "papers-title" }, h("h2", { id: "papers-title", text: `Papers (${items.length}, partial)` }), browser),
      );
    })
    .catch((error) => container.replaceChildren(h("p", { class: "alert", role: "alert", text: `${why}; its partial results could not be loaded: ${error.message}` })));
}
