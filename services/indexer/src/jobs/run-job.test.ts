import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { defaultServiceConfig, readDataBlocks, ServiceError, type IndexerField, type IndexerRecord, type LlmUsage } from "@litrev/contracts";
import { PartialFailure, type JobContext, type JobOutcome } from "@litrev/jobs";
import { LlmAbortError, type StructuredResult } from "@litrev/llm";
import { createLogger } from "@litrev/telemetry";
import type { StructuredCaller } from "../pipeline/extract-record";
import { indexerJobHandler } from "./run-job";

const fields: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];
const records: IndexerRecord[] = Array.from({ length: 10 }, (_, i) => ({ ID: i, Title: `Record ${i}`, Abstract: `Abstract of record ${i}.` }));
/** Records per stored input chunk: small, so that the calls in flight straddle chunk ends. */
const INPUT_CHUNK = 3;
const logger = createLogger("indexer-test", "silent");
const MODEL = "gpt-5-mini-2025-08-07";

/** A job context over `records`, with checkpoints in a map that outlives a run (as the checkpoint stream does). */
function jobContext(saved = new Map<string, unknown>()): JobContext & { saved: typeof saved; extras: Record<string, unknown>[] } {
  const extras: Record<string, unknown>[] = [];
  return {
    jobId: "job-1",
    state: {} as JobContext["state"],
    params: { model_resolved: "gpt-5-mini", priced: true },
    attempt: 1,
    signal: new AbortController().signal,
    providerKey: undefined,
    logger,
    saved,
    extras,
    input: async <T>() => ({ records, fields, model: "llm-5-mini" }) as T,
    inputHead: async <T>() => ({ head: { fields, model: "llm-5-mini", project_context: null } as T, count: records.length }),
    inputItems: <T>() =>
      (async function* () {
        for (let start = 0; start < records.length; start += INPUT_CHUNK) yield structuredClone(records.slice(start, start + INPUT_CHUNK)) as T[];
      })(),
    report: async (r) => void (r.extra && extras.push(r.extra)),
    leaseHeld: async () => undefined,
    checkpoints: {
      load: async <T>() => new Map(saved) as Map<string, T>,
      save: async (_stage, unit, data) => void saved.set(unit, structuredClone(data)),
    },
    partials: { append: async () => undefined },
  };
}

/** The provider: `reply(id, signal)` decides how each record's call goes (its delay, a failure). */
function caller(reply: (id: number, signal: AbortSignal | undefined) => Promise<void> = () => delay(1)) {
  const started: number[] = [];
  const inFlight = new Set<number>();
  /** For each call, the records whose calls were in flight when it started. */
  const alongside = new Map<number, number[]>();
  const llm: StructuredCaller = {
    async structured(request) {
      const id = Number(String(readDataBlocks(request.user)[0]?.records[0]?.title).replace("Record ", ""));
      started.push(id);
      alongside.set(id, [...inFlight]);
      inFlight.add(id);
      try {
        await reply(id, request.signal);
        const usage: LlmUsage = { calls: 1, input_tokens: 100, cached_input_tokens: 0, output_tokens: 10, cost_usd: 0.001, retries: 0, models: { [MODEL]: 1 } };
        return { data: {}, choices: [{}], usage, modelVersion: MODEL } as StructuredResult<never>;
      } finally {
        inFlight.delete(id);
      }
    },
  };
  return { llm, started, alongside };
}

const handler = (llm: StructuredCaller, concurrency: number) => indexerJobHandler({ llm, config: () => defaultServiceConfig("extraction"), concurrency });

/** Every checkpoint a whole run saves. */
async function collectCheckpoints(): Promise<Map<string, unknown>> {
  const ctx = jobContext();
  await handler(caller().llm, 3)(ctx);
  return ctx.saved;
}

async function failureOf(run: Promise<JobOutcome>): Promise<PartialFailure> {
  const error = await run.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(PartialFailure);
  return error as PartialFailure;
}

