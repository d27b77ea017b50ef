import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, TEST_API_KEY, waitFor, type RunningProcess, type Stack } from "../support/stack";

/**
 * The foundation through real processes: a gateway and a criteria service over a real
 * nats-server. Authentication, the six criteria endpoints in mock mode, validation bodies and
 * the configuration endpoints, as the spec states them.
 */

let stack: Stack;
let criteria: RunningProcess;

beforeAll(async () => {
  // The configuration test sets a model of its own: allowed by name (docs/security.md).
  stack = await startStack({ services: { criteria: 1 }, env: { ALLOWED_MODELS: "llm-test-model" } });
  criteria = stack.processes.find((p) => p.name === "criteria")!;
});
afterAll(async () => stack?.stop());

const question = { research_question: "Does exercise reduce depression in older adults?", mock: true };

describe("health and authentication", () => {
  it("answers /health without a key", async () => {
    const res = await stack.http("GET", "/health", undefined, { auth: false });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
  });

  it("answers /health/ready without a key, in the spec's shape", async () => {
    const res = await stack.http("GET", "/health/ready", undefined, { auth: false });
    expect([200, 503]).toContain(res.status);
    expect(res.body.status).toBe(res.status === 200 ? "ready" : "degraded");
    expect(res.body.checks).toMatchObject({ openai_key: "missing", nats: "ok", "service:criteria": "ok (1 instance)" });
    expect(typeof res.body.checks.database).toBe("string");
  });

  it("accepts the key as X-API-Key and as a bearer token, with and without /v1", async () => {
    const variants: [string, Record<string, string>][] = [
      ["/v1/criteria/analyze-question", { "x-api-key": TEST_API_KEY }],
      ["/criteria/analyze-question", { "x-api-key": TEST_API_KEY }],
      ["/v1/criteria/analyze-question", { authorization: `Bearer ${TEST_API_KEY}` }],
      ["/criteria/analyze-question", { authorization: `Bearer ${TEST_API_KEY}` }],
    ];
    for (const [path, headers] of variants) {
      const res = await stack.http("POST", path, question, { auth: false, headers });
      expect(res.status, `${path} ${Object.keys(headers)[0]}`).toBe(200);
      expect(res.body.status).toBe("could_improve");
    }
  });

  it("answers 401 with the classified auth body without a key or with a wrong one", async () => {
    const attempts: Record<string, string>[] = [{}, { "x-api-key": "not-the-key" }, { authorization: "Bearer not-the-key" }];
    for (const headers of attempts) {
      const res = await stack.http("POST", "/v1/criteria/analyze-question", question, { auth: false, headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: { message: expect.any(String), error_code: "auth", error_reason: "auth", retryable: false } });
    }
  });
});

describe("criteria endpoints in mock mode", () => {
  it("analyze-question: could_improve with placeholder missing elements", async () => {
    const res = await stack.http("POST", "/v1/criteria/analyze-question", question);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["missing_elements", "status", "suggestion"]);
    expect(res.body.status).toBe("could_improve");
    expect(res.body.missing_elements.length).toBeGreaterThan(0);
    for (const element of res.body.missing_elements) expect(element).toMatch(/placeholder/i);
    expect(res.body.suggestion).toMatch(/placeholder/i);
  });

  it("generate: honours criterion_type and defaults to exclude", async () => {
    const body = { project_description: "Exercise for depression in older adults", mock: true };
    for (const [type, expected] of [["include", "include"], ["exclude", "exclude"], [undefined, "exclude"]] as const) {
      const res = await stack.http("POST", "/v1/criteria/generate", type ? { ...body, criterion_type: type } : body);
      expect(res.status).toBe(200);
      expect(res.body.criteria.length).toBeGreaterThan(0);
      for (const criterion of res.body.criteria) {
        expect(criterion).toMatchObject({
          category: expect.any(String),
          text: expect.any(String),
          description: expect.stringMatching(/placeholder/i),
          criterion_type: expected,
          title_abstract_assessable: expect.any(Boolean),
        });
      }
    }
  });

  it("picos: placeholder elements under the five keys and a gap flag saying it is mock", async () => {
    const res = await stack.http("POST", "/v1/criteria/picos", { project_description: "Exercise and depression", mock: true });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.elements).sort()).toEqual(["comparison", "intervention", "outcome", "population", "study_design"]);
    for (const value of Object.values(res.body.elements)) expect(value).toMatch(/placeholder/i);
    expect(res.body.gap_flags.some((flag: string) => /mock/i.test(flag))).toBe(true);
    expect(res.body.contraindications).toEqual([]);
  });

  it("refine-context: returns the description and questions with a placeholder explanation", async () => {
    const body = { description: "Exercise and depression", research_questions: ["Does it help?"], mock: true };
    const res = await stack.http("POST", "/v1/criteria/refine-context", body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ refined_description: body.description, refined_research_questions: body.research_questions });
    expect(res.body.explanation).toMatch(/placeholder/i);
  });

  it("refine: one criterion back per current criterion", async () => {
    const current = [
      { text: "Adults over 65", category: "Population", criterion_type: "include" },
      { text: "Animal studies", type: "exclude" },
    ];
    const res = await stack.http("POST", "/v1/criteria/refine", { current_criteria: current, conflicts: [], mock: true });
    expect(res.status).toBe(200);
    expect(res.body.criteria).toHaveLength(2);
    expect(res.body.criteria[0]).toMatchObject({ text: "Adults over 65", category: "Population", criterion_type: "include" });
    expect(res.body.criteria[1]).toMatchObject({ text: "Animal studies", criterion_type: "exclude" });
  });

  it("consolidate: empty lists and a warning that no consolidation was performed", async () => {
    const res = await stack.http("POST", "/v1/criteria/consolidate", { criteria: [{ id: 1, text: "a" }, { id: 2, text: "a" }], mock: true });
    expect(res.status).toBe(200);
    expect(res.body.duplicate_groups).toEqual([]);
    expect(res.body.consolidation_proposals).toEqual([]);
    expect(res.body.warnings.some((w: string) => /no consolidation was performed/i.test(w))).toBe(true);
  });

  it("is deterministic: the same request gives the same answer", async () => {
    const body = { project_description: "Exercise and depression", criterion_type: "include", mock: true };
    const [a, b] = await Promise.all([stack.http("POST", "/criteria/generate", body), stack.http("POST", "/criteria/generate", body)]);
    expect(a.body).toEqual(b.body);
  });
});

