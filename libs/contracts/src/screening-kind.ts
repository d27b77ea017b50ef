import { ScreeningExportQuery, type JobReport } from "./job-exports";
import { defineJobContract, jsonArray as asArray, jsonRecord as asRecord, type MethodsWords } from "./job-contract";
import { PAPER_JSON_BYTES, screeningEstimateLimits, screeningJobLimits } from "./limits";
import {
  CreateScreeningJobRequest,
  CreateScreeningJobResponse,
  ScreeningEstimateRequest,
  ScreeningEstimateResponse,
  ScreeningJob,
  ScreeningJobListItem,
  toScreeningJob,
  toScreeningJobListItem,
} from "./screening";

/** The screening kind, declared once (docs/jobs.md); its pipeline is services/screening's `screeningJobKind`. */

type Json = Record<string, unknown>;

/** Cluster labels by id, from the job's stored extras (a few, at most SCREENING_MAX_CLUSTERS). */
const clusterLabels = (result: Json) => new Map(asArray(result.clusters).map((c) => [asRecord(c).cluster_id, String(asRecord(c).label ?? "")]));

/** Criteria that argue for exclusion: an inclusion criterion not met, an exclusion criterion met. */
function screeningReasons(item: Json): string[] {
  if (item.decision !== "exclude") return [];
  return asArray(item.criteria_verdicts)
    .map(asRecord)
    .filter((c) => (c.type === "exclude" ? c.verdict === "met" : c.verdict === "not_met"))
    .map((c) => String(c.name || "unnamed criterion"));
}

/** The methods paragraph's sentences on a screening: what was screened, how, and what came of it. */
function screeningMethods(report: JobReport, { when, tool, settings, plural, sentence }: MethodsWords): string[] {
  const p = report.prisma;
  const asked = report.asked;
  const criteria = asked?.criteria ?? null;
  const inclusion = criteria?.filter((c) => c.type === "include").length ?? 0;
  const exclusion = criteria ? criteria.length - inclusion : 0;
  const screened = p?.records_in ?? report.outcomes.items;
  const sentences: string[] = [];
  // PRISMA's identification box, when the job came from an import that counted it.
  if (p?.records_identified !== undefined) {
    const removed = p.duplicates_removed ?? 0;
    sentences.push(
      `${plural(p.records_identified, "record was", "records were")} identified in the imported database exports; ${removed === 0 ? "no duplicates were removed" : `${plural(removed, "duplicate was", "duplicates were")} removed`} before screening.`,
    );
  }
  sentences.push(`Titles and abstracts of ${p?.records_identified !== undefined ? "the remaining " : ""}${plural(screened, "record", "records")} were screened on ${when} with ${tool}.`);
  sentences.push(
    `Each paper was judged ${plural(report.repetitions ?? 1, "time", "times")} independently against ${criteria ? `${plural(criteria.length, "eligibility criterion", "eligibility criteria")} (${inclusion} for inclusion, ${exclusion} for exclusion)` : "eligibility criteria not recorded by the job"}${asked?.questions?.length ? ` and ${plural(asked.questions.length, "research question", "research questions")}` : ""}; the decision rule was: ${sentence(report.decision_rule ?? "not recorded")}`,
  );
  if (settings) sentences.push(`Sampling settings per stage: ${settings}.`);
  if (p && p.included !== null && p.excluded !== null) {
    sentences.push(
      `Of ${plural(p.results, "screened record", "screened records")}, ${p.included} ${p.included === 1 ? "was" : "were"} included and ${p.excluded} excluded; ${p.errored} received no usable decision from the model and ${p.errored === 1 ? "was" : "were"} passed to a reviewer` +
        (p.without_abstract !== null ? `; ${p.without_abstract} had no abstract and ${p.without_abstract === 1 ? "was" : "were"} screened on the title alone.` : "."),
    );
  }
  return sentences;
}

