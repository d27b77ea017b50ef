import {
  CreateIndexerJobRequest,
  headers,
  LIMIT_CEILINGS,
  parseOrIssues,
  ServiceError,
  type CreateIndexerJobResponse,
  type Provenance,
  type ServiceConfigResponse,
} from "@litrev/contracts";
import type { ExtractionPlan } from "../pipeline/extract-record";
import { extractionPlan } from "../pipeline/plan";
import { admissionJobId, admitJob, creatorOf, jobProviderKey, newJobState, stagedList, type JobInfra, type JobStore, type KeySealer } from "@litrev/jobs";
import type { Logger } from "@litrev/telemetry";
import { costCeiling, priceFor, requirePrice } from "@litrev/llm";
import { estimateIndexer } from "../estimate";
import type { IndexerJobInput, IndexerJobParams, IndexerLiveExtra } from "./job-input";

export interface AdmissionDeps {
  infra: JobInfra;
  store: JobStore;
  sealer: KeySealer;
  logger: Logger;
  config: () => ServiceConfigResponse;
  resolveModel: (model: string) => string;
  /** `JOB_ORPHAN_LEASE_MS`: the admission beats its pending job's heartbeat well within it. */
  orphanLeaseMs?: number;
  /** The job's provenance as admitted (pinned model, prompts, settings); the run refreshes it. */
  describe?: (input: { model: string; resolved: string; plan: ExtractionPlan }) => Provenance;
}

/**
 * POST /v1/indexer/jobs: stores the input (Object Store), writes the pending state (so a poll
 * right after the answer finds it) and queues the command. The client's provider key is kept only
 * sealed (AES-256-GCM under JOB_KEY_SECRET) in the command; the worker opens it. Indexer jobs have
 * no one-per-project rule (`JOB_KINDS`: the spec gives them no 409), so several may run for one project.
 */
export async function createIndexerJob(
  deps: AdmissionDeps,
  request: CreateIndexerJobRequest,
  header: (name: string) => string | undefined,
): Promise<CreateIndexerJobResponse> {
  // The gateway chose the id: the client's provider key is sealed for this one job.
  const jobId = admissionJobId(header);
  // The records, already stored by the gateway as a chunked list (large creations).
  const staged = stagedList(header(headers.stagedInput), LIMIT_CEILINGS.records);
  if (!staged && request.records.length === 0) {
    const checked = parseOrIssues(CreateIndexerJobRequest, { ...request, records: [] }, "body");
    throw new ServiceError("validation", "Request validation failed", checked.success ? {} : { issues: checked.issues });
  }
  const recordCount = staged?.lines ?? request.records.length;
  const estimate = estimateIndexer({ fields: request.fields, record_count: recordCount, model: request.model }, deps.config());
  const ceiling = request.max_estimated_cost_usd;
  const capped = ceiling !== null && ceiling !== undefined;
  // A ceiling needs a price: without one it could be neither checked nor metered (400 naming MODEL_PRICES).
  const price = capped ? requirePrice(request.model) : priceFor(request.model);
  if (capped && estimate.estimated_cost_usd > ceiling) {
    throw new ServiceError(
      "validation",
      `Estimated cost $${estimate.estimated_cost_usd.toFixed(6)} exceeds the limit of $${ceiling} (max_estimated_cost_usd) for ${recordCount} records`,
      { simple: true },
    );
  }
  // Pinned: every call of this job goes to what the alias means now; a later remap is for new jobs.
  const resolved = deps.resolveModel(request.model);
  const jobParams: IndexerJobParams = { model_resolved: resolved, priced: price.known };
  const settings: Omit<IndexerJobInput, "records"> = { fields: request.fields, model: request.model, project_context: request.project_context ?? null };
  const provenance = deps.describe?.({ model: request.model, resolved, plan: extractionPlan(settings, deps.config()) });
  const extra: IndexerLiveExtra = {
    records_done: 0,
    record_count: recordCount,
    usage: {},
    actual_cost_usd: price.known ? 0 : null,
    ...(provenance ? { provenance } : {}),
  };
  const state = newJobState({
    jobId,
    service: "indexer",
    projectId: request.project_id ?? null,
    owner: creatorOf(header),
    // The provider's dated model string replaces this once the first record is answered.
    modelVersion: resolved,
    config: { model: request.model, mode: request.mode, record_count: recordCount, fields_count: request.fields.length },
    // No price, no figure: an unpriced model's estimate would be a guess.
    estimatedCostUsd: price.known ? estimate.estimated_cost_usd : null,
    extra: extra as Record<string, unknown>,
  });
  // Stored as a chunked list that the worker reads chunk by chunk (see docs/jobs.md).
  const input: Omit<IndexerJobInput, "records"> & { records?: IndexerJobInput["records"] } = staged ? settings : { records: request.records, ...settings };
  await admitJob(deps.infra, deps.store, {
    state,
    input,
    list: "records",
    staged,
    // Kept sealed for the worker, as the gateway sealed it for this job.
    sealedProviderKey: jobProviderKey(deps.sealer, "indexer", jobId, header),
    // The ceiling and the price at admission go with the job: the handler's cost meter ends a run that crosses it.
    params: { ...jobParams, ...(capped ? { cost_ceiling: costCeiling(ceiling, price) } : {}) },
    orphanLeaseMs: deps.orphanLeaseMs,
    logger: deps.logger,
  });
  return { job_id: jobId, status: "pending", progress: 0 };
}
