import { describe, expect, it } from "vitest";
import { LIMIT_CEILINGS } from "./ceilings";
import { CreateIndexerJobRequest } from "./indexer";
import { DEFAULT_REQUEST_LIMITS, RequestLimits, screeningResultChars } from "./limits";
import { requestLimitIssues } from "./operations";
import { CreateScreeningJobRequest, MAX_SCREENING_PAPERS } from "./screening";

describe("request limits", () => {
  it("default to the documented values, which fit real reviews", () => {
    expect(DEFAULT_REQUEST_LIMITS).toMatchObject({
      MAX_SCREENING_PAPERS,
      MAX_SCREENING_CRITERIA: 200,
      MAX_REPETITIONS: 20,
      MAX_WORK_UNITS: 20_000_000,
      MAX_JSON_DEPTH: 64,
      MAX_JSON_VALUES: 2_000_000,
      MAX_LIST_LIMIT: 1_000,
    });
    // A review of 20,000 papers with 50 criteria at 20 repetitions fits, results included.
    const review = { papers: Array.from({ length: 20_000 }, (_, i) => ({ id: i })), criteria: Array.from({ length: 50 }, (_, i) => ({ name: `criterion ${i}`.padEnd(30), type: "include", value: "v" })), repetitions: 20 };
    expect(requestLimitIssues("createScreeningJob", review, DEFAULT_REQUEST_LIMITS)).toEqual([]);
  });

  it("are read from the environment, and cannot be raised past the contracts' ceilings", () => {
    expect(RequestLimits.parse({ MAX_SCREENING_PAPERS: "50000" }).MAX_SCREENING_PAPERS).toBe(50_000);
    expect(RequestLimits.safeParse({ MAX_SCREENING_PAPERS: String(LIMIT_CEILINGS.papers + 1) }).success).toBe(false);
    expect(RequestLimits.safeParse({ MAX_WORK_UNITS: "0" }).success).toBe(false);
    expect(RequestLimits.safeParse({ MAX_JSON_DEPTH: "many" }).success).toBe(false);
  });

  it("leave the services' schemas accepting a raised limit (the gateway enforces the configured one)", () => {
    const papers = Array.from({ length: MAX_SCREENING_PAPERS + 1 }, (_, i) => ({ id: i }));
    expect(CreateScreeningJobRequest.safeParse({ papers, repetitions: 21 }).success).toBe(true);
    expect(requestLimitIssues("createScreeningJob", { papers }, DEFAULT_REQUEST_LIMITS)).toMatchObject([{ type: "too_long", loc: ["body", "papers"] }]);
    const records = Array.from({ length: 20_001 }, (_, i) => ({ ID: i }));
    expect(CreateIndexerJobRequest.safeParse({ records, fields: [{ name: "f", description: "d", data_type_primary: "text" }] }).success).toBe(true);
  });

  it("judge only values of the expected type, leaving the rest to the schema", () => {
    for (const body of [null, [], "x", { papers: "many", criteria: 3, repetitions: "5" }]) {
      expect(requestLimitIssues("createScreeningJob", body, DEFAULT_REQUEST_LIMITS)).toEqual([]);
    }
    expect(requestLimitIssues("noSuchOperation", { papers: [] }, DEFAULT_REQUEST_LIMITS)).toEqual([]);
  });

  it("estimate results from papers, repetitions and the criteria's names", () => {
    expect(screeningResultChars(10, 5, ["ab", "cde"])).toBe(10 * (1_000 + 50 + 82 + 83));
  });
});
