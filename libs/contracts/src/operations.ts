import { z } from "zod";
import { ActiveJobQuery, JobIdParams, ListJobsQuery } from "./common";
import * as criteria from "./criteria";
import * as indexer from "./indexer";
import { ArtifactWritten, JobDeleted } from "./job-exports";
import * as screening from "./screening";
import * as validation from "./screening-validation";
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
  artifactScreeningJob: op("screening", "write-artifact", byJobId, ArtifactWritten),
  cancelScreeningJob: op("screening", "cancel-job", byJobId, screening.ScreeningJob),
  deleteScreeningJob: op("screening", "delete-job", byJobId, JobDeleted),
  estimateScreening: op("screening", "estimate", screening.ScreeningEstimateRequest, screening.ScreeningEstimateResponse),
  // Validation samples: drawn, labelled and kept by the screening service (the gateway forwards path and body as one request).
  drawValidationSample: op("screening", "validation-draw", validation.ValidationSampleRequest.extend({ job_id: z.string() }), validation.ValidationSample),
  labelValidationSample: op("screening", "validation-label", validation.ValidationSampleLabelsRequest.extend({ job_id: z.string(), sample_id: z.string() }), validation.ValidationSample),
  getValidationSample: op("screening", "validation-get", validation.ValidationSampleParams, validation.ValidationSample),

  indexerRun: op("indexer", "run", indexer.IndexerRunRequest, indexer.IndexerRunResponse),
  createIndexerJob: op("indexer", "create-job", indexer.CreateIndexerJobRequest, indexer.CreateIndexerJobResponse),
  getIndexerJob: op("indexer", "get-job", byJobId, indexer.IndexerJob),
  listIndexerJobs: op("indexer", "list-jobs", listQuery, z.array(indexer.IndexerJobListItem)),
  activeIndexerJob: op("indexer", "active-job", activeQuery, indexer.IndexerJob.nullable()),
  artifactIndexerJob: op("indexer", "write-artifact", byJobId, ArtifactWritten),
  cancelIndexerJob: op("indexer", "cancel-job", byJobId, indexer.IndexerJob),
  deleteIndexerJob: op("indexer", "delete-job", byJobId, JobDeleted),
  estimateIndexer: op("indexer", "estimate", indexer.IndexerEstimateRequest, indexer.IndexerEstimateResponse),
  suggestFields: op("indexer", "suggest-fields", indexer.SuggestFieldsRequest, indexer.SuggestFieldsResponse),
  refineFields: op("indexer", "refine-fields", indexer.RefineFieldsRequest, indexer.RefineFieldsResponse),
  groupTags: op("indexer", "group-tags", indexer.GroupTagsRequest, indexer.GroupTagsResponse),
} as const;
export type OperationKey = keyof typeof operations;

/** An HTTP route of the spec that the gateway forwards to one backend operation. */
export interface ForwardedRoute {
  method: "GET" | "POST" | "DELETE";
  /** Canonical path under `/v1` (the gateway also serves it unprefixed). */
  path: string;
  operation: OperationKey;
  /** Where the operation's request comes from: the JSON body, or path params plus query. */
  input: "body" | "params+query";
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** The success status when it is not 200 (a DELETE answers 204 without a body). */
  status?: 204;
}

const post = (path: string, operation: OperationKey): ForwardedRoute => ({ method: "POST", path, operation, input: "body" });
const get = (path: string, operation: OperationKey, parts: { params?: z.ZodObject; query?: z.ZodObject }): ForwardedRoute => ({
  method: "GET",
  path,
  operation,
  input: "params+query",
  ...parts,
});

/** A job route taking only the job id from the path (cancel: no body, or `{}`). */
const onJob = (method: "POST" | "DELETE", path: string, operation: OperationKey): ForwardedRoute => ({
  method,
  path,
  operation,
  input: "params+query",
  params: byJobId,
  ...(method === "DELETE" ? { status: 204 as const } : {}),
});

