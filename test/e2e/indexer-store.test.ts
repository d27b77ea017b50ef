import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IndexerJobListItem, type IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { indexerRecords } from "../support/dataset";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { startStack, waitFor, type Stack } from "../support/stack";

const MONGO_URL = process.env.MONGO_URL;
if (!MONGO_URL) console.log("[indexer-store] skipped: needs MongoDB (set MONGO_URL to run the persisted-listing tests)");

const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];

describe.skipIf(!MONGO_URL)("AutoIndexer jobs with MongoDB persistence", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 20, respond: extractionResponder() });
    stack = await startStack({
      services: { indexer: 1 },
      env: { MONGO_URL, OPENAI_API_KEY: "sk-store", OPENAI_BASE_URL: provider.url },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("lists jobs newest first with limit, and reads a finished job back with its records", async () => {
    const ids: string[] = [];
    for (const count of [3, 4]) {
      const res = await stack.http("POST", "/v1/indexer/jobs", { records: indexerRecords(count, { withAbstractOnly: true }), fields: FIELDS, project_id: 77 });
      expect(res.status).toBe(200);
      ids.push(res.body.job_id);
    }
    for (const id of ids) {
      await waitFor(async () => (await stack.http("GET", `/v1/indexer/jobs/${id}`)).body.status === "completed", 60_000, 200);
    }
    const list = await stack.http("GET", "/v1/indexer/jobs?limit=2");
    expect(list.status).toBe(200);
    expect(list.body.map((j: IndexerJobListItem) => j.job_id)).toEqual([ids[1], ids[0]]);
    expect(list.body.every((j: IndexerJobListItem) => IndexerJobListItem.safeParse(j).success)).toBe(true);
    expect(list.body[0]).toMatchObject({ status: "completed", record_count: 4, model: "llm-5-mini" });
    expect((await stack.http("GET", "/v1/indexer/active-job?project_id=77")).body).toBeNull();
    const job = await stack.http("GET", `/v1/indexer/jobs/${ids[1]}`);
    expect(job.body.partial_results).toHaveLength(4);
  });
});
