import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { apiOperations } from "@litrev/contracts";
import { offlineLink, testGateway } from "./testing";

/**
 * The OpenAPI document as generators see it: every operation named, summarised, tagged and with
 * the spec's statuses, all taken from the one operations table whatever file defines the route.
 */

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
  requestBody?: { content: Record<string, { example?: unknown }> };
}
type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, Record<string, string>> };
  tags: { name: string }[];
  servers: { url: string }[];
  info: { license?: { name: string } };
  security: Record<string, unknown>[];
};

/** The spec's status codes per route (Endpoints), written out here independently of the table. */
const SPEC_CODES: Record<string, number[]> = {
  "GET /health": [200],
  "GET /health/ready": [200, 503],
  "GET /v1/config/services": [200, 401],
  "GET /v1/config/services/{service_id}": [200, 401],
  "PUT /v1/config/services/{service_id}": [200, 400, 401, 500],
  "GET /v1/config/prompts": [200, 401],
  "POST /v1/screening/jobs": [200, 400, 401, 409, 500],
  "GET /v1/screening/jobs/{job_id}": [200, 401, 404],
  "GET /v1/screening/jobs": [200, 401],
  "GET /v1/screening/active-job": [200, 401],
  "POST /v1/screening/estimate": [200, 400, 401, 500],
  "POST /v1/indexer/run": [200, 400, 401, 429, 500],
  "POST /v1/indexer/jobs": [200, 400, 401, 500],
  "GET /v1/indexer/jobs/{job_id}": [200, 401, 404],
  "GET /v1/indexer/jobs": [200, 401],
  "GET /v1/indexer/active-job": [200, 401],
  "POST /v1/indexer/estimate": [200, 400, 401, 500],
  "POST /v1/indexer/suggest-fields": [200, 400, 401, 429, 500],
  "POST /v1/indexer/refine-fields": [200, 400, 401, 429, 500],
  "POST /v1/indexer/group-tags": [200, 400, 401, 429, 500],
  ...Object.fromEntries(
    ["analyze-question", "generate", "picos", "refine-context", "refine", "consolidate"].map((p) => [`POST /v1/criteria/${p}`, [200, 400, 401, 429, 500]]),
  ),
};

/** Routes the project adds beyond the spec (issues asked for them); every other route is the spec's. */
const ADDED_ROUTES = [
  "DELETE /v1/config/services/{service_id}",
  "GET /v1/config/models",
  "PUT /v1/config/models",
  "GET /v1/screening/jobs/{job_id}/events",
  "GET /v1/indexer/jobs/{job_id}/events",
  "GET /v1/screening/jobs/{job_id}/export",
  "GET /v1/screening/jobs/{job_id}/report",
  "GET /v1/indexer/jobs/{job_id}/export",
  "GET /v1/indexer/jobs/{job_id}/report",
  "POST /v1/screening/jobs/{job_id}/validation",
  "POST /v1/screening/jobs/{job_id}/validation-samples",
  "POST /v1/screening/jobs/{job_id}/validation-samples/{sample_id}/labels",
  "GET /v1/screening/jobs/{job_id}/validation-samples/{sample_id}",
  "GET /v1/screening/jobs/{job_id}/validation-samples/{sample_id}/download",
  "POST /v1/screening/jobs/{job_id}/cancel",
  "DELETE /v1/screening/jobs/{job_id}",
  "POST /v1/indexer/jobs/{job_id}/cancel",
  "DELETE /v1/indexer/jobs/{job_id}",
];

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function gateway(extraRoutes?: (app: FastifyInstance) => void): Promise<FastifyInstance> {
  app = await testGateway(offlineLink(), { API_KEY: "openapi-test-key" });
  extraRoutes?.(app);
  return app;
}

async function documentOf(target: FastifyInstance): Promise<Document> {
  const res = await target.inject({ method: "GET", url: "/openapi.json", headers: { "x-api-key": "openapi-test-key" } });
  expect(res.statusCode).toBe(200);
  return res.json() as Document;
}

function operationsOf(doc: Document): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as [string, Operation]),
  );
}

/** Operations the table does not describe: what a route added without an entry looks like. */
const withoutEntry = (doc: Document) => operationsOf(doc).filter(([, op]) => !op.operationId).map(([key]) => key);

