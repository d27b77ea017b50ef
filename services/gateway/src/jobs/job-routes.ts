import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { randomUUID } from "node:crypto";
import { ActiveJobQuery, headers, JobIdParams, jobKind, jobKindRoutes, jobDataObjects, JOB_SERVICES, type JobService, type ObjectRef, type Operation, jsonRecord } from "@litrev/contracts";
import { keyBindings, KeySealer, RecallCertificates, type MirrorEntry } from "@litrev/jobs/client";
import { callOperation, probeOperation, SPILL_THRESHOLD_BYTES } from "@litrev/messaging";
import type { GatewayDeps } from "../deps";
import { forwarder, type ForwardedHandler } from "../routes/forwarded";
import { exportRoutes } from "./export-routes";
import { jobEventRoutes } from "./job-events";
import { LiveJobsRegistry, type LiveJobs } from "./live-jobs";
import { JobPolls } from "./job-polls";
import { ownerOf } from "./owner";
import { validationRoutes } from "./validation-route";
import type { OffLoopParser } from "../off-loop-parse";
import { providerKeyOf } from "../auth";
import { declaredBytes, StorageRefusals } from "./storage-refusals";

/** Lists of at least this many items are staged whatever the body's declared size. */
const STAGE_MIN_ITEMS = 1_000;

/**
 * Every job kind's routes, registered in one loop over the registry of kinds (`JOB_SERVICES`): the
 * forwarded ones (routes and schemas from the contract's table) with their job-aware handlers, then
 * export, report and events. Creation seals the client's provider key here, once, so only a worker
 * can open it. Polls go through the gateway's one poll reader (`JobPolls`: active jobs from the
 * mirror, finished jobs from their finished body); active-job questions of pending and running jobs
 * are answered from this process's mirror of the live-state bucket (no NATS hop on the hot path; a
 * body is serialised once per state revision).
 */
export function jobRoutes(deps: GatewayDeps, offLoop: OffLoopParser): FastifyPluginAsync {
  return async (untyped) => {
    const app = untyped.withTypeProvider<ZodTypeProvider>();
    // `live` (the mirrors) is shared with the job event streams: one watch per job kind and gateway.
    const live = new LiveJobsRegistry(deps.link, deps.logger);
    const polls = new JobPolls(deps, live);
    app.addHook("onClose", () => live.close());
    const refusals = new StorageRefusals();
    live.onFreed = (service, owner) => refusals.forget(service, owner);
    const handlersOf = kindHandlers(deps, live, polls, refusals);
    const route = forwarder(deps);
    // A creation its service just refused for its owner's storage is refused again before its body is read.
    const creations = new Map<string, JobService>();
    for (const service of JOB_SERVICES) {
      for (const forwarded of jobKindRoutes(jobKind(service))) if (forwarded.operation === jobKind(service).operations.create) creations.set(forwarded.key, service);
    }
    app.addHook("onRequest", (request, _reply, done) => {
      const service = creations.get(request.routeOptions.config?.operation ?? "");
      if (!service || !request.principal) return done();
      done(refusals.check(service, ownerOf(request), declaredBytes(request.headers["content-length"])) ?? undefined);
    });
    const exports = exportRoutes(app, polls, new RecallCertificates(() => deps.link.connection()));
    const events = jobEventRoutes(app, deps, live, polls);
    for (const service of JOB_SERVICES) {
      const handlers = handlersOf(service);
      for (const forwarded of jobKindRoutes(jobKind(service))) route(app, forwarded, handlers.get(forwarded.operation));
      exports(service);
      events(service);
    }
    // Screening's validation: reads the job through the same poll reader as the poll route.
    await app.register(validationRoutes(deps, polls, offLoop));
  };
}

/** The job-aware handlers of each kind, by operation. */
function kindHandlers(deps: GatewayDeps, live: LiveJobsRegistry, polls: JobPolls, refusals: StorageRefusals): (service: JobService) => Map<Operation, ForwardedHandler> {
  const sealer = KeySealer.fromEnv(deps.env);
  const opened = (service: JobService) => polls.opened(service);

  // The hot path: a cached body is sent synchronously; only a new state revision builds one.
  const send = (reply: FastifyReply, jobs: LiveJobs, entry: MirrorEntry): FastifyReply | Promise<FastifyReply> => {
    const body = polls.active(jobs, entry);
    if (typeof body === "string") return reply.type("application/json; charset=utf-8").send(body);
    return body.then((built) => reply.type("application/json; charset=utf-8").send(built));
  };

  /**
   * A large creation's list (papers, records), written by this process to the service's job data
   * bucket as the job's input list, so that the body parsed here is never serialised, parked and
   * parsed again by the service: the service receives the rest of the request and the list's
   * reference. Null for small bodies (they travel inline) or before the service created its bucket.
   */
  const stageList = async (service: JobService, create: Operation, request: FastifyRequest): Promise<{ ref: ObjectRef; body: unknown } | null> => {
    const body = jsonRecord(request.body);
    const field = jobKind(service).list;
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

  return (service) => {
    const handlers = new Map<Operation, ForwardedHandler>();
    const ops = jobKind(service).operations;

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
      return callOperation(deps.link, ops.create, staged?.body ?? request.body, { requestId: request.id, headers: hdrs, timeoutMs: deps.env.RPC_TIMEOUT_MS }).catch((error: unknown) => {
        if (refusals.note(service, ownerOf(request), declaredBytes(request.headers["content-length"]), error)) {
          // The service's mirror tells this gateway when the owner's jobs end (and so free storage).
          void live.get(service).catch(() => undefined);
        }
        throw error;
      });
    });

    handlers.set(ops.get, async (request, reply) => {
      const { job_id } = JobIdParams.parse(request.params);
      const poll = await polls.read(service, job_id, ownerOf(request), request.id);
      // A finished job too large for one body is streamed: a heavy read, counted like an export (docs/limits.md).
      if (JobPolls.isLarge(poll)) await request.countHeavyRead(reply);
      return JobPolls.send(reply, poll);
    });

    // Cancel and delete are decided by the owning service (any replica; it reaches the worker holding the job).
    handlers.set(ops.cancel, async (request) => {
      const { job_id } = JobIdParams.parse(request.params);
      return callOperation(deps.link, ops.cancel, { job_id }, { requestId: request.id, timeoutMs: deps.env.RPC_TIMEOUT_MS, headers: { [headers.owner]: ownerOf(request) } });
    });

    handlers.set(ops.delete, async (request, reply) => {
      const { job_id } = JobIdParams.parse(request.params);
      await callOperation(deps.link, ops.delete, { job_id }, { requestId: request.id, timeoutMs: deps.env.RPC_TIMEOUT_MS, headers: { [headers.owner]: ownerOf(request) } });
      polls.forget(service, job_id);
      return reply.code(204).send();
    });

    handlers.set(ops.active, async (request, reply) => {
      const { project_id } = ActiveJobQuery.parse(request.query);
      const owner = ownerOf(request);
      const jobs = live.ready(service) ?? (await opened(service));
      if (!jobs) return callOperation(deps.link, ops.active, { project_id }, { requestId: request.id, timeoutMs: deps.env.READ_TIMEOUT_MS, headers: { [headers.owner]: owner } });
      const entry = await jobs.reader.activeEntry(project_id, owner);
      return entry ? send(reply, jobs, entry) : null;
    });
    return handlers;
  };
}
