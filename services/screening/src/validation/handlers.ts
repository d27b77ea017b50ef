import { randomInt, randomUUID } from "node:crypto";
import { DEFAULT_JOB_OWNER, MAX_VALIDATION_SAMPLE, operations, SampleId, sampleNotFound, ServiceError, type StoredValidationSample, type ValidationIssue, type ValidationSample } from "@litrev/contracts";
import { cohenKappa, drawSample, keptAt, labelsNeeded, recallCertificate, type CertificateOptions, type VoteLevel } from "@litrev/evaluation";
import { requestOwner, type JobReader } from "@litrev/jobs";
import { handler, type HandlerEntry } from "@litrev/messaging";
import { finishedJobPapers } from "./job-papers";
import { sampleBytes, type SampleStore } from "./sample-store";

/** Tries of a batch's compare-and-set before it gives up (each lost try means another batch landed). */
const WRITE_TRIES = 8;
/** Discordant papers listed in an answer (the rest are counted in a warning). */
const LISTED_DISCORDANT = 200;

/**
 * The validation-sample operations of the screening service: draw a sample of a finished job,
 * add labels in batches (each batch a recorded look, answered with the certificate), read it back.
 */
/** The owners' storage quota of the service (libs/jobs `OwnerStorage`), which counts each sample drawn until it expires. */
export interface SampleQuota {
  storage: { keep(owner: string, bytes: number, keptForMs: number): Promise<void> };
  keptForMs: number;
}

export function validationSampleHandlers(reader: JobReader, store: SampleStore, quota?: SampleQuota): HandlerEntry[] {
  return [
    handler(operations.drawValidationSample, async (input, ctx) => {
      const owner = requestOwner(ctx.header);
      const job = await finishedJobPapers(reader, input.job_id, owner);
      const threshold = input.design === "below_threshold" ? (input.threshold ?? Math.max(1, Math.ceil(job.threshold))) : null;
      const planThreshold = threshold ?? Math.max(1, Math.ceil(job.threshold));
      const levels = levelsOf(job.papers.map((p) => p.score));
      const options: CertificateOptions = {
        design: input.design,
        targetRecall: input.target_recall,
        confidence: input.confidence,
        sides: input.sides,
        repetitions: job.repetitions,
        planThreshold,
        plan: input.plan,
        ...(threshold !== null ? { designThreshold: threshold } : {}),
        ...(input.look_every !== undefined ? { lookEvery: input.look_every } : {}),
      };
      const plan = labelsNeeded(levels, options);
      const pool = input.design === "below_threshold" ? job.papers.filter((p) => !keptAt(p.score, planThreshold)).length : job.papers.length;
      if (pool === 0) throw new ServiceError("conflict", `No paper of this job is below threshold ${planThreshold}: there is nothing unread to sample`, { simple: true });
      // By default the plan's size, the fewest labels expected to certify the target; when no sample
      // can, or only one of most of the papers (which saves the team nothing), a fifth of the job
      // (at least 100, at most half) to show what can be.
      const planned = plan.needed !== null && plan.needed <= pool / 2 ? plan.needed : null;
      const size = Math.min(pool, MAX_VALIDATION_SAMPLE, input.size ?? planned ?? Math.min(Math.ceil(pool / 2), Math.max(100, Math.ceil(job.papers.length / 5))));
      const seed = input.seed ?? randomInt(0, 2_147_483_647);
      const drawn = drawSample(job.papers, input.design, size, seed, planThreshold);
      options.sampleSize = drawn.ids.length;
      const byId = new Map(job.papers.map((p) => [String(p.id), p]));
      const sampleId = randomUUID();
      const record: StoredValidationSample = {
        owner: owner ?? null,
        scores: drawn.ids.map((id) => byId.get(String(id))!.score),
        decisions: drawn.ids.map((id) => {
          const p = byId.get(String(id))!;
          return p.included ?? keptAt(p.score, job.threshold);
        }),
        levels: levels.map((l) => ({ score: l.score, papers: l.papers })),
        repetitions: job.repetitions,
        job_threshold: job.threshold,
        includes_read: null,
        sample: {
          sample_id: sampleId,
          job_id: input.job_id,
          created_at: new Date().toISOString(),
          design: input.design,
          seed,
          threshold,
          target_recall: input.target_recall,
          confidence: input.confidence,
          sides: input.sides,
          paper_ids: drawn.ids,
          strata: drawn.strata,
          plan: input.plan,
          look_every: input.look_every ?? null,
          labels_needed: plan.needed,
          labels_needed_by_plan: {
            once: input.plan === "once" ? plan.needed : labelsNeeded(levels, { ...options, plan: "once" }).needed,
            anytime: input.plan === "anytime" ? plan.needed : labelsNeeded(levels, { ...options, plan: "anytime" }).needed,
          },
          feasible: plan.feasible,
          labelled: 0,
          labels: [],
          looks: [],
          certificate: recallCertificate(levels, options),
          agreement: null,
          warnings: size < (input.size ?? 0) ? [`The sample holds ${size} papers, all the design can draw (at most ${MAX_VALIDATION_SAMPLE}).`] : [],
        },
      };
      // Counted against the owner's storage quota before it is stored, with room for its labels.
      await quota?.storage.keep(owner ?? DEFAULT_JOB_OWNER, sampleBytes(record), quota.keptForMs);
      await store.create(record);
      return record.sample;
    }),

    handler(operations.labelValidationSample, async (input, ctx) => {
      const owner = requestOwner(ctx.header);
      if (!SampleId.safeParse(input.sample_id).success) throw sampleNotFound();
      for (let attempt = 0; attempt < WRITE_TRIES; attempt++) {
        const { record, revision } = await store.read(input.job_id, input.sample_id, owner);
        const next = withLabels(record, input.labels, input.includes_read);
        if (await store.update(next, revision)) {
          await store.putCertificate(next);
          return next.sample;
        }
      }
      throw new ServiceError("conflict", "Other label batches for this sample kept landing first: send this batch again", { simple: true });
    }),

    handler(operations.getValidationSample, async (input, ctx) => {
      if (!SampleId.safeParse(input.sample_id).success) throw sampleNotFound();
      return (await store.read(input.job_id, input.sample_id, requestOwner(ctx.header))).record.sample;
    }),
  ];
}