describe("the OpenAPI document", () => {
  it("describes every route from the operations table, one entry per route and no entry without a route", async () => {
    const doc = await documentOf(await gateway());
    expect(withoutEntry(doc), "routes with no entry in apiOperations (libs/contracts/src/operations.ts)").toEqual([]);
    const documented = operationsOf(doc).map(([key]) => key).sort();
    expect(documented).toEqual(apiOperations().map((e) => `${e.method} ${e.path}`).sort());
    for (const [key, op] of operationsOf(doc)) {
      const entry = apiOperations().find((e) => `${e.method} ${e.path}` === key)!;
      expect(op, key).toMatchObject({ operationId: entry.operationId, summary: entry.summary, tags: [entry.tag] });
    }
  });

  it("names every operation uniquely, readably, and independently of its path", async () => {
    const doc = await documentOf(await gateway());
    const ids = operationsOf(doc).map(([, op]) => op.operationId!);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z]+$/);
    expect(ids.length).toBe(Object.keys(SPEC_CODES).length + ADDED_ROUTES.length);
  });

  it("documents every status the spec lists for each route, and a 4xx for every route but liveness", async () => {
    const doc = await documentOf(await gateway());
    for (const [key, codes] of Object.entries(SPEC_CODES)) {
      const [method, path] = key.split(" ") as [string, string];
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op, key).toBeDefined();
      const statuses = Object.keys(op!.responses).map(Number);
      expect(statuses, key).toEqual(expect.arrayContaining(codes));
      const failure = statuses.some((s) => s >= 400 && s < 500) || (key === "GET /health/ready" && statuses.includes(503));
      expect(failure || key === "GET /health", `${key} documents no failure`).toBe(true);
    }
    expect(Object.keys(doc.paths["/health"]!.get!.responses)).toEqual(["200"]);
  });

  it("refers every error status to one of the spec's three named bodies", async () => {
    const doc = await documentOf(await gateway());
    const names = ["ValidationError", "SimpleError", "ClassifiedError"];
    for (const name of names) expect(doc.components.schemas[name], name).toBeDefined();
    for (const [key, op] of operationsOf(doc)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400 || key === "GET /health/ready") continue;
        const schema = response.content!["application/json"]!.schema;
        const refs = ((schema.oneOf as { $ref: string }[] | undefined) ?? [schema as { $ref: string }]).map((s) => s.$ref);
        expect(refs.length, `${key} ${status}`).toBeGreaterThan(0);
        for (const ref of refs) expect(names.map((n) => `#/components/schemas/${n}`), `${key} ${status}`).toContain(ref);
      }
    }
    expect(doc.paths["/v1/screening/jobs"]!.post!.responses["409"]!.content!["application/json"]!.schema).toEqual({ $ref: "#/components/schemas/SimpleError" });
    expect(doc.paths["/v1/criteria/picos"]!.post!.responses["429"]!.content!["application/json"]!.schema).toEqual({ $ref: "#/components/schemas/ClassifiedError" });
  });

  it("gives the error components the shapes the gateway really sends", async () => {
    const target = await gateway();
    const doc = await documentOf(target);
    const validator = (name: string) => z.fromJSONSchema(doc.components.schemas[name] as never);
    const unauthorised = await target.inject({ method: "GET", url: "/v1/config/prompts" });
    expect(validator("ClassifiedError").safeParse(unauthorised.json()).success).toBe(true);
    const invalid = await target.inject({ method: "POST", url: "/v1/criteria/picos", headers: { "x-api-key": "openapi-test-key" }, payload: {} });
    expect(invalid.statusCode).toBe(400);
    expect(validator("ValidationError").safeParse(invalid.json()).success).toBe(true);
    const notFound = await target.inject({ method: "GET", url: "/v1/nowhere", headers: { "x-api-key": "openapi-test-key" } });
    expect(validator("SimpleError").safeParse(notFound.json()).success).toBe(true);
    expect(validator("SimpleError").safeParse(unauthorised.json()).success).toBe(false);
  });

  it("declares servers, a licence, the capability tags, both key headers, and public health routes", async () => {
    const doc = await documentOf(await gateway());
    // Relative: "Try it out" on /docs calls whatever origin served the page.
    expect(doc.servers).toEqual([{ url: "/", description: expect.any(String) }]);
    expect(doc.info.license?.name).toBe("MIT");
    expect(doc.tags.map((t) => t.name).sort()).toEqual(["configuration", "criteria", "health", "indexer", "screening"]);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" });
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ apiKey: [] }, { bearer: [] }]);
    for (const [key, op] of operationsOf(doc)) {
      if (key.startsWith("GET /health")) expect(op.security, key).toEqual([]);
      else expect(op.security, key).toBeUndefined();
    }
  });

  it("shows request examples built from the spec's defaults", async () => {
    const doc = await documentOf(await gateway());
    const example = (path: string) => doc.paths[path]!.post!.requestBody!.content["application/json"]!.example as Record<string, unknown>;
    expect(example("/v1/screening/jobs")).toMatchObject({ model: "llm-5-nano", repetitions: 5, threshold: 1.0 });
    expect(example("/v1/indexer/run")).toMatchObject({ model: "llm-5-mini", mode: "full", max_workers: 4, batch_size: 50 });
    expect(example("/v1/criteria/analyze-question")).toMatchObject({ model: "llm-5-mini" });
    expect(example("/v1/criteria/generate")).toMatchObject({ model: "llm-4.1", criterion_type: "exclude" });
  });

  it("names a component schema for every resource the spec names, and only components some operation uses", async () => {
    const doc = await documentOf(await gateway());
    const names = Object.keys(doc.components.schemas);
    const SPEC_RESOURCES = [
      "ScreeningResultResponse", "ScreeningJob", "ScreeningJobListItem", "IndexerJob", "IndexerJobListItem", "IndexerField", "ProjectContext",
      "CriterionResponse", "DuplicateGroup", "ConsolidationProposal", "TagGroup", "ExtractionWarning", "FieldSuggestion", "ServiceConfigResponse",
    ];
    expect(names).toEqual(expect.arrayContaining(SPEC_RESOURCES));
    expect(names.length).toBeGreaterThanOrEqual(15);
    const text = JSON.stringify(doc.paths);
    const reached = new Set([...JSON.stringify(doc).matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)].map((m) => m[1]));
    for (const name of names) expect(reached.has(name), `${name} is never referred to`).toBe(true);
    // Routes refer to the resources by name rather than repeating them.
    expect(doc.paths["/v1/screening/jobs/{job_id}"]!.get!.responses["200"]!.content!["application/json"]!.schema).toEqual({
      $ref: "#/components/schemas/ScreeningResultResponse",
    });
    expect(text).toContain('"$ref":"#/components/schemas/IndexerJobListItem"');
    // Named schemas keep the contracts' descriptions, their own and their fields'.
    const evidence = doc.components.schemas.Evidence as { description: string; properties: { end: { description: string } } };
    expect(evidence.description).toMatch(/verified against the record/);
    expect(evidence.properties.end.description).toContain("source.slice(start, end) === quote");
  });

  it("declares screening result items as the pipeline writes them: decision, votes and a verdict per criterion", async () => {
    const doc = await documentOf(await gateway());
    const result = doc.components.schemas.ScreeningResult as { properties: Record<string, Record<string, unknown>>; required: string[] };
    expect(result.required).toEqual(expect.arrayContaining(["id", "final_score", "cluster_id", "reasoning", "decision", "votes", "criteria_verdicts"]));
    expect(result.properties.decision).toEqual({ type: "string", enum: ["include", "exclude"] });
    expect(result.properties.criteria_verdicts).toMatchObject({ type: "array", items: { $ref: "#/components/schemas/CriterionVerdict" } });
    const job = doc.components.schemas.ScreeningJob as { properties: { results: unknown } };
    expect(JSON.stringify(job.properties.results)).toContain("#/components/schemas/ScreeningResult");
  });

  it("leaves a route added without a table entry bare, so the first test names it", async () => {
    const doc = await documentOf(
      await gateway((target) => target.get("/v1/screening/jobs/:job_id/unlisted", { schema: { summary: "not in the table" } }, async () => ({}))),
    );
    expect(withoutEntry(doc)).toEqual(["GET /v1/screening/jobs/{job_id}/unlisted"]);
  });
});
