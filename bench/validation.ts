/**
 * Recall certification methods compared: wrong-certification rates and the labels each needs.
 *
 *   npm run bench -- validation [--runs 1000] [--synthetic-runs 200] [--oracle-runs 200]
 *
 * Each scenario is a known job (papers and includes per vote level, R = 5) whose recall at
 * threshold 2 is just below the target while threshold 1 keeps every include (so certifying
 * threshold 1 is right and a method cannot pass by declining), a sampling design, a sample size and
 * a look every so many labels. Four methods run on the same simulated runs (libs/evaluation):
 * - one look: the service's plan for one look (labels_needed with plan once), labelled, then
 *   looked at once with the exact one-look bounds;
 * - betting: the service's anytime sequence, the betting test of recall across strata, asked at every look;
 * - PPR: the sequence before it (prior–posterior-ratio bounds, error split, strata by Bonferroni), at every look;
 * - buscar: read every paper kept at threshold 1 (or 2, for its error), then label the papers below
 *   in a random order, testing after every label (simple designs only).
 * A run is wrong when any look recommends a threshold whose true recall is below the target (the
 * team may stop at any look); buscar's when it stops at threshold 2 claiming recall it lacks.
 * Labels: at the first certifying look (median and 90th percentile over the runs that certified);
 * one look's is its planned size. Exits non-zero when a wrong-certification rate is above nominal by
 * more than its Monte-Carlo error (two standard errors at the nominal rate).
 */
import { parseArgs } from "node:util";
import {
  BENCH_SCENARIOS,
  bettingRule,
  buscarRates,
  certificateRule,
  errorRates,
  EVERY_LABEL_SCENARIOS,
  oneLookRule,
  SYNTHETIC_SCENARIOS,
  type Scenario,
} from "../libs/evaluation/src/index";
import { oracleScore } from "../libs/llm/src/testing/index";
import { builtInNames, loadBuiltIn } from "../eval/datasets";

const { values } = parseArgs({ options: { runs: { type: "string", default: "1000" }, "synthetic-runs": { type: "string", default: "200" }, "oracle-runs": { type: "string", default: "200" } } });
const NOMINAL = 0.05;
const started = Date.now();
let failed = false;
const betterThanPpr: boolean[] = [];
const ratios: number[] = [];

const quantile = (xs: readonly number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]! : null);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const cell = (x: number | null) => (x === null ? "–" : String(x));

console.log("| scenario | runs | method | certified | wrong (± MC) | labels median | labels p90 |");
console.log("| --- | ---: | --- | ---: | ---: | ---: | ---: |");

function compare(sc: Scenario, runs: number): void {
  const margin = 2 * Math.sqrt((NOMINAL * (1 - NOMINAL)) / runs);
  const rows: { method: string; certified: number; wrong: number; labels: number[]; planned?: number }[] = [];
  const once = errorRates(sc, oneLookRule, runs, 1);
  rows.push({ method: "one look", certified: once.certified, wrong: once.wrong, labels: [], planned: oneLookRule.onlyAt!(sc) });
  for (const rule of [bettingRule(), certificateRule]) {
    const r = errorRates(sc, rule, runs, 1);
    rows.push({ method: rule.name, certified: r.certified, wrong: r.wrong, labels: r.labels });
  }
  if (sc.design === "simple") {
    const at1 = buscarRates(sc, 1, runs, 1);
    const at2 = buscarRates(sc, 2, runs, 1);
    rows.push({ method: "buscar (labels below t1; error at t2)", certified: at1.certified, wrong: at2.wrong, labels: at1.labels });
  }
  for (const row of rows) {
    const rate = row.wrong / runs;
    const ok = rate <= NOMINAL + margin;
    if (!ok) failed = true;
    const median = row.planned ?? quantile(row.labels, 0.5);
    const p90 = row.planned ?? quantile(row.labels, 0.9);
    console.log(`| ${sc.name} | ${runs} | ${row.method} | ${pct(row.certified / runs)} | ${pct(rate)} ± ${pct(margin / 2)}${ok ? "" : " FAIL"} | ${cell(median)} | ${cell(p90)} |`);
  }
  const [one, bet, ppr] = rows;
  const betMedian = quantile(bet!.labels, 0.5);
  const pprMedian = quantile(ppr!.labels, 0.5);
  if (betMedian !== null && one!.planned) ratios.push(betMedian / one!.planned);
  betterThanPpr.push(betMedian !== null && (pprMedian === null || betMedian < pprMedian));
}

const RUNS = Number(values.runs);
for (const sc of [...BENCH_SCENARIOS, ...EVERY_LABEL_SCENARIOS]) compare(sc, RUNS);
for (const sc of SYNTHETIC_SCENARIOS) compare(sc, Number(values["synthetic-runs"]));

// The built-in reviews screened by the fake provider's oracle (per-vote sensitivity 0.9, specificity 0.8, R = 5).
const R = 5;
for (const name of builtInNames()) {
  const records = loadBuiltIn(name).records;
  const levels = Array.from({ length: R + 1 }, () => ({ papers: 0, includes: 0 }));
  for (const r of records) {
    const s = oracleScore(r, R, { sensitivity: 0.9, specificity: 0.8, seed: 1 });
    levels[s]!.papers++;
    if (r.included) levels[s]!.includes++;
  }
  compare({ name: `${name} (oracle)`, levels, targetRecall: 0.95, confidence: 0.95, design: "simple", sampleSize: records.length, lookEvery: 25, checkAt: 2 }, Number(values["oracle-runs"]));
}

const worst = ratios.length ? Math.max(...ratios) : null;
console.log(`\nbetting median / one-look planned labels: worst ${worst === null ? "–" : worst.toFixed(2)}, median ${cell(quantile(ratios, 0.5) === null ? null : Number(quantile(ratios, 0.5)!.toFixed(2)))}`);
console.log(`betting needs fewer labels than PPR at the median: ${betterThanPpr.filter(Boolean).length} of ${betterThanPpr.length} scenarios`);
console.log(`every wrong-certification rate within nominal ${NOMINAL * 100}% (+ 2 MC standard errors): ${failed ? "FAILED" : "met"} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(failed ? 1 : 0);
