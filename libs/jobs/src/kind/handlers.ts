import { fitProvenance, headers, jobKind, parseOrIssues, ServiceError } from "@litrev/contracts";
import { loadModelAliases, noProviderKeyError } from "@litrev/llm";
import { handler, type HandlerContext, type HandlerEntry } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";
import { admitJob } from "../client/admission";
import { admissionJobId, creatorOf, jobProviderKey, projectConflictMessage, requestOwner } from "../client/ownership";
import type { JobReader } from "../client/reader";
import type { OwnerStorage } from "../owner-storage";
import type { KeySealer } from "../key-sealer";
import type { JobInfra } from "../infra";
import { stagedList } from "../list-input";
import { cancelJob, deleteJob } from "../job-cancel";
import { newJobState } from "../state";
import type { JobStore } from "../store/job-store";
import type { JobKind, KindRequest } from "./define";
import { JobPricing } from "./pricing";

export interface KindHandlerDeps {
  infra: JobInfra;
  store: JobStore;
  reader: JobReader;
  sealer: KeySealer;
  logger: Logger;
  orphanLeaseMs: number;
  /** Prices through the live alias table; default: the environment's aliases (tests without a provider client). */
  pricing?: JobPricing;
  /** Per-owner storage quotas, checked at admission (none: unlimited). */
  storage?: OwnerStorage | undefined;
  /** The job's model when the request named none: the service config's, else the spec's default. */
  chooseModel?: (requested: string, specDefault: string) => string;
  /** Whether the service has a provider key of its own (a job without one needs the client's). */
  hasProviderKey?: () => boolean;
}

type AnyKind = JobKind<KindRequest & Record<string, unknown>, { model: string }>;

/**
 * A job kind's operations: create (admission), estimate, get, list, active, write-artifact, cancel and delete.
 * Polls of running jobs are normally answered by the gateway's mirror; the service answers the
 * rest through the reader every kind shares. Reads see only the requesting client's jobs.
 */
export function jobKindHandlers<C extends KindRequest, E extends { model: string }>(declared: JobKind<C, E>, deps: KindHandlerDeps): HandlerEntry[] {
  const kind = declared as unknown as AnyKind;
  const pricing = deps.pricing ?? new JobPricing(() => loadModelAliases());
  const withModel = <R extends { model: string }>(request: R): R =>
    deps.chooseModel ? { ...request, model: deps.chooseModel(request.model, kind.defaultModel) } : request;
  const ops = jobKind(kind.service).operations;
  const { reader } = deps;
  const cancelDeps = { infra: deps.infra, store: deps.store, logger: deps.logger, prompts: kind.prompts, storage: deps.storage };
  return [
    // The list may be empty over NATS: the gateway stages a large list and sends its reference.
    handler({ ...ops.create, request: kind.createMessage }, (request, ctx) => admitKindJob(kind, deps, pricing, withModel(request as KindRequest & Record<string, unknown>), ctx)),
    handler(ops.get, async (request, ctx) => reader.get((request as { job_id: string }).job_id, requestOwner(ctx.header), kind.prompts)),
    handler(ops.list, async (request, ctx) => reader.list((request as { limit: number }).limit, requestOwner(ctx.header))),
    handler(ops.active, async (request, ctx) => reader.activeForProject((request as { project_id: number }).project_id, requestOwner(ctx.header))),
    // A finished job without an artifact gets one from the store of record; the gateway then reads it.
    handler(ops.artifact, async (request, ctx) => {
      await reader.ensureArtifact((request as { job_id: string }).job_id, requestOwner(ctx.header), kind.prompts);
      return { written: true };
    }),
    // Cancel and delete: ended (and erased) by whichever replica takes the request; a running job's worker is told on the cancel subject.
    handler(ops.cancel, async (request, ctx) => {
      const { job_id } = request as { job_id: string };
      const owner = requestOwner(ctx.header);
      await cancelJob(cancelDeps, job_id, owner);
      return reader.get(job_id, owner, kind.prompts);
    }),
    handler(ops.delete, async (request, ctx) => {
      await deleteJob(cancelDeps, (request as { job_id: string }).job_id, requestOwner(ctx.header));
      return { deleted: true };
    }),
    // Priced with the model a job of the same request would use, through the same alias table.
    handler(ops.estimate, async (request) => {
      const priced = withModel(request as { model: string });
      pricing.require(priced.model); // no estimate from a guessed price
      await kind.beforeEstimate?.(priced);
      return kind.estimate(priced, pricing.table());
    }),
  ];
}

/**
 * A create request, in the spec's order, in one pass of `admitJob`: the list (staged or inline),
 * the estimate and the price through the live aliases, orphans of the project reaped, a second
 * active job refused (409) where the kind holds the project, the cost ceiling (400), acceptance.
 */
