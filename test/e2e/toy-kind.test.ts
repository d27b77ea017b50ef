import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJobContract, JobStatus, registerJobKind, type JobKindRecord } from "@litrev/contracts";
import { defineJobKind, serveJobKind, type ServedJobKind } from "@litrev/jobs";
import { ConfigStore, NatsLink, PayloadStore, serveOperations, SharedRecords, type ServedOperations } from "@litrev/messaging";
import { DEFAULT_MODEL_ALIASES } from "@litrev/llm";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../scripts/lib/launch";
import { buildApp } from "../../services/gateway/src/app";
import { GatewayEnv } from "../../services/gateway/src/env";
import { http, waitFor } from "../support/stack";

/**
 * A job kind declared here and nowhere else, read through a gateway: docs/jobs.md's recipe, step by
 * step. The declaration (contract) and the pipeline (one stage) are the only two things written; the
 * gateway's routes, operations and OpenAPI rows come from them. Served in process against a real
 * nats-server.
 */

const KEY = "toy-kind-service-key-0123456789";
const logger = createLogger("toy-kind", process.env.TEST_LOG_LEVEL ?? "silent");

// 1. The contract: the kind's name, its list, its schemas and how a job reads, lists, exports and reports.
const Word = z.object({ id: z.string(), word: z.string() });
const Letters = z.object({ id: z.string(), letters: z.number().int(), error: z.string().nullable() });
const CreateToyJob = z.object({ words: z.array(Word).max(1000), model: z.string().default("llm-5-nano") });
const ToyJob = z.object({ job_id: z.string(), status: JobStatus, progress: z.number(), stage: z.string(), results: z.array(Letters).nullable(), error: z.string().nullable() });
const view = (record: JobKindRecord, items: unknown[] | null) => ({
  job_id: record.job_id,
  status: record.status,
  progress: record.progress,
  stage: record.stage,
  results: items,
  error: record.error,
});
const toy = registerJobKind(
  defineJobContract({
    name: "toy",
    title: "Toy",
    jobNoun: "toy job",
    description: "A kind declared by its test alone.",
    list: "words",
    inputKeys: { id: "id", title: "word", abstract: "word" },
    itemsField: "results",
    exclusiveProject: false,
    schemas: {
      create: CreateToyJob,
      job: ToyJob,
      listItem: ToyJob.pick({ job_id: true, status: true, progress: true, stage: true }),
      estimate: CreateToyJob,
      estimated: z.object({ estimated_cost_usd: z.number() }),
    },
    view: (record, results) => view(record, results?.items ?? null),
    listItem: (record) => ({ job_id: record.job_id, status: record.status, progress: record.progress, stage: record.stage }),
    export: {
      needsSample: () => false,
      isSample: () => true,
      table: () => ({ header: ["id", "letters"], row: (item) => [item.id, item.letters] }),
      line: () => (item) => item,
      ris: () => (item) => ({ keywords: [`letters: ${String(item.letters)}`], notes: [] }),
    },
    report: {
      task: "Counting the letters of words",
      title: (n) => `Letters of ${n} words`,
      methods: (report, { when, plural }) => [`The letters of ${plural(report.outcomes.items, "word", "words")} were counted on ${when}.`],
      limitations: ["A toy: it counts, nothing more."],
      noun: "words",
      outcomeField: "letters",
      votes: false,
      exclusionReasons: () => [],
      countField: "word_count",
    },
  }),
);

// 2. The pipeline: one stage, counting each word's letters ("wait" holds the job until it is cancelled).
const toyKind = defineJobKind({
  service: toy.name,
  createMessage: CreateToyJob,
  maxItems: 1000,
  defaultModel: "llm-5-nano",
  estimateOf: (request) => request,
  estimate: () => ({ estimated_cost_usd: 0 }),
  resultChars: (_request, count) => count * 100,
  ceilingScope: (_request, count) => `${count} words`,
  unmetered: () => true,
  admit: (request, { count }) => ({ config: { model: request.model, word_count: count }, params: {}, input: {}, modelVersion: "toy-1" }),
  run: async (ctx) => {
    await ctx.report({ stage: "counting", progress: 0 });
    const items = [];
    for await (const chunk of ctx.inputItems<z.infer<typeof Word>>("words")) {
      for (const { id, word } of chunk) {
        while (word === "wait" && !ctx.signal.aborted) await sleep(50);
        ctx.signal.throwIfAborted(); // a cancelled run stops, as a provider call would
        items.push({ id, letters: word.length, error: null });
      }
    }
    return { items };
  },
});

