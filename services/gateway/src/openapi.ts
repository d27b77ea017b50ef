import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  apiTags,
  apiSchemas,
  ClassifiedErrorBody,
  SCREENING_POLL_RESPONSE_NAME,
  findApiOperation,
  forwardedRoutes,
  requestExamples,
  SimpleErrorBody,
  ValidationErrorBody,
  type ApiOperation,
  type ErrorBodyName,
  type ErrorResponse,
  type RequestLimits,
} from "@litrev/contracts";
import { documentLimits } from "./openapi-limits";

/** The spec's three error bodies, as reusable components; routes refer to them by name. */
const ERROR_BODIES: Record<ErrorBodyName, { schema: z.ZodType; description: string; example: unknown }> = {
  ValidationError: {
    schema: ValidationErrorBody,
    description: "Field-level validation error: one entry per problem, `loc` like `[\"body\", \"papers\"]` (FastAPI-compatible).",
    example: { detail: [{ type: "missing", loc: ["body", "research_question"], msg: "Field required" }] },
  },
  SimpleError: {
    schema: SimpleErrorBody,
    description: "Simple error: a message only (404, 409, the screening cost ceiling, a body over the size limit).",
    example: { detail: "Job not found" },
  },
  ClassifiedError: {
    schema: ClassifiedErrorBody,
    description:
      "Classified error: `error_code` is the spec's category (`validation`, `auth`, `rate_limit`, `unknown`), `error_reason` the finer cause " +
      "(docs/errors.md), and `retryable` says whether retrying can help.",
    example: { detail: { message: "Missing or invalid API key", error_code: "auth", error_reason: "auth", retryable: false } },
  },
};

const STATUS_TEXT: Record<number, string> = {
  400: "The request is invalid",
  401: "Missing or invalid service key, an invalid provider key, or an exhausted provider quota (`error_code` `auth`; `error_reason` `quota` for the quota)",
  404: "Not found",
  409: "Another job for this project is pending or running",
  413: "The request body exceeds the size limit or holds too many JSON values, or a job would hold more than its client's whole storage quota",
  429: "This client's request limits or the provider's rate limit (`rate_limit`, retryable, with `Retry-After`)",
  500: "Unexpected server error",
  502: "The provider failed or could not be reached, after retries (retryable)",
  503: "Messaging or the owning service is unavailable (retryable)",
  504: "The owning service did not answer in time (retryable)",
};

type JsonObject = Record<string, unknown>;
const HTTP_METHODS = ["get", "put", "post", "delete", "patch"] as const;

const namedComponents = createJsonSchemaTransformObject({ schemaRegistry: apiSchemas });

/** OpenAPI generated from the same zod contracts that validate requests: `/openapi.json`, UI at `/docs`. */
export async function registerOpenApi(app: FastifyInstance, limits: RequestLimits): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Literature-review AI service",
        version: "1.0.0",
        description:
          "Screening, structured extraction and eligibility-criteria assistance. Every route is also served without the /v1 prefix. " +
          "Send the service key as `X-API-Key` or `Authorization: Bearer`; `X-LLM-API-Key` (or, as the original system's clients send it, " +
          "`X-OpenAI-API-Key`) overrides the provider key for one request. `GET /` redirects here.",
        license: { name: "MIT", identifier: "MIT" },
      },
      // Relative: "Try it out" on /docs calls the origin that served the page, wherever that is.
      servers: [{ url: "/", description: "The gateway that serves this document" }],
      tags: Object.entries(apiTags()).map(([name, description]) => ({ name, description })),
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "The service key" },
          bearer: { type: "http", scheme: "bearer", description: "The service key as a bearer token" },
        },
      },
      security: [{ apiKey: [] }, { bearer: [] }],
    },
    // Schemas named in `apiSchemas` become components that routes refer to by `$ref`.
    transform: createJsonSchemaTransform({ schemaRegistry: apiSchemas }),
    transformObject: (input) => {
      const withComponents = namedComponents(input as Parameters<typeof namedComponents>[0]) as JsonObject;
      return describeOperations(withComponents, limits, app.log);
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  // Where the original system sent a person who opens the service's address: the interactive docs.
  app.get("/", { schema: { hide: true } }, (_request, reply) => reply.redirect("/docs"));
}

/**
 * Applies the operations table to every operation of the document, wherever its route was
 * defined: operation id, summary, tag, security, request example, and the error statuses with
 * their named bodies. The table is authoritative for non-2xx statuses; the route keeps its own
 * success body. An operation without an entry is left bare (and logged), which the gateway's
 * OpenAPI test reports by name.
 */
function describeOperations(document: JsonObject, limits: RequestLimits, log?: FastifyBaseLogger): JsonObject {
  const components = (document.components ?? {}) as JsonObject;
  const schemas: JsonObject = { ...((components.schemas ?? {}) as JsonObject) };
  for (const [name, body] of Object.entries(ERROR_BODIES)) {
    schemas[name] = { ...z.toJSONSchema(body.schema, { target: "draft-2020-12" }), description: body.description, examples: [body.example] };
    delete (schemas[name] as JsonObject).$schema;
  }
  const paths = (document.paths ?? {}) as Record<string, JsonObject>;
  pollResponseAlias(schemas, paths);
  documentLimits(paths, limits);
  const keyed = providerKeyRoutes();
  for (const [path, item] of Object.entries(paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method] as JsonObject | undefined;
      if (!operation) continue;
      const entry = findApiOperation(method, path);
      if (!entry) {
        log?.warn({ method: method.toUpperCase(), path }, "route has no entry in the operations table (libs/contracts/src/operations.ts)");
        continue;
      }
      item[method] = describe(operation, entry, keyed);
    }
  }
  dropUnused(schemas, paths);
  plainInputNames(schemas, paths);
  return { ...document, components: { ...components, schemas } };
}

