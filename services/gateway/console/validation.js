// Validation of a completed screening job (docs/evaluation.md): the job page announces its results
// with a `screening-results` event, and this module adds two panels. The first draws a sample
// through the service, downloads it for blind screening, takes the labels in batches and shows the
// certificate and its looks; the second takes a sample the team drew itself as an `id,included`
// CSV (pasted or uploaded), posts it to the validation route and shows the table, the
// recommendation and recall against workload with its bounds. Kept apart from console.js so the
// job page and these panels change independently.

const KEY_ITEM = "litrev.console.apiKey";
const MAX_CSV_BYTES = 5 * 1024 * 1024;
const MAX_LABELS = 50_000;
const LISTED_IDS = 50;
const SVG_NS = "http://www.w3.org/2000/svg";
const TRUE_WORDS = new Set(["1", "true", "yes", "y", "include", "included"]);
const FALSE_WORDS = new Set(["0", "false", "no", "n", "exclude", "excluded"]);

function el(ns, tag, props = {}, ...children) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false).map((c) => (c instanceof Node ? c : String(c))));
  return node;
}
const h = (tag, props, ...children) => el(null, tag, props, ...children);
const s = (tag, props, ...children) => el(SVG_NS, tag, props, ...children);

/** The job's titles by paper id (from its export; empty until they are known): lists name papers by title. */
let titles = new Map();
const named = (id) => {
  const title = titles.get(String(id));
  return title ? `${id} “${title.length > 80 ? `${title.slice(0, 79)}…` : title}”` : String(id);
};

const pct = (v, digits = 1) => (typeof v === "number" ? `${(v * 100).toFixed(digits)}%` : "—");
const ci = (interval) => (interval ? `${pct(interval.low)}–${pct(interval.high)}` : "—");

/**
 * `id,included` lines to labels; a header line is optional. Ids stay strings (the route matches
 * numeric job ids by their text). Throws with the line number of the first unreadable line.
 */
export function parseLabelsCsv(text) {
  const labels = [];
  const lines = text.split(/\r?\n/);
  const first = lines.findIndex((line) => line.trim());
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    const cut = line.lastIndexOf(",");
    if (cut < 0) throw new Error(`Line ${i + 1}: expected "id,included"`);
    const id = unquote(line.slice(0, cut).trim());
    const value = unquote(line.slice(cut + 1).trim()).toLowerCase();
    // A header: the first line, naming its id column "id" or holding no decision.
    if (i === first && (id.toLowerCase() === "id" || (!TRUE_WORDS.has(value) && !FALSE_WORDS.has(value)))) continue;
    if (!id) throw new Error(`Line ${i + 1}: the id is empty`);
    if (!TRUE_WORDS.has(value) && !FALSE_WORDS.has(value)) throw new Error(`Line ${i + 1}: "included" must be 1/0, true/false, yes/no or include/exclude`);
    labels.push({ id, included: TRUE_WORDS.has(value) });
    if (labels.length > MAX_LABELS) throw new Error(`At most ${MAX_LABELS} labels`);
  }
  if (labels.length === 0) throw new Error("No labels: paste or upload lines of id,included");
  return labels;
}

function unquote(cell) {
  return cell.length >= 2 && cell.startsWith('"') && cell.endsWith('"') ? cell.slice(1, -1).replace(/""/g, '"') : cell;
}

async function postValidation(jobId, body) {
  return call("POST", `/v1/screening/jobs/${encodeURIComponent(jobId)}/validation`, body);
}

async function call(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { "X-API-Key": sessionStorage.getItem(KEY_ITEM) ?? "", ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { detail: text };
  }
  if (!res.ok) {
    const detail = parsed?.detail;
    throw new Error(Array.isArray(detail) ? detail.map((d) => d.msg).join("; ") : typeof detail === "string" ? detail : `HTTP ${res.status}`);
  }
  return parsed;
}

/**
 * Fetches a route with the key (a plain link cannot send it) and saves the answer as a file: the
 * sample for blind screening as the service writes it (`…/download`), or the job's export with the
 * sample marked.
 */