describe("a job kind declared in a test, read through a gateway", { timeout: 120_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let link: NatsLink;
  let served: ServedJobKind;
  let operations: ServedOperations;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let baseUrl: string;
  const steps: (() => Promise<void> | void)[] = [];
  const as = { headers: { "x-api-key": KEY } };
  const call = (method: string, path: string, body?: unknown) => http(baseUrl, method, path, body, as);

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-toy-kind-"));
    server = await startNatsServer({ storeDir });
    link = new NatsLink({ servers: server.url, name: "toy-kind" });
    const nc = await link.ready();
    await PayloadStore.create(nc, toy.name);
    const env = { JOB_KEY_SECRET: "toy-kind-job-key-secret-0123456789", JOB_CONCURRENCY: 2, JOB_ACK_WAIT_MS: 30_000, JOB_MAX_ATTEMPTS: 3, JOB_ORPHAN_LEASE_MS: 60_000, JOB_ORPHAN_SWEEP_MS: 30_000, JOB_RETENTION_MS: 3_600_000, JOB_STORE_RETENTION_MS: 3_600_000, OWNER_STORAGE_MB: 64, OWNER_MAX_LIVE_JOBS: 10 };
    const runtime = {
      nc,
      logger,
      instance: "toy-1",
      shutdown: { add: (_name: string, step: () => Promise<void> | void) => void steps.unshift(step) },
      model: (requested: string) => requested,
      llm: { modelAliases: DEFAULT_MODEL_ALIASES, hasDefaultKey: false },
      limits: await SharedRecords.open(nc),
    };
    served = await serveJobKind(runtime, env, toyKind);
    operations = serveOperations(nc, toy.name, served.handlers);
    app = await buildApp({
      env: GatewayEnv.parse({ NATS_URL: server.url, API_KEY: KEY, JOB_KEY_SECRET: env.JOB_KEY_SECRET }),
      logger,
      link,
      configStore: () => ConfigStore.open(nc),
    });
    baseUrl = await app.listen({ port: 0, host: "127.0.0.1" });
  });

  afterAll(async () => {
    await app?.close();
    await operations?.drain();
    for (const step of steps) await step();
    await link?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  it("creates, polls, lists, exports (CSV, JSON Lines), reports and streams a job of the kind", async () => {
    const created = await call("POST", "/v1/toy/jobs", { words: [{ id: "a", word: "alpha" }, { id: "b", word: "be" }] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = String(created.body.job_id);

    const done = await waitFor(async () => {
      const poll = await call("GET", `/v1/toy/jobs/${id}`);
      return poll.body.status === "completed" ? poll : null;
    }, 30_000);
    expect(done.body.results).toEqual([{ id: "a", letters: 5, error: null }, { id: "b", letters: 2, error: null }]);

    const listed = await call("GET", "/v1/toy/jobs");
    expect(listed.status).toBe(200);
    expect(listed.body.map((job: { job_id: string }) => job.job_id)).toContain(id);

    const csv = await call("GET", `/v1/toy/jobs/${id}/export?format=csv`);
    expect(csv.status).toBe(200);
    expect(String(csv.body).trim().split(/\r?\n/), String(csv.body)).toEqual(["id,title,letters", "a,alpha,5", "b,be,2"]);
    const lines = await call("GET", `/v1/toy/jobs/${id}/export?format=jsonl`);
    expect(lines.status).toBe(200);
    expect(String(lines.body).trim().split("\n").map((line) => JSON.parse(line).letters)).toEqual([5, 2]);

    const report = await call("GET", `/v1/toy/jobs/${id}/report?format=json`);
    expect(report.status).toBe(200);
    expect(JSON.stringify(report.body)).toContain("Counting the letters of words");
    const markdown = await call("GET", `/v1/toy/jobs/${id}/report`);
    expect(String(markdown.body)).toContain("Letters of 2 words");
    expect(String(markdown.body)).toContain("The letters of 2 words were counted on");
    expect(String(markdown.body)).not.toMatch(/screening|Data extraction/i);

    const events = await call("GET", `/v1/toy/jobs/${id}/events`);
    expect(events.status).toBe(200);
    expect(String(events.body)).toContain("completed");

    const estimate = await call("POST", "/v1/toy/estimate", { words: [] });
    expect(estimate.body, JSON.stringify(estimate.body)).toEqual({ estimated_cost_usd: 0 });
  });

  it("cancels and deletes a job of the kind; an unknown one is the one 404", async () => {
    const created = await call("POST", "/v1/toy/jobs", { words: [{ id: "w", word: "wait" }] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = String(created.body.job_id);
    await waitFor(async () => (await call("GET", `/v1/toy/jobs/${id}`)).body.status === "running" || null, 30_000);
    const cancelled = await call("POST", `/v1/toy/jobs/${id}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    await waitFor(async () => (await call("GET", `/v1/toy/jobs/${id}`)).body.status === "failed" || null, 30_000);
    expect((await call("DELETE", `/v1/toy/jobs/${id}`)).status).toBe(204);
    const gone = await call("GET", `/v1/toy/jobs/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: "Job not found" });
    expect((await call("GET", "/v1/toy/jobs/not-a-job")).body).toEqual({ detail: "Job not found" });
  });
});
