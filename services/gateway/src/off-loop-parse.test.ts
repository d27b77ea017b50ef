import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_REQUEST_LIMITS } from "@litrev/contracts";
import { LabelError, validateJob, type ValidationInput } from "@litrev/evaluation";
import { OffLoopParser } from "./off-loop-parse";

describe("the body parser thread", () => {
  const parser = new OffLoopParser(DEFAULT_REQUEST_LIMITS);
  afterAll(() => parser.close());
  const parse = (body: string) => parser.parse(Buffer.from(body), "createScreeningJob");

  it("answers the validated body as JSON text, the keys the contract strips left out", async () => {
    const result = await parse(JSON.stringify({ papers: [{ id: "a", title: "T", abstract: "A", junk: [1, 2, 3] }], mock: true }));
    expect(result.kind).toBe("valid");
    const body = JSON.parse((result as { json: string }).json);
    expect(body.papers).toEqual([{ id: "a", title: "T", abstract: "A" }]);
    expect(body).toMatchObject({ repetitions: 5, threshold: 1, mock: true, model: "llm-5-nano" });
  });

  it("answers the contract's issues, the configured limits first, and malformed JSON as such", async () => {
    const invalid = await parse(JSON.stringify({ papers: [{ id: "a" }, { id: "a" }], repetitions: 3, threshold: 4 }));
    expect(invalid.kind).toBe("issues");
    expect((invalid as { issues: { loc: unknown[] }[] }).issues.map((issue) => issue.loc)).toEqual([["body", "papers"], ["body", "threshold"]]);
    const limited = await parse(JSON.stringify({ papers: [{ id: "a" }], repetitions: 10_000 }));
    expect(limited).toMatchObject({ kind: "issues", issues: [expect.objectContaining({ loc: ["body", "repetitions"] })] });
    expect(await parse("{\"papers\": [")).toEqual({ kind: "invalid-json" });
  });

  it("ends its thread once idle (giving back the heap its last body grew) and starts a new one for the next body", async () => {
    const idle = new OffLoopParser(DEFAULT_REQUEST_LIMITS, 100);
    try {
      const body = JSON.stringify({ papers: [{ id: "a", title: "T", abstract: "A" }], mock: true });
      expect((await idle.parse(Buffer.from(body), "createScreeningJob")).kind).toBe("valid");
      expect(idle.running).toBe(true);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(idle.running).toBe(false);
      expect((await idle.parse(Buffer.from(body), "createScreeningJob")).kind).toBe("valid");
    } finally {
      await idle.close();
    }
  });

  it("computes a validation on the thread: the same figures as on the loop, its label errors as LabelError, and the loop free meanwhile", async () => {
    // 50,000 papers and 2,000 labels: its exact one-look bound held the gateway's loop for 11-13 s (before its tails were summed by recurrence), still about a second.
    const papers = Array.from({ length: 50_000 }, (_, i) => ({ id: `p${i}`, score: i % 6, included: null }));
    const labels = Array.from({ length: 2_000 }, (_, i) => ({ id: `p${i * 25}`, included: i % 3 === 0 }));
    const input: ValidationInput = { jobId: "job", papers, repetitions: 5, jobThreshold: 1, labels, targetRecall: 0.95, confidence: 0.95 };
    let settled = false;
    const validated = parser.validate(input).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 0));
    expect(settled, "a timer of the loop ran before the validation ended").toBe(false);
    expect(await validated).toEqual(validateJob(input));
    const unknown = await parser.validate({ ...input, labels: [{ id: "nope", included: true }] }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(LabelError);
    expect(unknown).toMatchObject({ kind: "unknown", labels: [{ index: 0, id: "nope" }] });
  }, 60_000);
});
