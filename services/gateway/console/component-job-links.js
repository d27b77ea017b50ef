// A finished job's downloads and its methods report, shown in the page.

import { api, download, fetchWithKey } from "./api.js";
import { h, isActive } from "./dom.js";

/** The methods paragraph as HTML to paste: plain text, the "{For you to fill in: …}" parts marked. */
function methodsParagraph(text) {
  const parts = text.split(/(\{For you to fill in:[^{}]*\})/).filter(Boolean);
  return h("p", { id: "methods-paragraph", class: "methods" }, parts.map((part) => (part.startsWith("{For you to fill in:") ? h("mark", { text: part }) : part)));
}

/** "Download CSV", "Download JSON Lines" and "Methods report": available once the job has finished. */
export function jobLinks(kind, jobId, status, signal) {
  if (isActive(status)) return h("p", { class: "hint", id: "job-links", text: "Downloads and the methods report are available when the job has finished." });
  const base = `/v1/${kind}/jobs/${encodeURIComponent(jobId)}`;
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const report = h("section", { id: "report", "aria-labelledby": "report-title", hidden: true });
  const fail = (error) => {
    problem.hidden = false;
    problem.textContent = `Could not download: ${error.message}`;
  };
  const button = (text, href, onclick, filename) => h("a", { href, download: filename, class: "button", text, onclick: (event) => (event.preventDefault(), (problem.hidden = true), onclick()) });
  const link = (text, path, filename) => button(text, path, () => download(path, filename, signal).catch(fail), filename);
  const showReport = async () => {
    try {
      const [res, fields] = await Promise.all([fetchWithKey(`${base}/report`, signal), api(`${base}/report?format=json`, { signal })]);
      report.hidden = false;
      report.replaceChildren(
        h("h2", { id: "report-title", text: "Methods report" }),
        ...(fields.methods_paragraph ? [h("h3", { text: "Methods paragraph" }), h("p", { class: "hint", text: "Select and copy it into your manuscript; the marked parts are for you to fill in." }), methodsParagraph(fields.methods_paragraph)] : []),
        h("p", { class: "hint" }, "Markdown to paste into a methods section and its appendix. ", link("Download it (.md)", `${base}/report`, `${kind}-${jobId}-report.md`)),
        h("pre", { class: "report", text: await res.text() }),
      );
      report.scrollIntoView?.();
    } catch (error) {
      fail(error);
    }
  };
  // A failed or cancelled job exports the items that finished, marked partial (docs/reporting.md).
  const partial = status === "completed" ? "" : "-partial";
  const note = partial ? " (partial)" : "";
  const downloads = [
    link(`Download CSV${note}`, `${base}/export?format=csv`, `${kind}-${jobId}${partial}.csv`),
    link(`Download CSV for scripts${note}`, `${base}/export?format=csv&csv=plain`, `${kind}-${jobId}${partial}-plain.csv`),
    link(`Download RIS${note}`, `${base}/export?format=ris`, `${kind}-${jobId}${partial}.ris`),
    link(`Download JSON Lines${note}`, `${base}/export?format=jsonl`, `${kind}-${jobId}${partial}.jsonl`),
  ];
  return h("div", { id: "job-links" }, h("nav", { class: "toolbar links", "aria-label": "Exports" }, downloads, button("Methods report", `${base}/report`, showReport)), problem, report);
}
