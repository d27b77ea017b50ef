// The reference import of the "New job" screen: files parsed off the page's thread, and what the
// import found (files, counts, duplicate groups, the first records as the job will receive them).

import { dash, fill, h, table } from "./dom.js";

const PREVIEW_ROWS = 10;
const LISTED_GROUPS = 20;
const LISTED_IDS = 10;

/**
 * The import in a Web Worker (import-worker.js), so a large file never freezes the page:
 * `onProgress` hears each file read and the duplicate search. The worker is kept between imports
 * (the library loads once, so "Merge the duplicates" answers at once); a newer import ends the
 * worker of one still running, and leaving the page (`signal`) ends it.
 */
export function importer(signal, onProgress) {
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

/** What an import found into `summary` and `preview` (both emptied without one); `toggleMerge` re-runs it merged or not. */
export function showImport(summary, preview, result, merged, toggleMerge) {
  if (!result) return summary.replaceChildren(), preview.replaceChildren();
  const { counts, duplicates } = result;
  const merge = h("button", { type: "button", id: "merge-duplicates", text: merged ? "Keep every record" : "Merge the duplicates (keep one of each group)", onclick: toggleMerge });
  fill(
    summary,
    h("ul", {}, result.files.map((f) => h("li", { text: `${f.name}: ${f.records} records (${f.format})` }))),
    h(
      "p",
      { id: "import-counts", role: "status" },
      `${counts.records} records to screen (${counts.read} read); ${counts.duplicates} duplicates in ${duplicates.length} groups${result.merged ? ", merged" : ""}; `,
      `${counts.withoutAbstract} without abstract; ${counts.withoutTitle} without title.`,
    ),
    duplicates.length === 0
      ? null
      : h(
          "details",
          { id: "duplicates" },
          h("summary", { text: `Duplicate groups (${duplicates.length})` }),
          h("ul", {}, duplicates.slice(0, LISTED_GROUPS).map((g) => h("li", { text: `${listIds(g.ids)} (same ${g.keys.map((k) => k.key).join(", ")})` }))),
          duplicates.length > LISTED_GROUPS ? h("p", { class: "hint", text: `and ${duplicates.length - LISTED_GROUPS} more groups` }) : null,
        ),
    duplicates.length || merged ? merge : null,
  );
  const rows = result.records
    .slice(0, PREVIEW_ROWS)
    .map((r) => h("tr", {}, h("th", { scope: "row", class: "mono", text: r.id }), h("td", { text: r.title || dash }), h("td", { class: "reason", text: r.abstract ? clip(r.abstract, 200) : "(no abstract)" })));
  fill(preview, table({ id: "preview", caption: `The first ${Math.min(PREVIEW_ROWS, result.records.length)} of ${result.records.length} records as the job will receive them` }, ["Id", "Title", "Abstract"], rows));
}
