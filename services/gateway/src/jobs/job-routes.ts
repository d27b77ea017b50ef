import type { FastifyReply, FastifyRequest } from "fastify";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { DEFAULT_JOB_OWNER, headers, jobDataObjects, operations, ServiceError, type JobService, type ObjectRef, type Operation } from "@litrev/contracts";
import { isActive, keyBindings, KeySealer, ownedBy, type MirrorEntry } from "@litrev/jobs/client";
import { callOperation, callOperationStreamed, probeOperation, SPILL_THRESHOLD_BYTES } from "@litrev/messaging";
import type { GatewayDeps } from "../app";
import { LiveJobsRegistry, type LiveJobs } from "./live-jobs";
import { PartCache } from "./part-cache";
import { providerKeyOf } from "../auth";

/** A finished job's poll body as the service answered it: whole, or in parts to stream. */
type StoredPoll = { body: string } | { parts: () => AsyncIterable<Uint8Array> };

export type JobRouteHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The list field of each kind's creation, staged by the gateway when large. */
const LIST_FIELD: Record<JobService, string> = { screening: "papers", indexer: "records" };
/** Lists of at least this many items are staged whatever the body's declared size. */
const STAGE_MIN_ITEMS = 1_000;

/** The job operations of each kind: the gateway serves both kinds by the same code. */
const JOB_OPERATIONS: Record<JobService, { create: Operation; get: Operation; active: Operation }> = {
  screening: { create: operations.createScreeningJob, get: operations.getScreeningJob, active: operations.activeScreeningJob },
  indexer: { create: operations.createIndexerJob, get: operations.getIndexerJob, active: operations.activeIndexerJob },
};

/**
 * The job-aware handlers of both job kinds, by operation (the routes and their schemas come
 * from the one route table, see routes/forwarded.ts). Creation seals the client's provider key
 * here, once, so only a worker can open it. Polls and active-job questions of pending and running
 * jobs are answered from this process's mirror of the live-state bucket (no NATS hop on the hot
 * path; a body is serialised once per state revision); everything else — terminal jobs, which the
 * owning service reads from its store of record — goes to the owning service.
 */