export async function admitKindJob(
  kind: AnyKind,
  deps: KindHandlerDeps,
  pricing: JobPricing,
  request: KindRequest & Record<string, unknown>,
  ctx: Pick<HandlerContext, "header">,
): Promise<Record<string, unknown>> {
  const { service } = kind;
  // A list the gateway stored itself arrives as a reference: never parsed here.
  const staged = stagedList(ctx.header(headers.stagedInput), kind.maxItems);
  const items = (request[jobKind(kind.service).list] ?? []) as unknown[];
  if (!staged && items.length === 0) throw emptyList(kind, request);
  const count = staged?.lines ?? items.length;
  const unmetered = kind.unmetered?.(request) ?? false;
  // A job that would fail at its first call with `auth` is refused now, as the synchronous routes refuse it.
  if (!unmetered && !ctx.header(headers.sealedProviderKey) && !(deps.hasProviderKey?.() ?? true)) throw noProviderKeyError();
  // A job that calls a provider needs a price: its estimate is a figure, never null (400 naming MODEL_PRICES).
  const price = unmetered ? pricing.price(request.model) : pricing.require(request.model);
  const estimated = price.known ? kind.estimate(kind.estimateOf(request, count), pricing.table()) : null;
  const estimate = estimated?.estimated_cost_usd ?? 0;
  // The kind's forecast of the bill goes with the job beside the spec's figure (a mock job has no bill).
  const forecast =
    estimated?.forecast_cost_usd != null && !unmetered ? { forecast_cost_usd: estimated.forecast_cost_usd, forecast_provider_n: estimated.forecast_provider_n ?? null } : {};
  const ceiling = request.max_estimated_cost_usd;
  const capped = ceiling !== null && ceiling !== undefined && !unmetered;
  const checkCeiling = () => {
    if (!capped || estimate <= ceiling) return;
    throw new ServiceError(
      "validation",
      `Estimated cost $${estimate.toFixed(6)} exceeds the limit of $${ceiling} (max_estimated_cost_usd) for ${kind.ceilingScope(request, count)}`,
      { simple: true },
    );
  };

  // The gateway chose the id: the client's provider key is sealed for this one job.
  const jobId = admissionJobId(ctx.header);
  const owner = creatorOf(ctx.header);
  const projectId = request.project_id ?? null;
  const job = kind.admit(request, { count, resolved: pricing.resolve(request.model), priced: price.known });
  const state = newJobState({
    jobId,
    service,
    projectId,
    owner,
    modelVersion: job.modelVersion,
    config: job.config,
    // Only a mock job (which calls no provider) may name an unpriced model: it records 0, what it costs.
    estimatedCostUsd: estimate,
    extra: {
      ...job.extra,
      ...forecast,
      usage: {},
      actual_cost_usd: unmetered ? null : 0,
      ...(job.provenance ? { provenance: fitProvenance(job.provenance) } : {}),
    },
  });
  const admitted = await admitJob(deps.infra, deps.store, {
    state,
    // Stored as a chunked list that the worker reads chunk by chunk (see docs/jobs.md).
    input: staged ? job.input : { [jobKind(kind.service).list]: items, ...job.input },
    list: jobKind(kind.service).list,
    staged,
    // The ceiling and the price at admission go with the job: its cost meter ends a run that crosses it.
    params: { ...job.params, ...(capped ? { cost_ceiling: pricing.ceiling(ceiling, price) } : {}) },
    // A job that never calls a provider keeps no key at all.
    sealedProviderKey: unmetered ? null : jobProviderKey(deps.sealer, service, jobId, ctx.header),
    check: checkCeiling,
    storage: deps.storage ? { quota: deps.storage, resultBytes: kind.resultChars(request, count) } : undefined,
    orphanLeaseMs: deps.orphanLeaseMs,
    logger: deps.logger,
  });
  // The project lock is global; the 409 names the holder's job id only to the holder's own client (docs/security.md).
  if (!admitted.ok) throw new ServiceError("conflict", projectConflictMessage(service, projectId!, admitted.conflict, owner), { simple: true });
  deps.logger.info({ job_id: jobId, items: count, project_id: projectId }, `${service} job queued`);
  return { job_id: jobId, status: "pending", progress: 0, ...kind.accepted };
}

/** Without a staged list the request must carry its items: the HTTP contract's (`schemas.create`) own refusal. */
function emptyList(kind: AnyKind, request: Record<string, unknown>): ServiceError {
  const { schemas, list } = jobKind(kind.service);
  const checked = parseOrIssues(schemas.create, { ...request, [list]: [] }, "body");
  return new ServiceError("validation", "Request validation failed", checked.success ? {} : { issues: checked.issues });
}