const REF_PREFIX = "#/components/schemas/";

/** Every `$ref` to a component under `node`. */
function refsIn(node: unknown, found: Set<string> = new Set()): Set<string> {
  if (Array.isArray(node)) node.forEach((child) => refsIn(child, found));
  else if (node && typeof node === "object") {
    const ref = (node as JsonObject).$ref;
    if (typeof ref === "string" && ref.startsWith(REF_PREFIX)) found.add(ref.slice(REF_PREFIX.length));
    Object.values(node).forEach((child) => refsIn(child, found));
  }
  return found;
}

/** The registry yields every named schema both ways: keep only components some operation reaches. */
function dropUnused(schemas: JsonObject, paths: JsonObject): void {
  const reached = new Set<string>();
  let frontier = [...refsIn(paths)];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const name of frontier) {
      if (reached.has(name)) continue;
      reached.add(name);
      next.push(...refsIn(schemas[name]));
    }
    frontier = next;
  }
  for (const name of Object.keys(schemas)) if (!reached.has(name)) delete schemas[name];
}

function describe(operation: JsonObject, entry: ApiOperation, keyed: ReadonlySet<string>): JsonObject {
  const ownResponses = (operation.responses ?? {}) as Record<string, JsonObject>;
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(ownResponses)) {
    // fastify-swagger's placeholder description says nothing; the summary says what succeeds.
    if (/^2/.test(status)) responses[status] = response.description === "Default Response" ? { ...response, description: "OK" } : response;
  }
  const success = Object.values(responses)[0] as JsonObject | undefined;
  for (const [status, errors] of Object.entries(entry.errors) as [string, ErrorResponse][]) {
    responses[status] =
      errors === "success-body"
        ? { ...success, description: "Degraded: a check failed (the same body as the success response)" }
        : errorResponse(Number(status), errors);
  }
  const described: JsonObject = {
    ...operation,
    operationId: entry.operationId,
    summary: entry.summary,
    tags: [entry.tag],
    responses,
  };
  if (entry.public) described.security = [];
  if (keyed.has(`${entry.method} ${entry.path}`)) described.parameters = [...((operation.parameters as unknown[] | undefined) ?? []), ...PROVIDER_KEY_HEADERS];
  const example = requestExamples[entry.operationId];
  const json = ((operation.requestBody as JsonObject | undefined)?.content as Record<string, JsonObject> | undefined)?.["application/json"];
  if (example !== undefined && json) {
    described.requestBody = {
      ...(operation.requestBody as JsonObject),
      content: { "application/json": { ...json, example } },
    };
  }
  return described;
}

/** The routes whose request may carry the client's provider key (`operation.providerKey`), as `METHOD /path`. */
const providerKeyRoutes = () => new Set(forwardedRoutes().filter((r) => r.operation.providerKey).map((r) => `${r.method} ${r.path}`));

/** Both names of the provider-key header (services/gateway/src/auth.ts, `providerKeyOf`). */
const PROVIDER_KEY_HEADERS = [
  {
    name: "X-LLM-API-Key",
    in: "header",
    required: false,
    description: "The language-model provider key for this request (the server's own is used otherwise). Never logged or stored in clear.",
    schema: { type: "string" },
  },
  {
    name: "X-OpenAI-API-Key",
    in: "header",
    required: false,
    description: "The same provider key under the name the original system's clients send. Sent with a different `X-LLM-API-Key`: 400.",
    schema: { type: "string" },
  },
];

function errorResponse(status: number, bodies: readonly ErrorBodyName[]): JsonObject {
  const refs = bodies.map((name) => ({ $ref: `#/components/schemas/${name}` }));
  return {
    description: STATUS_TEXT[status] ?? `HTTP ${status}`,
    content: { "application/json": { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } },
  };
}

/**
 * A schema used only in requests is emitted as `<Name>Input`; with no output schema of that name
 * it takes the plain name (`ProjectContext`), and every reference follows.
 */
function plainInputNames(schemas: JsonObject, paths: JsonObject): void {
  const renames = new Map<string, string>();
  for (const name of Object.keys(schemas)) {
    const plain = name.replace(/Input$/, "");
    if (plain !== name && !(plain in schemas)) renames.set(`#/components/schemas/${name}`, `#/components/schemas/${plain}`);
  }
  if (renames.size === 0) return;
  for (const ref of renames.keys()) {
    const name = ref.slice("#/components/schemas/".length);
    schemas[name.replace(/Input$/, "")] = schemas[name];
    delete schemas[name];
  }
  const rewrite = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(rewrite);
    if (!node || typeof node !== "object") return;
    const object = node as JsonObject;
    if (typeof object.$ref === "string" && renames.has(object.$ref)) object.$ref = renames.get(object.$ref);
    Object.values(object).forEach(rewrite);
  };
  rewrite(schemas);
  rewrite(paths);
}

/** The spec's name for the screening poll response, as a component the poll refers to. */
function pollResponseAlias(schemas: JsonObject, paths: JsonObject): void {
  const poll = (paths["/v1/screening/jobs/{job_id}"] as JsonObject | undefined)?.get as JsonObject | undefined;
  const json = (((poll?.responses as JsonObject | undefined)?.["200"] as JsonObject | undefined)?.content as JsonObject | undefined)?.[
    "application/json"
  ] as JsonObject | undefined;
  if (!json || !schemas.ScreeningJob) return;
  schemas[SCREENING_POLL_RESPONSE_NAME] = {
    $ref: "#/components/schemas/ScreeningJob",
    description: "The spec's ScreeningResultResponse: a screening job as a poll returns it.",
  };
  json.schema = { $ref: `#/components/schemas/${SCREENING_POLL_RESPONSE_NAME}` };
}