describe("validation bodies through the real gateway", () => {
  it("missing field", async () => {
    const res = await stack.http("POST", "/v1/criteria/analyze-question", { mock: true });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: [{ type: "missing", loc: ["body", "research_question"], msg: "Field required" }] });
  });

  it("missing body", async () => {
    const res = await stack.http("POST", "/v1/criteria/picos");
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: [{ type: "missing", loc: ["body"], msg: "Field required" }] });
  });

  it("malformed JSON", async () => {
    const res = await stack.http("POST", "/v1/criteria/analyze-question", undefined, { rawBody: '{"research_question": "q",' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toEqual([expect.objectContaining({ type: "json_invalid", loc: ["body"] })]);
  });

  it("value outside an enum", async () => {
    const res = await stack.http("POST", "/criteria/generate", { project_description: "p", criterion_type: "maybe", mock: true });
    expect(res.status).toBe(400);
    expect(res.body.detail).toEqual([expect.objectContaining({ type: "enum", loc: ["body", "criterion_type"] })]);
  });
});

describe("configuration", () => {
  it("lists the criteria prompts", async () => {
    const res = await stack.http("GET", "/v1/config/prompts");
    expect(res.status).toBe(200);
    const names = res.body.map((p: { name: string }) => p.name);
    expect(names).toContain("criteria.question_analysis");
    for (const prompt of res.body) {
      expect(Object.keys(prompt).sort()).toEqual(["description", "has_variables", "name", "service", "system_or_user"]);
    }
  });

  it("reads the criteria service's announced defaults, and lists every service", async () => {
    const one = await stack.http("GET", "/v1/config/services/criteria");
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ service_id: "criteria", model: expect.any(String), system_prompt: expect.any(String) });
    expect(one.body.system_prompt.length).toBeGreaterThan(0);
    const all = await stack.http("GET", "/config/services");
    expect(all.status).toBe(200);
    expect(all.body.map((c: { service_id: string }) => c.service_id)).toEqual(expect.arrayContaining(["criteria", "screening", "extraction"]));
  });

  it("returns a default config for an unknown id, not 404", async () => {
    const res = await stack.http("GET", "/v1/config/services/no-such-service");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      service_id: "no-such-service",
      model: expect.any(String),
      system_prompt: expect.any(String),
      prompt_template_id: expect.any(String),
      temperature: expect.any(Number),
      max_output_tokens: expect.any(Number),
      extra: {},
    });
  });

  it("rejects an invalid patch with the validation list", async () => {
    const res = await stack.http("PUT", "/v1/config/services/criteria", { temperature: "hot", max_output_tokens: -1 });
    expect(res.status).toBe(400);
    expect(res.body.detail.map((i: { loc: string[] }) => i.loc)).toEqual([
      ["body", "temperature"],
      ["body", "max_output_tokens"],
    ]);
  });

  it("applies a patch to the running service without a restart", async () => {
    const before = criteria.output().length;
    const put = await stack.http("PUT", "/v1/config/services/criteria", { model: "llm-test-model", extra: { note: "e2e" } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ service_id: "criteria", model: "llm-test-model", extra: { note: "e2e" } });

    const applied = await waitFor(() =>
      criteria
        .output()
        .slice(before)
        .split("\n")
        .filter((line) => line.includes('"configuration applied"'))
        .map((line) => JSON.parse(line) as { model?: string; level: number })
        .find((entry) => entry.model === "llm-test-model"),
    );
    expect(applied.level).toBe(30); // info

    const get = await stack.http("GET", "/config/services/criteria");
    expect(get.body).toMatchObject({ model: "llm-test-model", extra: { note: "e2e" } });
    // A second patch keeps the first one's fields.
    const again = await stack.http("PUT", "/v1/config/services/criteria", { temperature: 0.7 });
    expect(again.body).toMatchObject({ model: "llm-test-model", temperature: 0.7 });
  });
});
