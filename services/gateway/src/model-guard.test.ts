import { describe, expect, it } from "vitest";
import { ServiceError, type ModelAliasesResponse } from "@litrev/contracts";
import { ModelGuard } from "./model-guard";

function table(aliases: Record<string, string>): ModelAliasesResponse {
  return { aliases, defaults: aliases, overrides: {} };
}

async function rejection(guard: ModelGuard, model: string): Promise<ServiceError> {
  const error = await guard.check(model).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
}

describe("ModelGuard", () => {
  it("allows the spec's aliases, the live aliases and their models, and ALLOWED_MODELS; refuses anything else with a 400 naming them", async () => {
    let reads = 0;
    const guard = new ModelGuard(["my-local-model"], async () => (reads++, table({ "llm-5-nano": "gpt-5-nano", "team-model": "qwen2.5:7b" })));
    await guard.check("llm-5-nano");
    await guard.check("my-local-model");
    expect(reads).toBe(0); // the spec's names and configured names need no read
    await guard.check("team-model");
    await guard.check("qwen2.5:7b");
    await guard.check("gpt-5-nano");
    const error = await rejection(guard, "gpt-4o");
    expect(error.category).toBe("validation");
    expect(error.simple).toBe(true);
    expect(error.message).toBe(
      "Model 'gpt-4o' is not allowed on this deployment; allowed models: gpt-5-nano, llm-4.1, llm-5-mini, llm-5-nano, my-local-model, qwen2.5:7b, team-model (aliases from GET /v1/config/models, plus ALLOWED_MODELS)",
    );
  });

  it("re-reads the alias table before refusing, so an alias added on another replica is allowed at once", async () => {
    let aliases: Record<string, string> = { "llm-5-nano": "gpt-5-nano" };
    let now = 0;
    const guard = new ModelGuard([], async () => table(aliases), () => now);
    expect((await rejection(guard, "new-alias")).category).toBe("validation");
    aliases = { ...aliases, "new-alias": "gpt-4.1" };
    await guard.check("new-alias");
    // A dropped alias stops being allowed once the kept table is older than its few seconds.
    aliases = { "llm-5-nano": "gpt-5-nano" };
    await guard.check("new-alias");
    now += 10_000;
    expect((await rejection(guard, "new-alias")).message).toMatch(/not allowed/);
  });
});
