/**
 * Recall certification methods compared: wrong-certification rates and the labels each needs.
 *
 *   npm run bench -- validation [--runs 1000] [--synthetic-runs 1000] [--oracle-runs 1000]
 *
 * Each scenario is a known job (papers and includes per vote level, R = 5) whose recall at
 * threshold 2 is just below the target while threshold 1 keeps every include (so certifying
 * threshold 1 is right and a method cannot pass by declining), a sampling design, a sample size and
 * a look every so many labels. The methods run on the same simulated runs (libs/evaluation):
 * - one look: the service's plan for one look (labels_needed with plan once), labelled, then
 *   looked at once with the exact one-look bounds (its error); and, for its labels, the smallest
 *   single-look size on the look grid that would have certified each run (what a team must plan for);
 * - betting: the service's anytime sequence, the betting test of recall across strata, asked at every look;
 * - PPR: the sequence before it (prior–posterior-ratio bounds, error split, strata by Bonferroni), at every look;
 * - buscar: read every paper kept at threshold 1 (or 2, for its error), then label the papers below
 *   in a random order, testing after every label (simple designs only).
 * A run is wrong when any look recommends a threshold whose true recall is below the target (the
 * team may stop at any look); buscar's when it stops at threshold 2 claiming recall it lacks.
 * Labels: at the first certifying look, median and 90th percentile over ALL runs, a run that never
 * certified with a saving (within the sample, leaving at least the service's minimum unread)
 * counting as more than any ("none" when more than half, or a tenth, are such). Exits non-zero when
 * a wrong-certification rate is above nominal by more than two Monte-Carlo standard errors.
 */
import { parseArgs } from "node:util";
import {
  BENCH_SCENARIOS,
  bettingRule,
  buscarRates,
  certificateRule,
  errorRates,
  EVERY_LABEL_SCENARIOS,
  MIN_NET_WORK_SAVED,
  oneLookAnySizeRule,
  oneLookRule,
  SYNTHETIC_SCENARIOS,
  type Scenario,
} from "../libs/evaluation/src/index";
import { oracleScore } from "../libs/llm/src/testing/index";
import { builtInNames, loadBuiltIn } from "../eval/datasets";

const { values } = parseArgs({ options: { runs: { type: "string", default: "1000" }, "synthetic-runs": { type: "string", default: "1000" }, "oracle-runs": { type: "string", default: "1000" } } });
const NOMINAL = 0.05;
const started = Date.now();
let failed = false;
const betterThanPpr: { name: string; better: boolean }[] = [];
const ratios: { name: string; ratio: number }[] = [];
const planRatios: { name: string; ratio: number }[] = [];
/** Scenarios where neither the betting test nor the prior–posterior ratio certifies with a saving in half the runs. */
const neither: string[] = [];

/** The p-quantile of labels over all runs, a run that never certified counting as more than any (Infinity). */
const quantile = (xs: readonly number[], runs: number, p: number) => {
  const all = [...xs].sort((a, b) => a - b);
  const i = Math.max(0, Math.ceil(p * runs) - 1);
  return i < all.length ? all[i]! : Infinity;
};
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const cell = (x: number | null) => (x === null ? "–" : x === Infinity ? "none" : String(x));

console.log("| scenario | runs | method | certified | wrong (± MC) | labels median | labels p90 |");
console.log("| --- | ---: | --- | ---: | ---: | ---: | ---: |");

