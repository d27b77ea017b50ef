import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { NatsLink } from "@litrev/messaging";
import { JobData } from "../../libs/jobs/src/data";
import { artifactItems } from "../../libs/jobs/src/testing/artifact-items";
import { CRITERIA, schemaNameOf, screeningPapers, screeningResponder } from "../e2e/screening-fixtures";
import { indexerRecords } from "../support/dataset";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";

/**
 * Spending under control (issue 11, docs/security.md "Spending and prompts"), against the real
 * gateway and services on a real nats-server and the fake provider, which counts every request:
 * a model outside the deployment's allowlist is a 400 naming what is allowed and reaches no
 * provider; a model without a price cannot be estimated or capped; a job whose provider-reported
 * cost crosses its max_estimated_cost_usd mid-run ends failed with the progress it reached; a
 * synchronous call whose client disconnects stops calling the provider.
 */

const SERVER_KEY = "sk-spending-e2e";
const bodyOf = (request: { body: unknown }) => request.body as FakeChatRequest;

describe("spending under control (gateway, screening, indexer, criteria, real nats-server, fake provider)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  /** Labelling and extraction replies this long: the provider reports many output tokens (a verbose model). */
  let padLabelling = 0;
  let padExtraction = 0;

  beforeAll(async () => {
    const screening = screeningResponder();
    provider = await startFakeProvider({
      respond: (request, context) => {
        if (schemaNameOf(request) === "indexer_extraction" && padExtraction > 0) return JSON.stringify(context.generated) + " ".repeat(padExtraction);
        const reply = screening(request, context);
        if (reply === undefined || !schemaNameOf(request).startsWith("screening_labels_") || padLabelling === 0) return reply;
        return JSON.stringify(reply) + " ".repeat(padLabelling); // valid JSON, billed as output
      },
    });
    stack = await startStack({
      services: { screening: 1, indexer: 1, criteria: 1 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        JOB_ACK_WAIT_MS: "5000",
        // Two calls in flight per job: how far a job can overshoot its ceiling is one call's cost.
        SCREENING_CALL_CONCURRENCY: "2",
        INDEXER_JOB_RECORD_CONCURRENCY: "2",
        ALLOWED_MODELS: "my-local-model",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => {
    provider.reset();
    padLabelling = 0;
    padExtraction = 0;
  });

  it("refuses a model outside the allowlist with a 400 that names the allowed ones, before any provider call", async () => {
    const cases: [string, string, Record<string, unknown>][] = [
      ["POST", "/v1/criteria/analyze-question", { research_question: "Do reminders change prescribing?", model: "gpt-4o" }],
      ["POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, model: "gpt-4o" }],
      ["POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, model: "gpt-4o", mock: true }],
      ["POST", "/v1/indexer/run", { records: indexerRecords(1), fields: [{ name: "design", description: "Study design", data_type_primary: "text" }], model: "o3-pro" }],
      ["PUT", "/v1/config/services/criteria", { model: "gpt-4o" }],
    ];
    for (const [method, path, body] of cases) {
      const res = await stack.http(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(typeof res.body.detail).toBe("string");
      expect(res.body.detail).toMatch(/^Model '(gpt-4o|o3-pro)' is not allowed on this deployment; allowed models: /);
      for (const allowed of ["llm-5-nano", "llm-5-mini", "llm-4.1", "gpt-5-nano", "my-local-model"]) expect(res.body.detail).toContain(allowed);
    }
    expect(provider.chatRequests()).toHaveLength(0);
    // The allowed names still work: an alias, the model it points at, a configured name.
    expect((await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Q?", model: "gpt-5-mini" })).status).toBe(200);
    expect((await stack.http("GET", "/v1/config/services/criteria")).body.model).not.toBe("gpt-4o");
  });

  it("guesses no price: an allowed model without one cannot be estimated, capped or run (400 naming MODEL_PRICES); a mock job costs 0", async () => {
    const estimate = await stack.http("POST", "/v1/screening/estimate", { papers_count: 100, model: "my-local-model" });
    expect(estimate.status).toBe(400);
    expect(estimate.body.detail).toMatch(/No price is configured for the model 'my-local-model'.*MODEL_PRICES/);
    const fields = [{ name: "design", description: "Study design", data_type_primary: "text" }];
    for (const [path, body] of [
      ["/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, model: "my-local-model", max_estimated_cost_usd: 5 }],
      // Uncapped too: a job of an unpriced model would list estimated_cost_usd null (issue 30).
      ["/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, model: "my-local-model" }],
      ["/v1/indexer/jobs", { records: indexerRecords(2), fields, model: "my-local-model" }],
    ] as const) {
      const refused = await stack.http("POST", path, body);
      expect(refused.status, `${path} ${JSON.stringify(refused.body)}`).toBe(400);
      expect(refused.body.detail).toMatch(/No price is configured for the model 'my-local-model'.*MODEL_PRICES/);
    }
    expect(provider.chatRequests()).toHaveLength(0);
    const mock = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, model: "my-local-model", mock: true });
    expect(mock.status).toBe(200);
    const job = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${mock.body.job_id}`);
      return res.body.status === "completed" ? res.body : null;
    }, 30_000, 50);
    expect(job.estimated_cost_usd).toBe(0); // a mock job calls no provider: a figure, never null
    const listed = (await stack.http("GET", "/v1/screening/jobs")).body.find((item: { job_id: string }) => item.job_id === mock.body.job_id);
    expect(listed.estimated_cost_usd).toBe(0);
  });

  it("ends a screening job that crosses its cost ceiling mid-run: failed, a clear error, the progress it reached kept", async () => {
    // The spec's estimate for 100 papers × 1 repetition × 3 criteria on gpt-5-nano is $0.00732, under the
    // $0.01 ceiling, so admission accepts the job; the provider then bills ~10,000 output tokens
    // ($0.004) per labelling call, so the third call crosses the ceiling.
    padLabelling = 40_000;
    const papers = screeningPapers(100);
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 1, max_estimated_cost_usd: 0.01 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.job_id as string;
    const final = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 60_000, 50);
    expect(final.status).toBe("failed");
    expect(final.error_category).toBe("validation");
    expect(final.error_retryable).toBe(false);
    expect(final.error).toMatch(/exceeded the limit of \$0\.01 \(max_estimated_cost_usd\) during labelling; \d+ of 100 papers were labelled/);
    expect(final.error).not.toContain(SERVER_KEY);
    // The progress it reached, not 0 and not the end of labelling; the stage where it stopped.
    expect(final.stage).toBe("labelling");
    expect(final.progress).toBeGreaterThan(0);
    expect(final.progress).toBeLessThan(0.6);
    expect(final.completed_at).not.toBeNull();
    expect(final.results).toBeNull(); // the spec: results only for a completed job

    const labelling = provider.chatRequests().filter((r) => schemaNameOf(bodyOf(r)).startsWith("screening_labels_"));
    const labelled = Number(/; (\d+) of 100 papers were labelled/.exec(final.error)![1]);
    // Stopped within the calls in flight (2) of the one that crossed: far from the 10 calls of the job (10 papers a call).
    expect(labelling.length).toBeGreaterThanOrEqual(3);
    expect(labelling.length).toBeLessThanOrEqual(5);
    expect(labelled).toBe(labelling.filter((r) => r.status === 200).length * 10);
    await new Promise((r) => setTimeout(r, 500));
    expect(provider.chatRequests().filter((r) => schemaNameOf(bodyOf(r)).startsWith("screening_labels_"))).toHaveLength(labelling.length);

    // The per-paper results it finished are kept with the failed job, in its artifact.
    const link = new NatsLink({ servers: stack.natsUrl, name: "spending-test" });
    try {
      const items = (await artifactItems(await JobData.open(await link.ready(), "screening"), id)) as { id: string; votes: string[] }[];
      expect(items).toHaveLength(labelled);
      expect(items.map((item) => item.id)).toEqual(papers.slice(0, labelled).map((p) => p.id));
      expect(items.every((item) => item.votes.length === 1)).toBe(true);
    } finally {
      await link.close();
    }
  });

  it("ends an indexer job that crosses its cost ceiling mid-run, keeping the records it finished", async () => {
    const fields = [{ name: "design", description: "Study design", data_type_primary: "text" }];
    const records = indexerRecords(20, { withAbstractOnly: true });
    const estimate = await stack.http("POST", "/v1/indexer/estimate", { fields, record_count: records.length });
    expect(estimate.status).toBe(200);
    const ceiling = estimate.body.estimated_cost_usd as number;
    // Over the estimate: refused at admission, like the screening ceiling.
    const over = await stack.http("POST", "/v1/indexer/jobs", { records, fields, max_estimated_cost_usd: ceiling / 2 });
    expect(over.status).toBe(400);
    expect(over.body.detail).toMatch(/exceeds the limit of .* \(max_estimated_cost_usd\) for 20 records/);
    // At the estimate: accepted; then every record's reply bills ~10,000 output tokens on gpt-5-mini (~$0.02).
    padExtraction = 40_000;
    const created = await stack.http("POST", "/v1/indexer/jobs", { records, fields, max_estimated_cost_usd: ceiling });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const final = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/indexer/jobs/${created.body.job_id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 60_000, 50);
    expect(final.status).toBe("failed");
    expect(final.error_category).toBe("validation");
    expect(final.error).toMatch(/exceeded the limit of \$[\d.]+ \(max_estimated_cost_usd\) after \d+ of 20 records; the finished records are kept/);
    const extractions = provider.chatRequests().filter((r) => schemaNameOf(bodyOf(r)) === "indexer_extraction");
    expect(extractions.length).toBeLessThan(records.length);
    expect(final.partial_results.length).toBeGreaterThan(0);
    expect(final.partial_results.length).toBeLessThanOrEqual(extractions.length);
    expect(final.progress).toBeLessThan(1);
  });

  it("stops calling the provider when the client of a synchronous run disconnects", async () => {
    provider.setBehaviour({ latencyMs: 250 });
    const fields = [{ name: "design", description: "Study design", data_type_primary: "text" }];
    const controller = new AbortController();
    const request = fetch(`${stack.baseUrl}/v1/indexer/run`, {
      method: "POST",
      headers: { "x-api-key": TEST_API_KEY, "content-type": "application/json" },
      body: JSON.stringify({ records: indexerRecords(40, { withAbstractOnly: true }), fields, max_workers: 2 }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await waitFor(() => provider.chatRequests().length >= 2, 20_000, 20);
    controller.abort();
    expect(await request).toBeInstanceOf(Error);
    // Calls already sent may finish; nothing new is sent once the cancel has reached the service.
    await new Promise((r) => setTimeout(r, 1_000));
    const afterCancel = provider.chatRequests().length;
    await new Promise((r) => setTimeout(r, 2_000));
    expect(provider.chatRequests().length).toBe(afterCancel);
    expect(afterCancel).toBeLessThanOrEqual(8); // 40 records at 2 in flight would have taken 20+ rounds
    const indexer = stack.processes.find((p) => p.name === "indexer")!;
    expect(indexer.output()).not.toMatch(/"operation failed"/);
  });
});
