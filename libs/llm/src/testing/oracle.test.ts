import { afterEach, describe, expect, it } from "vitest";
import { dataBlock } from "@litrev/contracts";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "./fake-provider";
import { createOracle, oracleScore, promptPapers, type OracleRecord } from "./oracle";

/** A labelling request as the screening service builds it: a papers data block of `{id, title, abstract}` records. */
function labellingRequest(papers: { title: string; abstract: string }[], criteria = 2, n = 1): FakeChatRequest {
  const user = `Papers to screen (${papers.length}):\n${dataBlock("papers", papers.map((p, i) => ({ id: `p${i + 1}`, title: p.title, abstract: p.abstract })))}`;
  return {
    model: "gpt-5-nano",
    n,
    messages: [
      { role: "system", content: "instructions" },
      { role: "user", content: user },
    ],
    response_format: { type: "json_schema", json_schema: { name: `screening_labels_${papers.length}x${criteria}`, strict: true } },
  };
}

function generated(papers: number, criteria: number) {
  return { decisions: Array.from({ length: papers }, () => ({ id: "sample", criteria: Array<string>(criteria).fill("unclear"), include: false })) };
}

type Reply = { decisions: { id: string; criteria: string[]; include: boolean }[] };

/** Votes of every record, R per paper, asked in batches of 5 the way the service asks (one choice per vote). */
function vote(records: OracleRecord[], repetitions: number, sensitivity: number, specificity: number, seed = 7): number[] {
  const oracle = createOracle({ records, sensitivity, specificity, seed });
  const includeVotes = new Array<number>(records.length).fill(0);
  for (let start = 0; start < records.length; start += 5) {
    const batch = records.slice(start, start + 5);
    const request = labellingRequest(batch, 2, repetitions);
    for (let choice = 0; choice < repetitions; choice++) {
      const reply = oracle.respond(request, { index: 0, choice, generated: generated(batch.length, 2), apiKey: "k" }) as Reply;
      reply.decisions.forEach((d, i) => (includeVotes[start + i]! += d.include ? 1 : 0));
    }
  }
  expect(oracle.stats()).toEqual({ votes: records.length * repetitions, unknownPapers: 0 });
  return includeVotes;
}

/** P(Binomial(n, p) ≥ k). */
function atLeast(n: number, p: number, k: number): number {
  let total = 0;
  for (let j = k; j <= n; j++) total += choose(n, j) * p ** j * (1 - p) ** (n - j);
  return total;
}
function choose(n: number, k: number): number {
  let c = 1;
  for (let j = 1; j <= k; j++) c = (c * (n - j + 1)) / j;
  return c;
}

