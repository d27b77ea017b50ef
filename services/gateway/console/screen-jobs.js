// The jobs screen: a mock screening job started in one click, and each kind's jobs, filtered and
// paged here (the listing route takes only `limit`), refreshed every few seconds.

import { ApiError, api, sleep } from "./api.js";
import { announce, h, shortId } from "./dom.js";
import { jobTable } from "./component-job-table.js";
import { KINDS } from "./kinds.js";

/** Jobs read per kind for the list, which is then filtered and paged here. */
const LIST_FETCH = 500;
const REFRESH_MS = 10_000;

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

/** "Try it": a mock screening job of demo papers; `started` refreshes the list. */
function mockForm(signal, started) {
  const status = h("p", { class: "hint", role: "status" });
  const papers = h("input", { id: "mock-papers", type: "number", min: "1", max: "5000", value: "300", required: true });
  const reps = h("input", { id: "mock-reps", type: "number", min: "1", max: "5", value: "3", required: true });
  const start = h("button", { type: "submit", id: "start-mock", text: "Start a mock screening job" });
  const submit = async (event) => {
    event.preventDefault();
    start.disabled = true;
    status.textContent = "Starting…";
    try {
      const body = { papers: demoPapers(Number(papers.value)), criteria: DEMO_CRITERIA, questions: ["Do nudges change prescribing by clinicians?"], repetitions: Number(reps.value), mock: true };
      const created = await api("/v1/screening/jobs", { method: "POST", body, signal });
      status.textContent = `Started job ${created.job_id}.`;
      announce(`Started screening job ${shortId(created.job_id)}`);
      await started();
    } catch (error) {
      status.textContent = `Could not start the job: ${error.message}`;
    } finally {
      start.disabled = false;
    }
  };
  return h(
    "section",
    { class: "panel", "aria-labelledby": "mock-title" },
    h("h2", { id: "mock-title", text: "Try it" }),
    h("form", { class: "toolbar", "aria-describedby": "mock-hint", onsubmit: submit }, h("label", { for: "mock-papers" }, "Papers", papers), h("label", { for: "mock-reps" }, "Repetitions", reps), start),
    h("p", { id: "mock-hint", class: "hint", text: "Mock mode: no provider key and no cost; the same input always gives the same output." }),
    status,
    h("p", { class: "hint" }, "To screen your own references (RIS, NBIB, CSV) open ", h("a", { href: "#/new", text: "New job" }), "."),
  );
}

export async function jobsView(view, signal) {
  const filters = { kind: "all", status: "all", text: "" };
  const tables = KINDS.map((kind) => jobTable(kind, filters, signal));
  const refilter = (name, value) => {
    filters[name] = value;
    for (const table of tables) {
      table.page = 0;
      table.draw();
    }
  };
  const select = (id, name, options) => h("select", { id, onchange: (event) => refilter(name, event.target.value) }, options.map(([value, text]) => h("option", { value, text })));
  const statuses = ["all", "pending", "running", "completed", "failed"].map((value) => [value, value === "all" ? "Any status" : value]);
  const textFilter = h("input", { id: "jobs-text", type: "search", placeholder: "job id, project, model, error", oninput: () => refilter("text", textFilter.value.trim()) });
  const filterBar = h(
    "div",
    { class: "toolbar", role: "search", "aria-label": "Filter the jobs" },
    h("label", { for: "jobs-kind" }, "Kind", select("jobs-kind", "kind", [["all", "All kinds"], ...KINDS.map((kind) => [kind.name, kind.title])])),
    h("label", { for: "jobs-status" }, "Status", select("jobs-status", "status", statuses)),
    h("label", { for: "jobs-text" }, "Find", textFilter),
  );
  const refresh = async () => {
    // A gateway whose MAX_LIST_LIMIT is below LIST_FETCH refuses it (400): then its default page.
    const list = (kind) =>
      api(`/v1/${kind.name}/jobs?limit=${LIST_FETCH}`, { signal }).catch((error) => {
        if (error instanceof ApiError && error.status === 400) return api(`/v1/${kind.name}/jobs`, { signal });
        throw error;
      });
    const lists = await Promise.all(KINDS.map(list));
    tables.forEach((table, i) => ((table.items = lists[i]), table.draw()));
  };
  view.append(h("h1", { text: "Jobs" }), mockForm(signal, refresh), filterBar, ...tables.map((table) => table.section));
  await refresh();
  (async () => {
    while (!signal.aborted) {
      await sleep(REFRESH_MS, signal);
      if (!signal.aborted) await refresh().catch(() => undefined);
    }
  })();
}
