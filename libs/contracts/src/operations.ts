import { z } from "zod";
import { ActiveJobQuery, JobIdParams, ListJobsQuery } from "./common";
import * as criteria from "./criteria";
import * as indexer from "./indexer";
import { op, type BodyCheck, type JobKindTable, type Operation } from "./job-contract";
import { jobKind, JOB_SERVICES } from "./job-kinds";
import { BODY_CHECKS, type RequestLimits } from "./limits";
import type { ValidationIssue } from "./errors";
import * as validation from "./screening-validation";

export const operations = {
  analyzeQuestion: op("criteria", "analyze-question", criteria.AnalyzeQuestionRequest, criteria.AnalyzeQuestionResponse, "request"),
  generateCriteria: op("criteria", "generate", criteria.GenerateCriteriaRequest, criteria.CriteriaListResponse, "request"),
  picos: op("criteria", "picos", criteria.PicosRequest, criteria.PicosResponse, "request"),
  refineContext: op("criteria", "refine-context", criteria.RefineContextRequest, criteria.RefineContextResponse, "request"),
  refineCriteria: op("criteria", "refine", criteria.RefineCriteriaRequest, criteria.CriteriaListResponse, "request"),
  consolidate: op("criteria", "consolidate", criteria.ConsolidateRequest, criteria.ConsolidateResponse, "request"),

  // Validation samples: drawn, labelled and kept by the screening service (the gateway forwards path and body as one request).
  drawValidationSample: op("screening", "validation-draw", validation.ValidationSampleRequest.extend({ job_id: z.string() }), validation.ValidationSample),
  labelValidationSample: op("screening", "validation-label", validation.ValidationSampleLabelsRequest.extend({ job_id: z.string(), sample_id: z.string() }), validation.ValidationSample),
  getValidationSample: op("screening", "validation-get", validation.ValidationSampleParams, validation.ValidationSample),

  indexerRun: op("indexer", "run", indexer.IndexerRunRequest, indexer.IndexerRunResponse, "request"),
  suggestFields: op("indexer", "suggest-fields", indexer.SuggestFieldsRequest, indexer.SuggestFieldsResponse, "request"),
  refineFields: op("indexer", "refine-fields", indexer.RefineFieldsRequest, indexer.RefineFieldsResponse, "request"),
  groupTags: op("indexer", "group-tags", indexer.GroupTagsRequest, indexer.GroupTagsResponse, "request"),
} as const;

/** An HTTP route of the spec that the gateway forwards to one backend operation. */
export interface ForwardedRoute {
  method: "GET" | "POST" | "DELETE";
  /** Canonical path under `/v1` (the gateway also serves it unprefixed). */
  path: string;
  /** The route's name (`operations`' key, or a job kind's operation id): the body thread finds the route by it. */
  key: string;
  operation: Operation;
  /** Where the operation's request comes from: the JSON body, path params plus query, or both. */
  input: "body" | "params+query" | "body+params";
  /** The HTTP body's schema when it is not the operation's request (the path's ids go with it). */
  body?: z.ZodType;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** The success status when it is not 200 (a DELETE answers 204 without a body). */
  status?: 204;
  /** The configured bounds of the body (docs/limits.md). */
  limits?: BodyCheck;
  /** The job kind whose job route it is: the gateway answers it with its job handlers. */
  kind?: string;
}

const post = (path: string, key: keyof typeof operations): ForwardedRoute => ({ method: "POST", path, key, operation: operations[key], input: "body", limits: BODY_CHECKS[key] });

/** A validation sample route: the path's ids with the body (if any) as one request, for the caller's owner. */
const onSample = (method: "GET" | "POST", path: string, key: keyof typeof operations, params: z.ZodObject, body?: z.ZodType): ForwardedRoute => ({
  method,
  path,
  key,
  operation: operations[key],
  input: body ? "body+params" : "params+query",
  params,
  ...(body ? { body } : {}),
});

/** A kind's forwarded job routes, by convention (`/v1/<kind>/…`, operation ids as `apiOperations` names them). */
export function jobKindRoutes(k: JobKindTable): ForwardedRoute[] {
  const ops = k.operations;
  const base = `/v1/${k.name}`;
  const route = (method: ForwardedRoute["method"], path: string, key: string, operation: Operation, parts: Partial<ForwardedRoute>): ForwardedRoute => ({
    method,
    path: `${base}${path}`,
    key,
    operation,
    input: "params+query",
    kind: k.name,
    ...parts,
  });
  return [
    route("POST", "/jobs", `create${k.title}Job`, ops.create, { input: "body", limits: k.limits?.create }),
    route("GET", "/jobs/:job_id", `get${k.title}Job`, ops.get, { params: JobIdParams }),
    route("POST", "/jobs/:job_id/cancel", `cancel${k.title}Job`, ops.cancel, { params: JobIdParams }),
    route("DELETE", "/jobs/:job_id", `delete${k.title}Job`, ops.delete, { params: JobIdParams, status: 204 }),
    route("GET", "/jobs", `list${k.title}Jobs`, ops.list, { query: ListJobsQuery }),
    route("GET", "/active-job", `active${k.title}Job`, ops.active, { query: ActiveJobQuery }),
    route("POST", "/estimate", `estimate${k.title}`, ops.estimate, { input: "body", limits: k.limits?.estimate }),
  ];
}