export const screeningKind = defineJobContract({
  name: "screening",
  title: "Screening",
  jobNoun: "screening job",
  description: "AI Screening: asynchronous jobs that score papers against eligibility criteria, explain and cluster the reasons.",
  schemas: {
    create: CreateScreeningJobRequest,
    created: CreateScreeningJobResponse,
    job: ScreeningJob,
    listItem: ScreeningJobListItem,
    estimate: ScreeningEstimateRequest,
    estimated: ScreeningEstimateResponse,
    // Only screening jobs have validation samples to mark.
    exportQuery: ScreeningExportQuery,
  },
  limits: {
    create: screeningJobLimits,
    estimate: screeningEstimateLimits,
    largestCreation: (l) => l.MAX_SCREENING_PAPERS * PAPER_JSON_BYTES + l.MAX_SCREENING_CRITERIA * (l.MAX_CRITERION_CHARS + 200),
  },
  list: "papers",
  exclusiveProject: true,
  itemsField: "results",
  inputKeys: { id: "id", title: "title", abstract: "abstract" },
  view: (record, results) => toScreeningJob(record, results ? { results: results.items, clusters: asArray(results.result.clusters) } : null),
  listItem: (record) => toScreeningJobListItem(record),
  export: {
    needsSample: (record) => Number(record.config.criteria_count ?? 1) > 0,
    isSample: (item) => asArray(item.criteria_verdicts).length > 0,
    table(record, result, sample) {
      const labels = clusterLabels(result);
      const repetitions = record.config.repetitions;
      const criteria = asArray(sample?.criteria_verdicts).map((c) => String(asRecord(c).name ?? ""));
      return {
        header: [
          "id",
          "decision",
          "final_score",
          "include_votes",
          "repetitions",
          "cluster_id",
          "cluster_label",
          ...criteria.map((name, i) => `criterion_${i + 1}${name ? `: ${name}` : ""}`),
          "reasoning",
          "error",
        ],
        row(item) {
          const votes = asArray(item.votes);
          const verdicts = asArray(item.criteria_verdicts);
          return [
            item.id,
            item.decision,
            item.final_score,
            votes.length > 0 ? votes.filter((v) => v === "include").length : item.final_score,
            votes.length > 0 ? votes.length : repetitions,
            item.cluster_id,
            labels.get(item.cluster_id) ?? "",
            ...criteria.map((_, i) => asRecord(verdicts[i]).verdict),
            item.reasoning,
            item.error,
          ];
        },
      };
    },
    line(result) {
      const labels = clusterLabels(result);
      return (item) => ({ ...item, cluster_label: labels.get(item.cluster_id) ?? null });
    },
    ris(record, result) {
      const labels = clusterLabels(result);
      return (item) => {
        const votes = asArray(item.votes);
        const score = votes.length > 0 ? `${votes.filter((v) => v === "include").length} of ${votes.length} votes for include` : `score ${String(item.final_score ?? "none")}`;
        const verdicts = asArray(item.criteria_verdicts).map(asRecord);
        const label = labels.get(item.cluster_id);
        return {
          keywords: [`litrev: ${String(item.decision)}`, ...screeningReasons(item).map((name) => `litrev reason: ${name}`), ...(label ? [`litrev theme: ${label}`] : [])],
          notes: [
            `litrev screening decision: ${String(item.decision)} (${score}; threshold ${String(record.config.threshold ?? "not recorded")}).`,
            ...(item.reasoning ? [`Reasoning: ${String(item.reasoning)}`] : []),
            ...(verdicts.length > 0 ? [`Criteria: ${verdicts.map((c) => `${String(c.name || "unnamed")} (${String(c.type)}): ${String(c.verdict).replace("_", " ")}`).join("; ")}.`] : []),
            ...(item.error ? [`Error: ${String(item.error)}`] : []),
          ],
        };
      };
    },
  },
  report: {
    title(n, config, provenance) {
      const criteria = provenance?.criteria?.length ?? Number(config.criteria_count ?? 0);
      return `Title and abstract screening of ${n} ${n === 1 ? "paper" : "papers"} against ${criteria} ${criteria === 1 ? "criterion" : "criteria"}`;
    },
    methods: screeningMethods,
    unvalidated: "{For you to fill in: how the model's decisions were validated, e.g. a recall certificate on a validation sample.}",
    task: "Title and abstract screening against eligibility criteria: repeated include/exclude votes per paper, a short reason per paper, and themes of the reasons",
    limitations: [
      "Decisions rest on titles and abstracts only; the full texts were not read.",
      "The votes are repeated samples of one model, not independent reviewers: their agreement measures the model's consistency, not correctness.",
      "The threshold is a number of include votes: a paper is included when at least that many of its votes say include. A low threshold favours recall over precision.",
      "Papers carrying an error got no model decision and are sent to a human.",
    ],
    noun: "papers",
    outcomeField: "decision",
    votes: true,
    exclusionReasons: screeningReasons,
    countField: "papers_count",
  },
});
