import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers } from "./screening-fixtures";

/**
 * Both job kinds price through one path, the live alias table (issue 20): once
 * `PUT /v1/config/models` remaps an alias, the screening and the indexer estimate, a new job's
 * `estimated_cost_usd` and its cost ceiling all use the new target's price, on each service.
 */

const SERVER_KEY = "sk-kind-pricing-e2e";
const ALIAS = "llm-5-mini";
const TARGET = "gpt-4.1-nano";
// Far above the alias's built-in target (gpt-5-mini): a price from the old table cannot pass for it.
const TARGET_PRICE = { input: 3, output: 12 };
const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];

interface Estimate {
  estimated_input_tokens: number;
  estimated_output_tokens: number;
  estimated_cost_usd: number;
}
/** An estimate's tokens at the target's configured price, rounded as the services round. */
const atTarget = (e: Estimate) => Math.round(((e.estimated_input_tokens * TARGET_PRICE.input + e.estimated_output_tokens * TARGET_PRICE.output) / 1e6) * 1e6) / 1e6;

describe("one pricing path for every job kind (screening + indexer, real nats-server, fake provider)", { timeout: 120_000 }, () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY] });
    provider.setBehaviour({ latencyMs: 0, respond: extractionResponder() });
    stack = await startStack({
      services: { screening: 1, indexer: 1 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        MODEL_PRICES: JSON.stringify({ [TARGET]: TARGET_PRICE }),
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const screeningEstimate = async (papers: number): Promise<Estimate> => {
    const res = await stack.http("POST", "/v1/screening/estimate", { papers_count: papers, model: ALIAS, repetitions: 1, criteria_count: CRITERIA.length });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Estimate;
  };
  const indexerEstimate = async (records: number): Promise<Estimate> => {
    const res = await stack.http("POST", "/v1/indexer/estimate", { fields: FIELDS, record_count: records, model: ALIAS });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Estimate;
  };
  const poll = async (kind: "screening" | "indexer", id: string) => (await stack.http("GET", `/v1/${kind}/jobs/${id}`)).body;

  it("a live remap moves the estimate, a new job's estimated cost and its ceiling to the new target's price, for both kinds", async () => {
    // Before the remap neither kind prices the alias at the target's price.
    expect((await screeningEstimate(4)).estimated_cost_usd).not.toBe(atTarget(await screeningEstimate(4)));
    expect((await indexerEstimate(3)).estimated_cost_usd).not.toBe(atTarget(await indexerEstimate(3)));

    const put = await stack.http("PUT", "/v1/config/models", { aliases: { [ALIAS]: TARGET } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    try {
      // Each service follows the alias table through its config watch: wait for each to see it.
      const screening = await waitFor(async () => {
        const e = await screeningEstimate(4);
        return e.estimated_cost_usd === atTarget(e) ? e : null;
      }, 10_000, 50);
      const indexer = await waitFor(async () => {
        const e = await indexerEstimate(3);
        return e.estimated_cost_usd === atTarget(e) ? e : null;
      }, 10_000, 50).catch(async () => {
        const e = await indexerEstimate(3);
        throw new Error(`the indexer estimate stayed at $${e.estimated_cost_usd}, not the remapped target's $${atTarget(e)}`);
      });
      expect(screening.estimated_cost_usd).toBeGreaterThan(0);

      // A new job of each kind: its estimated cost is the estimate's, at the new target's price.
      const papers = screeningPapers(4);
      const screeningJob = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 1, model: ALIAS, mock: true });
      expect(screeningJob.status, JSON.stringify(screeningJob.body)).toBe(200);
      const records = indexerRecords(3, { withAbstractOnly: true });
      const indexerJob = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, model: ALIAS });
      expect(indexerJob.status, JSON.stringify(indexerJob.body)).toBe(200);
      const screeningPoll = await poll("screening", screeningJob.body.job_id as string);
      const indexerPoll = await poll("indexer", indexerJob.body.job_id as string);
      expect(screeningPoll).toMatchObject({ estimated_cost_usd: screening.estimated_cost_usd, provenance: { model_resolved: TARGET } });
      expect(indexerPoll).toMatchObject({ estimated_cost_usd: indexer.estimated_cost_usd, provenance: { model_resolved: TARGET } });

      // A ceiling just under the new price refuses both (at the old price both would pass).
      const screeningCapped = await stack.http("POST", "/v1/screening/jobs", {
        papers,
        criteria: CRITERIA,
        repetitions: 1,
        model: ALIAS,
        max_estimated_cost_usd: screening.estimated_cost_usd * 0.9,
      });
      expect(screeningCapped.status).toBe(400);
      expect(screeningCapped.body.detail).toContain(`Estimated cost $${screening.estimated_cost_usd.toFixed(6)} exceeds the limit`);
      const indexerCapped = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, model: ALIAS, max_estimated_cost_usd: indexer.estimated_cost_usd * 0.9 });
      expect(indexerCapped.status).toBe(400);
      expect(indexerCapped.body.detail).toContain(`Estimated cost $${indexer.estimated_cost_usd.toFixed(6)} exceeds the limit`);

      // Both jobs end (the mock run calls no provider; the indexer job calls the remapped target).
      for (const [kind, id] of [["screening", screeningJob.body.job_id], ["indexer", indexerJob.body.job_id]] as const) {
        const final = await waitFor(async () => {
          const body = await poll(kind, id as string);
          return body.status === "completed" || body.status === "failed" ? body : null;
        }, 60_000, 50);
        expect(final.status, final.error ?? "").toBe("completed");
      }
      expect(new Set(provider.chatRequests().map((r) => (r.body as { model: string }).model))).toEqual(new Set([TARGET]));
    } finally {
      await stack.http("PUT", "/v1/config/models", { aliases: { [ALIAS]: null } });
    }
  });
});