async function download(path, filename) {
  const res = await fetch(path, { headers: { "X-API-Key": sessionStorage.getItem(KEY_ITEM) ?? "" } });
  if (!res.ok) throw new Error(`Could not download ${filename}: HTTP ${res.status}`);
  const url = URL.createObjectURL(await res.blob());
  const link = h("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function samplePanel(job) {
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
    // replaceChildren writes a null as the text "null": parts left out (the plan once certified) are dropped first.
    output.replaceChildren(...renderSample(sample, job.results?.length ?? null).filter(Boolean));
  };
  const run = async (action) => {
    problem.replaceChildren();
    try {
      show(await action());
    } catch (error) {
      showError(error.message);
    }
  };
  const draw = h("form", {
    id: "sample-form",
    onsubmit: (event) => {
      event.preventDefault();
      const body = { target_recall: Number(target.value), confidence: Number(confidence.value), design: design.value, plan: plan.value };
      if (size.value) body.size = Number(size.value);
      return run(() => call("POST", base, body));
    },
  }, h("div", { class: "toolbar" }, h("label", {}, "Target recall", target), h("label", {}, "Confidence (one-sided)", confidence), h("label", {}, "Design", design), h("label", {}, "Look", plan), h("label", {}, "Papers", size), h("button", { type: "submit", text: "Draw a sample" })));
  const load = h("form", {
    onsubmit: (event) => {
      event.preventDefault();
      return run(() => call("GET", `${base}/${encodeURIComponent(resume.value.trim())}`));
    },
  }, h("div", { class: "toolbar" }, h("label", {}, "Or open a drawn sample", resume), h("button", { type: "submit", text: "Open" })));
  const label = h("form", {
    id: "sample-label-form",
    onsubmit: (event) => {
      event.preventDefault();
      if (!current) return showError("Draw or open a sample first");
      let labels;
      try {
        labels = parseLabelsCsv(batch.value);
      } catch (error) {
        return showError(error.message);
      }
      return run(() => call("POST", `${base}/${encodeURIComponent(current.sample_id)}/labels`, { labels }));
    },
  }, h("label", { for: "sample-labels", text: "A batch of labels for papers of the sample, in its order, as CSV lines id,included" }), batch, h("div", { class: "toolbar" }, h("button", { type: "submit", text: "Add labels" }), ["csv", "ris"].map((format) => h("button", {
    type: "button",
    text: `Download the sample (${format.toUpperCase()})`,
    onclick: () => {
      if (!current) return showError("Draw or open a sample first");
      const id = encodeURIComponent(current.sample_id);
      download(`${base}/${id}/download?format=${format}`, `validation-sample-${current.sample_id}.${format}`).catch((error) => showError(error.message));
    },
  })), h("button", {
    type: "button",
    text: "Export the job with this sample marked (CSV)",
    onclick: () => {
      if (!current) return showError("Draw or open a sample first");
      // The whole job's export, each paper marked sampled or not and with the label given (docs/reporting.md).
      const path = `/v1/screening/jobs/${encodeURIComponent(job.job_id)}/export?format=csv&sample=${encodeURIComponent(current.sample_id)}`;
      download(path, `screening-${job.job_id}-sample-${current.sample_id}.csv`).catch((error) => showError(error.message));
    },
  })));
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

function renderSample(sample, papers) {
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
  parts.push(h("div", { class: "table-wrap" }, h("table", { id: "sample-table" },
    h("thead", {}, h("tr", {}, cols.map((col) => h("th", { scope: "col", text: col })))),
    h("tbody", {}, c.thresholds.map((r) => h("tr", { class: c.recommended?.votes === r.votes ? "chosen" : "" },
      h("th", { scope: "row", text: String(r.votes) }),
      [pct(r.recall_lower), pct(r.recall_estimate), r.papers_below, r.missed_upper, pct(r.net_work_saved)].map((v) => h("td", { class: "num", text: String(v) })),
    ))),
  )));
  if (sample.looks.length) parts.push(looksPlot(sample));
  if (sample.agreement) {
    const d = sample.agreement.discordant;
    parts.push(h("p", { id: "sample-agreement", text: `Cohen's kappa ${sample.agreement.kappa === null ? "—" : sample.agreement.kappa.toFixed(3)}; discordant (${d.length}): ${d.slice(0, LISTED_IDS).map((p) => `${named(p.id)} (job ${p.job_decision}, label ${p.label})`).join(", ") || "none"}` }));
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

function validationPanel(job) {
  const csv = h("textarea", { id: "validation-csv", rows: "6", spellcheck: "false", placeholder: "id,included\np1,1\np2,0" });
  const file = h("input", {
    id: "validation-file",
    type: "file",
    accept: ".csv,text/csv,text/plain",
    onchange: async () => {
      const chosen = file.files?.[0];
      if (!chosen) return;
      if (chosen.size > MAX_CSV_BYTES) return showError(`The file is over ${MAX_CSV_BYTES / 1024 / 1024} MB`);
      csv.value = await chosen.text();
    },
  });
  const target = h("input", { id: "validation-target", type: "number", min: "0.5", max: "0.999", step: "0.01", value: "0.95" });
  const confidence = h("input", { id: "validation-confidence", type: "number", min: "0.5", max: "0.999", step: "0.01", value: "0.95" });
  const problem = h("div");
  const output = h("div", { id: "validation-output", "aria-live": "polite" });
  const button = h("button", { type: "submit", text: "Validate" });
  const showError = (message) => problem.replaceChildren(h("p", { class: "alert", role: "alert", text: message }));

  const form = h(
    "form",
    {
      id: "validation-form",
      onsubmit: async (event) => {
        event.preventDefault();
        problem.replaceChildren();
        let labels;
        try {
          labels = parseLabelsCsv(csv.value);
        } catch (error) {
          return showError(error.message);
        }
        button.disabled = true;
        try {
          const answer = await postValidation(job.job_id, { labels, target_recall: Number(target.value), confidence: Number(confidence.value) });
          output.replaceChildren(...renderAnswer(answer));
        } catch (error) {
          showError(error.message);
        } finally {
          button.disabled = false;
        }
      },
    },
    h("label", { for: "validation-csv", text: "Human decisions for a random sample of this job's papers, as CSV lines id,included" }),
    csv,
    h("div", { class: "toolbar" }, h("label", {}, "or upload a CSV file", file), h("label", {}, "Target recall", target), h("label", {}, "Confidence", confidence), button),
  );
  return h(
    "section",
    { "aria-labelledby": "validation-title", class: "panel", id: "validation" },
    h("h2", { id: "validation-title", text: "Validate on your labelled sample" }),
    h("p", { class: "hint", text: "Recall per vote threshold with certified (one-sided, anytime-valid) bounds, the threshold to use, and where the job and your reviewers disagree." }),
    form,
    problem,
    output,
  );
}

function renderAnswer(a) {
  const parts = [];
  const rec = a.recommended;
  parts.push(
    h(
      "p",
      { id: "validation-recommendation", class: rec ? "" : "alert" },
      rec
        ? `Recommended: include papers with at least ${rec.votes} of ${a.repetitions} include votes. Recall ${pct(rec.recall)} (${pct(a.confidence, 0)} interval ${ci(rec.recall_ci)}), humans read ${pct(rec.workload)} of the papers (${pct(rec.work_saved)} work saved).`
        : `No recommendation: ${a.recommendation_reason}`,
    ),
  );
  if (a.missed_includes) {
    const m = a.missed_includes;
    parts.push(h("p", { text: `Below that threshold (${m.papers_below} papers, ${m.labelled_below} labelled): about ${m.estimate.toFixed(1)} included studies expected, at most ${m.upper.toFixed(1)}.` }));
  }
  if (a.warnings.length) parts.push(h("ul", { id: "validation-warnings", class: "alert" }, a.warnings.map((w) => h("li", { text: w }))));
  parts.push(
    thresholdTable(a),
    recallPlot(a),
    h("p", { class: "hint", text: "One point per vote threshold (≥ votes). Solid line: recall on the labelled sample; bars and dashed line: the certified lower bound, which must clear the target line." }),
    agreementBlock(a),
  );
  return parts;
}

function thresholdTable(a) {
  const cols = ["Votes ≥", "TP", "FN", "TN", "FP", "Recall", "Recall interval", "Specificity", "Specificity interval", "Workload", "Work saved"];
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id: "validation-table" },
      h("caption", { text: `${a.labelled} labelled papers (${a.labelled_included} included) of ${a.papers}; intervals are exact at ${pct(a.confidence, 0)}` }),
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", class: c === "Votes ≥" ? "" : "num", text: c })))),
      h(
        "tbody",
        {},
        a.thresholds.map((r) =>
          h(
            "tr",
            { class: a.recommended?.votes === r.votes ? "chosen" : "" },
            h("th", { scope: "row", text: String(r.votes) }),
            [r.tp, r.fn, r.tn, r.fp, pct(r.recall), ci(r.recall_ci), pct(r.specificity), ci(r.specificity_ci), pct(r.workload), pct(r.work_saved)].map((v) => h("td", { class: "num", text: String(v) })),
          ),
        ),
      ),
    ),
  );
}

