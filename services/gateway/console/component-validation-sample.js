// Recall certification on a sample the service draws (docs/evaluation.md): draw, download for
// blind screening, label in batches, and the certificate with its looks.

import { api, download } from "./api.js";
import { dash, fill, h, named, pct, s, table } from "./dom.js";
import { parseLabelsCsv } from "./component-validation-labels.js";

const LISTED_IDS = 50;

/** The panel of a completed screening job; `titles` (id → title) name the papers once known. */
export function samplePanel(job, titles) {
  const base = `/v1/screening/jobs/${encodeURIComponent(job.job_id)}/validation-samples`;
  const target = h("input", { id: "sample-target", type: "number", min: "0.5", max: "0.999", step: "0.01", value: "0.95" });
  const confidence = h("input", { id: "sample-confidence", type: "number", min: "0.5", max: "0.999", step: "0.01", value: "0.95" });
  const design = h("select", { id: "sample-design" }, ["simple", "stratified", "below_threshold"].map((d) => h("option", { value: d, text: d.replace("_", " ") })));
  // One look after the last label needs the fewest labels, so the suggested (default) sample is its plan.
  const plan = h("select", { id: "sample-plan-choice" }, h("option", { value: "once", text: "once, after the last label (fewest labels)" }), h("option", { value: "anytime", text: "as labels arrive (any look holds)" }));
  const size = h("input", { id: "sample-size", type: "number", min: "1", max: "5000", step: "1", placeholder: "suggested" });
  const resume = h("input", { id: "sample-id", type: "text", placeholder: "sample id", size: "38" });
  const batch = h("textarea", { id: "sample-labels", rows: "5", spellcheck: "false", placeholder: "id,included\np1,1\np2,0" });
  const problem = h("div");
  const output = h("div", { id: "sample-output", "aria-live": "polite" });
  const showError = (message) => problem.replaceChildren(h("p", { class: "alert", role: "alert", text: message }));
  let current = null;
  const show = (sample) => {
    current = sample;
    resume.value = sample.sample_id;
    fill(output, renderSample(sample, job.results?.length ?? null, titles));
  };
  const run = async (action) => {
    problem.replaceChildren();
    try {
      show(await action());
    } catch (error) {
      showError(error.message);
    }
  };
  const submit = (props, act, ...children) => h("form", { ...props, onsubmit: (event) => (event.preventDefault(), act()) }, ...children);
  const withSample = (act) => () => (current ? act(current) : showError("Draw or open a sample first"));
  const save = (path, filename) => download(path, filename).catch((error) => showError(error.message));
  const draw = submit(
    { id: "sample-form" },
    () => {
      const body = { target_recall: Number(target.value), confidence: Number(confidence.value), design: design.value, plan: plan.value };
      if (size.value) body.size = Number(size.value);
      return run(() => api(base, { method: "POST", body }));
    },
    h("div", { class: "toolbar" }, h("label", {}, "Target recall", target), h("label", {}, "Confidence (one-sided)", confidence), h("label", {}, "Design", design), h("label", {}, "Look", plan), h("label", {}, "Papers", size), h("button", { type: "submit", text: "Draw a sample" })),
  );
  const load = submit({}, () => run(() => api(`${base}/${encodeURIComponent(resume.value.trim())}`)), h("div", { class: "toolbar" }, h("label", {}, "Or open a drawn sample", resume), h("button", { type: "submit", text: "Open" })));
  const addLabels = withSample((sample) => {
    let labels;
    try {
      labels = parseLabelsCsv(batch.value);
    } catch (error) {
      return showError(error.message);
    }
    return run(() => api(`${base}/${encodeURIComponent(sample.sample_id)}/labels`, { method: "POST", body: { labels } }));
  });
  const label = submit(
    { id: "sample-label-form" },
    addLabels,
    h("label", { for: "sample-labels", text: "A batch of labels for papers of the sample, in its order, as CSV lines id,included" }),
    batch,
    h(
      "div",
      { class: "toolbar" },
      h("button", { type: "submit", text: "Add labels" }),
      ["csv", "ris"].map((format) =>
        h("button", {
          type: "button",
          text: `Download the sample (${format.toUpperCase()})`,
          onclick: withSample((c) => save(`${base}/${encodeURIComponent(c.sample_id)}/download?format=${format}`, `validation-sample-${c.sample_id}.${format}`)),
        }),
      ),
      // The whole job's export, each paper marked sampled or not and with the label given (docs/reporting.md).
      h("button", {
        type: "button",
        text: "Export the job with this sample marked (CSV)",
        onclick: withSample((c) => save(`/v1/screening/jobs/${encodeURIComponent(job.job_id)}/export?format=csv&sample=${encodeURIComponent(c.sample_id)}`, `screening-${job.job_id}-sample-${c.sample_id}.csv`)),
      }),
    ),
  );
  return h(
    "section",
    { "aria-labelledby": "sample-title", class: "panel", id: "validation-sample" },
    h("h2", { id: "sample-title", text: "Certify recall on a sample the service draws" }),
    h("p", { class: "hint", text: "Draw, download, screen blind in the given order, add the labels in batches. Leave Papers empty for the suggested size: the fewest labels the plan expects to certify the target on this job, never most of the job. Looking once, answers before the last label are progress only; looking as labels arrive, every answer holds." }),
    draw,
    load,
    label,
    problem,
    output,
  );
}

