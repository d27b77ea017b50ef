import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { responseFormat, type JsonSchema } from "../schema";
import { startFakeProvider, type FakeProvider, type FakeProviderOptions } from "./fake-provider";
import { sampleFromSchema } from "./json-sample";
import { strictSchemaProblem } from "./strict-check";

const Answer = z.object({
  label: z.enum(["yes", "no"]),
  confidence: z.number().min(0).max(1),
  count: z.number().int().min(2).max(8),
  flag: z.boolean(),
  when: z.iso.date(),
  notes: z.string().optional(),
  items: z.array(z.object({ name: z.string(), weight: z.number().nullable() })).max(5),
});
const format = responseFormat("answer", Answer);

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

async function start(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  provider = await startFakeProvider(options);
  return provider;
}

function chat(p: FakeProvider, body: Record<string, unknown>, key = "sk-test"): Promise<Response> {
  return fetch(`${p.url}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-5-nano", messages: [{ role: "user", content: "hello there" }], response_format: format, ...body }),
  });
}

describe("sampleFromSchema", () => {
  it("produces a value the zod schema accepts from its strict JSON schema", () => {
    const value = sampleFromSchema(format.json_schema.schema) as Record<string, unknown>;
    expect(value.label).toBe("yes"); // first enum value
    expect(value.notes).toBe("sample notes"); // nullable union: the non-null branch
    expect(value.items).toHaveLength(2);
    const parsed = Answer.safeParse(value);
    expect(parsed.success).toBe(true);
  });

  it("applies per-property rules, fixed or computed from the path", () => {
    const value = sampleFromSchema(format.json_schema.schema, {
      fields: { label: "no", name: ({ path }) => `item ${String(path[1])}` },
    }) as { label: string; items: { name: string }[] };
    expect(value.label).toBe("no");
    expect(value.items.map((item) => item.name)).toEqual(["item 0", "item 1"]);
  });

  it("terminates on recursive schemas", () => {
    const tree: JsonSchema = {
      type: "object",
      properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } },
      required: ["name", "children"],
      additionalProperties: false,
    };
    expect(JSON.stringify(sampleFromSchema(tree)).length).toBeLessThan(2000);
  });
});

describe("fake provider", () => {
  it("answers with schema-conforming JSON, dated model, usage and recorded request", async () => {
    const p = await start();
    const response = await chat(p, { n: 2, reasoning_effort: "minimal" });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      model: string;
      choices: { message: { content: string }; finish_reason: string }[];
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } };
    };
    expect(body.model).toBe("gpt-5-nano-2025-08-07");
    expect(body.choices).toHaveLength(2);
    for (const choice of body.choices) expect(Answer.safeParse(JSON.parse(choice.message.content)).success).toBe(true);
    expect(body.usage.prompt_tokens).toBe(Math.ceil("hello there".length / 4));
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    expect(body.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(p.chatRequests()).toHaveLength(1);
    expect(p.requests[0]).toMatchObject({ method: "POST", status: 200, headers: { authorization: "Bearer sk-test" } });
  });

  it("reports cached tokens when a long system prompt repeats", async () => {
    const p = await start();
    const messages = [
      { role: "system", content: "criteria ".repeat(600) },
      { role: "user", content: "paper" },
    ];
    const first = (await (await chat(p, { messages })).json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } };
    const second = (await (await chat(p, { messages })).json()) as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
    expect(first.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(second.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(1024);
    expect(second.usage.prompt_tokens_details.cached_tokens % 128).toBe(0);
  });

  it("caches the longest byte-identical prefix seen before, from 1,024 tokens in 128-token steps, and can be switched off", async () => {
    type Reply = { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
    const cachedOf = async (p: FakeProvider, system: string, user: string, model = "gpt-5-nano") =>
      ((await (await chat(p, { model, messages: [{ role: "system", content: system }, { role: "user", content: user }] })).json()) as Reply).usage.prompt_tokens_details.cached_tokens;
    const p = await start();
    const system = "s".repeat(4 * 1000); // 1,000 tokens: too short alone
    expect(await cachedOf(p, system, "a".repeat(4 * 500))).toBe(0);
    // The same 1,000-token system message and the first 300 tokens of the user message: 1,280 tokens in common, 1,280 cached.
    expect(await cachedOf(p, system, "a".repeat(4 * 300) + "b".repeat(4 * 400))).toBe(1280);
    expect(await cachedOf(p, system, "c".repeat(4 * 500))).toBe(0); // 1,000 tokens in common: under the minimum
    expect(await cachedOf(p, system, "a".repeat(4 * 500), "gpt-5-mini")).toBe(0); // another model's cache
    expect(await cachedOf(p, "x" + system.slice(1), "a".repeat(4 * 500))).toBe(0); // one byte differs at the start
    const off = await start({ promptCache: false });
    expect(await cachedOf(off, system, "a".repeat(4 * 500))).toBe(0);
    expect(await cachedOf(off, system, "a".repeat(4 * 500))).toBe(0);
  });

  it("rejects unknown keys with OpenAI's 401 body", async () => {
    const p = await start({ validKeys: ["sk-good"] });
    const response = await chat(p, {}, "sk-bad-key-123456");
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { code: "invalid_api_key" } });
  });

  it("enforces model-family quirks and strict schemas like the real API", async () => {
    const p = await start({ knownModels: ["gpt-5-nano", "gpt-4.1"] });
    expect((await chat(p, { temperature: 0.3 })).status).toBe(400);
    expect((await chat(p, { max_tokens: 10 })).status).toBe(400);
    expect((await chat(p, { model: "gpt-4.1", reasoning_effort: "low" })).status).toBe(400);
    expect((await chat(p, { model: "gpt-9" })).status).toBe(404);
    const loose = { type: "json_schema", json_schema: { name: "x", strict: true, schema: { type: "object", properties: { a: { type: "string" } } } } };
    const rejected = await chat(p, { response_format: loose });
    expect(rejected.status).toBe(400);
    expect(JSON.stringify(await rejected.json())).toContain("additionalProperties");
    expect(strictSchemaProblem(loose.json_schema.schema)).toBeDefined();
  });

  it("enforces an RPM budget with 429s carrying retry-after and x-ratelimit headers", async () => {
    const p = await start({ requestsPerMinute: 120 }); // two per second
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const response = await chat(p, {});
      statuses.push(response.status);
      expect(response.headers.get("x-ratelimit-limit-requests")).toBe("120");
      expect(response.headers.get("x-ratelimit-remaining-requests")).toMatch(/^\d+$/);
      expect(response.headers.get("x-ratelimit-reset-requests")).toMatch(/^\d+(\.\d+)?m?s$/);
      if (response.status === 429) limited = response;
    }
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses.slice(2)).toEqual([429, 429]);
    expect(Number(limited?.headers.get("retry-after-ms"))).toBeGreaterThan(0);
    expect(Number(limited?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await limited?.json()).toMatchObject({ error: { code: "rate_limit_exceeded" } });
  });

  it("scripts forced modes for a number of requests, then recovers", async () => {
    const p = await start({ mode: "status500", modeTimes: 2 });
    expect([(await chat(p, {})).status, (await chat(p, {})).status, (await chat(p, {})).status]).toEqual([500, 500, 200]);

    p.setBehaviour({ mode: "insufficient_quota", modeTimes: 1 });
    const quota = await chat(p, {});
    expect(quota.status).toBe(429);
    expect(await quota.json()).toMatchObject({ error: { code: "insufficient_quota" } });

    p.setBehaviour({ mode: "truncated", modeTimes: 1 });
    const truncated = (await (await chat(p, { max_completion_tokens: 40 })).json()) as { choices: { finish_reason: string; message: { content: string } }[]; usage: { completion_tokens: number } };
    expect(truncated.choices[0]?.finish_reason).toBe("length");
    expect(() => JSON.parse(truncated.choices[0]?.message.content ?? "")).toThrow();
    expect(truncated.usage.completion_tokens).toBe(40);

    p.setBehaviour({ mode: "malformed", modeTimes: 1 });
    const malformed = (await (await chat(p, {})).json()) as { choices: { message: { content: string } }[] };
    expect(() => JSON.parse(malformed.choices[0]?.message.content ?? "")).toThrow();
  });

  it("lets a test script replies with a respond hook (sequences, per-choice values)", async () => {
    const p = await start({
      respond: (_request, { index, choice, generated }) => ({ ...(generated as object), label: (index + choice) % 2 === 0 ? "yes" : "no" }),
    });
    const labels = [];
    for (let i = 0; i < 3; i++) {
      const body = (await (await chat(p, {})).json()) as { choices: { message: { content: string } }[] };
      labels.push((JSON.parse(body.choices[0]?.message.content ?? "{}") as { label: string }).label);
    }
    expect(labels).toEqual(["yes", "no", "yes"]);
  });

  it("adds latency and can hang until the client gives up", async () => {
    const p = await start({ latencyMs: 120 });
    const started = Date.now();
    await chat(p, {});
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);

    p.setBehaviour({ mode: "hang", latencyMs: 0 });
    await expect(fetch(`${p.url}/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test" },
      body: JSON.stringify({ model: "gpt-4.1", messages: [{ role: "user", content: "x" }] }),
      signal: AbortSignal.timeout(100),
    })).rejects.toThrow();
  });

  it("lists models", async () => {
    const p = await start({ knownModels: ["gpt-4.1"] });
    const response = await fetch(`${p.url}/models`, { headers: { authorization: "Bearer sk-test" } });
    expect(await response.json()).toMatchObject({ object: "list", data: [{ id: "gpt-4.1", object: "model" }] });
  });
});
