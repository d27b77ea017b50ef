import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IndexerRunResponse, type IndexerField } from "@litrev/contracts";
import { PROVIDER_PROFILES, profileModelPrices, startFakeProvider, type FakeChatRequest, type FakeProvider, type ProfileName, type RespondContext } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, schemaNameOf, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * Every common OpenAI-compatible server, as the fake provider imitates it (libs/llm/src/testing/
 * profiles.ts, docs/providers.md): a live screening job, an indexer run and a criteria call through
 * the real gateway and services, with the aliases pointed at the server's own model names through
 * PUT /v1/config/models. Each profile gets its own provider key (X-LLM-API-Key), so what the
 * client learns about one server (e.g. that it refuses `n`) does not carry over to the next.
 */

const FIELDS: IndexerField[] = [
  { name: "design", description: "Study design in a few words", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "sample_size", description: "Number of participants", data_type_primary: "number", data_type_secondary: "count" },
];
const bodyOf = (request: { body: unknown }) => request.body as FakeChatRequest;

function responder() {
  const screening = screeningResponder();
  const extraction = extractionResponder();
  return (request: FakeChatRequest, context: RespondContext) =>
    schemaNameOf(request).startsWith("screening_") ? screening(request, context) : extraction(request);
}

async function exercise(stack: Stack, provider: FakeProvider, name: ProfileName): Promise<void> {
  const profile = PROVIDER_PROFILES[name];
  const headers = { "x-llm-api-key": `sk-profile-${name}` };
  provider.reset();
  provider.setBehaviour({ profile: name, respond: responder() });
  const put = await stack.http("PUT", "/v1/config/models", { aliases: profile.aliases });
  expect(put.status).toBe(200);
  // The alias watch applies within milliseconds; wait until a criteria call uses the new names.
  await waitFor(async () => {
    const res = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Do nudges work?" }, { headers });
    return res.status === 200 && bodyOf(provider.chatRequests().at(-1)!).model === profile.aliases["llm-5-mini"];
  }, 10_000, 100);

  // Criteria: a spec-shaped answer.
  const criteria = await stack.http("POST", "/v1/criteria/generate", { project_description: "Nudges for clinicians", criterion_type: "include" }, { headers });
  expect(criteria.status, JSON.stringify(criteria.body)).toBe(200);
  expect(Array.isArray(criteria.body.criteria)).toBe(true);

  // Indexer: a synchronous run of two records, model_version as the server reports it.
  const run = await stack.http("POST", "/v1/indexer/run", { records: indexerRecords(2, { withAbstractOnly: true }), fields: FIELDS }, { headers });
  expect(run.status, JSON.stringify(run.body).slice(0, 400)).toBe(200);
  expect(IndexerRunResponse.safeParse(run.body).success).toBe(true);
  expect(run.body.results).toHaveLength(2);
  expect(run.body.model_version).toBe(profile.replyModel(profile.aliases["llm-5-mini"]!));

  // Screening: a live job with 3 repetitions (n = 3 where the server honours it).
  const before = provider.chatRequests().length;
  const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3), criteria: CRITERIA, repetitions: 3 }, { headers });
  expect(created.status).toBe(200);
  const final = await waitFor(async () => {
    const res = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
    return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
  }, 60_000, 50);
  expect(final.status, JSON.stringify(final.error)).toBe("completed");
  expect(final.results).toHaveLength(3);
  const chats = provider.chatRequests().slice(before);
  for (const chat of chats) {
    expect(chat.path).toBe(`${profile.basePath}/chat/completions`);
    expect(bodyOf(chat).model).toBe(profile.aliases["llm-5-nano"]);
  }
  const labelling = chats.filter((c) => schemaNameOf(bodyOf(c)).startsWith("screening_labels_") && c.status === 200);
  // Three votes per paper: one request with n = 3, or one request per vote when n is ignored or refused.
  if (profile.n === "honoured") expect(labelling.some((c) => bodyOf(c).n === 3)).toBe(true);
  else expect(labelling.length).toBeGreaterThanOrEqual(3);
  if (profile.n === "rejected") expect(chats.some((c) => c.status === 400)).toBe(true);
}

describe("provider profiles on the /v1 path (criteria, screening and indexer against each server)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({});
    stack = await startStack({
      services: { criteria: 1, screening: 1, indexer: 1 },
      env: { OPENAI_API_KEY: "sk-profiles-server", OPENAI_BASE_URL: provider.url, LLM_MAX_ATTEMPTS: "3", JOB_ACK_WAIT_MS: "5000", MODEL_PRICES: profileModelPrices() },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  for (const name of ["openai", "vllm", "ollama", "ollama-cloud", "llamacpp", "litellm"] as const) {
    it(`${name}`, () => exercise(stack, provider, name));
  }
});

describe("provider profile azure (its /openai/v1 path and deployment names)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ profile: "azure" });
    stack = await startStack({
      services: { criteria: 1, screening: 1, indexer: 1 },
      env: { OPENAI_API_KEY: "azure-resource-key", OPENAI_BASE_URL: provider.baseUrl("azure"), LLM_MAX_ATTEMPTS: "3", JOB_ACK_WAIT_MS: "5000", MODEL_PRICES: profileModelPrices() },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("azure", () => exercise(stack, provider, "azure"));
});
