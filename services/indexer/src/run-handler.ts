import type { IndexerRunRequest, IndexerRunResponse, ServiceConfigResponse } from "@litrev/contracts";
import { toContractUsage, type LlmClient } from "@litrev/llm";
import { extractionPlan } from "./pipeline/plan";
import { mockExtractionCaller } from "./pipeline/mock-extraction";
import { runExtraction } from "./pipeline/run";

/**
 * POST /v1/indexer/run: every selected record (the contract already applied `mode`), at most
 * `max_workers` provider calls at a time. Per-record failures are reported in `errors`; a fatal
 * provider error (bad key, no quota, rate limit beyond retries) fails the request. The run answers
 * within its time budget: records it could not reach are returned as `not_processed`. A mock run
 * (`mock: true`) answers canned placeholder values without calling the provider.
 */
export async function runIndexer(
  llm: LlmClient,
  config: ServiceConfigResponse,
  request: IndexerRunRequest,
  options: { providerKey: string | undefined; budgetMs: number; signal?: AbortSignal | undefined },
): Promise<IndexerRunResponse> {
  const plan = extractionPlan(request, config, options.providerKey);
  // Mock mode: canned values through the same pipeline, no provider call (and no key needed).
  const caller = request.mock ? mockExtractionCaller(plan.specs) : llm;
  const summary = await runExtraction(caller, plan, request.records, {
    concurrency: request.max_workers,
    batchSize: request.batch_size,
    deadlineMs: options.budgetMs,
    signal: options.signal,
  });
  return {
    // OutputRecord is the contract's record; TypeScript cannot express "ID and status, then fields".
    results: summary.outcomes.map((o) => o.record as IndexerRunResponse["results"][number]),
    errors: summary.outcomes.flatMap((o) => (o.error ? [o.error] : [])),
    usage: toContractUsage(summary.usage),
    // No call made (every abstract empty): the model that would have answered.
    model_version: summary.modelVersion ?? llm.resolveModel(request.model),
  };
}
