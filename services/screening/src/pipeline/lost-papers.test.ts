import { describe, expect, it } from "vitest";
import type { LlmClient } from "@litrev/llm";
import { createLogger } from "@litrev/telemetry";
import { defaultServiceConfig, readDataBlocks, ServiceError } from "@litrev/contracts";
import { PartialFailure, type ItemChunks, type JobContext, type JobOutcome, type JsonRecord } from "@litrev/jobs";
import { createLiveModel } from "../model/live-model";
import { createMockModel } from "../model/mock-model";
import { runScreeningPipeline, type PipelineSettings } from "./run";
import type { JobFrame, ScreeningModel } from "./types";

const logger = createLogger("screening-test", "silent");
const papers = Array.from({ length: 12 }, (_, i) => ({ id: `paper-${i}`, title: `Paper ${i}`, abstract: `Abstract ${i}.` }));
const criteria = [{ name: "Population", type: "include" as const, value: "Adults" }];
const frame: JobFrame = { criteria, questions: [], model: "llm-5-nano" };
const usage = { calls: 1, input_tokens: 10, cached_input_tokens: 0, output_tokens: 5, cost_usd: 0.001, retries: 0, models: { "gpt-5-nano-2025-08-07": 1 } };

/** A provider whose replies always give the papers titled in `lost` an id that was never asked about. */
function inventingLlm(lost: ReadonlySet<string>) {
  const calls: string[][] = [];
  const llm = {
    structured: async (req: { user: string; n?: number }) => {
      const records = readDataBlocks(req.user)[0]?.records ?? [];
      calls.push(records.map((r) => String(r.title)));
      const decisions = records.map((r, k) => ({ id: lost.has(String(r.title)) ? `x${k + 90}` : String(r.id), criteria: ["met"], include: false }));
      const one = { decisions };
      return { data: one, choices: Array.from({ length: req.n ?? 1 }, () => one), usage, modelVersion: "gpt-5-nano-2025-08-07" };
    },
  } as unknown as LlmClient;
  return { llm, calls };
}

const live = (llm: LlmClient) =>
  createLiveModel({ llm, frame, providerKey: undefined, signal: new AbortController().signal, config: defaultServiceConfig("screening"), reasoningAbstractChars: 100 });