function compare(sc: Scenario, runs: number): void {
  const se = Math.sqrt((NOMINAL * (1 - NOMINAL)) / runs);
  // A certificate that leaves less than the service's minimum saving unread is no sample (the service answers it as not
  // feasible): such runs count as not certified for the labels, and a plan past it is not run.
  const papers = sc.levels.reduce((s, l) => s + l.papers, 0);
  const limit = Math.min(sc.sampleSize, Math.floor((1 - MIN_NET_WORK_SAVED) * papers));
  const rows: { method: string; certified: number | null; wrong: number | null; median: number | null; p90: number | null }[] = [];
  const row = (method: string, r: { certified: number; wrong: number; labels: number[] }, wrong = true) => {
    const saving = r.labels.filter((n) => n <= limit);
    rows.push({ method, certified: r.certified, wrong: wrong ? r.wrong : null, median: quantile(saving, runs, 0.5), p90: quantile(saving, runs, 0.9) });
  };
  // One look as the service plans it (a single look at the planned size; not run when the plan exceeds the sample)…
  const planned = oneLookRule.onlyAt!(sc);
  if (planned <= limit) {
    const once = errorRates(sc, oneLookRule, runs, 1);
    // Stratified rows: the service plans for its own allocation (twice the rate below the threshold), not this sample's rates.
    rows.push({ method: `one look at the plan's ${planned}${sc.design === "stratified" ? " (planned for the service's allocation)" : ""}`, certified: once.certified, wrong: once.wrong, median: planned, p90: planned });
  } else rows.push({ method: `one look at the plan's ${planned} (beyond the sample or no saving)`, certified: null, wrong: null, median: null, p90: null });
  // …and the smallest single-look size that would have certified each run (labels only: asked at every look it is no certificate).
  row("one look, smallest size (labels only)", errorRates(sc, oneLookAnySizeRule, runs, 1), false);
  for (const rule of [bettingRule(), certificateRule]) row(rule.name, errorRates(sc, rule, runs, 1));
  if (sc.design === "simple") {
    const at1 = buscarRates(sc, 1, runs, 1);
    const at2 = buscarRates(sc, 2, runs, 1);
    row("buscar (labels below t1; error at t2)", { ...at1, wrong: at2.wrong });
  }
  for (const r of rows) {
    const rate = r.wrong === null ? null : r.wrong / runs;
    const ok = rate === null || rate <= NOMINAL + 2 * se;
    if (!ok) failed = true;
    const wrong = rate === null ? "–" : `${pct(rate)} ± ${pct(Math.sqrt((Math.max(rate, 1 / runs) * (1 - rate)) / runs))}${ok ? "" : " FAIL"}`;
    console.log(`| ${sc.name} | ${runs} | ${r.method} | ${r.certified === null ? "–" : pct(r.certified / runs)} | ${wrong} | ${cell(r.median)} | ${cell(r.p90)} |`);
  }
  const [, one, bet, ppr] = rows;
  // A scenario where neither certifies within the sample in half the runs says nothing of the ratio (one alone: 0 or Infinity).
  if (Number.isFinite(bet!.median) || Number.isFinite(one!.median)) ratios.push({ name: sc.name, ratio: bet!.median! / one!.median! });
  // Against the plan's own size only where that look certified in at least half the runs (a size that rarely certifies is no baseline).
  const plan = rows[0]!;
  if (plan.certified !== null && plan.certified >= runs / 2) planRatios.push({ name: sc.name, ratio: bet!.median! / plan.median! });
  if (Number.isFinite(bet!.median) || Number.isFinite(ppr!.median)) betterThanPpr.push({ name: sc.name, better: bet!.median! < ppr!.median! });
  else neither.push(sc.name);
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

function summary(what: string, rs: readonly { name: string; ratio: number }[]): void {
  const worst = rs.reduce<{ name: string; ratio: number } | null>((w, r) => (w === null || r.ratio > w.ratio ? r : w), null);
  const sorted = rs.map((r) => r.ratio).sort((a, b) => a - b);
  const median = sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]!.toFixed(2) : "–";
  console.log(`betting median / ${what}: worst ${worst ? `${worst.ratio.toFixed(2)} (${worst.name})` : "–"}, median ${median}, at most 1.3 in ${rs.filter((r) => r.ratio <= 1.3).length} of ${rs.length} scenarios`);
}
console.log("");
summary("one look's smallest-size median", ratios);
summary("the one-look plan's size (where that look certified in half the runs)", planRatios);
console.log(`betting needs fewer labels than the prior–posterior ratio at the median: ${betterThanPpr.filter((b) => b.better).length} of ${betterThanPpr.length} scenarios${betterThanPpr.some((b) => !b.better) ? ` (not: ${betterThanPpr.filter((b) => !b.better).map((b) => b.name).join("; ")})` : ""}`);
if (neither.length) console.log(`neither anytime method certifies with a saving in half the runs: ${neither.join("; ")}`);
console.log(`every wrong-certification rate within nominal ${NOMINAL * 100}% (+ 2 MC standard errors): ${failed ? "FAILED" : "met"} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(failed ? 1 : 0);
