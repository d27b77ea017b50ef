import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  ActiveJobQuery,
  ClassifiedErrorBody,
  CreateScreeningJobRequest,
  headers,
  JobIdParams,
  operations,
  ServiceError,
  SimpleErrorBody,
  toScreeningJob,
  ValidationErrorBody,
  type ScreeningJob,
} from "@litrev/contracts";
import { isActive, KeySealer, type MirrorEntry } from "@litrev/jobs";
import { callOperation } from "@litrev/messaging";
import type { GatewayDeps } from "../app";
import { LiveJobsRegistry, type LiveJobs } from "./live-jobs";

/** Operations this plugin serves itself; the generic forwarding skips them. */
export const JOB_ROUTE_OPERATIONS: ReadonlySet<string> = new Set(["createScreeningJob", "getScreeningJob", "activeScreeningJob"]);

interface ResultObject {
  items: unknown[];
  result: { clusters?: unknown[] };
}

/**
 * The job-aware screening routes. Creation seals the client's provider key (only workers can open
 * it) and hands the job to the screening service for admission. Polls and active-job queries are
 * answered from this process's mirror of the live-state bucket (no NATS hop on the hot path; a
 * body is serialised once per state revision); a miss reads the bucket directly, and a job that is
 * no longer live is read from the service's storage.
 */
export function screeningJobRoutes(deps: GatewayDeps): FastifyPluginAsync {
  const sealer = KeySealer.fromSecret(deps.env.JOB_KEY_SECRET);
  const bodies = new WeakMap<MirrorEntry, string>();

  return async (app) => {
    const live = new LiveJobsRegistry(deps.link, deps.logger);
    app.addHook("onClose", () => live.close());
    /**
     * The mirror, or null when it cannot be opened yet (no screening service has created the
     * buckets): the owning service then answers, as it would for any job no longer live.
     */
    const openedOrNull = async (service: "screening") => {
      try {
        return await live.get(service);
      } catch (error) {
        if (error instanceof ServiceError) throw error; // NATS down: a retryable 503
        deps.logger.debug({ err: error }, "job-state mirror unavailable; asking the service");
        return null;
      }
    };

    app.post(
      "/v1/screening/jobs",
      {
        schema: {
          summary: "Start a screening job",
          tags: ["screening"],
          body: CreateScreeningJobRequest,
          response: {
            200: operations.createScreeningJob.response,
            400: ValidationErrorBody.or(SimpleErrorBody),
            401: ClassifiedErrorBody,
            409: SimpleErrorBody,
            500: ClassifiedErrorBody,
          },
        },
      },
      async (request) => {
        const key = providerKeyOf(request);
        return callOperation(deps.link, operations.createScreeningJob, request.body as CreateScreeningJobRequest, {
          requestId: request.id,
          headers: key ? { [headers.sealedProviderKey]: sealer.seal(key) } : {},
          timeoutMs: deps.env.RPC_TIMEOUT_MS,
        });
      },
    );

    app.get(
      "/v1/screening/jobs/:job_id",
      {
        schema: {
          summary: "Poll a screening job",
          tags: ["screening"],
          params: JobIdParams,
          response: { 200: operations.getScreeningJob.response, 401: ClassifiedErrorBody, 404: SimpleErrorBody },
        },
      },
      async (request, reply) => {
        const { job_id } = request.params as JobIdParams;
        const jobs = live.ready("screening") ?? (await openedOrNull("screening"));
        const entry = jobs ? (jobs.mirror.get(job_id) ?? (await jobs.mirror.fetch(job_id))) : null;
        if (entry && isActive(entry.state)) return sendEntry(reply, entry);
        if (jobs && entry) {
          const first = await firstTerminalRead(jobs, job_id, entry);
          if (first) return first;
        }
        return callOperation(deps.link, operations.getScreeningJob, { job_id }, { requestId: request.id, timeoutMs: deps.env.READ_TIMEOUT_MS });
      },
    );

    app.get(
      "/v1/screening/active-job",
      {
        schema: {
          summary: "The pending or running screening job of a project, or null",
          tags: ["screening"],
          querystring: ActiveJobQuery,
          response: { 200: operations.activeScreeningJob.response, 401: ClassifiedErrorBody },
        },
      },
      async (request, reply) => {
        const { project_id } = request.query as ActiveJobQuery;
        const jobs = live.ready("screening") ?? (await openedOrNull("screening"));
        if (!jobs) {
          return callOperation(deps.link, operations.activeScreeningJob, { project_id }, { requestId: request.id, timeoutMs: deps.env.READ_TIMEOUT_MS });
        }
        const entry = await jobs.mirror.activeForProject(project_id);
        return entry ? sendEntry(reply, entry) : null;
      },
    );
  };

  /** A running job's body, serialised once per revision of its state. */
  function sendEntry(reply: FastifyReply, entry: MirrorEntry): FastifyReply {
    let body = bodies.get(entry);
    if (body === undefined) {
      body = JSON.stringify(toScreeningJob(entry.state));
      bodies.set(entry, body);
    }
    return reply.type("application/json; charset=utf-8").send(body);
  }
}

/**
 * The spec's "a terminal job leaves the live registry the first time it is polled": only the poll
 * whose compare-and-set delete wins answers from the live entry (with the stored result object);
 * any other reader falls through to storage.
 */
async function firstTerminalRead(jobs: LiveJobs, jobId: string, entry: MirrorEntry): Promise<ScreeningJob | null> {
  const ref = entry.state.status === "completed" ? entry.state.result : null;
  let outcome: { results: unknown[]; clusters: unknown[] } | null = null;
  if (ref) {
    const stored = await jobs.data.getJson<ResultObject>(ref.object);
    if (!stored) return null; // expired: storage is the only source left
    outcome = { results: stored.items, clusters: stored.result.clusters ?? [] };
  } else if (entry.state.status === "completed") {
    return null;
  }
  if (!(await jobs.mirror.removeIfUnchanged(jobId, entry))) return null;
  if (ref) void jobs.data.delete(ref.object);
  return toScreeningJob(entry.state, outcome);
}

function providerKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[headers.providerKey];
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}