describe("the indexer's job loop", () => {
  it("sets no barrier at an input chunk's end: a slow call stays in flight while the next chunks' records are called", async () => {
    // Record 0 answers late; the others at once. With a drain per chunk, records 3… would wait for it.
    const provider = caller((id) => delay(id === 0 ? 100 : 2));
    const outcome = await handler(provider.llm, 2)(jobContext());
    expect(provider.started.filter((id) => provider.alongside.get(id)?.includes(0))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect((outcome.items as { ID: number }[]).map((item) => item.ID)).toEqual(records.map((r) => r.ID));
  });

  it("resumes from checkpoints: a redelivered job calls only the records without one, and its result and usage are a fresh run's", async () => {
    const saved = new Map<string, unknown>();
    const auth = new ServiceError("auth", "The language-model provider rejected the API key");
    const failing = caller(async (id) => {
      await delay(1);
      if (id === 5) throw auth;
    });
    const failure = await failureOf(handler(failing.llm, 1)(jobContext(saved)));
    expect(failure.failure.category).toBe("auth");
    // The failed job keeps the records it finished, each checkpointed.
    expect((failure.partial.items as { ID: number }[]).map((item) => item.ID)).toEqual([0, 1, 2, 3, 4]);
    expect([...saved.keys()].sort()).toEqual(["0", "1", "2", "3", "4"]);

    const resumed = caller();
    const outcome = await handler(resumed.llm, 3)(jobContext(saved));
    expect(resumed.started.sort((a, b) => a - b)).toEqual([5, 6, 7, 8, 9]);
    const fresh = await handler(caller().llm, 3)(jobContext());
    expect(outcome.items).toEqual(fresh.items);
    expect(outcome.extra).toEqual(fresh.extra);
    expect(outcome.extra?.usage).toMatchObject({ input_tokens: 1000, output_tokens: 100, calls: 10 });
  });

  it("restores checkpoints written before usage had one shape, counting their calls, tokens and model", async () => {
    const fresh = await handler(caller().llm, 3)(jobContext());
    const saved = new Map<string, unknown>();
    for (const [unit, checkpoint] of (await collectCheckpoints()).entries()) {
      const { usage, ...rest } = checkpoint as { usage: LlmUsage };
      const earlier = { inputTokens: usage.input_tokens, cachedInputTokens: usage.cached_input_tokens, outputTokens: usage.output_tokens, totalTokens: 110, costUsd: usage.cost_usd };
      // The oldest ones had no reply count: one reply, as the provider answered them.
      saved.set(unit, { ...rest, usage: earlier, modelVersion: MODEL, ...(Number(unit) % 2 ? { requests: 1, retries: 0 } : {}) });
    }
    const resumed = caller();
    const outcome = await handler(resumed.llm, 3)(jobContext(saved));
    expect(resumed.started).toEqual([]);
    expect(outcome.items).toEqual(fresh.items);
    expect(outcome.extra).toEqual(fresh.extra);
  });

  it("cancels the calls in flight at a fatal provider error, and keeps none of them", async () => {
    const cancelled: number[] = [];
    const provider = caller(async (id, signal) => {
      if (id === 1) {
        await delay(5);
        throw new ServiceError("quota", "The provider account has no quota left");
      }
      try {
        await delay(1_000, undefined, { signal });
      } catch {
        cancelled.push(id);
        throw new LlmAbortError(signal?.reason);
      }
    });
    const started = Date.now();
    const failure = await failureOf(handler(provider.llm, 3)(jobContext()));
    expect(failure.failure.category).toBe("quota");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(cancelled.sort()).toEqual([0, 2]);
    expect(failure.partial.items).toEqual([]);
  });

  it("asks the provider as a job: every call is `background`, so the provider's rate limit slows it but never fails it", async () => {
    const { llm } = caller();
    const flags: unknown[] = [];
    const recording: StructuredCaller = { structured: (request) => (flags.push(request.background), llm.structured(request)) };
    await handler(recording, 3)(jobContext());
    expect(flags).toEqual(Array<boolean>(records.length).fill(true));
  });
});
