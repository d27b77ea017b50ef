/**
 * Error rates of the recall certificate, against a naive rule, and what a certified 95%/95% costs.
 *
 *   npm run bench -- validation [--runs 10000] [--oracle-runs 100]
 *
 * Part 1 (error rates): each scenario is a known job (papers and includes per vote level, R = 5)
 * whose recall at threshold 2 is just below the target while threshold 1 keeps every include, a
 * sampling design, a sample size and a look every so many labels. Each of `runs` simulated runs
 * draws the sample, labels it in order and asks after every look (libs/evaluation errorRates). A
 * run is wrong when ANY look recommends a threshold whose true recall is below the target (the team
 * may stop at any look), and its missed-include bound is wrong when any look's upper bound at
 * threshold 2 is below the true count. Nominal error: 5% (one-sided 95%). The certificate must stay
 * at or under it in every scenario, over all runs and among the runs that certified; the naive rule
 * (a fresh unweighted Clopper–Pearson bound at every look, as the route answered before) runs
 * through the same scenarios beside it.
 *
 * Part 2 (cost): on each built-in SYNERGY review screened by the fake provider's oracle (per-vote
 * sensitivity 0.9, specificity 0.8; votes computed with the oracle's own draws) and on a synthetic
 * 5,000-paper review, a simple random sample labelled 25 at a time until the certificate recommends
 * a threshold at 95% recall with 95% confidence: how many labels that took and the net work saved
 * (papers nobody reads, counting the sample as read). Exits non-zero if any scenario fails.
 */
import { parseArgs } from "node:util";
import { BENCH_SCENARIOS, certificateRule, errorRates, generator, labelsNeeded, meetsNominal, naiveRule, recommendedThreshold, type VoteLevel } from "../libs/evaluation/src/index";
import { oracleScore } from "../libs/llm/src/testing/index";
import { builtInNames, loadBuiltIn } from "../eval/datasets";

const { values } = parseArgs({ options: { runs: { type: "string", default: "10000" }, "oracle-runs": { type: "string", default: "100" } } });
const RUNS = Number(values.runs);
const ORACLE_RUNS = Number(values["oracle-runs"]);
const CONFIDENCE = 0.95;
const NOMINAL = 0.05; // 1 − CONFIDENCE, written out so it prints as 5%

const started = Date.now();
let failed = false;
const pctOf = (a: number, b: number) => (b > 0 ? `${((a / b) * 100).toFixed(2)}%` : "–");
console.log(`Part 1: error rates, ${RUNS} simulated runs per scenario and rule; target recall at threshold 2 just below the target; one-sided ${CONFIDENCE * 100}% (nominal error ${NOMINAL * 100}%)\n`);
console.log(
  `${"scenario".padEnd(40)} ${"true r@2".padStart(8)}  ${"cert: certified".padStart(15)} ${"wrong".padStart(7)} ${"wrong|cert".padStart(10)} ${"missed>UB".padStart(9)} ${"labels".padStart(7)}  ${"naive: wrong".padStart(12)} ${"wrong|cert".padStart(10)} ${"missed>UB".padStart(9)} ${"labels".padStart(7)}`,
);
for (const sc of BENCH_SCENARIOS) {
  const K = sc.levels.reduce((s, l) => s + l.includes, 0);
  const r2 = sc.levels.slice(2).reduce((s, l) => s + l.includes, 0) / K;
  const ours = errorRates(sc, certificateRule, RUNS, 1);
  const naive = errorRates(sc, naiveRule(), RUNS, 1);
  const ok = meetsNominal(ours, NOMINAL);
  if (!ok) failed = true;
  const mean = (e: typeof ours) => (e.certified ? String(Math.round(e.labelsAtCertification / e.certified)) : "–");
  console.log(
    `${sc.name.padEnd(40)} ${r2.toFixed(4).padStart(8)}  ${pctOf(ours.certified, RUNS).padStart(15)} ${pctOf(ours.wrong, RUNS).padStart(7)} ${pctOf(ours.wrong, ours.certified).padStart(10)} ${pctOf(ours.missedWrong, RUNS).padStart(9)} ${mean(ours).padStart(7)}  ` +
      `${pctOf(naive.wrong, RUNS).padStart(12)} ${pctOf(naive.wrong, naive.certified).padStart(10)} ${pctOf(naive.missedWrong, RUNS).padStart(9)} ${mean(naive).padStart(7)}${ok ? "" : "  FAIL"}`,
  );
}
console.log("certified: runs in which some look recommended a threshold; wrong: runs in which some look recommended one whose true recall is below target;");
console.log("wrong|cert: the same among the runs that certified; missed>UB: runs in which some look's missed-include upper bound at threshold 2 fell below the truth;");
console.log("labels: mean labels at the first certifying look. Threshold 1 keeps every include, so certifying it is right: rules that decline cannot pass by declining.\n");

