import { operations, type Operation } from "./operations";

/**
 * How each operation uses the client's provider key (`X-LLM-API-Key`): `request` — the service
 * calls the provider while answering (the key is sealed for that one request); `job` — a job
 * admission keeps it for its worker (sealed for that one job). Operations not listed never get a
 * key: the gateway does not forward one to them.
 */
export type ProviderKeyUse = "request" | "job";

const USES = new Map<Operation, ProviderKeyUse>([
  [operations.analyzeQuestion, "request"],
  [operations.generateCriteria, "request"],
  [operations.picos, "request"],
  [operations.refineContext, "request"],
  [operations.refineCriteria, "request"],
  [operations.consolidate, "request"],
  [operations.indexerRun, "request"],
  [operations.suggestFields, "request"],
  [operations.refineFields, "request"],
  [operations.groupTags, "request"],
  [operations.createScreeningJob, "job"],
  [operations.createIndexerJob, "job"],
]);

export const providerKeyUse = (operation: Operation): ProviderKeyUse | undefined => USES.get(operation);

