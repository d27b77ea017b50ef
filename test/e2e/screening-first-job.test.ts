import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROVIDER_PROFILES, profileModelPrices, promptPapers, startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, schemaNameOf, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * A fresh stack whose provider ignores `n` (Ollama), with nothing declared (no LLM_PROVIDER_N) and
 * nothing learned yet: its very first job must already send each vote of a paper with other
 * batch-mates, so that one paper's text reaches another paper's votes at most once. Before the
 * service found out what the provider does with `n` before its first labelling call, the first job
 * sent a batch's votes as R identical requests (the papers of a batch shared every vote), and the
 * estimate asked before it forecast the bill as if one request served a paper's R votes.
 */
describe("a fresh stack whose provider ignores n: the first job", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ profile: "ollama", respond: screeningResponder() });
    stack = await startStack({
      services: { screening: 1 },
      env: {
        OPENAI_API_KEY: "sk-first-job",
        OPENAI_BASE_URL: provider.baseUrl("ollama"),
        LLM_MODEL_ALIASES: JSON.stringify(PROVIDER_PROFILES.ollama.aliases),
        MODEL_PRICES: profileModelPrices(),
      },
    });
  });

  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("forecasts the first job for a provider that ignores n, and sends the votes of a paper with different batch-mates", async () => {
    // As a team would: the estimate first, on the fresh stack (a probe finds out what the provider does with n).
    const estimate = await stack.http("POST", "/v1/screening/estimate", { papers_count: 12, repetitions: 3, criteria_count: CRITERIA.length });
    expect(estimate.status, JSON.stringify(estimate.body)).toBe(200);
    expect(estimate.body.forecast_provider_n).toBe("ignored");
    const probes = provider.chatRequests().filter((r) => (r.body as FakeChatRequest).n === 2);
    expect(probes).toHaveLength(1);

    const papers = screeningPapers(12, { tagTitles: true });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 3 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const final = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 60_000, 50);
    expect(final.status, JSON.stringify(final.error)).toBe("completed");
    expect(final.results).toHaveLength(12);
    for (const result of final.results as { votes: string[] }[]) expect(result.votes).toHaveLength(3);

    // Which papers each labelling call carried (titles are tagged "p<n>: …").
    const calls = provider
      .chatRequests()
      .filter((r) => r.status === 200 && schemaNameOf(r.body as FakeChatRequest).startsWith("screening_labels_"))
      .map((r) => promptPapers(r.body as FakeChatRequest).map((p) => p.title.split(":")[0]!));
    const votesOf = new Map<string, number>();
    for (const call of calls) for (const paper of call) votesOf.set(paper, (votesOf.get(paper) ?? 0) + 1);
    expect(votesOf.size).toBe(12);
    for (const count of votesOf.values()) expect(count).toBe(3); // one call per vote: n is not asked for where it is ignored
    // Two papers share a call in at most one of their votes.
    const shared = new Map<string, number>();
    for (const call of calls) {
      for (const a of call) for (const b of call) if (a < b) shared.set(`${a}+${b}`, (shared.get(`${a}+${b}`) ?? 0) + 1);
    }
    const repeated = [...shared].filter(([, times]) => times > 1).map(([pair, times]) => `${pair} ×${times}`);
    expect(repeated, "pairs of papers that shared more than one vote's call").toEqual([]);
  });
});
