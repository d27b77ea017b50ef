import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";

/**
 * Configuration a newcomer can undo (issue 21): the README's tour runs as written and leaves the
 * stack as it found it; `null` and DELETE reset; `indexer` names the indexer's configuration;
 * writes to unknown ids and remaps to unpriced models are refused with a clear 4xx.
 */

const SERVER_KEY = "sk-config-undo-e2e";
const FIELD: IndexerField = { name: "design", description: "Study design in a few words", data_type_primary: "text", data_type_secondary: "NA" };
const systemOf = (request: { body: unknown }) => String((request.body as FakeChatRequest).messages[0]?.content ?? "");

/** The shell block under "## A short tour" in README.md, exactly as a reader copies it. */
export function readmeTour(readme: string): string {
  const section = readme.split(/^## A short tour$/m)[1];
  const block = section?.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (!block) throw new Error("README.md has no shell block under '## A short tour'");
  return block;
}

describe("configuration that can be undone (criteria, screening, indexer, real nats-server)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let port: string;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY], respond: extractionResponder() });
    stack = await startStack({
      services: { criteria: 1, screening: 1, indexer: 1 },
      env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url, LLM_MAX_ATTEMPTS: "2" },
    });
    port = new URL(stack.baseUrl).port;
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const estimate = () => stack.http("POST", "/v1/screening/estimate", { papers_count: 100, criteria_count: 3 });

  it("runs the README tour verbatim; afterwards nothing it changed remains and the estimate answers 200", async () => {
    const before = { criteria: (await stack.http("GET", "/v1/config/services/criteria")).body, models: (await stack.http("GET", "/v1/config/models")).body };
    expect((await estimate()).status).toBe(200);

    // The tour's own text; only where it reaches the stack and the key file differ from `npm start`.
    const dir = mkdtempSync(join(tmpdir(), "litrev-tour-"));
    try {
      writeFileSync(join(dir, "api-key"), TEST_API_KEY);
      const script = readmeTour(readFileSync(join(import.meta.dirname, "../../README.md"), "utf8"))
        .replaceAll("localhost:8000", `127.0.0.1:${port}`)
        .replaceAll(".data/api-key", join(dir, "api-key"));
      expect(script).toContain("/v1/config/models"); // the tour still exercises configuration
      const { stdout } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", script], { timeout: 60_000 });
      // Every call answered with JSON the gateway produced, never a server error.
      expect(stdout).not.toMatch(/"error_code":"unknown"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    expect((await stack.http("GET", "/v1/config/services/criteria")).body).toEqual(before.criteria);
    expect((await stack.http("GET", "/v1/config/models")).body).toEqual(before.models);
    const after = await estimate();
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.estimated_cost_usd).toBeGreaterThan(0);
  });

  it("resets a field with null and a whole service with DELETE (with and without /v1)", async () => {
    const defaults = (await stack.http("GET", "/v1/config/services/criteria")).body;
    const changed = await stack.http("PUT", "/v1/config/services/criteria", { temperature: 0.3, max_output_tokens: 99, extra: { note: "x", keep: 1 } });
    expect(changed.body).toMatchObject({ temperature: 0.3, max_output_tokens: 99, extra: { note: "x", keep: 1 } });

    const one = await stack.http("PUT", "/v1/config/services/criteria", { temperature: null, extra: { note: null } });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toMatchObject({ temperature: defaults.temperature, max_output_tokens: 99, extra: { keep: 1 } });
    expect(one.body.extra).not.toHaveProperty("note");
    expect((await stack.http("GET", "/config/services/criteria")).body).toEqual(one.body);

    const reset = await stack.http("DELETE", "/config/services/criteria");
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual(defaults);
    expect((await stack.http("GET", "/v1/config/services/criteria")).body).toEqual(defaults);
    // A reset of a service never changed is a no-op, not an error.
    expect((await stack.http("DELETE", "/v1/config/services/screening")).status).toBe(200);
    // A patch after a reset starts from the defaults.
    const again = await stack.http("PUT", "/v1/config/services/criteria", { max_output_tokens: 77 });
    expect(again.body).toEqual({ ...defaults, max_output_tokens: 77 });
    await stack.http("DELETE", "/v1/config/services/criteria");
  });

  it("answers a write to an unknown id with a 400 listing the known ids (the spec lists no 404 there); a GET keeps the spec's default", async () => {
    for (const [method, body] of [["PUT", { temperature: 0.5 }], ["DELETE", undefined]] as const) {
      const res = await stack.http(method, "/v1/config/services/nope", body);
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/Unknown configuration id 'nope'/);
      for (const id of ["criteria", "screening", "extraction", "indexer"]) expect(res.body.detail).toContain(id);
    }
    const get = await stack.http("GET", "/v1/config/services/nope");
    expect(get.status).toBe(200);
    expect(get.body).toMatchObject({ service_id: "nope", extra: {}, default_config: true, note: expect.stringContaining("No service has the configuration id 'nope': this is the default configuration") });
    // A service's own id answers its configuration, without the flag.
    const known = await stack.http("GET", "/v1/config/services/criteria");
    expect(known.body.service_id).toBe("criteria");
    expect(known.body).not.toHaveProperty("default_config");
  });

  it("takes `indexer` as the indexer's configuration id: a PUT changes the prompts the indexer uses", async () => {
    const marker = "Instructions set through the indexer alias";
    const put = await stack.http("PUT", "/v1/config/services/indexer", { extra: { prompts: { "indexer.extraction": marker } } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ service_id: "extraction", extra: { prompts: { "indexer.extraction": marker } } });
    expect((await stack.http("GET", "/v1/config/services/indexer")).body).toEqual((await stack.http("GET", "/v1/config/services/extraction")).body);

    const run = async () => {
      provider.reset();
      const res = await stack.http("POST", "/v1/indexer/run", { records: indexerRecords(1, { withAbstractOnly: true }), fields: [FIELD] });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return systemOf(provider.chatRequests()[0]!);
    };
    await waitFor(async () => (await run()).includes(marker), 15_000, 200);

    const reset = await stack.http("DELETE", "/v1/config/services/indexer");
    expect(reset.body.service_id).toBe("extraction");
    expect(reset.body.extra.prompts?.["indexer.extraction"]).toBeUndefined();
    await waitFor(async () => !(await run()).includes(marker), 15_000, 200);
  });

  it("refuses a remap to a model without a price with a 400 naming MODEL_PRICES; the alias table is unchanged", async () => {
    const before = (await stack.http("GET", "/v1/config/models")).body;
    const res = await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": "gpt-5.1-nano" } });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/'llm-5-nano' → 'gpt-5.1-nano'.*MODEL_PRICES/);
    expect((await stack.http("GET", "/v1/config/models")).body).toEqual(before);
    // A priced model is taken; null undoes it.
    expect((await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": "gpt-4.1-mini" } })).status).toBe(200);
    expect((await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": null } })).body.aliases["llm-5-nano"]).toBe("gpt-5-nano");
    expect((await estimate()).status).toBe(200);
  });
});
