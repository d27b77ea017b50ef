/**
 * Cost of mock screening labelling (services/screening/src/model/mock-model.ts) against the length
 * of the criteria: the job — 2,000 papers × 200 criteria × 20 repetitions — with criteria of
 * 5,000 characters vs 10 characters, in the same run (goal: ratio about 1×; the cost follows the
 * work units papers × repetitions × criteria, never the criteria's text).
 *
 *   npm run bench -- mock     (knobs: BENCH_PAPERS=2000, BENCH_CRITERIA=200, BENCH_REPETITIONS=20, BENCH_ROUNDS=5)
 */
import type { ScreeningCriterion, ScreeningPaper } from "../libs/contracts/src/index";
import { createMockModel } from "../services/screening/src/model/mock-model";
import { knob } from "./support/knobs";

const PAPERS = knob("BENCH_PAPERS", 2_000);
const CRITERIA = knob("BENCH_CRITERIA", 200);
const REPETITIONS = knob("BENCH_REPETITIONS", 20);
const ROUNDS = knob("BENCH_ROUNDS", 5);
const BATCH = 5;

const papers: ScreeningPaper[] = Array.from({ length: PAPERS }, (_, i) => ({ id: i, title: `Paper ${i} on something`, abstract: "An abstract." }));
const criteria = (chars: number): ScreeningCriterion[] =>
  Array.from({ length: CRITERIA }, (_, i) => ({ name: `c${i}`, type: i % 2 ? "exclude" : "include", value: `Criterion ${i} `.padEnd(chars, "x") }));

async function label(chars: number): Promise<number> {
  const model = createMockModel({ criteria: criteria(chars), questions: [], model: "llm-5-nano" });
  const started = performance.now();
  let verdicts = 0;
  for (let start = 0; start < PAPERS; start += BATCH) {
    const { value } = await model.label(papers.slice(start, start + BATCH), REPETITIONS);
    for (const votes of value) for (const vote of votes) verdicts += vote.verdicts.length;
  }
  if (verdicts !== PAPERS * REPETITIONS * CRITERIA) throw new Error(`expected ${PAPERS * REPETITIONS * CRITERIA} verdicts, got ${verdicts}`);
  return performance.now() - started;
}

await label(10); // warm-up
const short: number[] = [];
const long: number[] = [];
// Alternating which goes first, so garbage left by one run weighs on both alike.
for (let round = 0; round < ROUNDS; round++) {
  if (round % 2) long.push(await label(5_000));
  short.push(await label(10));
  if (!(round % 2)) long.push(await label(5_000));
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`mock labelling, ${PAPERS} papers × ${REPETITIONS} repetitions × ${CRITERIA} criteria (${(PAPERS * REPETITIONS * CRITERIA).toLocaleString("en")} verdicts), median of ${ROUNDS}:`);
console.log(`  criteria of 10 characters:    ${median(short).toFixed(0)} ms`);
console.log(`  criteria of 5,000 characters: ${median(long).toFixed(0)} ms`);
console.log(`  ratio: ${(median(long) / median(short)).toFixed(2)}×`);
