import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { LlmClient } from "../client";
import { loadModelAliases } from "../models";
import { failure } from "../../../../test/support/errors";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "./fake-provider";
import { PROVIDER_PROFILES, type ProfileName } from "./profiles";

/**
 * The provider layer against each server profile through the real openai SDK: what differs
 * (paths, auth, model names, `n`, usage, schema enforcement, error bodies, rate-limit headers)
 * must not change what a caller gets.
 */

const Vote = z.object({ include: z.boolean(), reason: z.string() });
const request = { model: "llm-5-nano", schema: Vote, schemaName: "vote", system: "Vote.", user: "Paper 1" };
const NAMES = Object.keys(PROVIDER_PROFILES) as ProfileName[];

let provider: FakeProvider;
beforeAll(async () => {
  provider = await startFakeProvider({});
});
afterAll(async () => provider.close());

function clientFor(name: ProfileName, key = `sk-${name}-key`): LlmClient {
  const llm = new LlmClient({ apiKey: key, baseURL: provider.baseUrl(name), modelAliases: loadModelAliases({}), baseDelayMs: 5, maxDelayMs: 20, maxAttempts: 3 });
  llm.setAliasOverrides(PROVIDER_PROFILES[name].aliases);
  return llm;
}
function use(name: ProfileName): void {
  provider.reset();
  provider.setBehaviour({ profile: name });
}

describe.each(NAMES)("profile %s", (name) => {
  const profile = PROVIDER_PROFILES[name];

  it("answers a structured call with n = 3 on its own path, with usage and a validated reply", async () => {
    use(name);
    const llm = clientFor(name);
    const result = await llm.structured({ ...request, n: 3 });
    expect(Vote.safeParse(result.data).success).toBe(true);
    expect(result.choices).toHaveLength(profile.n === "honoured" ? 3 : 1);
    expect(result.usage.input_tokens).toBeGreaterThan(0);
    expect(result.usage.output_tokens).toBeGreaterThan(0);
    expect(result.modelVersion).toBe(profile.replyModel(profile.aliases["llm-5-nano"]!));
    const chats = provider.chatRequests();
    for (const chat of chats) expect(chat.path).toBe(`${profile.basePath}/chat/completions`);
    expect((chats[0]!.body as FakeChatRequest).model).toBe(profile.aliases["llm-5-nano"]);
    const statuses = chats.map((c) => c.status);
    if (profile.n === "rejected") expect(statuses).toEqual([400, 200]); // refused n, then one choice
    else if (profile.schema === "unenforced") expect(statuses).toEqual([200, 200]); // a reply broke the schema: repaired
    else expect(statuses).toEqual([200]);

    // Once refused, later calls ask for one choice straight away.
    if (profile.n === "rejected") {
      provider.reset();
      await llm.structured({ ...request, n: 3 });
      expect(provider.chatRequests().map((c) => c.status)).toEqual([200]);
      expect((provider.chatRequests()[0]!.body as FakeChatRequest).n).toBeUndefined();
    }
  });

  it("lists its models for the availability check", async () => {
    use(name);
    const models = await clientFor(name).listModels();
    expect(models.map((m) => m.id)).toEqual([...profile.models]);
  });

  it("turns its model-not-found error into a validation error naming the model", async () => {
    use(name);
    if (profile.servesAnyModel) {
      // llama.cpp answers with its loaded model whatever is asked: nothing to report.
      const result = await clientFor(name).structured({ ...request, model: "no-such-model" });
      expect(result.modelVersion).toBe(profile.models[0]);
      return;
    }
    const error = await failure(clientFor(name).structured({ ...request, model: "no-such-model" }));
    expect(error.category).toBe("validation");
    expect(error.message).toContain("'no-such-model'");
    expect(provider.chatRequests()).toHaveLength(1);
  });

  it("turns its 429 into a retryable rate_limit, honouring retry-after when it sends one", async () => {
    use(name);
    provider.setBehaviour({ mode: "always429", retryAfterMs: 30 });
    const error = await failure(clientFor(name).structured({ ...request, interactive: true }));
    expect(error.category).toBe("rate_limit");
    expect(error.retryable).toBe(true);
    expect(provider.chatRequests().map((c) => c.status)).toEqual([429, 429, 429]);
  });
}, 20_000);

describe("auth conventions", () => {
  it("Azure accepts its api-key header as well as a bearer token, and nothing else", async () => {
    use("azure");
    provider.setBehaviour({ validKeys: ["azure-key"] });
    const url = `${provider.baseUrl("azure")}/models`;
    expect((await fetch(url, { headers: { "api-key": "azure-key" } })).status).toBe(200);
    expect((await fetch(url, { headers: { authorization: "Bearer azure-key" } })).status).toBe(200);
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(`${provider.url}/models`, { headers: { "api-key": "azure-key" } })).status).toBe(404); // /v1 is not Azure's path
    provider.setBehaviour({ validKeys: undefined });
  });

  it("local Ollama and llama.cpp ignore the key", async () => {
    for (const name of ["ollama", "llamacpp"] as const) {
      use(name);
      provider.setBehaviour({ validKeys: ["only-this"] });
      expect((await fetch(`${provider.baseUrl(name)}/models`)).status).toBe(200);
    }
    provider.setBehaviour({ validKeys: undefined });
  });
});
