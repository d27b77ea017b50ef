// "New job": a reviewer's own references in, a job out (docs/console.md). The files are parsed
// here, in the browser, by the service's reference import (@litrev/references, bundled by the
// gateway at /console/references.js): the records leave this tab only as the job the reviewer
// starts. Then the criteria (typed, or drafted and refined by the Criteria AI routes) or the
// extraction fields (suggest-fields helps), the estimate with an optional ceiling, the start,
// the progress from the job's event stream, and cancel.

import { ApiError, api, followJob } from "./api.js";
import { announce, dash, fill, fmtCost, h, progressBar, setProgress, shortId, statusBadge } from "./dom.js";

const ACCEPT = ".ris,.nbib,.txt,.csv,.tsv,.medline";
const MAX_FILES = 20;
const MAX_FILE_BYTES = 50 * 1024 * 1024;
const PREVIEW_ROWS = 10;
const LISTED_GROUPS = 20;
const LISTED_IDS = 10;
const SAMPLE_RECORDS = 5;
const DATA_TYPES = ["text", "number", "yes_no", "list_text", "list_number"];

let library;
/** The import library, loaded once, on the first file picked. */
const references = () => (library ??= import("/console/references.js"));

/**
 * The import in a Web Worker (import-worker.js), so a large file never freezes the page:
 * `onProgress` hears each file read and the duplicate search. The worker is kept between imports
 * (the library loads once, so "Merge the duplicates" answers at once); a newer import ends the
 * worker of one still running, and leaving the page (`signal`) ends it.
 */
function importer(signal, onProgress) {
  let worker;
  let pending;
  const settle = (outcome, value) => {
    const settling = pending;
    pending = undefined;
    settling?.[outcome](value);
  };
  const end = () => {
    worker?.terminate();
    worker = undefined;
  };
  const spawn = () => {
    const started = new window.Worker("/console/import-worker.js", { type: "module" });
    started.onmessage = ({ data }) => {
      if (data.type === "progress") onProgress(data);
      else if (data.type === "done") settle("resolve", data.result);
      else settle("reject", new Error(data.message));
    };
    started.onerror = (event) => {
      end();
      settle("reject", new Error(event.message || "The reference import failed to load"));
    };
    return started;
  };
  /** The running import is not wanted any more: its worker ends with it. */
  const abandon = () => {
    if (!pending) return;
    end();
    settle("reject", Object.assign(new Error("The import was replaced by a newer one"), { name: "AbortError" }));
  };
  signal.addEventListener("abort", () => (abandon(), end()), { once: true });
  return (files, merge) =>
    new Promise((resolve, reject) => {
      abandon();
      worker ??= spawn();
      pending = { resolve, reject };
      worker.postMessage({ files: files.map((f) => ({ name: f.name, bytes: f.bytes })), merge });
    });
}

/** A group's ids, the first few of a large one. */
const listIds = (ids) => (ids.length > LISTED_IDS ? `${ids.slice(0, LISTED_IDS).join(", ")} … and ${ids.length - LISTED_IDS} more` : ids.join(", "));
const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

