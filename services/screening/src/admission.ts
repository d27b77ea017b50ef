import { randomUUID } from "node:crypto";
import {
  CreateScreeningJobRequest,
  headers,
  MAX_SCREENING_PAPERS,
  parseOrIssues,
  ServiceError,
  type CreateScreeningJobResponse,
  type ScreeningJobInput,
  type ScreeningJobParams,
} from "@litrev/contracts";
import { admitJob, newJobState, stagedList, type JobInfra, type JobStore, type KeySealer, type ProjectConflict } from "@litrev/jobs";
import type { HandlerContext } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";
import { estimateScreening } from "./estimate";
import type { PipelineSettings } from "./pipeline/run";

export interface AdmissionDeps {
  infra: JobInfra;
  store: JobStore;
  sealer: KeySealer;
  logger: Logger;
  orphanLeaseMs: number;
  pipeline: PipelineSettings;
}

/**
 * POST /v1/screening/jobs, in the spec's order, in one pass of `admitJob`: orphans of the project
 * are reaped, a second active job for it is refused (409), the cost ceiling is checked (400, not
 * for mock), then the job is accepted atomically (the project slot is a KV create-if-absent, so any
 * number of gateway and service replicas agree) and queued.
 */
export async function admitScreeningJob(
  deps: AdmissionDeps,
  request: CreateScreeningJobRequest,
  ctx: HandlerContext,
): Promise<CreateScreeningJobResponse> {
  const projectId = request.project_id ?? null;
  // The gateway stores a large list of papers itself and sends only its reference: never parsed here.
  const staged = stagedList(ctx.header(headers.stagedInput), MAX_SCREENING_PAPERS);
  if (!staged && request.papers.length === 0) throw noPapers(request);
  const papersCount = staged?.lines ?? request.papers.length;
  const estimate = estimateScreening({
    papers_count: papersCount,
    model: request.model,
    repetitions: request.repetitions,
    criteria_count: request.criteria.length,
  });
  const ceiling = request.max_estimated_cost_usd;
  const checkCeiling = () => {
    if (ceiling === null || ceiling === undefined || request.mock || estimate.estimated_cost_usd <= ceiling) return;
    throw new ServiceError(
      "validation",
      `Estimated cost $${estimate.estimated_cost_usd.toFixed(6)} exceeds the limit of $${ceiling} ` +
        `(max_estimated_cost_usd) for ${papersCount} papers × ${request.repetitions} repetitions`,
      { simple: true },
    );
  };

  const jobId = randomUUID();
  const params: ScreeningJobParams = {
    model: request.model,
    repetitions: request.repetitions,
    threshold: request.threshold,
    clusters_type: request.clusters_type ?? null,
    mock: request.mock,
  };
  const state = newJobState({
    jobId,
    service: "screening",
    projectId,
    modelVersion: request.model,
    config: {
      model: request.model,
      repetitions: request.repetitions,
      threshold: request.threshold,
      clusters_type: request.clusters_type ?? null,
      mock: request.mock,
      papers_count: papersCount,
      criteria_count: request.criteria.length,
    },
    estimatedCostUsd: estimate.estimated_cost_usd,
  });
  // Stored as a chunked list that the worker reads chunk by chunk (see docs/jobs.md).
  const input: Omit<ScreeningJobInput, "papers"> & { papers?: ScreeningJobInput["papers"] } = staged
    ? { criteria: request.criteria, questions: request.questions }
    : { papers: request.papers, criteria: request.criteria, questions: request.questions };
  // Orphans of the project, then its one active job (409), then the cost ceiling, then acceptance: one pass.
  const admitted = await admitJob(deps.infra, deps.store, {
    state,
    input,
    list: "papers",
    staged,
    params: { ...params, pipeline: deps.pipeline },
    // Mock jobs never call a provider: no key is kept for them at all.
    sealedProviderKey: request.mock ? null : sealedKey(deps.sealer, ctx),
    check: checkCeiling,
    orphanLeaseMs: deps.orphanLeaseMs,
    logger: deps.logger,
  });
  if (!admitted.ok) throw conflict(projectId!, admitted.conflict);
  deps.logger.info({ job_id: jobId, papers: papersCount, mock: request.mock, project_id: projectId }, "screening job queued");
  return { job_id: jobId, status: "pending", progress: 0, stage: "" };
}

/** Without a staged list the request must carry its papers: the HTTP contract's own refusal. */
function noPapers(request: CreateScreeningJobRequest): ServiceError {
  const checked = parseOrIssues(CreateScreeningJobRequest, { ...request, papers: [] }, "body");
  return new ServiceError("validation", "Request validation failed", checked.success ? {} : { issues: checked.issues });
}

function conflict(projectId: number, holder: ProjectConflict): ServiceError {
  return new ServiceError(
    "conflict",
    `A screening job for project ${projectId} is already ${holder.status} (job_id ${holder.job_id}); wait for it to finish before starting another`,
    { simple: true },
  );
}

/** The gateway seals the client's key; a caller on NATS that sent it in clear gets it sealed here. */
function sealedKey(sealer: KeySealer, ctx: HandlerContext): string | null {
  const sealed = ctx.header(headers.sealedProviderKey);
  if (sealed) return sealed;
  return ctx.providerKey ? sealer.seal(ctx.providerKey) : null;
}