/** Summaries, operation ids and documented statuses of these routes live in `apiOperations` below. */
export const forwardedRoutes: ForwardedRoute[] = [
  post("/v1/criteria/analyze-question", "analyzeQuestion"),
  post("/v1/criteria/generate", "generateCriteria"),
  post("/v1/criteria/picos", "picos"),
  post("/v1/criteria/refine-context", "refineContext"),
  post("/v1/criteria/refine", "refineCriteria"),
  post("/v1/criteria/consolidate", "consolidate"),

  post("/v1/screening/jobs", "createScreeningJob"),
  get("/v1/screening/jobs/:job_id", "getScreeningJob", { params: byJobId }),
  onJob("POST", "/v1/screening/jobs/:job_id/cancel", "cancelScreeningJob"),
  onJob("DELETE", "/v1/screening/jobs/:job_id", "deleteScreeningJob"),
  get("/v1/screening/jobs", "listScreeningJobs", { query: listQuery }),
  get("/v1/screening/active-job", "activeScreeningJob", { query: activeQuery }),
  post("/v1/screening/estimate", "estimateScreening"),

  post("/v1/indexer/run", "indexerRun"),
  post("/v1/indexer/jobs", "createIndexerJob"),
  get("/v1/indexer/jobs/:job_id", "getIndexerJob", { params: byJobId }),
  onJob("POST", "/v1/indexer/jobs/:job_id/cancel", "cancelIndexerJob"),
  onJob("DELETE", "/v1/indexer/jobs/:job_id", "deleteIndexerJob"),
  get("/v1/indexer/jobs", "listIndexerJobs", { query: listQuery }),
  get("/v1/indexer/active-job", "activeIndexerJob", { query: activeQuery }),
  post("/v1/indexer/estimate", "estimateIndexer"),
  post("/v1/indexer/suggest-fields", "suggestFields"),
  post("/v1/indexer/refine-fields", "refineFields"),
  post("/v1/indexer/group-tags", "groupTags"),
];

/** The capabilities, as OpenAPI tags (generators group methods by them). */
export const API_TAGS = {
  health: "Liveness and readiness; no service key needed.",
  configuration: "Per-service model, temperature and prompt settings, and the prompt registry.",
  screening: "AI Screening: asynchronous jobs that score papers against eligibility criteria, explain and cluster the reasons.",
  indexer: "AutoIndexer: evidence-backed extraction of typed fields from titles and abstracts, synchronously or as jobs, with helpers.",
  criteria: "Criteria AI: synchronous help to draft, check and refine eligibility criteria.",
} as const;
export type ApiTag = keyof typeof API_TAGS;

/** The spec's three error bodies (Errors), by the component name the OpenAPI document gives each. */
export type ErrorBodyName = "ValidationError" | "SimpleError" | "ClassifiedError";

/**
 * What a route answers for one non-2xx status: the error bodies it can carry, or `"success-body"`
 * when it is the success body under another status (`/health/ready`'s 503).
 */
export type ErrorResponse = readonly ErrorBodyName[] | "success-body";

/**
 * The documentation of one HTTP operation: the one table the OpenAPI document takes operation ids,
 * summaries, tags and non-2xx statuses from. The gateway applies it to every route centrally
 * (services/gateway/src/openapi.ts), matching by method and canonical path, so a route defined
 * anywhere gets it; a route without an entry fails the gateway's OpenAPI test.
 */
export interface ApiOperation {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Canonical path in OpenAPI form (`/v1/screening/jobs/{job_id}`; health without `/v1`). */
  path: string;
  /** Stable name generated clients call the method by: never derive it from the path. */
  operationId: string;
  summary: string;
  tag: ApiTag;
  /** Served without a service key. */
  public?: boolean;
  /** Every non-2xx status the spec lists for the route, plus the ones the gateway also answers (docs/errors.md). */
  errors: Partial<Record<number, ErrorResponse>>;
}

const V = ["ValidationError"] as const;
const S = ["SimpleError"] as const;
const C = ["ClassifiedError"] as const;

/**
 * Statuses by what a route does. Every route behind the key may answer 401; every route that needs
 * NATS answers a retryable 503 while it (or the owning service) is unreachable and 504 when the
 * service does not answer in time; any route can fail with 500.
 */
