import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { CreateIndexerJobMessage, CreateIndexerJobRequest, IndexerRunRequest } from "./indexer";
import { CreateScreeningJobMessage, CreateScreeningJobRequest } from "./screening";
import { parseOrIssues } from "./validation";

/** The issues of a parse that must fail. */
function issues(schema: z.ZodType, data: unknown) {
  const result = parseOrIssues(schema, data, "body");
  if (result.success) throw new Error(`expected a validation failure for ${JSON.stringify(data).slice(0, 200)}`);
  return result.issues;
}

const papers = [
  { id: "a", title: "A", abstract: "" },
  { id: "b", title: "B", abstract: "" },
];
const fields = [{ name: "n", description: "Sample size", data_type_primary: "number" }];

describe("screening job requests that cannot mean anything are refused (issue 30)", () => {
  it("refuses a threshold above the repetitions: no paper could ever be included", () => {
    const found = issues(CreateScreeningJobRequest, { papers, repetitions: 3, threshold: 5 });
    expect(found).toEqual([{ type: "value_error", loc: ["body", "threshold"], msg: expect.stringContaining("between 0 and repetitions (3)") }]);
    // The default repetitions (5) bound the default threshold's neighbours too.
    expect(issues(CreateScreeningJobRequest, { papers, threshold: 6 })[0]!.loc).toEqual(["body", "threshold"]);
  });

  it("refuses a fractional or absurd threshold: it counts include votes", () => {
    expect(issues(CreateScreeningJobRequest, { papers, threshold: 2.5 })[0]!.loc).toEqual(["body", "threshold"]);
    expect(issues(CreateScreeningJobRequest, { papers, threshold: 1e9 })[0]!.loc).toEqual(["body", "threshold"]);
    expect(issues(CreateScreeningJobRequest, { papers, threshold: -1 })[0]!.loc).toEqual(["body", "threshold"]);
  });

  it("accepts every whole threshold from 0 to repetitions, and the spec's default", () => {
    for (const threshold of [0, 1, 2, 3]) expect(parseOrIssues(CreateScreeningJobRequest, { papers, repetitions: 3, threshold }, "body").success).toBe(true);
    const parsed = parseOrIssues(CreateScreeningJobRequest, { papers }, "body");
    expect(parsed.success && parsed.data.threshold).toBe(1);
  });

  it("names duplicate paper ids (a result row and a validation label must each mean one paper)", () => {
    const found = issues(CreateScreeningJobRequest, { papers: [...papers, { id: "a", title: "again" }, { id: "b" }, { id: "b" }] });
    expect(found).toHaveLength(1);
    expect(found[0]!.loc).toEqual(["body", "papers"]);
    expect(found[0]!.msg).toContain("duplicate paper ids: 'a', 'b'");
    // The message form too: an inline list reaching the service is held to the same rule.
    expect(issues(CreateScreeningJobMessage, { papers: [...papers, { id: "a" }] })[0]!.msg).toContain("'a'");
    // 7 and "7" are one row in an export.
    expect(issues(CreateScreeningJobRequest, { papers: [{ id: 7 }, { id: "7" }] })[0]!.msg).toContain("'7'");
  });
});

describe("indexer requests with duplicate record IDs are refused (issue 30)", () => {
  const records = [
    { ID: "r1", Title: "One" },
    { ID: "r1", Title: "Again" },
  ];
  for (const [name, schema] of [
    ["job", CreateIndexerJobRequest],
    ["job message", CreateIndexerJobMessage],
    ["run", IndexerRunRequest],
  ] as const) {
    it(`names the duplicate ID (${name})`, () => {
      const found = issues(schema, { records, fields });
      expect(found).toHaveLength(1);
      expect(found[0]!.loc).toEqual(["body", "records"]);
      expect(found[0]!.msg).toContain("duplicate record IDs: 'r1'");
    });
  }
});
