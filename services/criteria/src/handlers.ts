import { operations, ServiceError, type Operation } from "@litrev/contracts";
import { handler, type HandlerEntry, type OperationHandler } from "@litrev/messaging";
import * as mock from "./mock";

/** The live (provider-backed) answers; absent until a provider layer is wired in. */
export interface LiveCriteria {
  analyzeQuestion: LiveFn<typeof operations.analyzeQuestion>;
  generate: LiveFn<typeof operations.generateCriteria>;
  picos: LiveFn<typeof operations.picos>;
  refineContext: LiveFn<typeof operations.refineContext>;
  refine: LiveFn<typeof operations.refineCriteria>;
  consolidate: LiveFn<typeof operations.consolidate>;
}
type LiveFn<O> = O extends Operation<infer Req, infer Res> ? OperationHandler<Req, Res> : never;

function noLive(): never {
  throw new ServiceError("not_implemented", "Live criteria requests are not available in this build; send mock: true");
}

/** Mock requests never reach `live`, so they need no provider and no key. */
export function criteriaHandlers(live?: LiveCriteria): HandlerEntry[] {
  return [
    handler(operations.analyzeQuestion, async (req, ctx) =>
      req.mock ? mock.mockAnalyzeQuestion(req) : (live ?? noLive()).analyzeQuestion(req, ctx),
    ),
    handler(operations.generateCriteria, async (req, ctx) =>
      req.mock ? mock.mockGenerate(req) : (live ?? noLive()).generate(req, ctx),
    ),
    handler(operations.picos, async (req, ctx) => (req.mock ? mock.mockPicos(req) : (live ?? noLive()).picos(req, ctx))),
    handler(operations.refineContext, async (req, ctx) =>
      req.mock ? mock.mockRefineContext(req) : (live ?? noLive()).refineContext(req, ctx),
    ),
    handler(operations.refineCriteria, async (req, ctx) =>
      req.mock ? mock.mockRefine(req) : (live ?? noLive()).refine(req, ctx),
    ),
    handler(operations.consolidate, async (req, ctx) =>
      req.mock ? mock.mockConsolidate() : (live ?? noLive()).consolidate(req, ctx),
    ),
  ];
}