/** The job's vote levels, papers per level, sorted (no result last). */
function levelsOf(scores: readonly (number | null)[]): VoteLevel[] {
  const counts = new Map<number | null, number>();
  for (const s of scores) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => (a[0] ?? Infinity) - (b[0] ?? Infinity)).map(([score, papers]) => ({ score, papers, labelled: 0, includes: 0 }));
}

/** The record with a batch of labels added and a new look taken. */
function withLabels(record: StoredValidationSample, batch: readonly { id: string | number; included: boolean }[], includesRead: number | undefined): StoredValidationSample {
  const sample = record.sample;
  const position = new Map(sample.paper_ids.map((id, i) => [String(id), i]));
  const labels = new Map(sample.labels.map((l) => [String(l.id), l.included]));
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  batch.forEach((label, index) => {
    const key = String(label.id);
    if (!position.has(key)) issues.push({ type: "unknown_id", loc: ["body", "labels", index, "id"], msg: `Not a paper of this sample: ${label.id}` });
    else if (seen.has(key)) issues.push({ type: "duplicate_id", loc: ["body", "labels", index, "id"], msg: `Labelled more than once: ${label.id}` });
    else if (labels.has(key) && labels.get(key) !== label.included) issues.push({ type: "relabelled", loc: ["body", "labels", index, "included"], msg: `Labelled differently in an earlier batch: ${label.id}` });
    seen.add(key);
  });
  if (issues.length > 0) throw new ServiceError("validation", "Request validation failed", { issues: issues.slice(0, 50) });
  for (const label of batch) labels.set(String(label.id), label.included);
  const read = includesRead ?? record.includes_read ?? undefined;

  // The labels counted by vote level, in the sample's order (so the stored list stays in that order).
  const levels: VoteLevel[] = record.levels.map((l) => ({ score: l.score, papers: l.papers, labelled: 0, includes: 0 }));
  const levelOf = new Map(levels.map((l) => [l.score, l]));
  const ordered: { id: string | number; included: boolean }[] = [];
  const sequence: { score: number | null; included: boolean }[] = [];
  let lastLabelled = -1;
  sample.paper_ids.forEach((id, i) => {
    const included = labels.get(String(id));
    if (included === undefined) return;
    ordered.push({ id, included });
    sequence.push({ score: record.scores[i] ?? null, included });
    lastLabelled = i;
    const level = levelOf.get(record.scores[i] ?? null)!;
    level.labelled++;
    if (included) level.includes++;
  });
  const options: CertificateOptions = {
    design: sample.design,
    targetRecall: sample.target_recall,
    confidence: sample.confidence,
    sides: sample.sides,
    repetitions: record.repetitions,
    planThreshold: sample.threshold ?? Math.max(1, Math.ceil(record.job_threshold)),
    plan: sample.plan,
    sampleSize: sample.paper_ids.length,
    sequence,
    sampled: levels.map((l) => sample.strata.find((h) => h.votes === l.score)?.sampled ?? l.labelled),
    ...(sample.look_every !== null ? { lookEvery: sample.look_every } : {}),
    ...(sample.threshold !== null ? { designThreshold: sample.threshold } : {}),
    ...(read !== undefined ? { includesRead: read } : {}),
  };
  const certificate = recallCertificate(levels, options);
  const warnings: string[] = [];
  const gaps = lastLabelled + 1 - ordered.length;
  if (gaps > 0) {
    warnings.push(
      `${gaps} paper(s) before the last labelled one are not labelled yet: the bound assumes the sample is labelled in its order (any prefix is a random sample), so label those next.`,
    );
  }
  return {
    ...record,
    includes_read: read ?? null,
    sample: {
      ...sample,
      labelled: ordered.length,
      labels: ordered,
      looks: [
        ...sample.looks,
        {
          at: new Date().toISOString(),
          labelled: ordered.length,
          labelled_included: certificate.labelled_included,
          recommended_votes: certificate.recommended?.votes ?? null,
          recall_lower: certificate.recommended?.recall_lower ?? certificate.thresholds[0]?.recall_lower ?? null,
        },
      ],
      labels_needed: certificate.labels_needed,
      feasible: certificate.feasible,
      certificate,
      agreement: agreementOf(record, labels, warnings),
      warnings,
    },
  };
}

