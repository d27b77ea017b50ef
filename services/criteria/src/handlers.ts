import { operations, type Operation } from "@litrev/contracts";
import { handler, type HandlerEntry, type OperationHandler } from "@litrev/messaging";
import * as mock from "./mock";

/** The live (provider-backed) answers. */
export interface LiveCriteria {
  analyzeQuestion: LiveFn<typeof operations.analyzeQuestion>;
  generate: LiveFn<typeof operations.generateCriteria>;
  picos: LiveFn<typeof operations.picos>;
  refineContext: LiveFn<typeof operations.refineContext>;
  refine: LiveFn<typeof operations.refineCriteria>;
  consolidate: LiveFn<typeof operations.consolidate>;
}
type LiveFn<O> = O extends Operation<infer Req, infer Res> ? OperationHandler<Req, Res> : never;

/** Mock requests never reach `live`, so they need no provider and no key. */
export function criteriaHandlers(live: LiveCriteria): HandlerEntry[] {
  return [
    handler(operations.analyzeQuestion, async (req, ctx) =>
      req.mock ? mock.mockAnalyzeQuestion(req) : live.analyzeQuestion(req, ctx),
    ),
    handler(operations.generateCriteria, async (req, ctx) =>
      req.mock ? mock.mockGenerate(req) : live.generate(req, ctx),
    ),
    handler(operations.picos, async (req, ctx) => (req.mock ? mock.mockPicos(req) : live.picos(req, ctx))),
    handler(operations.refineContext, async (req, ctx) =>
      req.mock ? mock.mockRefineContext(req) : live.refineContext(req, ctx),
    ),
    handler(operations.refineCriteria, async (req, ctx) =>
      req.mock ? mock.mockRefine(req) : live.refine(req, ctx),
    ),
    handler(operations.consolidate, async (req, ctx) =>
      req.mock ? mock.mockConsolidate() : live.consolidate(req, ctx),
    ),
  ];
}