const keyed = { 401: C, 500: C, 503: C } as const;
const forwarded = { ...keyed, 504: C } as const;
/**
 * A JSON body: field-level or simple 400 (malformed JSON, wrong media type), 413 over the size or
 * value-count limit, 429 over the client's own request limits (every route but reads).
 */
const withBody = { 400: [...V, ...S], 413: S, 429: C } as const;
/** Exports, reports and event streams: counted against the client's own request limits (429 with `Retry-After`). */
const counted = { 429: C } as const;
/** Query or path parameters: a field-level 400. */
const withParams = { 400: V } as const;
/** A synchronous provider call: the provider may reject the request (classified 400), limit it (429) or fail (502). */
const providerBacked = { ...forwarded, 400: [...V, ...S, ...C], 413: S, 429: C, 502: C } as const;

const criteriaOp = (path: string, operationId: string, summary: string): ApiOperation => ({
  method: "POST",
  path: `/v1/criteria/${path}`,
  operationId,
  summary,
  tag: "criteria",
  errors: providerBacked,
});

export const apiOperations: readonly ApiOperation[] = [
  { method: "GET", path: "/health", operationId: "getHealth", summary: "Liveness: the gateway process is up", tag: "health", public: true, errors: {} },
  {
    method: "GET",
    path: "/health/ready",
    operationId: "getReadiness",
    summary: "Readiness: database, provider key and messaging checks",
    tag: "health",
    public: true,
    errors: { 503: "success-body" },
  },

  { method: "GET", path: "/v1/config/services", operationId: "listServiceConfigs", summary: "List every service's effective configuration", tag: "configuration", errors: keyed },
  {
    method: "GET",
    path: "/v1/config/services/{service_id}",
    operationId: "getServiceConfig",
    summary: "Read one service's effective configuration (an unknown id gets the default)",
    tag: "configuration",
    errors: { ...keyed, ...withParams },
  },
  {
    method: "PUT",
    path: "/v1/config/services/{service_id}",
    operationId: "updateServiceConfig",
    summary: "Patch one service's configuration; every replica applies it at once (null resets a field)",
    tag: "configuration",
    errors: { ...keyed, ...withBody, 403: C, 404: S },
  },
  {
    method: "DELETE",
    path: "/v1/config/services/{service_id}",
    operationId: "resetServiceConfig",
    summary: "Reset one service's configuration to its defaults (every change made by PUT undone)",
    tag: "configuration",
    errors: { ...keyed, ...withParams, 403: C, 404: S },
  },
  { method: "GET", path: "/v1/config/prompts", operationId: "listPrompts", summary: "List the prompt registry", tag: "configuration", errors: keyed },
  { method: "GET", path: "/v1/config/models", operationId: "getModelAliases", summary: "Read the model alias table in force", tag: "configuration", errors: keyed },
  {
    method: "PUT",
    path: "/v1/config/models",
    operationId: "updateModelAliases",
    summary: "Remap model aliases on every replica without a restart (null drops an override)",
    tag: "configuration",
    errors: { ...keyed, ...withBody, 403: C },
  },

  {
    method: "POST",
    path: "/v1/screening/jobs",
    operationId: "createScreeningJob",
    summary: "Start a screening job",
    tag: "screening",
    errors: { ...forwarded, ...withBody, 409: S },
  },
  {
    method: "GET",
    path: "/v1/screening/jobs/{job_id}",
    operationId: "getScreeningJob",
    summary: "Poll a screening job",
    tag: "screening",
    errors: { ...forwarded, ...withParams, 404: S },
  },
  {
    method: "POST",
    path: "/v1/screening/jobs/{job_id}/cancel",
    operationId: "cancelScreeningJob",
    summary: "Cancel a pending or running screening job: it ends failed (error_category cancelled), keeps what finished and frees its project",
    tag: "screening",
    errors: { ...forwarded, ...withParams, 404: S, 409: S },
  },
  {
    method: "DELETE",
    path: "/v1/screening/jobs/{job_id}",
    operationId: "deleteScreeningJob",
    summary: "Delete a screening job: cancelled first if it is still pending or running, then its input, results, artifact, stored row and validation samples are erased",
    tag: "screening",
    errors: { ...forwarded, ...withParams, 404: S },
  },
  {
    method: "GET",
    path: "/v1/screening/jobs/{job_id}/export",
    operationId: "exportScreeningJob",
    summary: "Download a completed screening job's results as CSV or JSON Lines, one row per paper",
    tag: "screening",
    errors: { ...forwarded, ...withParams, ...counted, 404: S, 409: S },
  },
  {
    method: "GET",
    path: "/v1/screening/jobs/{job_id}/report",
    operationId: "getScreeningJobReport",
    summary: "A finished screening job's methods report (model, parameters, prompts, counts, cost), in Markdown or JSON",
    tag: "screening",
    errors: { ...forwarded, ...withParams, ...counted, 404: S, 409: S },
  },
  {
    method: "GET",
    path: "/v1/screening/jobs/{job_id}/events",
    operationId: "streamScreeningJobEvents",
    summary: "Follow a screening job's progress as server-sent events, ending with its poll response",
    tag: "screening",
    errors: { ...forwarded, ...withParams, ...counted, 404: S },
  },
  {
    method: "POST",
    path: "/v1/screening/jobs/{job_id}/validation",
    operationId: "validateScreeningJob",
    summary: "Validate a completed screening job on the team's labelled sample: a certified recall lower bound per vote threshold (one-sided by default), the threshold to use, agreement",
    tag: "screening",
    errors: { ...forwarded, ...withBody, 404: S, 409: S },
  },
  {
    method: "POST",
    path: "/v1/screening/jobs/{job_id}/validation-samples",
    operationId: "drawValidationSample",
    summary: "Draw a validation sample of a completed screening job (simple, stratified by vote level, or below a threshold), with the labels the target needs",
    tag: "screening",
    errors: { ...forwarded, ...withBody, 404: S, 409: S },
  },
  {
    method: "POST",
    path: "/v1/screening/jobs/{job_id}/validation-samples/{sample_id}/labels",
    operationId: "labelValidationSample",
    summary: "Add a batch of labels to a validation sample: the recall certificate, valid however often it is asked for",
    tag: "screening",
    errors: { ...forwarded, ...withBody, 404: S, 409: S },
  },
  {
    method: "GET",
    path: "/v1/screening/jobs/{job_id}/validation-samples/{sample_id}",
    operationId: "getValidationSample",
    summary: "A validation sample with its labels, every recorded look and its latest certificate",
    tag: "screening",
    errors: { ...forwarded, ...withParams, 404: S },
  },
  {
    method: "GET",
    path: "/v1/screening/jobs/{job_id}/validation-samples/{sample_id}/download",
    operationId: "downloadValidationSample",
    summary: "A validation sample's papers for blind screening, in the order drawn: CSV or RIS with titles and abstracts, no decisions or scores",
    tag: "screening",
    errors: { ...forwarded, ...withParams, 404: S, 409: S },
  },
  { method: "GET", path: "/v1/screening/jobs", operationId: "listScreeningJobs", summary: "List screening jobs, newest first", tag: "screening", errors: { ...forwarded, ...withParams } },
  {
    method: "GET",
    path: "/v1/screening/active-job",
    operationId: "getActiveScreeningJob",
    summary: "The pending or running screening job of a project, or null",
    tag: "screening",
    errors: { ...forwarded, ...withParams },
  },
  {
    method: "POST",
    path: "/v1/screening/estimate",
    operationId: "estimateScreening",
    summary: "Estimate the tokens and cost of a screening job",
    tag: "screening",
    errors: { ...forwarded, ...withBody },
  },

  { method: "POST", path: "/v1/indexer/run", operationId: "runIndexer", summary: "Extract fields from records synchronously", tag: "indexer", errors: providerBacked },
  { method: "POST", path: "/v1/indexer/jobs", operationId: "createIndexerJob", summary: "Start an extraction job", tag: "indexer", errors: { ...forwarded, ...withBody } },
  {
    method: "GET",
    path: "/v1/indexer/jobs/{job_id}",
    operationId: "getIndexerJob",
    summary: "Poll an extraction job",
    tag: "indexer",
    errors: { ...forwarded, ...withParams, 404: S },
  },
  {
    method: "POST",
    path: "/v1/indexer/jobs/{job_id}/cancel",
    operationId: "cancelIndexerJob",
    summary: "Cancel a pending or running extraction job: it ends failed (error_category cancelled), keeps what finished and frees its project",
    tag: "indexer",
    errors: { ...forwarded, ...withParams, 404: S, 409: S },
  },
  {
    method: "DELETE",
    path: "/v1/indexer/jobs/{job_id}",
    operationId: "deleteIndexerJob",
    summary: "Delete a extraction job: cancelled first if it is still pending or running, then its input, results, artifact, stored row and validation samples are erased",
    tag: "indexer",
    errors: { ...forwarded, ...withParams, 404: S },
  },
  {
    method: "GET",
    path: "/v1/indexer/jobs/{job_id}/export",
    operationId: "exportIndexerJob",
    summary: "Download a completed extraction job's results as CSV or JSON Lines, one row per record",
    tag: "indexer",
    errors: { ...forwarded, ...withParams, ...counted, 404: S, 409: S },
  },
  {
    method: "GET",
    path: "/v1/indexer/jobs/{job_id}/report",
    operationId: "getIndexerJobReport",
    summary: "A finished extraction job's methods report (model, parameters, prompts, counts, cost), in Markdown or JSON",
    tag: "indexer",
    errors: { ...forwarded, ...withParams, ...counted, 404: S, 409: S },
  },
  {
    method: "GET",
    path: "/v1/indexer/jobs/{job_id}/events",
    operationId: "streamIndexerJobEvents",
    summary: "Follow an extraction job's progress as server-sent events, ending with its poll response",
    tag: "indexer",
    errors: { ...forwarded, ...withParams, ...counted, 404: S },
  },
  { method: "GET", path: "/v1/indexer/jobs", operationId: "listIndexerJobs", summary: "List extraction jobs, newest first", tag: "indexer", errors: { ...forwarded, ...withParams } },
  {
    method: "GET",
    path: "/v1/indexer/active-job",
    operationId: "getActiveIndexerJob",
    summary: "The pending or running extraction job of a project, or null",
    tag: "indexer",
    errors: { ...forwarded, ...withParams },
  },
  {
    method: "POST",
    path: "/v1/indexer/estimate",
    operationId: "estimateIndexer",
    summary: "Estimate the tokens and cost of an extraction",
    tag: "indexer",
    errors: { ...forwarded, ...withBody },
  },
  { method: "POST", path: "/v1/indexer/suggest-fields", operationId: "suggestIndexerFields", summary: "Suggest fields to extract", tag: "indexer", errors: providerBacked },
  { method: "POST", path: "/v1/indexer/refine-fields", operationId: "refineIndexerFields", summary: "Review field definitions", tag: "indexer", errors: providerBacked },
  { method: "POST", path: "/v1/indexer/group-tags", operationId: "groupIndexerTags", summary: "Group extracted values", tag: "indexer", errors: providerBacked },

  criteriaOp("analyze-question", "analyzeResearchQuestion", "Check whether a research question is ready for a search"),
  criteriaOp("generate", "generateCriteria", "Generate eligibility criteria"),
  criteriaOp("picos", "extractPicos", "Extract PICOS elements"),
  criteriaOp("refine-context", "refineProjectContext", "Refine a project description and research questions"),
  criteriaOp("refine", "refineCriteria", "Refine criteria from reviewer conflicts"),
  criteriaOp("consolidate", "consolidateCriteria", "Find and merge duplicate criteria"),
];

/** `GET /v1/screening/jobs/:job_id` (fastify form) or `{job_id}` (OpenAPI form) as one key. */
export function apiOperationKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`;
}

const byKey = new Map(apiOperations.map((entry) => [apiOperationKey(entry.method, entry.path), entry]));

/** The table entry of a route, by method and canonical path (either path form). */
export function findApiOperation(method: string, path: string): ApiOperation | undefined {
  return byKey.get(apiOperationKey(method, path));
}