export async function newJobView(view, signal) {
  const state = { files: [], merge: false, result: null, kind: "screening", job: null };
  const kindPick = h(
    "fieldset",
    { class: "toolbar" },
    h("legend", { text: "Kind of job" }),
    ...[
      ["screening", "Screening (include or exclude by criteria)"],
      ["indexer", "Extraction (fields from each record)"],
    ].map(([value, text]) =>
      h("label", { class: "inline" }, h("input", { type: "radio", name: "job-kind", value, checked: value === "screening", onchange: () => setKind(value) }), text),
    ),
  );
  const fileInput = h("input", { id: "reference-files", type: "file", multiple: true, accept: ACCEPT });
  const importBox = h("div", { id: "import-summary" });
  const preview = h("div", { id: "import-preview" });
  const criteria = criteriaEditor(signal);
  const fields = fieldsEditor(signal, () => state.result);
  const estimate = h("div", { id: "estimate" });
  const runBox = h("div", { id: "run" });
  const mock = h("input", { id: "job-mock", type: "checkbox", checked: true });
  const mockText = h("span", { text: "Mock job (no provider, no cost)" });
  const reps = h("input", { id: "job-reps", type: "number", min: "1", max: "5", value: "3" });
  const ceiling = h("input", { id: "job-ceiling", type: "number", min: "0", step: "0.01", placeholder: "none" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const fail = (error) => {
    problem.hidden = false;
    problem.textContent = error.message;
  };

  const setKind = (kind) => {
    state.kind = kind;
    criteria.section.hidden = kind !== "screening";
    fields.section.hidden = kind !== "indexer";
    // Extraction jobs have no mock mode: the box then applies to the field suggestions only.
    mockText.textContent = kind === "screening" ? "Mock job (no provider, no cost)" : "Mock suggestions (an extraction job itself always calls the provider)";
    reps.closest("label").hidden = kind !== "screening";
    estimate.replaceChildren();
  };

  const importing = h("div", { id: "import-progress", class: "toolbar", hidden: true });
  const showProgress = ({ stage, done, total }) => {
    importing.querySelector("[role=status]").textContent = stage === "read" ? `Read ${done} of ${total} files; finding duplicates next` : "Duplicates found";
    setProgress(importing, stage === "read" ? (0.9 * done) / total : 1);
  };
  const importFiles = importer(signal, showProgress);
  const runImport = async () => {
    problem.hidden = true;
    if (!state.files.length) {
      state.result = null;
      return showImport();
    }
    // A fresh bar each import: a bar's progress never goes back.
    importing.replaceChildren(h("span", { role: "status", text: `Reading ${state.files.length} file${state.files.length > 1 ? "s" : ""}…` }), progressBar(0, "Import progress"));
    importing.hidden = false;
    let result;
    try {
      result = await importFiles(state.files, state.merge);
    } catch (error) {
      if (error.name === "AbortError") return; // a newer import took over, with its own bar
      importing.hidden = true;
      throw error;
    }
    importing.hidden = true;
    state.result = result;
    showImport();
  };
  const showImport = () => {
    const result = state.result;
    if (!result) return importBox.replaceChildren(), preview.replaceChildren();
    const { counts } = result;
    const merge = h("button", {
      type: "button",
      id: "merge-duplicates",
      text: state.merge ? "Keep every record" : `Merge the duplicates (keep one of each group)`,
      onclick: () => ((state.merge = !state.merge), runImport().catch(fail)),
    });
    fill(
      importBox,
      h("ul", {}, result.files.map((f) => h("li", { text: `${f.name}: ${f.records} records (${f.format})` }))),
      h(
        "p",
        { id: "import-counts", role: "status" },
        `${counts.records} records to screen (${counts.read} read); ${counts.duplicates} duplicates in ${result.duplicates.length} groups${result.merged ? ", merged" : ""}; `,
        `${counts.withoutAbstract} without abstract; ${counts.withoutTitle} without title.`,
      ),
      result.duplicates.length === 0
        ? null
        : h(
            "details",
            { id: "duplicates" },
            h("summary", { text: `Duplicate groups (${result.duplicates.length})` }),
            h(
              "ul",
              {},
              result.duplicates.slice(0, LISTED_GROUPS).map((g) => h("li", { text: `${listIds(g.ids)} (same ${g.keys.map((k) => k.key).join(", ")})` })),
            ),
            result.duplicates.length > LISTED_GROUPS ? h("p", { class: "hint", text: `and ${result.duplicates.length - LISTED_GROUPS} more groups` }) : null,
          ),
      result.duplicates.length || state.merge ? merge : null,
    );
    fill(
      preview,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "preview" },
          h("caption", { text: `The first ${Math.min(PREVIEW_ROWS, result.records.length)} of ${result.records.length} records as the job will receive them` }),
          h("thead", {}, h("tr", {}, ["Id", "Title", "Abstract"].map((c) => h("th", { scope: "col", text: c })))),
          h(
            "tbody",
            {},
            result.records.slice(0, PREVIEW_ROWS).map((r) =>
              h("tr", {}, h("th", { scope: "row", class: "mono", text: r.id }), h("td", { text: r.title || dash }), h("td", { class: "reason", text: r.abstract ? clip(r.abstract, 200) : "(no abstract)" })),
            ),
          ),
        ),
      ),
    );
  };

  fileInput.addEventListener("change", async () => {
    problem.hidden = true;
    try {
      const picked = [...fileInput.files].slice(0, MAX_FILES);
      const tooBig = picked.find((f) => f.size > MAX_FILE_BYTES);
      if (tooBig) throw new Error(`${tooBig.name} is larger than ${MAX_FILE_BYTES / 1024 / 1024} MB`);
      // Decoded and parsed in the worker; the bytes stay here for a re-run (merge or keep).
      state.files = await Promise.all(picked.map(async (f) => ({ name: f.name, bytes: await f.arrayBuffer() })));
      await runImport();
    } catch (error) {
      state.result = null;
      showImport();
      fail(error);
    }
  });

  const records = () => {
    if (!state.result?.records.length) throw new Error("Pick at least one reference file first.");
    return state.result.records;
  };
  const ceilingValue = () => (ceiling.value === "" ? undefined : Number(ceiling.value));

  const askEstimate = async () => {
    problem.hidden = true;
    try {
      const n = records().length;
      const answer =
        state.kind === "screening"
          ? await api("/v1/screening/estimate", { method: "POST", body: { papers_count: n, repetitions: Number(reps.value), criteria_count: criteria.list().length }, signal })
          : await api("/v1/indexer/estimate", { method: "POST", body: { fields: fields.list(), record_count: n }, signal });
      const limit = ceilingValue();
      fill(
        estimate,
        h(
          "dl",
          { class: "facts" },
          h("dt", { text: "Estimated cost" }),
          h("dd", { "data-fact": "estimated cost", text: `${fmtCost(answer.estimated_cost_usd)} (${answer.confidence ?? "approximate"})` }),
          typeof answer.forecast_cost_usd === "number" ? [h("dt", { text: "Forecast cost" }), h("dd", { "data-fact": "forecast cost", text: fmtCost(answer.forecast_cost_usd) })] : null,
          h("dt", { text: "Tokens in / out" }),
          h("dd", { text: `${answer.estimated_input_tokens} / ${answer.estimated_output_tokens}` }),
          limit !== undefined ? [h("dt", { text: "Ceiling" }), h("dd", { text: `${fmtCost(limit)}${answer.estimated_cost_usd > limit ? " — the estimate is above it: a live job would be refused" : ""}` })] : null,
        ),
        answer.disclaimer ? h("p", { class: "hint", text: answer.disclaimer }) : null,
        state.kind === "screening" && mock.checked ? h("p", { class: "hint", text: "A mock job costs nothing; the estimate is what a live job would cost." }) : null,
      );
    } catch (error) {
      fail(error);
    }
  };

  const start = async () => {
    problem.hidden = true;
    try {
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
    } catch (error) {
      fail(error);
    }
  };

  const follow = (kind, created) => {
    const id = created.job_id;
    const base = `/v1/${kind}/jobs/${encodeURIComponent(id)}`;
    const status = h("span", { id: "run-status" }, statusBadge(created.status));
    const bar = progressBar(created.progress, `Progress of job ${shortId(id)}`);
    const note = h("p", { class: "hint", id: "run-note" });
    const cancel = h("button", {
      type: "button",
      class: "quiet",
      text: "Cancel the job",
      onclick: async () => {
        cancel.disabled = true;
        try {
          const body = await api(`${base}/cancel`, { method: "POST", body: {}, signal });
          update(body);
        } catch (error) {
          note.textContent = `Could not cancel: ${error.message}`;
          cancel.disabled = false;
        }
      },
    });
    const update = (data) => {
      if (data.status) status.replaceChildren(statusBadge(data.status));
      if (typeof data.progress === "number") setProgress(bar, data.status === "completed" ? 1 : data.progress);
      if (data.status && data.status !== "pending" && data.status !== "running") {
        cancel.hidden = true;
        note.textContent = data.error ? `Error (${data.error_reason ?? data.error_category ?? "unknown"}): ${data.error}` : "Finished: open the job for its results, exports and methods report.";
      }
    };
    runBox.replaceChildren(
      h(
        "section",
        { class: "panel", "aria-labelledby": "run-title" },
        h("h2", { id: "run-title" }, "Job ", h("a", { href: `#/job/${kind}/${encodeURIComponent(id)}`, class: "mono", id: "run-link", text: id })),
        h("div", { class: "toolbar" }, status, bar, cancel),
        note,
      ),
    );
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
        h("label", { for: "job-reps" }, "Repetitions", reps),
        h("label", { for: "job-ceiling" }, "Cost ceiling (USD, optional)", ceiling),
        h("label", { for: "job-mock", class: "inline" }, mock, mockText),
        h("button", { type: "button", class: "quiet", text: "Estimate the cost", onclick: askEstimate }),
        h("button", { type: "button", id: "start-job", text: "Start the job", onclick: start }),
      ),
      estimate,
      problem,
    ),
    runBox,
  );
  setKind("screening");
  criteria.setMock(() => mock.checked);
  fields.setMock(() => mock.checked);
}

