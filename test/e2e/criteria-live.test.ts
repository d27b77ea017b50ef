import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  AnalyzeQuestionResponse,
  ConsolidateResponse,
  CriteriaListResponse,
  PicosResponse,
  RefineContextResponse,
} from "@litrev/contracts";
import { startFakeProvider, strictSchemaProblem, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { startStack, waitFor, type Stack } from "../support/stack";

const SERVER_KEY = "sk-server-configured-key";
const KEYS = { alice: "sk-alice-per-request-key", bob: "sk-bob-per-request-key" };

const schemaName = (request: FakeChatRequest) => request.response_format?.json_schema?.name ?? "";
const bodyOf = (request: { body: unknown }) => request.body as FakeChatRequest;

describe("Criteria AI live, through the gateway, against a fake OpenAI-compatible provider", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY, KEYS.alice, KEYS.bob] });
    stack = await startStack({
      services: { criteria: 1 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        LLM_MAX_ATTEMPTS: "3",
        LLM_DEADLINE_MS: "20000",
        LOG_LEVEL: "debug",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => provider.reset());

  const post = (path: string, body: unknown, headers?: Record<string, string>) =>
    stack.http("POST", `/v1/criteria/${path}`, body, headers ? { headers } : {});

  it("answers every endpoint with a spec-shaped body from strict json_schema requests", async () => {
    const calls = [
      ["analyze-question", { research_question: "Do reminders improve guideline adherence in nurses?" }, AnalyzeQuestionResponse],
      ["generate", { project_description: "Nudges for clinicians", criterion_type: "include" }, CriteriaListResponse],
      ["picos", { project_description: "Nudges for clinicians", research_questions: ["Do nudges work?"] }, PicosResponse],
      ["refine-context", { description: "Nudges for clinicians" }, RefineContextResponse],
      ["refine", { current_criteria: [{ id: 1, text: "Adults" }], conflicts: [{ paper: 3, human: "include", ai: "exclude" }] }, CriteriaListResponse],
      ["consolidate", { criteria: [{ id: 1, text: "Adults" }, { id: 2, text: "Grown-ups" }] }, ConsolidateResponse],
    ] as const;
    for (const [path, body, schema] of calls) {
      const res = await post(path, body);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(schema.safeParse(res.body).success, path).toBe(true);
    }
    const chats = provider.chatRequests().map(bodyOf);
    expect(chats).toHaveLength(calls.length);
    for (const chat of chats) {
      expect(chat.response_format?.type).toBe("json_schema");
      expect(chat.response_format?.json_schema?.strict).toBe(true);
      expect(strictSchemaProblem(chat.response_format?.json_schema?.schema)).toBeUndefined();
    }
    // Spec defaults: llm-5-mini for analyze-question, llm-4.1 for the rest.
    expect(chats[0]!.model).toBe("gpt-5-mini");
    expect(chats.slice(1).every((chat) => chat.model === "gpt-4.1")).toBe(true);
  });

  it("generate honours criterion_type and drops criteria that repeat existing ones", async () => {
    provider.setBehaviour({
      respond: (request) =>
        schemaName(request) === "criteria_generation"
          ? {
              criteria: [
                { category: "Population", text: "Adults aged 18 or over", description: "d", criterion_type: "exclude", confidence: 0.9, rationale: "r", title_abstract_assessable: true },
                { category: "Design", text: "Randomised controlled trials", description: "d", criterion_type: "exclude", confidence: 1.4, rationale: "r", title_abstract_assessable: false },
              ],
            }
          : undefined,
    });
    const res = await post("generate", {
      project_description: "Nudges for clinicians",
      criterion_type: "include",
      existing_criteria: [{ text: "adults aged 18 or over." }],
    });
    expect(res.status).toBe(200);
    expect(res.body.criteria).toEqual([
      expect.objectContaining({ text: "Randomised controlled trials", criterion_type: "include", confidence: 1 }),
    ]);
  });

  it("consolidate applies the confidence, label-length and known-id rules", async () => {
    const ten = "Adults in hospital settings receiving any kind of clinical nudge"; // 10 words
    provider.setBehaviour({
      respond: () => ({
        duplicate_groups: [
          { group_type: "exact", category: "Population", criterion_ids: [1, 2], recommended_primary_id: 1, merge_rationale: "same", ai_confidence: 0.8 },
          { group_type: "semantic", category: "Population", criterion_ids: [1, 3], recommended_primary_id: 1, merge_rationale: "close", ai_confidence: 0.6 },
          { group_type: "semantic", category: "Outcome", criterion_ids: [3, 42], recommended_primary_id: 42, merge_rationale: "ghost", ai_confidence: 0.95 },
        ],
        consolidation_proposals: [
          { category: "Population", criterion_ids: [1, 2, 42], proposed_merged_criterion: ten, proposed_description: "d", proposed_type: "include", merge_rationale: "r", ai_confidence: 0.9 },
          { category: "Population", criterion_ids: [2, 3], proposed_merged_criterion: `${ten} today`, proposed_description: "d", proposed_type: "include", merge_rationale: "r", ai_confidence: 0.9 },
          { category: "Population", criterion_ids: [1, 3], proposed_merged_criterion: "Adults", proposed_description: "d", proposed_type: "include", merge_rationale: "r", ai_confidence: 0.7 },
        ],
      }),
    });
    const res = await post("consolidate", { criteria: [{ id: 1, text: "Adults" }, { id: 2, text: "Adults 18+" }, { id: 3, text: "Grown-ups" }] });
    expect(res.status).toBe(200);
    expect(res.body.duplicate_groups).toEqual([expect.objectContaining({ criterion_ids: [1, 2], ai_confidence: 0.8 })]);
    expect(res.body.consolidation_proposals).toEqual([expect.objectContaining({ criterion_ids: [1, 2], proposed_merged_criterion: ten })]);
    expect(res.body.warnings).toEqual([expect.stringContaining("more than 10 words")]);
  });

  it("answers 401 auth for a bad X-LLM-API-Key", async () => {
    const res = await post("analyze-question", { research_question: "Does X help Y?" }, { "x-llm-api-key": "sk-not-a-valid-key" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: { message: expect.any(String), error_code: "auth", error_reason: "auth", retryable: false } });
    expect(JSON.stringify(res.body)).not.toContain("sk-not-a-valid-key");
  });

  it("answers 429 rate_limit, retryable, after bounded retries when the provider always rate-limits", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 100 });
    const res = await post("analyze-question", { research_question: "Does X help Y?" });
    expect(res.status).toBe(429);
    expect(res.body.detail).toMatchObject({ error_code: "rate_limit", retryable: true });
    expect(provider.chatRequests()).toHaveLength(3); // LLM_MAX_ATTEMPTS
  });

  it("does not retry insufficient_quota", async () => {
    provider.setBehaviour({ mode: "insufficient_quota" });
    const res = await post("analyze-question", { research_question: "Does X help Y?" });
    // An exhausted account is the spec's auth (as the original documents it): fix the key, do not retry.
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatchObject({ error_code: "auth", error_reason: "quota", retryable: false });
    expect(provider.chatRequests()).toHaveLength(1);
  });

  it("repairs a malformed reply, and classifies one that stays malformed", async () => {
    provider.setBehaviour({ mode: "malformed", modeTimes: 1 });
    const repaired = await post("analyze-question", { research_question: "Does X help Y?" });
    expect(repaired.status).toBe(200);
    expect(AnalyzeQuestionResponse.safeParse(repaired.body).success).toBe(true);
    expect(provider.chatRequests()).toHaveLength(2);

    provider.setBehaviour({ mode: "malformed" });
    const broken = await post("analyze-question", { research_question: "Does X help Y?" });
    expect(broken.status).toBe(500);
    expect(broken.body.detail).toMatchObject({ error_code: "unknown", error_reason: "model_output", retryable: false });
    expect(broken.body.detail.message).toContain("did not return a valid");
  });

  it("uses each request's own provider key, and never logs keys", async () => {
    const [a, b] = await Promise.all([
      post("analyze-question", { research_question: "Question from Alice?" }, { "x-llm-api-key": KEYS.alice }),
      post("analyze-question", { research_question: "Question from Bob?" }, { "x-llm-api-key": KEYS.bob }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const authOf = (needle: string) =>
      provider.chatRequests().find((r) => JSON.stringify(r.body).includes(needle))?.headers.authorization;
    expect(authOf("Question from Alice?")).toBe(`Bearer ${KEYS.alice}`);
    expect(authOf("Question from Bob?")).toBe(`Bearer ${KEYS.bob}`);

    const noKey = await post("analyze-question", { research_question: "Question with the server key?" });
    expect(noKey.status).toBe(200);
    expect(authOf("Question with the server key?")).toBe(`Bearer ${SERVER_KEY}`);

    const logs = stack.processes.map((p) => p.output()).join("\n");
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [SERVER_KEY, KEYS.alice, KEYS.bob, "sk-not-a-valid-key"]) expect(logs).not.toContain(secret);
  });

  it("applies a system prompt PUT through the config endpoint to the next provider call, without a restart", async () => {
    const prompt = "You are a meticulous review methodologist (configured at run time).";
    const put = await stack.http("PUT", "/v1/config/services/criteria", { system_prompt: prompt, temperature: 0.1 });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ service_id: "criteria", system_prompt: prompt, temperature: 0.1 });
    const systemOfLastCall = async () => {
      provider.reset();
      await post("refine-context", { description: "Nudges for clinicians" });
      const messages = bodyOf(provider.chatRequests()[0]!).messages;
      return String(messages.find((m) => m.role === "system")?.content ?? "");
    };
    await waitFor(async () => (await systemOfLastCall()).startsWith(prompt), 10_000, 200);
    expect(bodyOf(provider.chatRequests()[0]!).temperature).toBe(0.1); // gpt-4.1 accepts a temperature
  });

  it("serves mock requests without calling the provider", async () => {
    const res = await post("picos", { project_description: "Nudges", mock: true });
    expect(res.status).toBe(200);
    expect(res.body.gap_flags.join(" ")).toMatch(/mock/i);
    expect(provider.chatRequests()).toHaveLength(0);
  });
});