describe("oracle mode", () => {
  const N = 4_000; // per class: a proportion's standard deviation is at most 0.5/√4000 ≈ 0.008
  const records: OracleRecord[] = Array.from({ length: 2 * N }, (_, i) => ({
    title: `Study ${i} of a nudge`,
    abstract: `Abstract of study ${i}.`,
    included: i % 2 === 0,
  }));

  it("tells a benchmark each paper's include votes without a job: the same draws the replies give", () => {
    const few = records.slice(0, 200);
    const votes = vote(few, 5, 0.9, 0.8, 11);
    expect(few.map((r) => oracleScore(r, 5, { sensitivity: 0.9, specificity: 0.8, seed: 11 }))).toEqual(votes);
  });

  it("gives recall and specificity at every vote threshold as the binomial law predicts", () => {
    const sens = 0.9;
    const spec = 0.8;
    const R = 3;
    const votes = vote(records, R, sens, spec);
    for (let t = 0; t <= R; t++) {
      const positives = records.flatMap((r, i) => (r.included ? [votes[i]!] : []));
      const negatives = records.flatMap((r, i) => (r.included ? [] : [votes[i]!]));
      const recall = positives.filter((v) => v >= t).length / positives.length;
      const specificity = negatives.filter((v) => v < t).length / negatives.length;
      const expectedRecall = atLeast(R, sens, t); // t = 1: 1 − (1 − sens)^3 = 0.999
      const expectedSpec = 1 - atLeast(R, 1 - spec, t); // t = 1: spec^3 = 0.512
      // 4 standard deviations of a proportion over N papers: a false alarm about once in 16,000 checks.
      const tolerance = (p: number) => 4 * Math.sqrt((p * (1 - p)) / N) + 1e-9;
      expect(Math.abs(recall - expectedRecall), `recall at ≥${t} of ${R}`).toBeLessThanOrEqual(tolerance(expectedRecall));
      expect(Math.abs(specificity - expectedSpec), `specificity at ≥${t} of ${R}`).toBeLessThanOrEqual(tolerance(expectedSpec));
    }
    expect(atLeast(R, sens, 1)).toBeCloseTo(1 - 0.1 ** 3, 12);
  });

  it("is deterministic for a seed, and another seed draws other votes", () => {
    const few = records.slice(0, 400);
    expect(vote(few, 3, 0.7, 0.6, 1)).toEqual(vote(few, 3, 0.7, 0.6, 1));
    expect(vote(few, 3, 0.7, 0.6, 2)).not.toEqual(vote(few, 3, 0.7, 0.6, 1));
  });

  it("answers with the true labels at rates 1, and always wrong at rates 0", () => {
    const few = records.slice(0, 50);
    expect(vote(few, 2, 1, 1)).toEqual(few.map((r) => (r.included ? 2 : 0)));
    expect(vote(few, 2, 0, 0)).toEqual(few.map((r) => (r.included ? 0 : 2)));
  });

  it("recognises papers with an empty title or abstract, and counts papers it does not know", () => {
    const known = [
      { title: "", abstract: "Only an abstract.", included: true },
      { title: "Only a title", abstract: "", included: true },
    ];
    const oracle = createOracle({ records: known, sensitivity: 1, specificity: 1 });
    const papers = [...known, { title: "Not in the dataset", abstract: "x" }];
    const reply = oracle.respond(labellingRequest(papers), { index: 0, choice: 0, generated: generated(3, 2), apiKey: "k" }) as Reply;
    expect(reply.decisions.map((d) => d.include)).toEqual([true, true, false]);
    expect(reply.decisions[0]!.criteria).toEqual(["met", "met"]);
    expect(oracle.stats()).toEqual({ votes: 2, unknownPapers: 1 });
    expect(promptPapers(labellingRequest(papers)).map((p) => p.title)).toEqual(["", "Only a title", "Not in the dataset"]);
    expect(reply.decisions.map((d) => d.id)).toEqual(["p1", "p2", "p3"]);
  });

  it("leaves calls of other stages to the generated reply", () => {
    const oracle = createOracle({ records, sensitivity: 1, specificity: 1 });
    const request = { ...labellingRequest(records.slice(0, 1)), response_format: { type: "json_schema", json_schema: { name: "screening_reasons_1" } } };
    expect(oracle.respond(request, { index: 0, choice: 0, generated: { reasons: ["x"] }, apiKey: "k" })).toBeUndefined();
  });

  describe("through the fake provider", () => {
    let provider: FakeProvider | undefined;
    afterEach(async () => provider?.close());

    it("answers labelling calls over HTTP from the labels, n choices at a time", async () => {
      const few = records.slice(0, 4);
      provider = await startFakeProvider({ oracle: createOracle({ records: few, sensitivity: 1, specificity: 1 }) });
      const decision = {
        type: "object",
        properties: { id: { type: "string" }, criteria: { type: "array", items: { type: "string", enum: ["met", "not_met", "unclear"] }, minItems: 2, maxItems: 2 }, include: { type: "boolean" } },
        required: ["id", "criteria", "include"],
        additionalProperties: false,
      };
      const schema = { type: "object", properties: { decisions: { type: "array", items: decision, minItems: 4, maxItems: 4 } }, required: ["decisions"], additionalProperties: false };
      const body = labellingRequest(few, 2, 3);
      body.response_format!.json_schema!.schema = schema;
      const response = await fetch(`${provider.url}/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer sk-test", "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      const reply = (await response.json()) as { choices: { message: { content: string } }[] };
      expect(reply.choices).toHaveLength(3);
      for (const choice of reply.choices) {
        const decisions = (JSON.parse(choice.message.content) as Reply).decisions;
        expect(decisions.map((d) => d.include)).toEqual([true, false, true, false]);
        expect(decisions.map((d) => d.id)).toEqual(["p1", "p2", "p3", "p4"]);
      }
    });
  });
});
