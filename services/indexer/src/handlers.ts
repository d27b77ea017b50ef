import { operations } from "@litrev/contracts";
import type { LlmClient } from "@litrev/llm";
import { handler, type HandlerEntry } from "@litrev/messaging";
import type { ServiceRuntime } from "@litrev/runtime";
import { estimateIndexer } from "./estimate";
import { groupTagsLive } from "./helpers/group-tags";
import { mockSuggestFields } from "./helpers/mock";
import { refineFieldsLive } from "./helpers/refine-fields";
import { suggestFieldsLive } from "./helpers/suggest-fields";
import { runIndexer } from "./run-handler";

export interface IndexerDeps {
  runtime: Pick<ServiceRuntime, "config">;
  llm: LlmClient;
  /** Time budget of a synchronous run (INDEXER_RUN_BUDGET_MS). */
  runBudgetMs: number;
}

/** The indexer's synchronous operations; job operations come from jobs/wiring.ts. */
export function indexerHandlers({ runtime, llm, runBudgetMs }: IndexerDeps): HandlerEntry[] {
  return [
    handler(operations.indexerRun, async (req, ctx) =>
      runIndexer(llm, runtime.config(), req, { providerKey: ctx.providerKey, budgetMs: runBudgetMs }),
    ),
    handler(operations.estimateIndexer, async (req) => estimateIndexer(req, runtime.config())),
    handler(operations.suggestFields, async (req, ctx) =>
      req.mock ? mockSuggestFields(req) : suggestFieldsLive(llm, runtime.config(), req, ctx.providerKey),
    ),
    handler(operations.refineFields, async (req, ctx) => refineFieldsLive(llm, runtime.config(), req, ctx.providerKey)),
    handler(operations.groupTags, async (req, ctx) => groupTagsLive(llm, runtime.config(), req, ctx.providerKey)),
  ];
}
