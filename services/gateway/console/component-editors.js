// The "New job" screen's editors: a screening job's criteria (typed, or drafted and refined by the
// Criteria AI routes) and an extraction job's fields (suggest-fields proposes them).

import { api } from "./api.js";
import { h, table } from "./dom.js";

const DATA_TYPES = ["text", "number", "yes_no", "list_text", "list_number"];
const SAMPLE_RECORDS = 5;

/** Rows of controls (`cells` builds a row's, each named by `data-field`), each with its Remove button; `read` gives their values. */
function rowEditor(noun, cells) {
  const rows = h("tbody");
  const add = (value) => {
    const n = rows.children.length + 1;
    const remove = h("button", { type: "button", class: "quiet", text: "Remove", "aria-label": `Remove ${noun} ${n}`, onclick: () => tr.remove() });
    const tr = h("tr", {}, cells(value, n).map((c) => h("td", {}, c)), h("td", {}, remove));
    rows.append(tr);
  };
  const read = () => [...rows.children].map((tr) => Object.fromEntries([...tr.querySelectorAll("[data-field]")].map((c) => [c.dataset.field, c.value.trim()])));
  return { rows, add, read };
}

/** A button asking the AI: `run` answers with what `note` then says; one request at a time. */
function aiButton(text, note, run) {
  const button = h("button", {
    type: "button",
    class: "quiet",
    text,
    onclick: async () => {
      button.disabled = true;
      note.textContent = "Asking…";
      try {
        note.textContent = await run();
      } catch (error) {
        note.textContent = `Could not: ${error.message}`;
      } finally {
        button.disabled = false;
      }
    },
  });
  return button;
}

const options = (values, chosen) => values.map((t) => h("option", { value: t, text: t, selected: t === chosen }));

/** The screening criteria: rows of name, type and text. `mock()` says whether the AI calls are mock ones. */
export function criteriaEditor(signal, mock) {
  const description = h("textarea", { id: "project-description", rows: "2", placeholder: "What the review is about" });
  const question = h("input", { id: "research-question", type: "text", placeholder: "The research question" });
  const note = h("p", { class: "hint", role: "status" });
  const editor = rowEditor("criterion", (criterion = { name: "", type: "include", value: "" }, n) => {
    const value = h("textarea", { rows: "2", "aria-label": `Criterion ${n} text`, "data-field": "value" });
    value.value = criterion.value;
    return [
      h("input", { type: "text", value: criterion.name, "aria-label": `Criterion ${n} name`, "data-field": "name" }),
      h("select", { "aria-label": `Criterion ${n} type`, "data-field": "type" }, options(["include", "exclude"], criterion.type)),
      value,
    ];
  });
  const list = () => editor.read().filter((c) => c.value);
  const questions = () => (question.value.trim() ? [question.value.trim()] : []);
  const context = () => {
    if (!description.value.trim()) throw new Error("Describe the review first: the AI drafts from the description.");
    return { project_description: description.value.trim(), research_questions: questions(), mock: mock() };
  };
  const fromAi = (answer) => answer.criteria.map((c) => editor.add({ name: c.category ?? "", type: c.criterion_type === "exclude" ? "exclude" : "include", value: c.text ?? "" }));
  const done = "Done: check and edit the criteria before you start.";
  const draft = (type) =>
    aiButton(`Draft ${type} criteria with AI`, note, async () => {
      fromAi(await api("/v1/criteria/generate", { method: "POST", body: { ...context(), criterion_type: type, existing_criteria: list() }, signal }));
      return done;
    });
  const refine = aiButton("Refine these criteria with AI", note, async () => {
    const current = list();
    if (current.length === 0) throw new Error("There are no criteria to refine.");
    const { project_description, mock } = context();
    const body = { current_criteria: current.map((c) => ({ category: c.name, text: c.value, criterion_type: c.type })), project_description, mock };
    const answer = await api("/v1/criteria/refine", { method: "POST", body, signal });
    editor.rows.replaceChildren();
    fromAi(answer);
    return done;
  });
  const section = h(
    "section",
    { class: "panel", "aria-labelledby": "criteria-title", id: "criteria-editor" },
    h("h2", { id: "criteria-title", text: "2. Criteria" }),
    h("div", { class: "toolbar" }, h("label", { for: "project-description" }, "Review description", description), h("label", { for: "research-question" }, "Research question", question)),
    table({ id: "criteria" }, ["Name", "Type", "Criterion", ""], editor.rows),
    h("div", { class: "toolbar" }, h("button", { type: "button", class: "quiet", text: "Add a criterion", onclick: () => editor.add() }), draft("include"), draft("exclude"), refine),
    h("p", { class: "hint", text: "An exclusion criterion that is met excludes the paper." }),
    note,
  );
  return { section, list, questions };
}

/** The extraction fields: rows of name, description and type; `records()` gives the imported records the AI suggests from. */
export function fieldsEditor(signal, mock, records) {
  const note = h("p", { class: "hint", role: "status" });
  const editor = rowEditor("field", (field = { name: "", description: "", data_type_primary: "text" }, n) => [
    h("input", { type: "text", value: field.name, "aria-label": `Field ${n} name`, "data-field": "name" }),
    h("input", { type: "text", value: field.description, "aria-label": `Field ${n} description`, "data-field": "description" }),
    h("select", { "aria-label": `Field ${n} type`, "data-field": "type" }, options(DATA_TYPES, field.data_type_primary)),
  ]);
  const list = () =>
    editor
      .read()
      .filter((f) => f.name)
      .map((f) => ({ name: f.name, description: f.description, data_type_primary: f.type, data_type_secondary: "NA" }));
  const suggest = aiButton("Suggest fields with AI", note, async () => {
    const sample = records()
      .slice(0, SAMPLE_RECORDS)
      .map((r) => ({ ID: r.id, Title: r.title, Abstract: r.abstract }));
    const answer = await api("/v1/indexer/suggest-fields", { method: "POST", body: { sample_records: sample, existing_fields: list().map((f) => f.name), mock: mock() }, signal });
    for (const f of answer.fields ?? []) editor.add(f);
    return `${(answer.fields ?? []).length} fields suggested: check and edit them before you start.`;
  });
  const section = h(
    "section",
    { class: "panel", "aria-labelledby": "fields-title", id: "fields-editor" },
    h("h2", { id: "fields-title", text: "2. Fields to extract" }),
    table({ id: "fields" }, ["Name", "Description", "Type", ""], editor.rows),
    h("div", { class: "toolbar" }, h("button", { type: "button", class: "quiet", text: "Add a field", onclick: () => editor.add() }), suggest),
    note,
  );
  return { section, list };
}