console.log(`Part 2: labels and net work saved at a certified 95% recall with 95% confidence (simple random sample, looks every 25 labels, ${ORACLE_RUNS} oracle runs per review)\n`);
console.log(`${"review".padEnd(14)} ${"papers".padStart(6)} ${"incl".padStart(5)} ${"planned".padStart(8)}  ${"certified".padStart(9)} ${"labels (median)".padStart(15)} ${"threshold".padStart(9)} ${"work saved".padStart(10)} ${"net work saved".padStart(14)}`);
const R = 5;
const RATES = { sensitivity: 0.9, specificity: 0.8 };
const SYNTHETIC = { name: "synthetic*", papers: 5_000, included: 500 };
const reviews = [
  ...builtInNames().map((name) => ({ name, records: loadBuiltIn(name).records })),
  { name: SYNTHETIC.name, records: Array.from({ length: SYNTHETIC.papers }, (_, i) => ({ id: `s${i}`, title: `Synthetic study ${i}`, abstract: `Abstract ${i}.`, included: i < SYNTHETIC.included })) },
];
const options = { design: "simple" as const, targetRecall: 0.95, confidence: CONFIDENCE, sides: "one" as const, repetitions: R };
for (const { name, records } of reviews) {
  const positives = records.filter((r) => r.included).length;
  const labelsAt: number[] = [];
  let saved = 0;
  let netSaved = 0;
  let thresholds = 0;
  let planned: number | null = null;
  for (let run = 1; run <= ORACLE_RUNS; run++) {
    const scores = records.map((r) => oracleScore(r, R, { ...RATES, seed: run }));
    const levels: VoteLevel[] = Array.from({ length: R + 1 }, (_, score) => ({ score, papers: 0, labelled: 0, includes: 0 }));
    for (const s of scores) levels[s]!.papers++;
    // The plan before any label, from the votes alone (the first run's).
    if (run === 1) planned = labelsNeeded(levels, { ...options, planThreshold: 1 }).needed;
    const order = records.map((_, i) => i);
    const next = generator(run * 7919 + 17);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (let n = 1; n <= order.length; n++) {
      const i = order[n - 1]!;
      const level = levels[scores[i]!]!;
      level.labelled++;
      if (records[i]!.included) level.includes++;
      if (n % 25 !== 0 && n !== order.length) continue;
      const votes = recommendedThreshold(levels, options);
      // Certifying only once every paper is labelled is no certificate from a sample.
      if (votes >= 1 && n < order.length) {
        const below = levels.filter((l) => l.score! < votes);
        const papersBelow = below.reduce((s, l) => s + l.papers, 0);
        labelsAt.push(n);
        thresholds += votes;
        saved += papersBelow / records.length;
        netSaved += (papersBelow - below.reduce((s, l) => s + l.labelled, 0)) / records.length;
        break;
      }
    }
  }
  const sorted = [...labelsAt].sort((a, b) => a - b);
  const median = sorted.length ? String(sorted[Math.floor(sorted.length / 2)]) : "–";
  const k = labelsAt.length;
  console.log(
    `${name.padEnd(14)} ${String(records.length).padStart(6)} ${String(positives).padStart(5)} ${String(planned ?? "none").padStart(8)}  ${pctOf(k, ORACLE_RUNS).padStart(9)} ${median.padStart(15)} ${(k ? (thresholds / k).toFixed(2) : "–").padStart(9)} ${(k ? `${((saved / k) * 100).toFixed(1)}%` : "–").padStart(10)} ${(k ? `${((netSaved / k) * 100).toFixed(1)}%` : "–").padStart(14)}`,
  );
}
console.log(`\n* ${SYNTHETIC.name}: not SYNERGY; ${SYNTHETIC.papers} generated papers, ${SYNTHETIC.included} included, same oracle.`);
console.log("planned: labels the service plans before any label (a two-class vote model fitted to the vote histogram); certified: runs that reached a certificate before labelling everything;");
console.log("labels, threshold, work saved and net work saved (counting the sample as read) at the first certifying look, over the runs that certified.");
console.log(`every scenario at or under ${NOMINAL * 100}%: ${failed ? "FAILED" : "met"} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(failed ? 1 : 0);
