import { describe, expect, it } from "vitest";
import type { ScreeningCriterion, ScreeningPaper } from "@litrev/contracts";
import { createMockModel, stableHash } from "./mock-model";

/** A hash that counts the characters it reads: the mock's work, measured without a clock. */
function countingHash() {
  const counter = { chars: 0, hash: (text: string) => ((counter.chars += text.length), stableHash(text)) };
  return counter;
}

const criteria = (count: number, chars: number): ScreeningCriterion[] =>
  Array.from({ length: count }, (_, i) => ({ name: `c${i}`, type: i % 2 ? "exclude" : "include", value: `${i}`.padEnd(chars, "x") }));
const papers = (count: number): ScreeningPaper[] => Array.from({ length: count }, (_, i) => ({ id: `p${i}`, title: `Paper ${i}`, abstract: "text" }));

describe("the mock screening model", () => {
  it("reads the criteria's text once per job, not once per vote (200 criteria of 5,000 characters, 20 repetitions)", async () => {
    const frame = { criteria: criteria(200, 5_000), questions: [], model: "m" };
    const criteriaChars = frame.criteria.reduce((sum, c) => sum + c.type.length + c.value.length + 2, 0);
    const batch = papers(50);
    const counter = countingHash();
    const { value } = await createMockModel(frame, counter.hash).label(batch, 20);
    expect(value).toHaveLength(50);
    expect(value.every((votes) => votes.length === 20 && votes.every((v) => v.verdicts.length === 200))).toBe(true);
    const paperChars = batch.reduce((sum, p) => sum + `${p.id}|${p.title}`.length, 0);
    // Everything hashed: the criteria once, each paper's id and title once.
    expect(counter.chars).toBeLessThanOrEqual(criteriaChars + paperChars);
  });

  it("is deterministic and depends on the paper and the criteria", async () => {
    const frame = { criteria: criteria(5, 50), questions: [], model: "m" };
    const a = await createMockModel(frame).label(papers(40), 5);
    const b = await createMockModel(frame).label(papers(40), 5);
    expect(a.value).toEqual(b.value);
    const other = await createMockModel({ ...frame, criteria: criteria(5, 51) }).label(papers(40), 5);
    expect(other.value).not.toEqual(a.value);
    // Votes vary between papers and repetitions (not one constant answer).
    const includes = a.value.flat().map((v) => v.include);
    expect(new Set(includes).size).toBe(2);
    const verdicts = a.value.flat().flatMap((v) => v.verdicts);
    expect(new Set(verdicts).size).toBe(3);
  });
});
