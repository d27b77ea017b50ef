import { describe, expect, it } from "vitest";
import type { FinishedJob } from "../finished/finished-job";
import { exportBody } from "./exports";
import { sampleMarksOf } from "./sample-marks";

const SAMPLE_ID = "0b7c6a52-3f0e-4d51-9a7e-2c1d5e8f9a10";

/** Four screened papers (ids as a job may hold them: text, a number, a formula-like text) in two chunks. */
function screened(): FinishedJob {
  const item = (id: string | number, decision: string) => ({
    id,
    decision,
    final_score: decision === "include" ? 2 : 0,
    votes: decision === "include" ? ["include", "include"] : ["exclude", "exclude"],
    criteria_verdicts: [{ name: "Adults", type: "include", verdict: decision === "include" ? "met" : "not_met" }],
    cluster_id: 0,
    reasoning: "because",
  });
  const chunks = [[item("-2", "include"), item(7, "exclude")], [item("=1", "include"), item("p4", "exclude")]];
  return {
    record: { job_id: "j", status: "completed", config: { criteria_count: 1, repetitions: 2, threshold: 1 } } as unknown as FinishedJob["record"],
    result: {},
    chunks: async function* () {
      yield* chunks;
    },
    titles: async function* () {
      yield ["First", "Second"];
      yield ["Third", "Fourth"];
    },
    abstracts: async function* () {
      yield ["One", ""];
      yield ["Three", "Four"];
    },
  };
}

// Sampled: "-2" (labelled include), 7 (labelled exclude, its label's id a number like the paper's), "=1" (not labelled yet); "p4" not sampled.
const marks = sampleMarksOf({
  sample_id: SAMPLE_ID,
  job_id: "j",
  paper_ids: ["-2", 7, "=1"],
  labels: [
    { id: 7, included: false },
    { id: "-2", included: true },
  ],
});

async function text(pieces: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const piece of pieces) out += piece;
  return out;
}

describe("an export marking a validation sample", () => {
  it("adds validation_sampled and validation_label as the last CSV columns, every other cell as without the sample", async () => {
    for (const mode of ["spreadsheet", "plain"] as const) {
      const plain = (await text(exportBody("screening", screened(), "csv", mode))).split("\r\n");
      const marked = (await text(exportBody("screening", screened(), "csv", mode, marks))).split("\r\n");
      expect(marked).toHaveLength(plain.length);
      const added = [",validation_sampled,validation_label", ",true,include", ",true,exclude", ",true,", ",false,", ""];
      expect(marked).toEqual(plain.map((line, i) => line + added[i]));
    }
  });

  it("adds the same two fields last to each JSON Lines object: the label, or null", async () => {
    const lines = (await text(exportBody("screening", screened(), "jsonl", "spreadsheet", marks))).trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    const unmarked = (await text(exportBody("screening", screened(), "jsonl"))).trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((l) => [l.id, l.validation_sampled, l.validation_label])).toEqual([
      ["-2", true, "include"],
      [7, true, "exclude"],
      ["=1", true, null],
      ["p4", false, null],
    ]);
    for (const [i, line] of lines.entries()) {
      expect(Object.keys(line).slice(-2)).toEqual(["validation_sampled", "validation_label"]);
      const { validation_sampled: _sampled, validation_label: _label, ...rest } = line;
      expect(rest).toEqual(unmarked[i]);
    }
  });

  it("tags a sampled paper in RIS with a KW to filter on and an N1 naming the sample and the label, after the decision's tags; others as without it", async () => {
    const records = (await text(exportBody("screening", screened(), "ris", "spreadsheet", marks))).split("ER  - \r\n");
    const unmarked = (await text(exportBody("screening", screened(), "ris"))).split("ER  - \r\n");
    const added = [
      ["KW  - litrev validation: sampled", "KW  - litrev validation label: include", `N1  - litrev validation sample ${SAMPLE_ID}: sampled; human label: include.`],
      ["KW  - litrev validation: sampled", "KW  - litrev validation label: exclude", `N1  - litrev validation sample ${SAMPLE_ID}: sampled; human label: exclude.`],
      ["KW  - litrev validation: sampled", `N1  - litrev validation sample ${SAMPLE_ID}: sampled; not labelled yet.`],
      [],
    ];
    expect(records).toHaveLength(5);
    for (const [i, record] of records.slice(0, 4).entries()) {
      const lines = record.split("\r\n").filter(Boolean);
      const before = unmarked[i]!.split("\r\n").filter(Boolean);
      // The keywords stay together before the notes; the new ones come last of each.
      const kw = before.filter((l) => l.startsWith("KW")).length + before.findIndex((l) => l.startsWith("KW"));
      const expected = [...before.slice(0, kw), ...added[i]!.filter((l) => l.startsWith("KW")), ...before.slice(kw), ...added[i]!.filter((l) => l.startsWith("N1"))];
      expect(lines).toEqual(expected);
    }
  });
});