/** Recall against workload, one point per threshold, with its interval drawn as a bar and the target as a line. */
function recallPlot(a) {
  const W = 520;
  const H = 320;
  const pad = { l: 52, r: 16, t: 16, b: 44 };
  const x = (v) => pad.l + v * (W - pad.l - pad.r);
  const y = (v) => H - pad.b - v * (H - pad.t - pad.b);
  const rows = a.thresholds.filter((r) => r.recall !== null).sort((p, q) => p.workload - q.workload);
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  const line = (points) => points.map(([px, py], i) => `${i ? "L" : "M"}${px.toFixed(1)},${py.toFixed(1)}`).join(" ");
  return s(
    "svg",
    { id: "validation-plot", viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": "Recall against workload per vote threshold, with exact bounds (the table above holds the same figures)" },
    ticks.map((t) => [
      s("line", { x1: x(0), x2: x(1), y1: y(t), y2: y(t), stroke: "#d9dcdf" }),
      s("text", { x: pad.l - 6, y: y(t) + 4, "text-anchor": "end", "font-size": "11", text: pct(t, 0) }),
      s("text", { x: x(t), y: H - pad.b + 16, "text-anchor": "middle", "font-size": "11", text: pct(t, 0) }),
    ]),
    s("text", { x: (x(0) + x(1)) / 2, y: H - 8, "text-anchor": "middle", "font-size": "12", text: "Workload: share of all papers humans read" }),
    s("text", { x: 14, y: (y(0) + y(1)) / 2, "text-anchor": "middle", "font-size": "12", transform: `rotate(-90 14 ${(y(0) + y(1)) / 2})`, text: "Recall" }),
    s("line", { x1: x(0), x2: x(1), y1: y(a.target_recall), y2: y(a.target_recall), stroke: "#b3261e", "stroke-dasharray": "5 4" }),
    s("text", { x: x(1), y: y(a.target_recall) - 5, "text-anchor": "end", "font-size": "11", fill: "#b3261e", text: `target ${pct(a.target_recall)}` }),
    rows.length > 1 ? s("path", { d: line(rows.map((r) => [x(r.workload), y(r.recall_ci.low)])), fill: "none", stroke: "#1f5fa8", "stroke-dasharray": "3 3" }) : null,
    rows.length > 1 ? s("path", { d: line(rows.map((r) => [x(r.workload), y(r.recall)])), fill: "none", stroke: "#1f5fa8", "stroke-width": "2" }) : null,
    rows.map((r) =>
      s(
        "g",
        { class: "threshold-point" },
        s("line", { x1: x(r.workload), x2: x(r.workload), y1: y(r.recall_ci.low), y2: y(r.recall_ci.high), stroke: "#1f5fa8" }),
        s("circle", { cx: x(r.workload), cy: y(r.recall), r: a.recommended?.votes === r.votes ? 6 : 4, fill: a.recommended?.votes === r.votes ? "#f2a900" : "#1f5fa8" }),
        s("text", { x: x(r.workload) + 7, y: y(r.recall) + 14, "font-size": "11", text: `≥${r.votes}` }),
        s("title", { text: `≥ ${r.votes} votes: recall ${pct(r.recall)} (${ci(r.recall_ci)}), workload ${pct(r.workload)}` }),
      ),
    ),
  );
}

function agreementBlock(a) {
  const g = a.agreement;
  const ids = (list) => (list.length ? `${list.slice(0, LISTED_IDS).map(named).join("; ")}${list.length > LISTED_IDS ? ` and ${list.length - LISTED_IDS} more` : ""}` : "none");
  return h(
    "div",
    { id: "validation-agreement" },
    h("h3", { text: `Agreement with the job's decisions (threshold ${g.job_threshold})` }),
    h("p", { text: `Cohen's kappa ${g.kappa === null ? "— (undefined: one class only)" : g.kappa.toFixed(3)}; agreement on ${pct(g.observed_agreement)} of labelled papers.` }),
    h("p", { text: `Included by reviewers, excluded by the job (${g.missed_ids.length}): ${ids(g.missed_ids)}` }),
    h("p", { text: `Included by the job, excluded by reviewers (${g.extra_ids.length}): ${ids(g.extra_ids)}` }),
  );
}

// The job page tells when a screening job's results are shown; completed jobs get the panel.
document.addEventListener("screening-results", (event) => {
  const job = event.detail;
  titles = job?.titles instanceof Map ? job.titles : new Map();
  if (job?.status !== "completed" || !(event.target instanceof Element)) return;
  event.target.append(samplePanel(job), validationPanel(job));
});
