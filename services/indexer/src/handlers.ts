import { DEFAULT_MODEL, operations } from "@litrev/contracts";
import type { LlmClient } from "@litrev/llm";
import { handler, type HandlerEntry } from "@litrev/messaging";
import type { ServiceRuntime } from "@litrev/runtime";
import { groupTagsLive } from "./helpers/group-tags";
import { mockGroupTags, mockRefineFields, mockSuggestFields } from "./helpers/mock";
import { refineFieldsLive } from "./helpers/refine-fields";
import { suggestFieldsLive } from "./helpers/suggest-fields";
import { runIndexer } from "./run-handler";

export interface IndexerDeps {
  runtime: Pick<ServiceRuntime, "config" | "model">;
  llm: LlmClient;
  /** Time budget of a synchronous run (INDEXER_RUN_BUDGET_MS). */
  runBudgetMs: number;
}

/** The indexer's synchronous operations; job operations (and the estimate, priced as jobs are) come from jobs/job-kind.ts. */
export function indexerHandlers({ runtime, llm, runBudgetMs }: IndexerDeps): HandlerEntry[] {
  // A request without `model` uses the service config's model, else the spec's default.
  const withModel = <R extends { model: string }>(req: R, specDefault: string): R => ({ ...req, model: runtime.model(req.model, specDefault) });
  return [
    handler(operations.indexerRun, async (req, ctx) =>
      runIndexer(llm, runtime.config(), withModel(req, DEFAULT_MODEL.indexerRun), { providerKey: ctx.providerKey, budgetMs: runBudgetMs, signal: ctx.signal }),
    ),
    handler(operations.suggestFields, async (req, ctx) =>
      req.mock
        ? mockSuggestFields(req)
        : suggestFieldsLive(llm, runtime.config(), withModel(req, DEFAULT_MODEL.indexerSuggestFields), ctx.providerKey, ctx.signal),
    ),
    handler(operations.refineFields, async (req, ctx) =>
      req.mock
        ? mockRefineFields(req)
        : refineFieldsLive(llm, runtime.config(), withModel(req, DEFAULT_MODEL.indexerSuggestFields), ctx.providerKey, ctx.signal),
    ),
    handler(operations.groupTags, async (req, ctx) =>
      req.mock
        ? mockGroupTags(req)
        : groupTagsLive(llm, runtime.config(), withModel(req, DEFAULT_MODEL.indexerSuggestFields), ctx.providerKey, ctx.signal),
    ),
  ];
}
