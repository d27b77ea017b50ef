import { randomUUID } from "node:crypto";
import {
  CreateIndexerJobRequest,
  MAX_INDEXER_JOB_RECORDS,
  parseOrIssues,
  ServiceError,
  type CreateIndexerJobResponse,
  type ServiceConfigResponse,
} from "@litrev/contracts";
import { admitJob, newJobState, stagedList, type JobInfra, type JobStore, type KeySealer } from "@litrev/jobs";
import type { Logger } from "@litrev/telemetry";
import { estimateIndexer } from "../estimate";
import type { IndexerJobInput, IndexerLiveExtra } from "./job-input";

export interface AdmissionDeps {
  infra: JobInfra;
  store: JobStore;
  sealer: KeySealer;
  logger: Logger;
  config: () => ServiceConfigResponse;
  resolveModel: (model: string) => string;
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
  key: { plain?: string | undefined; sealed?: string | undefined },
  /** Header `x-litrev-staged-input`: the records, already stored by the gateway as a chunked list. */
  stagedHeader?: string,
): Promise<CreateIndexerJobResponse> {
  const jobId = randomUUID();
  const staged = stagedList(stagedHeader, MAX_INDEXER_JOB_RECORDS);
  if (!staged && request.records.length === 0) {
    const checked = parseOrIssues(CreateIndexerJobRequest, { ...request, records: [] }, "body");
    throw new ServiceError("validation", "Request validation failed", checked.success ? {} : { issues: checked.issues });
  }
  const recordCount = staged?.lines ?? request.records.length;
  const estimate = estimateIndexer({ fields: request.fields, record_count: recordCount, model: request.model }, deps.config());
  const extra: IndexerLiveExtra = { records_done: 0, record_count: recordCount };
  const state = newJobState({
    jobId,
    service: "indexer",
    projectId: request.project_id ?? null,
    // The provider's dated model string replaces this once the first record is answered.
    modelVersion: deps.resolveModel(request.model),
    config: { model: request.model, mode: request.mode, record_count: recordCount, fields_count: request.fields.length },
    estimatedCostUsd: estimate.estimated_cost_usd,
    extra: extra as Record<string, unknown>,
  });
  const settings: Omit<IndexerJobInput, "records"> = { fields: request.fields, model: request.model, project_context: request.project_context ?? null };
  // Stored as a chunked list that the worker reads chunk by chunk (see docs/jobs.md).
  const input: Omit<IndexerJobInput, "records"> & { records?: IndexerJobInput["records"] } = staged ? settings : { records: request.records, ...settings };
  await admitJob(deps.infra, deps.store, {
    state,
    input,
    list: "records",
    staged,
    // A gateway that seals the key itself sends only the sealed form; otherwise it is sealed here.
    sealedProviderKey: key.sealed ?? (key.plain ? deps.sealer.seal(key.plain) : null),
    logger: deps.logger,
  });
  return { job_id: jobId, status: "pending", progress: 0 };
}
