import {
  CreateScreeningJobRequest,
  headers,
  LIMIT_CEILINGS,
  parseOrIssues,
  ServiceError,
  type CreateScreeningJobResponse,
  type Provenance,
  type ScreeningCriterion,
  type ScreeningJobInput,
  type ScreeningJobParams,
} from "@litrev/contracts";
import {
  admissionJobId,
  admitJob,
  creatorOf,
  jobProviderKey,
  newJobState,
  stagedList,
  projectConflictMessage,
  type JobInfra,
  type JobStore,
  type KeySealer,
  type ProjectConflict,
} from "@litrev/jobs";
import type { HandlerContext } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";
import { costCeiling, priceFor, requirePrice, resolveModel } from "@litrev/llm";
import { estimateScreening, type ProviderProfile } from "./estimate";
import type { PipelineSettings } from "./pipeline/run";

export interface AdmissionDeps {
  infra: JobInfra;
  store: JobStore;
  sealer: KeySealer;
  logger: Logger;
  orphanLeaseMs: number;
  pipeline: PipelineSettings;
  /** The live alias table (prices follow an alias to its model); default: the environment's. */
  aliases?: () => Readonly<Record<string, string>>;
  /** The job's provenance as admitted (pinned model, prompts, settings); the run refreshes it. */
  describe?: (params: ScreeningJobParams, criteria: ScreeningCriterion[], questions: string[]) => Provenance;
  /** What the provider does with `n` (declared or learned): estimates and ceilings bill votes by it. */
  provider?: () => ProviderProfile;
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
  const staged = stagedList(ctx.header(headers.stagedInput), LIMIT_CEILINGS.papers);
  if (!staged && request.papers.length === 0) throw noPapers(request);
  const papersCount = staged?.lines ?? request.papers.length;
  const aliases = deps.aliases?.();
  const estimate = estimateScreening(
    { papers_count: papersCount, model: request.model, repetitions: request.repetitions, criteria_count: request.criteria.length },
    aliases,
    deps.provider?.(),
  );
  const ceiling = request.max_estimated_cost_usd;
  const metered = ceiling !== null && ceiling !== undefined && !request.mock;
  // A ceiling needs a price: without one it could be neither checked nor metered (400 naming MODEL_PRICES).
  const price = metered ? requirePrice(request.model, aliases) : priceFor(request.model, aliases);
  const checkCeiling = () => {
    if (ceiling === null || ceiling === undefined || request.mock || estimate.estimated_cost_usd <= ceiling) return;
    throw new ServiceError(
      "validation",
      `Estimated cost $${estimate.estimated_cost_usd.toFixed(6)} exceeds the limit of $${ceiling} ` +
        `(max_estimated_cost_usd) for ${papersCount} papers × ${request.repetitions} repetitions`,
      { simple: true },
    );
  };

  // The gateway chose the id: the client's provider key is sealed for this one job.
  const jobId = admissionJobId(ctx.header);
  const owner = creatorOf(ctx.header);
  const params: ScreeningJobParams = {
    model: request.model,
    // Pinned: every call of this job goes to what the alias means now; a later remap is for new jobs.
    model_resolved: resolveModel(request.model, aliases),
    repetitions: request.repetitions,
    threshold: request.threshold,
    clusters_type: request.clusters_type ?? null,
    mock: request.mock,
    priced: price.known,
  };
  const provenance = deps.describe?.(params, request.criteria, request.questions);
  const state = newJobState({
    jobId,
    service: "screening",
    projectId,
    owner,
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
    // No price, no figure: an unpriced model's estimate would be a guess.
    estimatedCostUsd: price.known ? estimate.estimated_cost_usd : null,
    extra: { usage: {}, actual_cost_usd: request.mock || !price.known ? null : 0, ...(provenance ? { provenance } : {}) },
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
    // The ceiling and the price at admission go with the job: its cost meter ends a run that crosses it.
    params: { ...params, pipeline: deps.pipeline, ...(metered ? { cost_ceiling: costCeiling(ceiling, price) } : {}) },
    // Mock jobs never call a provider: no key is kept for them at all.
    sealedProviderKey: request.mock ? null : jobProviderKey(deps.sealer, "screening", jobId, ctx.header),
    check: checkCeiling,
    orphanLeaseMs: deps.orphanLeaseMs,
    logger: deps.logger,
  });
  if (!admitted.ok) throw conflict(projectId!, admitted.conflict, owner);
  deps.logger.info({ job_id: jobId, papers: papersCount, mock: request.mock, project_id: projectId }, "screening job queued");
  return { job_id: jobId, status: "pending", progress: 0, stage: "" };
}

/** Without a staged list the request must carry its papers: the HTTP contract's own refusal. */
function noPapers(request: CreateScreeningJobRequest): ServiceError {
  const checked = parseOrIssues(CreateScreeningJobRequest, { ...request, papers: [] }, "body");
  return new ServiceError("validation", "Request validation failed", checked.success ? {} : { issues: checked.issues });
}

/** The project lock is global; the 409 names the holder's job id only to the holder's own client (docs/security.md). */
function conflict(projectId: number, holder: ProjectConflict, owner: string): ServiceError {
  return new ServiceError("conflict", projectConflictMessage("screening", projectId, holder, owner), { simple: true });
}
