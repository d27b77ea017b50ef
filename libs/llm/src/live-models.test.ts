import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ModelAvailability, describeAvailability } from "./availability";
import { LlmClient, type LlmClientOptions } from "./client";
import { chooseModel, loadModelAliases } from "./models";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "./testing";
import { failure } from "../../../test/support/errors";

const KEY = "sk-test-live-models-key";
const Reply = z.object({ answer: z.string() });
const request = { model: "llm-5-nano", schema: Reply, schemaName: "answer", system: "Answer.", user: "Question?" };

let provider: FakeProvider;
beforeAll(async () => {
  provider = await startFakeProvider({ validKeys: [KEY] });
});
afterAll(async () => provider.close());
afterEach(() => provider.reset());

function client(options: LlmClientOptions = {}): LlmClient {
  return new LlmClient({ apiKey: KEY, baseURL: provider.url, modelAliases: loadModelAliases({}), baseDelayMs: 5, maxDelayMs: 20, ...options });
}
const sentModels = () => provider.chatRequests().map((r) => (r.body as FakeChatRequest).model);

describe("live alias overrides", () => {
  it("sends the next call to the remapped model, and back after the override is dropped", async () => {
    const llm = client();
    await llm.structured(request);
    llm.setAliasOverrides({ "llm-5-nano": "gpt-5.1-nano" });
    await llm.structured(request);
    expect(llm.resolveModel("llm-5-mini")).toBe("gpt-5-mini"); // other aliases keep their defaults
    llm.setAliasOverrides({});
    await llm.structured(request);
    expect(sentModels()).toEqual(["gpt-5-nano", "gpt-5.1-nano", "gpt-5-nano"]);
    expect(llm.defaultModelAliases["llm-5-nano"]).toBe("gpt-5-nano");
  });
});

describe("model precedence", () => {
  const base = { specDefault: "llm-4.1", announced: "llm-4.1" };
  it("request's model → service config's model → spec default", () => {
    expect(chooseModel({ ...base, requested: "my-model", configured: "cfg-model" })).toBe("my-model");
    expect(chooseModel({ ...base, requested: "llm-4.1", configured: "cfg-model" })).toBe("cfg-model");
    expect(chooseModel({ ...base, requested: "llm-4.1", configured: "llm-4.1" })).toBe("llm-4.1");
  });
  it("keeps an operation's own spec default while the service config is unchanged", () => {
    // criteria announces llm-4.1, but analyze-question's spec default is llm-5-mini.
    expect(chooseModel({ requested: "llm-5-mini", specDefault: "llm-5-mini", configured: "llm-4.1", announced: "llm-4.1" })).toBe("llm-5-mini");
    expect(chooseModel({ requested: "llm-5-mini", specDefault: "llm-5-mini", configured: "x", announced: "llm-4.1" })).toBe("x");
  });
});

describe("model not found", () => {
  it("names the model and its alias, says how to remap it, and sends once", async () => {
    provider.setBehaviour({ knownModels: ["gpt-4.1"] });
    const error = await failure(client().structured(request));
    expect(error.category).toBe("validation");
    expect(error.message).toMatch(/does not offer the model 'gpt-5-nano' \(alias 'llm-5-nano'\).*PUT \/v1\/config\/models/);
    expect(provider.chatRequests()).toHaveLength(1);
  });
  it("names a model requested by its own name with the service-config remedy", async () => {
    provider.setBehaviour({ knownModels: ["gpt-4.1"] });
    const error = await failure(client().structured({ ...request, model: "gpt-9" }));
    expect(error.message).toMatch(/'gpt-9': send another `model`, or change the service's model/);
  });
});

describe("interactive budget under a constant 429", () => {
  it("answers rate_limit with a retry-after within the short budget instead of the long one", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 400 });
    const llm = client({ maxAttempts: 20, deadlineMs: 120_000, interactiveDeadlineMs: 1_500 });
    const started = Date.now();
    const error = await failure(llm.structured({ ...request, interactive: true }));
    const elapsed = Date.now() - started;
    expect(error.category).toBe("rate_limit");
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(1_500);
    expect(provider.chatRequests().length).toBeGreaterThanOrEqual(2); // it did retry inside the budget
  });

  it("hands a key paused beyond the budget straight back, without another request", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 30_000 });
    const llm = client({ maxAttempts: 20, interactiveDeadlineMs: 2_000 });
    const first = await failure(llm.structured({ ...request, interactive: true }));
    expect(first.retryAfterMs).toBe(30_000);
    const sent = provider.chatRequests().length;
    const started = Date.now();
    const second = await failure(llm.structured({ ...request, interactive: true }));
    expect(Date.now() - started).toBeLessThan(500);
    expect(second.category).toBe("rate_limit");
    expect(second.retryAfterMs).toBeGreaterThan(25_000);
    expect(provider.chatRequests().length).toBe(sent);
  });
});

describe("model availability", () => {
  it("lists the provider's models and names the missing ones with their alias", async () => {
    provider.setBehaviour({ knownModels: ["gpt-5-mini", "gpt-4.1"] });
    const availability = new ModelAvailability(client(), () => ["llm-5-nano", "llm-5-mini", "llm-4.1"]);
    expect(availability.status).toBeUndefined();
    expect(await availability.check()).toBe("missing: gpt-5-nano (llm-5-nano)");
    provider.setBehaviour({ knownModels: undefined });
    expect(await availability.check()).toBe("ok (3 models offered)");
  });

  it("reports shutdown dates a provider attaches and a failed listing", () => {
    const resolve = (name: string) => name;
    expect(describeAvailability(["a", "b"], [{ id: "a", shutdownDate: "2026-12-11" }, { id: "b" }], resolve)).toBe(
      "shutting down: a on 2026-12-11",
    );
  });

  it("says error when the listing fails (a rejected key), never throws", async () => {
    const availability = new ModelAvailability(client({ apiKey: "sk-wrong-key-000000" }), () => ["llm-5-nano"]);
    expect(await availability.check()).toMatch(/^error: could not list the provider's models/);
    expect(availability.status).not.toContain("sk-wrong");
  });
});

describe("availability text", () => {
  it("stays bounded however many models are missing", () => {
    const wanted = Array.from({ length: 500 }, (_, i) => `model-with-a-long-name-${i}`);
    const text = describeAvailability(wanted, [], (name) => name);
    expect(text.length).toBeLessThanOrEqual(1000);
    expect(text.startsWith("missing: model-with-a-long-name-0")).toBe(true);
  });
});
