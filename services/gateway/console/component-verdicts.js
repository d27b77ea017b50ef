// A screening job's verdicts per criterion: what a verdict does to a paper, the decisions its own
// verdicts contradict, and the summary table of the job page.

import { col, dash, h, table } from "./dom.js";

const VERDICTS = ["met", "not_met", "unclear"];
const VERDICT_TEXT = { met: "met", not_met: "not met", unclear: "unclear" };

/** What a criterion's verdict does to the paper: an exclusion criterion that is met excludes it. */
function verdictEffect(type, verdict) {
  if (verdict === "unclear" || !VERDICTS.includes(verdict)) return "unclear";
  return (verdict === "met") === (type !== "exclude") ? "keeps" : "rejects";
}
const effectText = (type, verdict) => {
  const text = VERDICT_TEXT[verdict];
  if (!text) return dash;
  const effect = verdictEffect(type, verdict);
  return type === "exclude" && effect === "rejects" ? `${text} (excludes)` : text;
};

/** A result with its decision: the job's own, else the score against the threshold. */
const withDecision = (item, threshold) => ({
  ...item,
  decision: item.decision ?? (typeof item.final_score === "number" && item.final_score >= threshold ? "include" : "exclude"),
});

/**
 * Why a paper's decision disagrees with its own verdicts, or null: included although an exclusion
 * criterion is met or an inclusion criterion is not; excluded although every criterion keeps it.
 */
function contradiction(item) {
  const verdicts = item.criteria_verdicts ?? [];
  if (verdicts.length === 0 || item.error) return null;
  const rejecting = verdicts.filter((v) => verdictEffect(v.type, v.verdict) === "rejects");
  if (item.decision === "include" && rejecting.length) return `included although ${rejecting.map((v) => `“${v.name || v.type}” ${v.type === "exclude" ? "is met" : "is not met"}`).join(", ")}`;
  if (item.decision === "exclude" && verdicts.every((v) => verdictEffect(v.type, v.verdict) === "keeps")) return "excluded although every criterion keeps it";
  return null;
}

function verdictSummary(results, criteria, threshold) {
  if (criteria.length === 0) return h("p", { class: "muted", text: "The job had no criteria." });
  const contradicting = results.filter((item) => contradiction(withDecision(item, threshold))).length;
  const counts = criteria.map(() => ({ met: 0, not_met: 0, unclear: 0 }));
  for (const item of results) item.criteria_verdicts?.forEach((v, c) => counts[c] && VERDICTS.includes(v.verdict) && counts[c][v.verdict]++);
  const rows = criteria.map((criterion, c) => {
    const total = VERDICTS.reduce((sum, v) => sum + counts[c][v], 0) || 1;
    const stack = h("div", { class: "stack", role: "img", "aria-label": VERDICTS.map((v) => `${VERDICT_TEXT[v]} ${counts[c][v]}`).join(", ") });
    for (const v of VERDICTS) {
      const part = h("span", { class: `s-${verdictEffect(criterion.type, v)}` });
      part.style.width = `${(100 * counts[c][v]) / total}%`;
      stack.append(part);
    }
    return h(
      "tr",
      {},
      h("th", { scope: "row", text: criterion.name || `Criterion ${c + 1}` }),
      h("td", { text: criterion.type === "exclude" ? "exclude (met excludes)" : criterion.type }),
      VERDICTS.map((v) => h("td", { class: `num verdict-${verdictEffect(criterion.type, v)}`, text: String(counts[c][v]) })),
      h("td", {}, stack),
    );
  });
  const summary = table({ id: "verdicts", caption: "The majority verdict of each paper, per criterion." }, ["Criterion", "Type", "Met", "Not met", "Unclear", "Share"].map((c, i) => col(c, i >= 2 && i <= 4)), rows);
  summary.append(
    h(
      "p",
      { id: "contradictions", class: contradicting ? "alert" : "hint" },
      contradicting
        ? `${contradicting} papers have a decision their own verdicts contradict (marked ⚠ in the table; "Show" → "Contradicted" lists them).`
        : "No paper's decision contradicts its verdicts.",
    ),
  );
  return summary;
}

export { VERDICTS, contradiction, effectText, verdictEffect, verdictSummary, withDecision };
