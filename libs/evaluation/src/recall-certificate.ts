import type { CanShow, Certificate, CertifiedThreshold } from "@litrev/contracts";
import { certify, labelsNeeded, MIN_NET_WORK_SAVED, type CertificateOptions, type Plan, type VoteLevel } from "./certificate";

// The certificate as the service answers it (./certificate computes the bounds and the plan): the
// recommendation or why there is none, what the labels can show instead, and the method in words.

/** The confidences the "what can be shown" answer tries, highest first. */
const CONFIDENCES = [0.99, 0.975, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5];

/** The certificate for labels on a job's vote levels. */
export function recallCertificate(levels: readonly VoteLevel[], options: CertificateOptions): Certificate {
  const labelled = levels.reduce((s, l) => s + l.labelled, 0);
  const includes = levels.reduce((s, l) => s + l.includes, 0);
  const plan = labelsNeeded(levels, options);
  const lookPlan = options.plan ?? "anytime";
  if (lookPlan === "once" && labelled < (options.sampleSize ?? 0)) return progress(levels, options, labelled, includes, plan);
  const { rows, recommended } = certify(levels, options, options.confidence);
  // No threshold to certify (a job that recorded no repetitions): say so rather than guess.
  const canShow = recommended || rows.length === 0 ? null : whatCanBeShown(levels, rows, options);
  return {
    ...common(options, labelled, includes, plan),
    plan: lookPlan,
    look: "certificate",
    thresholds: rows,
    recommended,
    reason: recommended ? null : canShow ? reasonText(rows, includes, labelled, plan, options, canShow) : "The job recorded no include-vote thresholds (no repetitions): there is no threshold to certify.",
    can_show: canShow,
  };
}

/** What every answer says, certificate or progress: the request, the method, the counts and the plan's labels. */
function common(options: CertificateOptions, labelled: number, includes: number, plan: Plan) {
  return {
    design: options.design,
    target_recall: options.targetRecall,
    confidence: options.confidence,
    sides: options.sides,
    method: methodText(options),
    statement: statement(options),
    labelled,
    labelled_included: includes,
    labels_needed: plan.needed,
    labels_still_needed: plan.needed === null ? null : Math.max(0, plan.needed - labelled),
    feasible: plan.feasible,
  };
}

/**
 * A look before the single planned one: the estimates and the plan, no bound. A one-look bound
 * taken again as labels arrive would err more often than it says, so none is given until the last label.
 */
function progress(levels: readonly VoteLevel[], options: CertificateOptions, labelled: number, includes: number, plan: Plan): Certificate {
  // The rows' estimates and counts only (the bounds are dropped, so the cheapest method computes them).
  const rows = certify(levels, { ...options, plan: "anytime", sequenceMethod: "ppr" }, options.confidence).rows.map((row) => ({ ...row, recall_lower: null, recall_upper: null }));
  const size = options.sampleSize ?? labelled;
  return {
    ...common(options, labelled, includes, plan),
    plan: "once",
    look: "progress",
    thresholds: rows,
    recommended: null,
    reason:
      `Progress: ${labelled} of the sample's ${size} papers are labelled (${includes} included). The sample was planned for one look, after its last label, ` +
      `and its exact bound is given then; a look before it is not a certificate (a one-look bound taken again as labels arrive errs more often than it says). Label the remaining ${size - labelled} papers in the sample's order.`,
    can_show: null,
  };
}

export function statement(options: Pick<CertificateOptions, "targetRecall" | "confidence" | "sides">): string {
  const claim = `recall of at least ${pct(options.targetRecall)} with ${pct(options.confidence)} confidence`;
  return options.sides === "one"
    ? `One-sided: ${claim} (a lower bound that errs with probability at most ${pct(1 - options.confidence)}).`
    : `Two-sided: ${claim} as the lower end of a ${pct(options.confidence)} interval (the lower bound errs with probability at most ${pct((1 - options.confidence) / 2)}).`;
}

