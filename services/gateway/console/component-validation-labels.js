// Validation of a completed screening job on a sample the team labelled itself (docs/evaluation.md):
// an `id,included` CSV, pasted or uploaded, posted to the validation route; the thresholds table,
// the recommendation, recall against workload with its bounds, and the agreement.

import { api } from "./api.js";
import { ci, h, named, pct, s, table } from "./dom.js";

const MAX_CSV_BYTES = 5 * 1024 * 1024;
const MAX_LABELS = 50_000;
const LISTED_IDS = 50;
const TRUE_WORDS = new Set(["1", "true", "yes", "y", "include", "included"]);
const FALSE_WORDS = new Set(["0", "false", "no", "n", "exclude", "excluded"]);

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

/** The panel of a completed screening job; `titles` (id → title) name the papers once known. */
export function validationPanel(job, titles) {
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
          const body = { labels, target_recall: Number(target.value), confidence: Number(confidence.value) };
          const answer = await api(`/v1/screening/jobs/${encodeURIComponent(job.job_id)}/validation`, { method: "POST", body });
          output.replaceChildren(...renderAnswer(answer, titles));
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

function renderAnswer(a, titles) {
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
    agreementBlock(a, titles),
  );
  return parts;
}

function thresholdTable(a) {
  const cols = ["Votes ≥", "TP", "FN", "TN", "FP", "Recall", "Recall interval", "Specificity", "Specificity interval", "Workload", "Work saved"];
  const rows = a.thresholds.map((r) =>
    h(
      "tr",
      { class: a.recommended?.votes === r.votes ? "chosen" : "" },
      h("th", { scope: "row", text: String(r.votes) }),
      [r.tp, r.fn, r.tn, r.fp, pct(r.recall), ci(r.recall_ci), pct(r.specificity), ci(r.specificity_ci), pct(r.workload), pct(r.work_saved)].map((v) => h("td", { class: "num", text: String(v) })),
    ),
  );
  const caption = `${a.labelled} labelled papers (${a.labelled_included} included) of ${a.papers}; intervals are exact at ${pct(a.confidence, 0)}`;
  return table({ id: "validation-table", caption }, cols.map((c) => h("th", { scope: "col", class: c === "Votes ≥" ? "" : "num", text: c })), rows);
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

function agreementBlock(a, titles) {
  const g = a.agreement;
  const ids = (list) => (list.length ? `${list.slice(0, LISTED_IDS).map((id) => named(titles, id)).join("; ")}${list.length > LISTED_IDS ? ` and ${list.length - LISTED_IDS} more` : ""}` : "none");
  return h(
    "div",
    { id: "validation-agreement" },
    h("h3", { text: `Agreement with the job's decisions (threshold ${g.job_threshold})` }),
    h("p", { text: `Cohen's kappa ${g.kappa === null ? "— (undefined: one class only)" : g.kappa.toFixed(3)}; agreement on ${pct(g.observed_agreement)} of labelled papers.` }),
    h("p", { text: `Included by reviewers, excluded by the job (${g.missed_ids.length}): ${ids(g.missed_ids)}` }),
    h("p", { text: `Included by the job, excluded by reviewers (${g.extra_ids.length}): ${ids(g.extra_ids)}` }),
  );
}