/** The screening criteria: rows of name, type and text, typed or drafted and refined by the Criteria AI routes. */
function criteriaEditor(signal) {
  let mockOn = () => true;
  const rows = h("tbody");
  const description = h("textarea", { id: "project-description", rows: "2", placeholder: "What the review is about" });
  const question = h("input", { id: "research-question", type: "text", placeholder: "The research question" });
  const note = h("p", { class: "hint", role: "status" });
  const add = (criterion = { name: "", type: "include", value: "" }) => {
    const n = rows.children.length + 1;
    const name = h("input", { type: "text", value: criterion.name, "aria-label": `Criterion ${n} name`, "data-field": "name" });
    const type = h(
      "select",
      { "aria-label": `Criterion ${n} type`, "data-field": "type" },
      ["include", "exclude"].map((t) => h("option", { value: t, text: t, selected: t === criterion.type })),
    );
    const value = h("textarea", { rows: "2", "aria-label": `Criterion ${n} text`, "data-field": "value" });
    value.value = criterion.value;
    const tr = h("tr", {}, h("td", {}, name), h("td", {}, type), h("td", {}, value), h("td", {}, h("button", { type: "button", class: "quiet", text: "Remove", "aria-label": `Remove criterion ${n}`, onclick: () => tr.remove() })));
    rows.append(tr);
  };
  const list = () =>
    [...rows.children]
      .map((tr) => ({
        name: tr.querySelector('[data-field="name"]').value.trim(),
        type: tr.querySelector('[data-field="type"]').value,
        value: tr.querySelector('[data-field="value"]').value.trim(),
      }))
      .filter((c) => c.value);
  const context = () => {
    if (!description.value.trim()) throw new Error("Describe the review first: the AI drafts from the description.");
    return { project_description: description.value.trim(), research_questions: question.value.trim() ? [question.value.trim()] : [], mock: mockOn() };
  };
  const fromAi = (items) => items.map((c) => ({ name: c.category ?? "", type: c.criterion_type === "exclude" ? "exclude" : "include", value: c.text ?? "" }));
  const ai = (label, run) =>
    h("button", {
      type: "button",
      class: "quiet",
      text: label,
      onclick: async (event) => {
        event.target.disabled = true;
        note.textContent = "Asking…";
        try {
          await run();
          note.textContent = "Done: check and edit the criteria before you start.";
        } catch (error) {
          note.textContent = `Could not: ${error.message}`;
        } finally {
          event.target.disabled = false;
        }
      },
    });
  const draft = (type) =>
    ai(`Draft ${type} criteria with AI`, async () => {
      const answer = await api("/v1/criteria/generate", { method: "POST", body: { ...context(), criterion_type: type, existing_criteria: list() }, signal });
      for (const c of fromAi(answer.criteria)) add(c);
    });
  const refine = ai("Refine these criteria with AI", async () => {
    const current = list();
    if (current.length === 0) throw new Error("There are no criteria to refine.");
    const { project_description, mock } = context();
    const answer = await api("/v1/criteria/refine", {
      method: "POST",
      body: { current_criteria: current.map((c) => ({ category: c.name, text: c.value, criterion_type: c.type })), project_description, mock },
      signal,
    });
    rows.replaceChildren();
    for (const c of fromAi(answer.criteria)) add(c);
  });
  const section = h(
    "section",
    { class: "panel", "aria-labelledby": "criteria-title", id: "criteria-editor" },
    h("h2", { id: "criteria-title", text: "2. Criteria" }),
    h("div", { class: "toolbar" }, h("label", { for: "project-description" }, "Review description", description), h("label", { for: "research-question" }, "Research question", question)),
    h(
      "div",
      { class: "table-wrap" },
      h("table", { id: "criteria" }, h("thead", {}, h("tr", {}, ["Name", "Type", "Criterion", ""].map((c) => h("th", { scope: "col", text: c })))), rows),
    ),
    h("div", { class: "toolbar" }, h("button", { type: "button", class: "quiet", text: "Add a criterion", onclick: () => add() }), draft("include"), draft("exclude"), refine),
    h("p", { class: "hint", text: "An exclusion criterion that is met excludes the paper." }),
    note,
  );
  return { section, list, questions: () => (question.value.trim() ? [question.value.trim()] : []), setMock: (fn) => (mockOn = fn) };
}