function methodText(options: CertificateOptions): string {
  const once = options.plan === "once";
  const betting = !once && options.design !== "below_threshold" && (options.sequenceMethod ?? "betting") === "betting";
  const order = once ? `, planned for a single look after the last of its ${options.sampleSize ?? "n"} labels` : ", labelled in the order the service drew it";
  const design = {
    simple: `a simple random sample of the job's papers${order}`,
    stratified: `a sample stratified by include-vote level, each level sampled at its own rate and labelled in a random order${once ? order : ""}${betting ? "" : ", each level bounded on its own (the bounds weighted by the design)"}`,
    below_threshold: `a simple random sample of the papers below threshold ${options.designThreshold ?? 1} (those nobody would read)${once ? order : ""}`,
  }[options.design];
  const fixed = "thresholds are tested in order from 1 up (fixed sequence).";
  if (once && options.design === "simple") {
    return (
      `Recall certified on ${design}. Given how many included papers the sample holds, those kept at a threshold follow a hypergeometric distribution, ` +
      "so each threshold's recall gets the exact one-sided finite-population lower bound (the least recall any include count consistent with the labels leaves in the confidence set; " +
      `never below Clopper–Pearson on the sampled includes); the included papers nobody would read get their own exact hypergeometric upper bound, and ${fixed} ${statement(options)}`
    );
  }
  if (betting) {
    const weighted = options.design === "stratified" ? " (weighted by its level's unlabelled papers over its unlabelled sampled papers)" : "";
    return (
      `Recall certified on ${design}. At each threshold, recall below the target is bet against as the labels arrive, by the betting confidence sequences for sampling without replacement ` +
      `(Waudby-Smith and Ramdas): each labelled paper scores by whether it is an included paper kept or missed at the threshold${weighted}, one wealth covers the whole sample (no split of the error, ` +
      "no Bonferroni across levels), and the target is certified once the wealth reaches 1/α, which errs with probability at most α however often the labels are analysed (Ville's inequality); " +
      `the largest recall so certified is the lower bound. The included papers nobody would read get their own anytime bound (the prior–posterior-ratio sequence), and ${fixed} ${statement(options)}`
    );
  }
  const bounds = once
    ? "exact one-sided finite-population (hypergeometric) bounds for the single planned look"
    : "exact finite-population (hypergeometric) confidence sequences (Waudby-Smith and Ramdas 2020, prior–posterior ratio with a Beta(½, ½) prior), which hold at every look however often the labels are analysed";
  return `Recall certified on ${design}. Included papers kept and missed at each threshold are bounded with ${bounds}; the error is split a quarter to the kept and three quarters to the missed includes, and ${fixed} ${statement(options)}`;
}

function whatCanBeShown(levels: readonly VoteLevel[], rows: readonly CertifiedThreshold[], options: CertificateOptions): CanShow {
  const first = rows[0]!;
  const recall = first.recall_lower !== null && first.recall_lower > 0 ? { votes: first.votes, recall_lower: first.recall_lower } : null;
  let confidence: number | null = null;
  for (const c of CONFIDENCES) {
    if (c >= options.confidence) continue;
    if (certify(levels, options, c).recommended) {
      confidence = c;
      break;
    }
  }
  const readBelow = { votes: first.votes, papers: first.papers_below };
  const parts: string[] = [];
  if (recall) parts.push(`recall of at least ${pct(recall.recall_lower)} at threshold ${recall.votes} with ${pct(options.confidence)} confidence`);
  if (confidence !== null) parts.push(`${pct(options.targetRecall)} recall with ${pct(confidence)} confidence`);
  const read = `reading the ${readBelow.papers} papers below threshold ${readBelow.votes} as well, so that nothing the screener ranked low goes unread (no sample needed)`;
  const summary = parts.length ? `What these labels can show: ${parts.join("; ")}. Or skip the certificate by ${read}.` : `These labels cannot show any recall yet. The alternative is ${read}.`;
  return { recall, confidence, read_below: readBelow, summary };
}

function reasonText(rows: readonly CertifiedThreshold[], includes: number, labelled: number, plan: Plan, options: CertificateOptions, canShow: CanShow): string {
  const target = `${pct(options.targetRecall)} recall with ${pct(options.confidence)} confidence`;
  if (options.design === "below_threshold" && options.includesRead === undefined) {
    return `At most ${rows[0]!.missed_upper} included papers are below threshold ${rows[0]!.votes} (${pct(options.confidence)} confidence). Recall needs the number of included papers the team found reading the papers at or above it (includes_read). ${canShow.summary}`;
  }
  const head =
    labelled === 0
      ? "No paper is labelled yet."
      : includes === 0
        ? `None of the ${labelled} labelled papers is included, so recall cannot be bounded yet.`
        : `The certified recall at threshold ${rows[0]!.votes} is ${pct(rows[0]!.recall_lower ?? 0)}, below the target of ${target}.`;
  if (!plan.feasible) {
    return `${head} ${target} cannot be shown on this job with a sample: at this job's inclusion rate a sample that certifies it would leave less than ${pct(MIN_NET_WORK_SAVED)} of the papers unread. ${canShow.summary}`;
  }
  if (options.plan === "once") {
    return `${head} This was the sample's single planned look: another look at more labels of it would not be a certificate. Draw a new sample${plan.needed !== null ? ` (about ${plan.needed} papers)` : ""} planned for one look, or planned to look as labels arrive. ${canShow.summary}`;
  }
  const more = plan.needed === null ? null : Math.max(0, plan.needed - labelled);
  return `${head} ${more ? `Label about ${more} more papers, continuing the random sample in its order, and ask again (asking again is safe: the bound holds at every look).` : "Keep labelling the sample in its order and ask again (asking again is safe: the bound holds at every look)."} ${canShow.summary}`;
}

export function pct(value: number): string {
  return `${+(value * 100).toFixed(1)}%`;
}