/** Cohen's kappa between the job's decisions and the labels, and the papers where they differ. */
function agreementOf(record: StoredValidationSample, labels: ReadonlyMap<string, boolean>, warnings: string[]): ValidationSample["agreement"] {
  const cells = { both: 0, onlyJob: 0, onlyHumans: 0, neither: 0 };
  const discordant: NonNullable<ValidationSample["agreement"]>["discordant"] = [];
  record.sample.paper_ids.forEach((id, i) => {
    const label = labels.get(String(id));
    if (label === undefined) return;
    const job = record.decisions[i] ?? true;
    if (job && label) cells.both++;
    else if (job) cells.onlyJob++;
    else if (label) cells.onlyHumans++;
    else cells.neither++;
    if (job !== label) discordant.push({ id, votes: record.scores[i] ?? null, job_decision: job ? "include" : "exclude", label: label ? "include" : "exclude" });
  });
  const n = cells.both + cells.onlyJob + cells.onlyHumans + cells.neither;
  if (n === 0) return null;
  if (discordant.length > LISTED_DISCORDANT) warnings.push(`${discordant.length} papers are discordant; the first ${LISTED_DISCORDANT} are listed.`);
  return { kappa: cohenKappa(cells.both, cells.onlyJob, cells.onlyHumans, cells.neither).kappa, discordant: discordant.slice(0, LISTED_DISCORDANT) };
}