/** The extraction fields: rows of name, description and type; suggest-fields proposes them from sample records. */
function fieldsEditor(signal, imported) {
  let mockOn = () => true;
  const rows = h("tbody");
  const note = h("p", { class: "hint", role: "status" });
  const add = (field = { name: "", description: "", data_type_primary: "text" }) => {
    const n = rows.children.length + 1;
    const name = h("input", { type: "text", value: field.name, "aria-label": `Field ${n} name`, "data-field": "name" });
    const description = h("input", { type: "text", value: field.description, "aria-label": `Field ${n} description`, "data-field": "description" });
    const type = h("select", { "aria-label": `Field ${n} type`, "data-field": "type" }, DATA_TYPES.map((t) => h("option", { value: t, text: t, selected: t === field.data_type_primary })));
    const tr = h("tr", {}, h("td", {}, name), h("td", {}, description), h("td", {}, type), h("td", {}, h("button", { type: "button", class: "quiet", text: "Remove", "aria-label": `Remove field ${n}`, onclick: () => tr.remove() })));
    rows.append(tr);
  };
  const list = () =>
    [...rows.children]
      .map((tr) => ({
        name: tr.querySelector('[data-field="name"]').value.trim(),
        description: tr.querySelector('[data-field="description"]').value.trim(),
        data_type_primary: tr.querySelector('[data-field="type"]').value,
        data_type_secondary: "NA",
      }))
      .filter((f) => f.name);
  const suggest = h("button", {
    type: "button",
    class: "quiet",
    text: "Suggest fields with AI",
    onclick: async () => {
      suggest.disabled = true;
      note.textContent = "Asking…";
      try {
        const sample = (imported()?.records ?? []).slice(0, SAMPLE_RECORDS).map((r) => ({ ID: r.id, Title: r.title, Abstract: r.abstract }));
        const answer = await api("/v1/indexer/suggest-fields", { method: "POST", body: { sample_records: sample, existing_fields: list().map((f) => f.name), mock: mockOn() }, signal });
        for (const f of answer.fields ?? []) add(f);
        note.textContent = `${(answer.fields ?? []).length} fields suggested: check and edit them before you start.`;
      } catch (error) {
        note.textContent = `Could not: ${error instanceof ApiError ? error.message : String(error)}`;
      } finally {
        suggest.disabled = false;
      }
    },
  });
  const section = h(
    "section",
    { class: "panel", "aria-labelledby": "fields-title", id: "fields-editor" },
    h("h2", { id: "fields-title", text: "2. Fields to extract" }),
    h(
      "div",
      { class: "table-wrap" },
      h("table", { id: "fields" }, h("thead", {}, h("tr", {}, ["Name", "Description", "Type", ""].map((c) => h("th", { scope: "col", text: c })))), rows),
    ),
    h("div", { class: "toolbar" }, h("button", { type: "button", class: "quiet", text: "Add a field", onclick: () => add() }), suggest),
    note,
  );
  return { section, list, setMock: (fn) => (mockOn = fn) };
}