/** Every forwarded route: criteria's, each job kind's, then the kinds' own extras. Summaries, operation ids and statuses live in `apiOperations` below. */
export function forwardedRoutes(): ForwardedRoute[] {
  return [
    post("/v1/criteria/analyze-question", "analyzeQuestion"),
    post("/v1/criteria/generate", "generateCriteria"),
    post("/v1/criteria/picos", "picos"),
    post("/v1/criteria/refine-context", "refineContext"),
    post("/v1/criteria/refine", "refineCriteria"),
    post("/v1/criteria/consolidate", "consolidate"),
    ...JOB_SERVICES.flatMap((service) => jobKindRoutes(jobKind(service))),
    onSample("POST", "/v1/screening/jobs/:job_id/validation-samples", "drawValidationSample", JobIdParams, validation.ValidationSampleRequest),
    onSample("POST", "/v1/screening/jobs/:job_id/validation-samples/:sample_id/labels", "labelValidationSample", validation.ValidationSampleParams, validation.ValidationSampleLabelsRequest),
    onSample("GET", "/v1/screening/jobs/:job_id/validation-samples/:sample_id", "getValidationSample", validation.ValidationSampleParams),
    post("/v1/indexer/run", "indexerRun"),
    post("/v1/indexer/suggest-fields", "suggestFields"),
    post("/v1/indexer/refine-fields", "refineFields"),
    post("/v1/indexer/group-tags", "groupTags"),
  ];
}

/**
 * The configured limits a request body of route `key` breaks, in the spec's field-level shape;
 * empty when none. Runs on the raw body before the schema (so an oversized list is refused without
 * parsing every item) and looks only at values of the expected type: anything else is the schema's.
 */
export function requestLimitIssues(key: string, body: unknown, limits: RequestLimits): ValidationIssue[] {
  const check = forwardedRoutes().find((route) => route.key === key)?.limits;
  return check && body !== null && typeof body === "object" && !Array.isArray(body) ? check(body as Record<string, unknown>, limits) : [];
}

/** The capabilities, as OpenAPI tags (generators group methods by them). */
export function apiTags(): Record<string, string> {
  return {
    health: "Liveness and readiness; no service key needed.",
    configuration: "Per-service model, temperature and prompt settings, and the prompt registry.",
    ...Object.fromEntries(JOB_SERVICES.map((service) => [service, jobKind(service).description])),
    criteria: "Criteria AI: synchronous help to draft, check and refine eligibility criteria.",
  };
}


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
  /** A capability: `health`, `configuration`, `criteria` or a job kind's name. */
  tag: string;
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

/** A job kind's rows, by convention: its forwarded routes, export, report and events (`create<Title>Job`, …). */
function kindApiOperations(k: JobKindTable): ApiOperation[] {
  const { title, jobNoun: noun } = k;
  const a = /^[aeiou]/i.test(noun) ? "an" : "a";
  const item = k.report.noun.replace(/s$/, "");
  const row = (method: ApiOperation["method"], path: string, operationId: string, summary: string, errors: ApiOperation["errors"]): ApiOperation => ({
    method,
    path: `/v1/${k.name}${path}`,
    operationId,
    summary,
    tag: k.name,
    errors,
  });
  const onJob = { ...forwarded, ...withParams, 404: S } as const;
  const finished = { ...onJob, ...counted, 409: S } as const;
  return [
    row("POST", "/jobs", `create${title}Job`, `Start ${a} ${noun}`, { ...forwarded, ...withBody, ...(k.exclusiveProject ? { 409: S } : {}) }),
    row("GET", "/jobs/{job_id}", `get${title}Job`, `Poll ${a} ${noun}`, onJob),
    row("POST", "/jobs/{job_id}/cancel", `cancel${title}Job`, `Cancel a pending or running ${noun}: it ends failed (error_category cancelled), keeps what finished and frees its project`, { ...onJob, 409: S }),
    row("DELETE", "/jobs/{job_id}", `delete${title}Job`, `Delete ${a} ${noun}: cancelled first if it is still pending or running, then its input, results, artifact, stored row and validation samples are erased`, onJob),
    row("GET", "/jobs/{job_id}/export", `export${title}Job`, `Download a completed ${noun}'s results as CSV or JSON Lines, one row per ${item}`, finished),
    row("GET", "/jobs/{job_id}/report", `get${title}JobReport`, `A finished ${noun}'s methods report (model, parameters, prompts, counts, cost), in Markdown or JSON`, finished),
    row("GET", "/jobs/{job_id}/events", `stream${title}JobEvents`, `Follow ${a} ${noun}'s progress as server-sent events, ending with its poll response`, { ...onJob, ...counted }),
    row("GET", "/jobs", `list${title}Jobs`, `List ${noun}s, newest first`, { ...forwarded, ...withParams }),
    row("GET", "/active-job", `getActive${title}Job`, `The pending or running ${noun} of a project, or null`, { ...forwarded, ...withParams }),
    row("POST", "/estimate", `estimate${title}`, `Estimate the tokens and cost of ${a} ${noun}`, { ...forwarded, ...withBody }),
  ];
}

/** Every documented operation: the fixed rows, and each job kind's (derived, so a kind registered later has its own). */
export const apiOperations = (): ApiOperation[] => [
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

  ...JOB_SERVICES.flatMap((service) => kindApiOperations(jobKind(service))),

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

  { method: "POST", path: "/v1/indexer/run", operationId: "runIndexer", summary: "Extract fields from records synchronously", tag: "indexer", errors: providerBacked },
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

/** The table entry of a route, by method and canonical path (either path form). */
export function findApiOperation(method: string, path: string): ApiOperation | undefined {
  const key = apiOperationKey(method, path);
  return apiOperations().find((entry) => apiOperationKey(entry.method, entry.path) === key);
}
