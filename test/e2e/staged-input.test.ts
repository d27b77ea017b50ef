import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { NatsLink } from "@litrev/messaging";
import { JobData } from "../../libs/jobs/src";
import { indexerRecords } from "../support/dataset";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { CRITERIA, screeningPapers } from "./screening-fixtures";
import { startStack, waitFor, type Stack } from "../support/stack";

const SERVER_KEY = "sk-staged-input";

/**
 * Large creations: the gateway writes the list (papers, records) as the job's chunked input itself,
 * the service admits the job from its reference without parsing the list, the worker reads it
 * chunk by chunk, and nothing staged outlives the job or a refused creation.
 */
describe("job creations whose list the gateway stages (chunked input lists)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY], latencyMs: 5, respond: extractionResponder() });
    stack = await startStack({
      services: { indexer: 1, screening: 1 },
      env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url, INDEXER_JOB_RECORD_CONCURRENCY: "16" },
    });
    link = new NatsLink({ servers: stack.natsUrl, name: "staged-input-test" });
  }, 60_000);
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  /** Names of the objects in a service's job data bucket under `prefix`. */
  async function objects(service: "screening" | "indexer", prefix: string): Promise<string[]> {
    const { store, staging } = await JobData.open(await link.ready(), service);
    const names: string[] = [];
    // Staged lists are kept apart from the job data (the only job store the gateway may write); nothing staged is left in the data store.
    for (const bucket of [store, staging]) for (const info of await bucket.list()) if (info.name.startsWith(prefix) && !info.deleted) names.push(info.name);
    if (prefix.startsWith("staged/")) expect((await store.list()).filter((info) => info.name.startsWith(prefix) && !info.deleted)).toEqual([]);
    return names;
  }

  it("runs an indexer job of 1,200 records staged by the gateway, every record in input order", async () => {
    const records = indexerRecords(1_200, { withAbstractOnly: true });
    const fields = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];
    const created = await stack.http("POST", "/v1/indexer/jobs", { records, fields });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect((await objects("indexer", "staged/")).length).toBeGreaterThan(1); // head + chunks, staged by the gateway
    const id = created.body.job_id as string;
    const final = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/indexer/jobs/${id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 180_000, 500);
    expect(final.status, final.error ?? "").toBe("completed");
    expect(final.partial_results).toHaveLength(1_200);
    expect(final.partial_results.map((r: { ID: string }) => r.ID)).toEqual(records.map((r) => r.ID));
    // The input (the staged list) is removed once the job ended.
    await waitFor(async () => ((await objects("indexer", "staged/")).length === 0 ? true : null), 10_000, 200);
  }, 240_000);

  it("removes the staged papers of a creation the service refuses", async () => {
    const papers = screeningPapers(1_500);
    const refused = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 5, max_estimated_cost_usd: 0.0000001 });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("max_estimated_cost_usd");
    await waitFor(async () => ((await objects("screening", "staged/")).length === 0 ? true : null), 10_000, 200);

    // Accepted, the same list counts as the job's papers (the config records how many).
    const accepted = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 2, mock: true });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const id = accepted.body.job_id as string;
    const done = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${id}`);
      return res.body.status === "completed" ? res.body : null;
    }, 120_000, 300);
    expect(done.config.papers_count).toBe(1_500);
    expect(done.results.map((r: { id: unknown }) => r.id)).toEqual(papers.map((p) => p.id));
  }, 240_000);
});