// `live` (the mirrors) is shared with the job event streams: one watch per job kind and gateway.
export function jobRouteHandlers(deps: GatewayDeps): { handlers: Map<Operation, JobRouteHandler>; live: LiveJobsRegistry; close: () => Promise<void> } {
  const sealer = KeySealer.fromEnv(deps.env);
  const live = new LiveJobsRegistry(deps.link, deps.logger);
  const bodies = new WeakMap<MirrorEntry, string>();
  const handlers = new Map<Operation, JobRouteHandler>();
  /**
   * Reads of jobs that are not active, in progress by service and job id: concurrent polls of one
   * finished job share one request to the service. A large result comes back as parts the service
   * parked as it read them (`StreamedBody`); each poll streams them to its client one part at a
   * time, so no process holds the whole body. A small one is serialised once and shared.
   */
  const storedReads = new Map<string, Promise<StoredPoll>>();
  const parts = new PartCache();
  const readStored = (operation: Operation, jobId: string, requestId: string, owner: string): Promise<StoredPoll> => {
    // Per owner too: the service answers another client's job with 404.
    const key = `${operation.service}/${jobId}/${owner}`;
    let read = storedReads.get(key);
    if (!read) {
      read = callOperationStreamed(deps.link, operation, { job_id: jobId }, { requestId, timeoutMs: deps.env.READ_TIMEOUT_MS, headers: { [headers.owner]: owner } }).then((reply) =>
        "data" in reply ? { body: JSON.stringify(reply.data) } : { parts: () => parts.stream(reply.parts, reply.readPart) },
      );
      storedReads.set(key, read);
      const forget = () => storedReads.delete(key);
      read.then(forget, forget);
    }
    return read;
  };

  /** The mirror, or null when it cannot be opened yet (no service has created the buckets): the service answers. */
  const opened = async (service: JobService): Promise<LiveJobs | null> => {
    try {
      return await live.get(service);
    } catch (error) {
      if (error instanceof ServiceError) throw error; // NATS down: a retryable 503
      deps.logger.debug({ err: error }, "job-state mirror unavailable; asking the service");
      return null;
    }
  };

  // The hot path: a cached body is sent synchronously; only a new state revision builds one.
  const send = (reply: FastifyReply, jobs: LiveJobs, entry: MirrorEntry): FastifyReply | Promise<FastifyReply> => {
    const body = bodies.get(entry);
    if (body !== undefined) return reply.type("application/json; charset=utf-8").send(body);
    return jobs.reader.active(entry).then((view) => {
      const built = JSON.stringify(view);
      bodies.set(entry, built);
      return reply.type("application/json; charset=utf-8").send(built);
    });
  };

  /**
   * A large creation's list (papers, records), written by this process to the service's job data
   * bucket as the job's input list, so that the body parsed here is never serialised, parked and
   * parsed again by the service: the service receives the rest of the request and the list's
   * reference. Null for small bodies (they travel inline) or before the service created its bucket.
   */
  const stageList = async (service: JobService, create: Operation, request: FastifyRequest): Promise<{ ref: ObjectRef; body: unknown } | null> => {
    const body = request.body as Record<string, unknown>;
    const field = LIST_FIELD[service];
    const list = body[field];
    const size = Number(request.headers["content-length"] ?? 0);
    if (!Array.isArray(list) || (size <= SPILL_THRESHOLD_BYTES && list.length < STAGE_MIN_ITEMS)) return null;
    const jobs = live.ready(service) ?? (await opened(service));
    if (!jobs) return null;
    // Stored only once a service is known to answer (no responder: the usual 503, nothing stored).
    // A list whose creation then fails is dropped by the service, or swept with the bucket's max age.
    await probeOperation(deps.link, create);
    const ref = await jobs.data.putLines(jobDataObjects.staged(randomUUID()), {}, list);
    return { ref, body: { ...body, [field]: [] } };
  };

  for (const service of ["screening", "indexer"] as const) {
    const ops = JOB_OPERATIONS[service];

    handlers.set(ops.create, async (request) => {
      const key = providerKeyOf(request);
      // The gateway names the job, so the client's provider key is sealed for that one job, and
      // the job belongs to the client whose service key created it.
      const jobId = randomUUID();
      const hdrs: Record<string, string> = {
        [headers.jobId]: jobId,
        [headers.owner]: ownerOf(request),
        ...(key ? { [headers.sealedProviderKey]: sealer.seal(key, keyBindings.job(service, jobId)) } : {}),
      };
      const staged = await stageList(service, ops.create, request);
      if (staged) hdrs[headers.stagedInput] = JSON.stringify(staged.ref);
      return callOperation(deps.link, ops.create, staged?.body ?? request.body, { requestId: request.id, headers: hdrs, timeoutMs: deps.env.RPC_TIMEOUT_MS });
    });

    handlers.set(ops.get, async (request, reply) => {
      const { job_id } = request.params as { job_id: string };
      const owner = ownerOf(request);
      const jobs = live.ready(service) ?? (await opened(service));
      const entry = jobs ? (jobs.mirror.get(job_id) ?? (await jobs.mirror.fetch(job_id))) : null;
      // Another client's job is not found (and its terminal state is not released by this poll).
      if (entry && !ownedBy(entry.state, owner)) throw jobNotFound();
      if (jobs && entry && isActive(entry.state)) return send(reply, jobs, entry);
      const stored = await readStored(ops.get, job_id, request.id, owner);
      reply.type("application/json; charset=utf-8");
      return "body" in stored ? reply.send(stored.body) : reply.send(Readable.from(stored.parts()));
    });

    handlers.set(ops.active, async (request, reply) => {
      const { project_id } = request.query as { project_id: number };
      const owner = ownerOf(request);
      const jobs = live.ready(service) ?? (await opened(service));
      if (!jobs) return callOperation(deps.link, ops.active, { project_id }, { requestId: request.id, timeoutMs: deps.env.READ_TIMEOUT_MS, headers: { [headers.owner]: owner } });
      const entry = await jobs.reader.activeEntry(project_id, owner);
      return entry ? send(reply, jobs, entry) : null;
    });
  }
  return { handlers, live, close: () => live.close() };
}

/** The owner id of the request's service key: the client its jobs belong to (docs/security.md). */
export function ownerOf(request: FastifyRequest): string {
  return request.principal?.owner ?? DEFAULT_JOB_OWNER;
}

const jobNotFound = () => new ServiceError("not_found", "Job not found", { simple: true });
