import { z } from "zod";
import { ActiveJobQuery, JobIdParams, ListJobsQuery } from "./common";
import * as criteria from "./criteria";
import * as indexer from "./indexer";
import * as screening from "./screening";
import type { BackendService } from "./subjects";

/**
 * One backend operation: the NATS request it takes and the reply it gives. The gateway and the
 * owning service both parse with these schemas, so the contract is checked on each side.
 */
export interface Operation<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  service: BackendService;
  name: string;
  request: Req;
  response: Res;
}

function op<Req extends z.ZodType, Res extends z.ZodType>(
  service: BackendService,
  name: string,
  request: Req,
  response: Res,
): Operation<Req, Res> {
  return { service, name, request, response };
}

const byJobId = JobIdParams;
const listQuery = ListJobsQuery;
const activeQuery = ActiveJobQuery;

export const operations = {
  analyzeQuestion: op("criteria", "analyze-question", criteria.AnalyzeQuestionRequest, criteria.AnalyzeQuestionResponse),
  generateCriteria: op("criteria", "generate", criteria.GenerateCriteriaRequest, criteria.CriteriaListResponse),
  picos: op("criteria", "picos", criteria.PicosRequest, criteria.PicosResponse),
  refineContext: op("criteria", "refine-context", criteria.RefineContextRequest, criteria.RefineContextResponse),
  refineCriteria: op("criteria", "refine", criteria.RefineCriteriaRequest, criteria.CriteriaListResponse),
  consolidate: op("criteria", "consolidate", criteria.ConsolidateRequest, criteria.ConsolidateResponse),

  createScreeningJob: op("screening", "create-job", screening.CreateScreeningJobRequest, screening.CreateScreeningJobResponse),
  getScreeningJob: op("screening", "get-job", byJobId, screening.ScreeningJob),
  listScreeningJobs: op("screening", "list-jobs", listQuery, z.array(screening.ScreeningJobListItem)),
  activeScreeningJob: op("screening", "active-job", activeQuery, screening.ScreeningJob.nullable()),
  estimateScreening: op("screening", "estimate", screening.ScreeningEstimateRequest, screening.ScreeningEstimateResponse),

  indexerRun: op("indexer", "run", indexer.IndexerRunRequest, indexer.IndexerRunResponse),
  createIndexerJob: op("indexer", "create-job", indexer.CreateIndexerJobRequest, indexer.CreateIndexerJobResponse),
  getIndexerJob: op("indexer", "get-job", byJobId, indexer.IndexerJob),
  listIndexerJobs: op("indexer", "list-jobs", listQuery, z.array(indexer.IndexerJobListItem)),
  activeIndexerJob: op("indexer", "active-job", activeQuery, indexer.IndexerJob.nullable()),
  estimateIndexer: op("indexer", "estimate", indexer.IndexerEstimateRequest, indexer.IndexerEstimateResponse),
  suggestFields: op("indexer", "suggest-fields", indexer.SuggestFieldsRequest, indexer.SuggestFieldsResponse),
  refineFields: op("indexer", "refine-fields", indexer.RefineFieldsRequest, indexer.RefineFieldsResponse),
  groupTags: op("indexer", "group-tags", indexer.GroupTagsRequest, indexer.GroupTagsResponse),
} as const;
export type OperationKey = keyof typeof operations;

/** An HTTP route of the spec that the gateway forwards to one backend operation. */
export interface ForwardedRoute {
  method: "GET" | "POST";
  /** Canonical path under `/v1` (the gateway also serves it unprefixed). */
  path: string;
  operation: OperationKey;
  /** Where the operation's request comes from: the JSON body, or path params plus query. */
  input: "body" | "params+query";
  params?: z.ZodObject;
  query?: z.ZodObject;
  summary: string;
  /** HTTP codes the spec lists for the route (for the OpenAPI document). */
  codes: number[];
}

const post = (path: string, operation: OperationKey, summary: string, codes: number[]): ForwardedRoute => ({
  method: "POST", path, operation, input: "body", summary, codes,
});
const get = (
  path: string,
  operation: OperationKey,
  summary: string,
  codes: number[],
  parts: { params?: z.ZodObject; query?: z.ZodObject },
): ForwardedRoute => ({ method: "GET", path, operation, input: "params+query", summary, codes, ...parts });

const criteriaCodes = [200, 400, 401, 429, 500];
export const forwardedRoutes: ForwardedRoute[] = [
  post("/v1/criteria/analyze-question", "analyzeQuestion", "Check whether a research question is ready for a search", criteriaCodes),
  post("/v1/criteria/generate", "generateCriteria", "Generate eligibility criteria", criteriaCodes),
  post("/v1/criteria/picos", "picos", "Extract PICOS elements", criteriaCodes),
  post("/v1/criteria/refine-context", "refineContext", "Refine a project description and research questions", criteriaCodes),
  post("/v1/criteria/refine", "refineCriteria", "Refine criteria from reviewer conflicts", criteriaCodes),
  post("/v1/criteria/consolidate", "consolidate", "Find and merge duplicate criteria", criteriaCodes),

  post("/v1/screening/jobs", "createScreeningJob", "Start a screening job", [200, 400, 401, 409, 500]),
  get("/v1/screening/jobs/:job_id", "getScreeningJob", "Poll a screening job", [200, 401, 404], { params: byJobId }),
  get("/v1/screening/jobs", "listScreeningJobs", "List screening jobs, newest first", [200, 401], { query: listQuery }),
  get("/v1/screening/active-job", "activeScreeningJob", "The pending or running screening job of a project, or null", [200, 401], { query: activeQuery }),
  post("/v1/screening/estimate", "estimateScreening", "Estimate the tokens and cost of a screening job", [200, 400, 401, 500]),

  post("/v1/indexer/run", "indexerRun", "Extract fields from records synchronously", [200, 400, 401, 429, 500]),
  post("/v1/indexer/jobs", "createIndexerJob", "Start an extraction job", [200, 400, 401, 500]),
  get("/v1/indexer/jobs/:job_id", "getIndexerJob", "Poll an extraction job", [200, 401, 404], { params: byJobId }),
  get("/v1/indexer/jobs", "listIndexerJobs", "List extraction jobs, newest first", [200, 401], { query: listQuery }),
  get("/v1/indexer/active-job", "activeIndexerJob", "The pending or running extraction job of a project, or null", [200, 401], { query: activeQuery }),
  post("/v1/indexer/estimate", "estimateIndexer", "Estimate the tokens and cost of an extraction", [200, 400, 401, 500]),
  post("/v1/indexer/suggest-fields", "suggestFields", "Suggest fields to extract", [200, 400, 401, 429, 500]),
  post("/v1/indexer/refine-fields", "refineFields", "Review field definitions", [200, 400, 401, 429, 500]),
  post("/v1/indexer/group-tags", "groupTags", "Group extracted values", [200, 400, 401, 429, 500]),
];
