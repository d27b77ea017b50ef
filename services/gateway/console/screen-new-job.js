// "New job": a reviewer's own references in, a job out (docs/console.md). The files are parsed
// here, in the browser, by the service's reference import (@litrev/references, bundled by the
// gateway at /console/references.js): the records leave this tab only as the job the reviewer
// starts. Then the criteria (typed, or drafted and refined by the Criteria AI routes) or the
// extraction fields (suggest-fields helps), the estimate with an optional ceiling, the start,
// the progress from the job's event stream, and cancel.

import { api, followJob } from "./api.js";
import { announce, fill, fmtCost, h, progressBar, setProgress, shortId, statusBadge } from "./dom.js";
import { cancelButton } from "./component-cancel-button.js";
import { criteriaEditor, fieldsEditor } from "./component-editors.js";
import { importer, showImport } from "./component-reference-import.js";

const ACCEPT = ".ris,.nbib,.txt,.csv,.tsv,.medline";
const MAX_FILES = 20;
const MAX_FILE_BYTES = 50 * 1024 * 1024;

let library;
/** The import library, loaded once, on the first job started. */
const references = () => (library ??= import("/console/references.js"));

export async function newJobView(view, signal) {
  const state = { files: [], merge: false, result: null, kind: "screening" };
  const kinds = [
    ["screening", "Screening (include or exclude by criteria)"],
    ["indexer", "Extraction (fields from each record)"],
  ];
  const kindPick = h(
    "fieldset",
    { class: "toolbar" },
    h("legend", { text: "Kind of job" }),
    kinds.map(([value, text]) => h("label", { class: "inline" }, h("input", { type: "radio", name: "job-kind", value, checked: value === "screening", onchange: () => setKind(value) }), text)),
  );
  const fileInput = h("input", { id: "reference-files", type: "file", multiple: true, accept: ACCEPT });
  const importBox = h("div", { id: "import-summary" });
  const preview = h("div", { id: "import-preview" });
  const mock = h("input", { id: "job-mock", type: "checkbox", checked: true });
  const criteria = criteriaEditor(signal, () => mock.checked);
  const fields = fieldsEditor(signal, () => mock.checked, () => state.result?.records ?? []);
  const estimate = h("div", { id: "estimate" });
  const runBox = h("div", { id: "run" });
  const mockText = h("span");
  const reps = h("input", { id: "job-reps", type: "number", min: "1", max: "5", value: "3" });
  const repsLabel = h("label", { for: "job-reps" }, "Repetitions", reps);
  const ceiling = h("input", { id: "job-ceiling", type: "number", min: "0", step: "0.01", placeholder: "none" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const fail = (error) => {
    problem.hidden = false;
    problem.textContent = error.message;
  };
  // Each action starts by taking the last one's problem away.
  const act = (run) => () => ((problem.hidden = true), run().catch(fail));

  const setKind = (kind) => {
    state.kind = kind;
    criteria.section.hidden = kind !== "screening";
    fields.section.hidden = kind !== "indexer";
    // Extraction jobs have no mock mode: the box then applies to the field suggestions only.
    mockText.textContent = kind === "screening" ? "Mock job (no provider, no cost)" : "Mock suggestions (an extraction job itself always calls the provider)";
    repsLabel.hidden = kind !== "screening";
    estimate.replaceChildren();
  };

  const importing = h("div", { id: "import-progress", class: "toolbar", hidden: true });
  const importFiles = importer(signal, ({ stage, done, total }) => {
    importing.querySelector("[role=status]").textContent = stage === "read" ? `Read ${done} of ${total} files; finding duplicates next` : "Duplicates found";
    setProgress(importing, stage === "read" ? (0.9 * done) / total : 1);
  });
  const show = () => showImport(importBox, preview, state.result, state.merge, act(() => ((state.merge = !state.merge), runImport())));
  const runImport = async () => {
    if (!state.files.length) {
      state.result = null;
      return show();
    }
    // A fresh bar each import: a bar's progress never goes back.
    importing.replaceChildren(h("span", { role: "status", text: `Reading ${state.files.length} file${state.files.length > 1 ? "s" : ""}…` }), progressBar(0, "Import progress"));
    importing.hidden = false;
    try {
      state.result = await importFiles(state.files, state.merge);
    } catch (error) {
      if (error.name === "AbortError") return; // a newer import took over, with its own bar
      importing.hidden = true;
      throw error;
    }
    importing.hidden = true;
    show();
  };
  fileInput.addEventListener(
    "change",
    act(async () => {
      try {
        const picked = [...fileInput.files].slice(0, MAX_FILES);
        const tooBig = picked.find((f) => f.size > MAX_FILE_BYTES);
        if (tooBig) throw new Error(`${tooBig.name} is larger than ${MAX_FILE_BYTES / 1024 / 1024} MB`);
        // Decoded and parsed in the worker; the bytes stay here for a re-run (merge or keep).
        state.files = await Promise.all(picked.map(async (f) => ({ name: f.name, bytes: await f.arrayBuffer() })));
        await runImport();
      } catch (error) {
        state.result = null;
        show();
        throw error;
      }
    }),
  );

  const records = () => {
    if (!state.result?.records.length) throw new Error("Pick at least one reference file first.");
    return state.result.records;
  };
  const ceilingValue = () => (ceiling.value === "" ? undefined : Number(ceiling.value));

  const askEstimate = async () => {
    const n = records().length;
    const answer =
      state.kind === "screening"
        ? await api("/v1/screening/estimate", { method: "POST", body: { papers_count: n, repetitions: Number(reps.value), criteria_count: criteria.list().length }, signal })
        : await api("/v1/indexer/estimate", { method: "POST", body: { fields: fields.list(), record_count: n }, signal });
    const limit = ceilingValue();
    const fact = (term, text, key) => [h("dt", { text: term }), h("dd", { "data-fact": key, text })];
    fill(
      estimate,
      h(
        "dl",
        { class: "facts" },
        fact("Estimated cost", `${fmtCost(answer.estimated_cost_usd)} (${answer.confidence ?? "approximate"})`, "estimated cost"),
        typeof answer.forecast_cost_usd === "number" ? fact("Forecast cost", fmtCost(answer.forecast_cost_usd), "forecast cost") : null,
        fact("Tokens in / out", `${answer.estimated_input_tokens} / ${answer.estimated_output_tokens}`),
        limit !== undefined ? fact("Ceiling", `${fmtCost(limit)}${answer.estimated_cost_usd > limit ? " — the estimate is above it: a live job would be refused" : ""}`) : null,
      ),
      answer.disclaimer ? h("p", { class: "hint", text: answer.disclaimer }) : null,
      state.kind === "screening" && mock.checked ? h("p", { class: "hint", text: "A mock job costs nothing; the estimate is what a live job would cost." }) : null,
    );
  };

  const start = async () => {
    const { toScreeningPaper, toIndexerRecord } = await references();
    const list = records();
    const kind = state.kind;
    let body;
    if (kind === "screening") {
      const typed = criteria.list();
      if (typed.length === 0) throw new Error("Type at least one criterion.");
      body = { papers: list.map(toScreeningPaper), criteria: typed, questions: criteria.questions(), repetitions: Number(reps.value), mock: mock.checked };
      if (ceilingValue() !== undefined) body.max_estimated_cost_usd = ceilingValue();
      // PRISMA's identification counts, for the job's methods report: read from the files, and removed as duplicates.
      const { counts } = state.result;
      body.identification = { records_identified: counts.read, duplicates_removed: counts.read - counts.records };
    } else {
      const typed = fields.list();
      if (typed.length === 0) throw new Error("Define at least one field.");
      body = { records: list.map(toIndexerRecord), fields: typed };
    }
    const created = await api(`/v1/${kind}/jobs`, { method: "POST", body, signal });
    announce(`Started ${kind === "screening" ? "screening" : "extraction"} job ${shortId(created.job_id)}`);
    follow(kind, created);
  };

  /** The job just started: its status and progress from its event stream, and cancel. */
  const follow = (kind, created) => {
    const id = created.job_id;
    const status = h("span", { id: "run-status" }, statusBadge(created.status));
    const bar = progressBar(created.progress, `Progress of job ${shortId(id)}`);
    const note = h("p", { class: "hint", id: "run-note" });
    const update = (data) => {
      if (data.status) status.replaceChildren(statusBadge(data.status));
      if (typeof data.progress === "number") setProgress(bar, data.status === "completed" ? 1 : data.progress);
      if (data.status && data.status !== "pending" && data.status !== "running") {
        cancel.hidden = true;
        note.textContent = data.error ? `Error (${data.error_reason ?? data.error_category ?? "unknown"}): ${data.error}` : "Finished: open the job for its results, exports and methods report.";
      }
    };
    const cancel = cancelButton(`/v1/${kind}/jobs/${encodeURIComponent(id)}`, signal, note, update);
    const link = h("a", { href: `#/job/${kind}/${encodeURIComponent(id)}`, class: "mono", id: "run-link", text: id });
    runBox.replaceChildren(h("section", { class: "panel", "aria-labelledby": "run-title" }, h("h2", { id: "run-title" }, "Job ", link), h("div", { class: "toolbar" }, status, bar, cancel), note));
    followJob(kind, id, { signal, onState: update, onEnd: update, onProblem: (error) => (note.textContent = error.message) });
  };

  view.append(
    h("p", {}, h("a", { href: "#/jobs", text: "← All jobs" })),
    h("h1", { text: "New job" }),
    h(
      "section",
      { class: "panel", "aria-labelledby": "files-title" },
      h("h2", { id: "files-title", text: "1. References" }),
      kindPick,
      h("label", { for: "reference-files", class: "stacked" }, "Reference files (RIS, PubMed NBIB/MEDLINE, CSV; several at once)", fileInput),
      h("p", { class: "hint", text: "The files are read in this browser; only the records of the job you start are sent to the service." }),
      importing,
      importBox,
      preview,
    ),
    criteria.section,
    fields.section,
    h(
      "section",
      { class: "panel", "aria-labelledby": "start-title" },
      h("h2", { id: "start-title", text: "3. Estimate and start" }),
      h(
        "div",
        { class: "toolbar" },
        repsLabel,
        h("label", { for: "job-ceiling" }, "Cost ceiling (USD, optional)", ceiling),
        h("label", { for: "job-mock", class: "inline" }, mock, mockText),
        h("button", { type: "button", class: "quiet", text: "Estimate the cost", onclick: act(askEstimate) }),
        h("button", { type: "button", id: "start-job", text: "Start the job", onclick: act(start) }),
      ),
      estimate,
      problem,
    ),
    runBox,
  );
  setKind("screening");
}