/** "about N papers", or why there is no such N. */
const needed = (n) => (typeof n === "number" ? `about ${n}` : "no sample smaller than the job");

/**
 * The plan in words: the labels each way of looking is expected to need to certify the target on
 * this job (from its votes, then its labels), and what this sample is when that is most of the job.
 */
function planText(sample, papers) {
  const c = sample.certificate;
  const byPlan = sample.labels_needed_by_plan;
  const ways = byPlan
    ? `${needed(byPlan.once)} looking once after the last label, ${needed(byPlan.anytime)} looking as labels arrive`
    : `${needed(sample.labels_needed)} (${sample.plan})`;
  const parts = [`Labels needed to certify ${pct(sample.target_recall, 0)} recall${papers ? ` on this job's ${papers} papers` : ""}: ${ways}.`];
  const planned = sample.labels_needed;
  if (papers && (planned === null || planned > papers / 2)) parts.push(`That is ${planned === null ? "more than any sample" : "most of the job"}: this sample of ${sample.paper_ids.length} shows what can be shown instead.`);
  else if (!sample.feasible) parts.push("A sample that certifies it would leave less than 5% of the papers unread.");
  if (sample.labelled > 0 && typeof c.labels_still_needed === "number") parts.push(`Still needed: ${c.labels_still_needed}.`);
  return parts.join(" ");
}

function renderSample(sample, papers, titles) {
  const c = sample.certificate;
  const parts = [
    h("p", { id: "sample-summary", text: `Sample ${sample.sample_id}: ${sample.paper_ids.length} papers (${sample.design}, seed ${sample.seed}), ${sample.labelled} labelled. ${c.statement}` }),
    // One conclusion: a certificate, once there is one, ends the story (the plan made before the
    // labels no longer matters); until then, the plan and why nothing is certified yet.
    c.recommended
      ? null
      : h("p", { id: "sample-plan", class: sample.feasible ? "" : "alert", text: planText(sample, papers) }),
    h("p", { id: "sample-certificate", class: c.recommended ? "" : "alert", text: c.recommended ? `Certified: threshold ${c.recommended.votes}, recall at least ${pct(c.recommended.recall_lower)}; net work saved ${pct(c.recommended.net_work_saved)}.` : c.reason ?? "Not certified yet." }),
  ];
  const cols = ["Votes ≥", "Recall ≥ (certified)", "Estimate", "Papers below", "Missed ≤", "Net work saved"];
  const rows = c.thresholds.map((r) =>
    h(
      "tr",
      { class: c.recommended?.votes === r.votes ? "chosen" : "" },
      h("th", { scope: "row", text: String(r.votes) }),
      [pct(r.recall_lower), pct(r.recall_estimate), r.papers_below, r.missed_upper, pct(r.net_work_saved)].map((v) => h("td", { class: "num", text: String(v) })),
    ),
  );
  parts.push(table({ id: "sample-table" }, cols, rows));
  if (sample.looks.length) parts.push(looksPlot(sample));
  if (sample.agreement) {
    const d = sample.agreement.discordant;
    parts.push(h("p", { id: "sample-agreement", text: `Cohen's kappa ${sample.agreement.kappa === null ? dash : sample.agreement.kappa.toFixed(3)}; discordant (${d.length}): ${d.slice(0, LISTED_IDS).map((p) => `${named(titles, p.id)} (job ${p.job_decision}, label ${p.label})`).join(", ") || "none"}` }));
  }
  if (sample.warnings.length) parts.push(h("ul", { class: "alert" }, sample.warnings.map((w) => h("li", { text: w }))));
  return parts;
}

/** The certified bound at each recorded look against the labels so far, with the target line. */
function looksPlot(sample) {
  const W = 520;
  const H = 220;
  const pad = { l: 52, r: 16, t: 16, b: 40 };
  const maxN = Math.max(1, sample.paper_ids.length);
  const x = (n) => pad.l + (n / maxN) * (W - pad.l - pad.r);
  const y = (v) => H - pad.b - v * (H - pad.t - pad.b);
  const looks = sample.looks.filter((l) => l.recall_lower !== null);
  return s(
    "svg",
    { id: "sample-plot", viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": "Certified recall lower bound at each look against the labels so far" },
    [0, 0.5, 1].map((t) => [s("line", { x1: x(0), x2: x(maxN), y1: y(t), y2: y(t), stroke: "#d9dcdf" }), s("text", { x: pad.l - 6, y: y(t) + 4, "text-anchor": "end", "font-size": "11", text: pct(t, 0) })]),
    s("text", { x: (x(0) + x(maxN)) / 2, y: H - 8, "text-anchor": "middle", "font-size": "12", text: "Papers labelled" }),
    s("line", { x1: x(0), x2: x(maxN), y1: y(sample.target_recall), y2: y(sample.target_recall), stroke: "#b3261e", "stroke-dasharray": "5 4" }),
    looks.map((l) => s("circle", { class: "look", cx: x(l.labelled), cy: y(l.recall_lower), r: 4, fill: l.recommended_votes ? "#f2a900" : "#1f5fa8" }, s("title", { text: `${l.labelled} labelled: recall ≥ ${pct(l.recall_lower)}${l.recommended_votes ? ` at threshold ${l.recommended_votes}` : ""}` }))),
  );
}