describe("papers the model keeps losing", () => {
  it("are asked about alone, one paper per call, then come back short of votes with what went wrong (no throw)", async () => {
    const { llm, calls } = inventingLlm(new Set(["Paper 1"]));
    const result = await live(llm).label(papers.slice(0, 4), 3);
    expect(result.value.map((v) => v.length)).toEqual([3, 0, 3, 3]);
    // The batch, the left-out paper again with the batch's other short papers, then it alone (twice).
    expect(calls.at(-1)).toEqual(["Paper 1"]);
    expect(calls.filter((c) => c.length === 1 && c[0] === "Paper 1").length).toBeGreaterThanOrEqual(2);
    expect(result.trouble).toMatch(/named \d+ ids that were not asked about \(e\.g\. "x91"/);
  });

  it("keeps asking a paper alone while each call brings a vote (a provider that ignores n)", async () => {
    // Paper 2's id is mangled in every batch, but answered right when it is asked about alone; one choice per call.
    const calls: number[] = [];
    const llm = {
      structured: async (req: { user: string }) => {
        const records = readDataBlocks(req.user)[0]?.records ?? [];
        calls.push(records.length);
        const decisions = records.map((r, k) => ({ id: records.length > 1 && r.title === "Paper 2" ? `x${k + 90}` : String(r.id), criteria: ["met"], include: true }));
        const one = { decisions };
        return { data: one, choices: [one], usage: { ...usage, models: { m: 1 } }, modelVersion: "m" };
      },
    } as unknown as LlmClient;
    const result = await live(llm).label(papers.slice(0, 4), 4);
    expect(result.value.map((v) => v.length)).toEqual([4, 4, 4, 4]);
    expect(result.trouble).toBeUndefined();
    expect(calls.filter((n) => n === 1)).toHaveLength(4);
  });
});

const SETTINGS: PipelineSettings = { labelBatch: 4, reasonBatch: 4, clusterChunk: 10, assignBatch: 4, maxClusters: 3, callConcurrency: 2, maxLostShare: 0.25 };

function job(params: Record<string, unknown>): JobContext & { extras: JsonRecord[] } {
  const saved = new Map<string, Map<string, unknown>>();
  const extras: JsonRecord[] = [];
  return {
    jobId: "job-lost",
    state: {} as JobContext["state"],
    params,
    attempt: 1,
    signal: new AbortController().signal,
    providerKey: undefined,
    logger,
    extras,
    input: async <T>() => ({ papers, criteria, questions: [] }) as T,
    inputHead: async <T>() => ({ head: { criteria, questions: [] } as T, count: papers.length }),
    inputItems: <T>() =>
      (async function* () {
        for (let start = 0; start < papers.length; start += 5) yield structuredClone(papers.slice(start, start + 5)) as T[];
      })(),
    report: async (r) => void (r.extra && extras.push(r.extra)),
    leaseHeld: async () => undefined,
    checkpoints: {
      load: async <T>(stage: string) => new Map(saved.get(stage) ?? []) as Map<string, T>,
      save: async (stage, unit, data) => {
        if (!saved.has(stage)) saved.set(stage, new Map());
        saved.get(stage)!.set(unit, structuredClone(data));
      },
    },
    partials: { append: async () => undefined },
  };
}

async function items(outcome: JobOutcome): Promise<JsonRecord[]> {
  const chunks = outcome.items as ItemChunks;
  const out: JsonRecord[] = [];
  for (let n = 0; n < chunks.count; n++) out.push(...(await chunks.chunk(n)));
  return out;
}

/** The mock model, except that the papers titled in `lost` never get a vote (as a live model that lost them). */
const losing = (lost: ReadonlySet<string>) => (f: JobFrame): ScreeningModel => {
  const mock = createMockModel(f);
  return {
    ...mock,
    label: async (batch, r) => {
      const result = await mock.label(batch, r);
      const value = result.value.map((votes, i) => (lost.has(batch[i]!.title) ? [] : votes));
      const short = batch.some((p) => lost.has(p.title));
      return { value, usage: { ...result.usage, calls: 1, models: { "gpt-5-nano-2025-08-07": 1 } }, trouble: short ? 'it named 2 ids that were not asked about (e.g. "x90")' : undefined };
    },
  };
};

const params = { model: "llm-5-nano", model_resolved: "gpt-5-nano", repetitions: 3, threshold: 1, clusters_type: null, mock: false, priced: true };

describe("a job whose model loses papers", () => {
  it("completes with every paper: exactly the lost ones carry an error, and a decision that sends them to a human", async () => {
    const lost = new Set(["Paper 3", "Paper 8"]);
    const results = await items(await runScreeningPipeline(job(params), losing(lost), SETTINGS));
    expect(results).toHaveLength(12);
    const flagged = results.filter((r) => typeof r.error === "string" && (r.error as string).length > 0);
    expect(flagged.map((r) => r.id)).toEqual(["paper-3", "paper-8"]);
    for (const r of flagged) {
      expect(r).toMatchObject({ decision: "include", final_score: null, cluster_id: -1 });
      expect(r.error).toContain("'gpt-5-nano-2025-08-07'");
    }
    expect(results.filter((r) => r.error === undefined)).toHaveLength(10);
  });

  it("fails, naming the model, how many papers and what it returned, when it loses more than MAX_LOST_PAPER_SHARE", async () => {
    const error = await runScreeningPipeline(job(params), losing(new Set(papers.map((p) => p.title))), SETTINGS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PartialFailure);
    const failure = ServiceError.from((error as PartialFailure).failure);
    expect(failure.category).toBe("model_output");
    expect(failure.message).toMatch(/The model 'gpt-5-nano-2025-08-07' lost 4 of 12 papers, more than the 25% MAX_LOST_PAPER_SHARE allows: it named 2 ids that were not asked about/);
  });

  it("reports usage, actual cost and provenance with the models the provider reported while it runs and at the end", async () => {
    const context = job(params);
    const describe = () => ({
      model_requested: "llm-5-nano",
      model_resolved: "gpt-5-nano",
      models_used: [],
      service_version: { version: "0.1.0", commit: null },
      provider: { host: "api.openai.com", profile: "openai" },
      parameters: {},
      repetitions: 3,
      threshold: 1,
      decision_rule: "include when at least 1 of 3 votes say include",
      prompts: [],
    });
    const paid = (f: JobFrame): ScreeningModel => {
      const model = losing(new Set())(f);
      return { ...model, label: async (b, r) => ({ ...(await model.label(b, r)), usage: { calls: 1, input_tokens: 100, cached_input_tokens: 0, output_tokens: 10, cost_usd: 0.002, retries: 1, models: { "gpt-5-nano-2025-08-07": 1 } } }) };
    };
    const outcome = await runScreeningPipeline(context, paid, SETTINGS, describe);
    expect(outcome.extra).toMatchObject({
      usage: { calls: 3, retries: 3, input_tokens: 300, output_tokens: 10 * 3, total_tokens: 330, estimated_cost_usd: 0.006 },
      actual_cost_usd: 0.006,
      provenance: { model_resolved: "gpt-5-nano", models_used: [{ model: "gpt-5-nano-2025-08-07", calls: 3 }] },
    });
    // While running: the cost grows with the calls.
    const costs = context.extras.map((e) => e.actual_cost_usd as number);
    expect(costs.some((c) => c > 0 && c < 0.006)).toBe(true);
    // A mock job has no dollar cost.
    const mock = await runScreeningPipeline(job({ ...params, mock: true }), (f) => createMockModel(f), SETTINGS, describe);
    expect(mock.extra).toMatchObject({ actual_cost_usd: null, usage: { calls: 0 } });
  });
});
