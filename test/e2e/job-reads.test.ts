import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { indexerKind, screeningKind, type CreateScreeningJobRequest } from "@litrev/contracts";
import { ArtifactWriter, jobKindHandlers, JobMirror, JobReader, KeySealer, MemoryJobStore, NoJobStore, openJobInfra, PartialReader, type JobHandler, type JobInfra, type JobStore } from "@litrev/jobs";
import type { HandlerContext, HandlerEntry } from "@litrev/messaging";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../scripts/lib/launch";
import { screeningJobKind } from "../../services/screening/src/job-kind";
import { indexerJobKind } from "../../services/indexer/src/jobs/job-kind";

/**
 * The services' own job reads and admission, driven directly against a real nats-server (no
 * worker runs, so jobs stay where the test puts them): what a poll gets when the gateway's mirror
 * is not there, what active-job answers for a project with several jobs, and how often admission
 * looks for orphans.
 */

const logger = createLogger("job-reads-test", process.env.TEST_LOG_LEVEL ?? "silent");
const sealer = KeySealer.fromSecret("unit-test-secret-0123456789");
const ctx: HandlerContext = { subject: "test", requestId: "r", providerKey: undefined, header: () => undefined, signal: new AbortController().signal };
const pipeline = { labelBatch: 5, reasonBatch: 5, clusterChunk: 120, assignBatch: 40, maxClusters: 8, callConcurrency: 4 };
// No worker runs here: jobs stay where the test puts them.
const run: JobHandler = () => Promise.reject(new Error("no worker in this suite"));
const indexerConfig = () => ({ service_id: "extraction", model: "llm-5-mini", system_prompt: "", prompt_template_id: "indexer.extraction", temperature: 0, max_output_tokens: 4096, extra: {} });

function op(entries: HandlerEntry[], name: string) {
  const entry = entries.find((e) => e.operation.name === name);
  if (!entry) throw new Error(`no handler for ${name}`);
  return (input: unknown) => entry.handle(input, ctx);
}

const screeningRequest = (projectId: number): CreateScreeningJobRequest => ({
  papers: [{ id: "p1", title: "A trial", abstract: "Adults." }],
  criteria: [{ name: "Adults", type: "include", value: "Adults only" }],
  questions: [],
  model: "llm-5-nano",
  repetitions: 1,
  threshold: 1,
  mock: true,
  project_id: projectId,
});

