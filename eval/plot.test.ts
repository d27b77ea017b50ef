import { describe, expect, it } from "vitest";
import { recallWorkloadSvg } from "./plot";

describe("recall/workload plot", () => {
  const svg = recallWorkloadSvg({
    title: "Review <A&B>",
    subtitle: "100 papers",
    curve: [
      { votes: null, workload: 0, recall: 0 },
      { votes: 2, workload: 0.2, recall: 0.7 },
      { votes: 1, workload: 0.4, recall: 0.97 },
      { votes: 0, workload: 1, recall: 1 },
    ],
    targetRecall: 0.95,
    chosenVotes: 1,
    repetitions: 2,
  });

  it("is a self-contained SVG with axes, labels, legend and every threshold marked", () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg).not.toMatch(/href|<script|@import|url\(/);
    expect(svg).toContain("Share of papers a human still has to read");
    expect(svg).toContain("Recall (share of included studies kept)");
    expect(svg).toContain("Random order (no screener)");
    expect(svg).toContain("Target recall 95%");
    expect(svg).toContain("Strictest threshold reaching it: ≥1");
    for (const label of ["≥2<", "≥1<", "≥0 (read all)<"]) expect(svg).toContain(label);
    expect(svg).toContain("Review &lt;A&amp;B&gt;");
    // Open and close tags balance (a rough well-formedness check without an XML parser).
    const opened = (svg.match(/<(svg|text|title)\b/g) ?? []).length;
    const closed = (svg.match(/<\/(svg|text|title)>/g) ?? []).length;
    expect(opened).toBe(closed);
  });
});
