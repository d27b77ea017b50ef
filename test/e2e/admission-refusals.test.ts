import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexerRecords } from "../support/dataset";
import { startStack, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers } from "./screening-fixtures";

/**
 * Requests that cannot mean anything are refused at creation with the spec's bodies (issue 30),
 * on a deployment with no provider key of its own: a job that would fail at its first call with
 * `auth` is the same 401 as a synchronous route; a threshold no paper can reach, duplicate paper
 * ids and duplicate record IDs are 400s naming what is wrong.
 */

const FIELDS = [{ name: "design", description: "Study design", data_type_primary: "text" }];

describe("admission refuses what cannot mean anything (gateway, screening, indexer, criteria, real nats-server, no provider key)", () => {
  let stack: Stack;

  beforeAll(async () => {
    // A provider URL nothing listens on: no request may get that far.
    stack = await startStack({ services: { screening: 1, indexer: 1, criteria: 1 }, env: { OPENAI_API_KEY: undefined, OPENAI_BASE_URL: "http://127.0.0.1:9/v1" } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("answers a non-mock job with no provider key anywhere with the synchronous routes' 401, at creation", async () => {
    const sync = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Do reminders change prescribing?" });
    expect(sync.status, JSON.stringify(sync.body)).toBe(401);
    for (const [path, body] of [
      ["/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA }],
      ["/v1/indexer/jobs", { records: indexerRecords(2), fields: FIELDS }],
    ] as const) {
      const res = await stack.http("POST", path, body);
      expect(res.status, `${path} ${JSON.stringify(res.body)}`).toBe(401);
      expect(res.body).toEqual(sync.body);
    }
    // A mock job needs no key; a key sent with the request is the job's key.
    expect((await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, mock: true })).status).toBe(200);
    const keyed = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA }, { headers: { "x-llm-api-key": "sk-client" } });
    expect(keyed.status, JSON.stringify(keyed.body)).toBe(200);
  });

  it("refuses a threshold that is not a whole number of include votes from 0 to repetitions", async () => {
    for (const threshold of [5, 2.5, 1e9]) {
      const res = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), repetitions: 3, threshold, mock: true });
      expect(res.status, `threshold ${threshold}`).toBe(400);
      expect(res.body.detail[0].loc).toEqual(["body", "threshold"]);
    }
    expect((await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), repetitions: 3, threshold: 3, mock: true })).status).toBe(200);
  });

  it("names duplicate paper ids and duplicate record IDs", async () => {
    const papers = screeningPapers(3).map((paper, i) => ({ ...paper, id: i === 2 ? "dup" : i === 0 ? "dup" : paper.id }));
    const screening = await stack.http("POST", "/v1/screening/jobs", { papers, mock: true });
    expect(screening.status).toBe(400);
    expect(screening.body.detail).toEqual([expect.objectContaining({ loc: ["body", "papers"], msg: expect.stringContaining("duplicate paper ids: 'dup'") })]);
    const records = indexerRecords(2).map((record) => ({ ...record, ID: "same" }));
    const indexer = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS }, { headers: { "x-llm-api-key": "sk-client" } });
    expect(indexer.status).toBe(400);
    expect(indexer.body.detail).toEqual([expect.objectContaining({ loc: ["body", "records"], msg: expect.stringContaining("duplicate record IDs: 'same'") })]);
  });

  it("answers a PUT to a misspelt configuration id with a 400 naming the known ids", async () => {
    const res = await stack.http("PUT", "/v1/config/services/screenig", { temperature: 0.5 });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/Unknown configuration id 'screenig': the known ids are .*screening/);
  });
});