describe("service-side job reads and admission", { timeout: 60_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let screening: JobInfra;
  let indexer: JobInfra;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-job-reads-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    [screening, indexer] = await Promise.all([openJobInfra(nc, "screening"), openJobInfra(nc, "indexer")]);
  });
  const mirrors: JobMirror[] = [];
  async function readerOf(infra: JobInfra, store: JobStore) {
    const mirror = await JobMirror.open(nc, infra.service, logger);
    mirrors.push(mirror);
    return new JobReader(infra.service, mirror, infra.data, new PartialReader(infra.data), store);
  }

  afterAll(async () => {
    for (const mirror of mirrors) mirror.stop();
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  it("a running screening job is found by the service itself (the gateway's fallback), not 404", async () => {
    const store = new NoJobStore();
    const handlers = jobKindHandlers(screeningJobKind({ pipeline, run }), { infra: screening, store, reader: await readerOf(screening, store), sealer, logger, orphanLeaseMs: 60_000 });
    const created = (await op(handlers, screeningKind.operations.create.name)(screeningRequest(601))) as { job_id: string };
    const polled = (await op(handlers, screeningKind.operations.get.name)({ job_id: created.job_id })) as { status: string };
    expect(polled.status).toBe("pending");
    await screening.queue.discard(created.job_id);
  });

  it("answers another owner's job as not found on the service's own path, before a terminal poll could release it", async () => {
    const store = new MemoryJobStore();
    const handlers = jobKindHandlers(screeningJobKind({ pipeline, run }), { infra: screening, store, reader: await readerOf(screening, store), sealer, logger, orphanLeaseMs: 60_000 });
    const as = (owner: string, name: string) => {
      const entry = handlers.find((e: HandlerEntry) => e.operation.name === name)!;
      const header = (h: string) => (h === "x-litrev-owner" ? owner : undefined);
      return (input: unknown) => entry.handle(input, { ...ctx, header });
    };
    const created = (await as("alice", screeningKind.operations.create.name)(screeningRequest(604))) as { job_id: string };
    const id = created.job_id;
    await screening.queue.discard(id);
    expect((await screening.registry.get(id))?.state.owner).toBe("alice");
    expect((await store.getJob(id))?.owner).toBe("alice");
    await expect(as("bob", screeningKind.operations.get.name)({ job_id: id })).rejects.toMatchObject({ category: "not_found" });
    expect(await as("bob", screeningKind.operations.active.name)({ project_id: 604 })).toBeNull();
    expect(((await as("alice", screeningKind.operations.active.name)({ project_id: 604 })) as { job_id: string }).job_id).toBe(id);
    // Each client's project ids are its own: Bob's creation for 604 takes his own slot, and each
    // one's 409 names only that client's job.
    const conflict = (owner: string) => as(owner, screeningKind.operations.create.name)(screeningRequest(604)).then(() => "", (e: Error) => e.message);
    const bobs = ((await as("bob", screeningKind.operations.create.name)(screeningRequest(604))) as { job_id: string }).job_id;
    await screening.queue.discard(bobs);
    expect(bobs).not.toBe(id);
    expect(await conflict("alice")).toContain(id);
    expect(await conflict("alice")).not.toContain(bobs);
    expect(await conflict("bob")).toContain(bobs);
    expect(await conflict("bob")).not.toMatch(new RegExp(`${id}|another service key`));
    expect(((await as("bob", screeningKind.operations.active.name)({ project_id: 604 })) as { job_id: string }).job_id).toBe(bobs);
    expect(((await as("alice", screeningKind.operations.active.name)({ project_id: 604 })) as { job_id: string }).job_id).toBe(id);

    // Finished, stored and releasable: Bob's poll neither reads nor releases it; Alice's does.
    await screening.registry.update(id, (s) => ({ ...s, status: "completed", progress: 1, completed_at: new Date().toISOString(), releasable: true }));
    const row = { ...(await store.getJob(id))!, status: "completed" as const, completed_at: new Date().toISOString() };
    // As its worker would: the artifact (the results' only home), then the row.
    await new ArtifactWriter(screening.data, "screening", id, row.fence).finish(row);
    await store.upsertJob(row);
    await screening.registry.releaseLock(604, id, "alice");
    await expect(as("bob", screeningKind.operations.get.name)({ job_id: id })).rejects.toMatchObject({ category: "not_found" });
    expect(await screening.registry.get(id)).not.toBeNull();
    expect(((await as("alice", screeningKind.operations.get.name)({ job_id: id })) as { status: string }).status).toBe("completed");
    expect(await screening.registry.get(id)).toBeNull();
    await expect(as("bob", screeningKind.operations.get.name)({ job_id: id })).rejects.toMatchObject({ category: "not_found" });
    expect(((await as("alice", screeningKind.operations.get.name)({ job_id: id })) as { status: string }).status).toBe("completed");
    const listed = async (owner: string) => ((await as(owner, screeningKind.operations.list.name)({ limit: 10 })) as { job_id: string }[]).map((j) => j.job_id);
    expect(await listed("alice")).toContain(id);
    expect(await listed("bob")).not.toContain(id);
    // A caller that names no owner (on NATS, not through the gateway) is not checked.
    expect(((await op(handlers, screeningKind.operations.get.name)({ job_id: id })) as { job_id: string }).job_id).toBe(id);
  });

  it("screening admission looks for the project's orphans once", async () => {
    const store = new MemoryJobStore();
    const lookups = vi.spyOn(store, "activeJobs");
    const handlers = jobKindHandlers(screeningJobKind({ pipeline, run }), { infra: screening, store, reader: await readerOf(screening, store), sealer, logger, orphanLeaseMs: 60_000 });
    const created = (await op(handlers, screeningKind.operations.create.name)(screeningRequest(602))) as { job_id: string };
    expect(lookups).toHaveBeenCalledTimes(1);
    await screening.queue.discard(created.job_id);
  });

  it("indexer active-job finds a project's second running job after the first one ended", async () => {
    const store = new NoJobStore();
    const handlers = jobKindHandlers(indexerJobKind({ config: indexerConfig, run }), { infra: indexer, store, reader: await readerOf(indexer, store), sealer, logger, orphanLeaseMs: 60_000 });
    const createIndexerJob = (input: unknown) => op(handlers, indexerKind.operations.create.name)(input) as Promise<{ job_id: string }>;
    const request = { records: [{ ID: "1", Title: "t", Abstract: "a" }], fields: [], model: "llm-5-mini", mode: "full" as const, project_id: 603 };
    const first = await createIndexerJob(request);
    const second = await createIndexerJob(request);
    for (const job of [first, second]) {
      await indexer.registry.update(job.job_id, (s) => ({ ...s, status: "running", started_at: new Date().toISOString() }));
    }
    // The first one ends the way a worker ends it.
    await indexer.registry.update(first.job_id, (s) => ({ ...s, status: "completed", completed_at: new Date().toISOString() }));
    await indexer.registry.releaseLock(603, first.job_id, undefined);

    const reader = await readerOf(indexer, store);
    expect(((await reader.activeForProject(603)) as { job_id: string } | null)?.job_id).toBe(second.job_id);
    for (const job of [first, second]) await indexer.queue.discard(job.job_id);
  });

  it("polling a running indexer job does not read its checkpoints", async () => {
    const store = new NoJobStore();
    const handlers = jobKindHandlers(indexerJobKind({ config: indexerConfig, run }), { infra: indexer, store, reader: await readerOf(indexer, store), sealer, logger, orphanLeaseMs: 60_000 });
    const createIndexerJob = (input: unknown) => op(handlers, indexerKind.operations.create.name)(input) as Promise<{ job_id: string }>;
    const request = { records: [{ ID: "1", Title: "t", Abstract: "a" }], fields: [], model: "llm-5-mini", mode: "full" as const, project_id: null };
    const job = await createIndexerJob(request);
    await indexer.registry.update(job.job_id, (s) => ({ ...s, status: "running", started_at: new Date().toISOString() }));
    const loads = vi.spyOn(indexer.checkpoints, "load");
    const reader = await readerOf(indexer, store);
    for (let i = 0; i < 5; i++) expect(((await reader.get(job.job_id)) as { status: string }).status).toBe("running");
    expect(loads).not.toHaveBeenCalled();
    loads.mockRestore();
    await indexer.queue.discard(job.job_id);
  });
});
