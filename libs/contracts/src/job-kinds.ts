import { toIndexerJob, toIndexerJobListItem, type IndexerJobRecord } from "./indexer";
import { operations, type Operation } from "./operations";
import { toScreeningJob, toScreeningJobListItem, type ScreeningJobRecord } from "./screening";
import type { JobService } from "./subjects";

/**
 * The read side of every job kind, one entry per kind: pure data and pure functions, from which
 * the gateway and libs/jobs loop (no list of kinds is written anywhere else). A service adds its
 * pipeline to its entry with `defineJobKind` (libs/jobs). Adding a kind: one entry here, plus the
 * service's `defineJobKind` (docs/jobs.md).
 */

type Json = Record<string, unknown>;

/** A job's record as the kinds' views read it (a live state or a stored row). */
export type JobKindRecord = ScreeningJobRecord & IndexerJobRecord;

/** A finished job's results: per-item results and the small extras stored beside them. */
export interface JobKindResults {
  items: Json[];
  result: Json;
}

/** A kind's CSV layout, fixed by one sample item (criteria and fields are the same for every item). */
export interface ExportTable {
  header: string[];
  row(item: Json): unknown[];
}

export interface JobKindTable {
  /** The kind's NATS operations (the owning service serves them). */
  operations: {
    create: Operation;
    get: Operation;
    list: Operation;
    active: Operation;
    estimate: Operation;
    artifact: Operation;
    cancel: Operation;
    delete: Operation;
  };
  /** The creation's item list (staged by the gateway when large). */
  list: "papers" | "records";
  /** One active job per (owner, project): a second creation is a 409 naming the first. */
  exclusiveProject: boolean;
  /** The poll response's field that holds the items. */
  itemsField: string;
  /** The keys of an input item's id (also the result item's), title and abstract. */
  inputKeys: { id: string; title: string; abstract: string };
  /** The spec's poll body: terminal `results` when the job ended, `partial` items while it runs. */
  view(record: JobKindRecord, results: JobKindResults | null, partial: readonly Json[]): unknown;
  listItem(record: JobKindRecord): unknown;
  export: {
    /** Whether the columns depend on an item at all (a job with no criteria or no fields needs none). */
    needsSample(record: JobKindRecord): boolean;
    /** Whether this item shows the job's criteria or fields (a lost paper may not). */
    isSample(item: Json): boolean;
    table(record: JobKindRecord, result: Json, sample: Json | undefined): ExportTable;
    /** The JSON Lines object of one item. */
    line(result: Json): (item: Json) => Json;
    /** What one item's RIS record carries of the job's outcome: keywords (`KW`) and notes (`N1`), one line each. */
    ris(record: JobKindRecord, result: Json): (item: Json) => { keywords: string[]; notes: string[] };
  };
  report: {
    task: string;
    limitations: string[];
    /** What one item is called (plural). */
    noun: string;
    /** The item field that names its outcome. */
    outcomeField: string;
    /** Whether an item counts as an error besides carrying one. */
    failedOutcome?: string;
    /** Whether the method repeats votes per item (its report names repetitions, threshold and rule). */
    votes: boolean;
    /** The criteria an excluded item fell on (its reasons in a PRISMA flow), or none. */
    exclusionReasons(item: Json): string[];
    /** The config field holding how many items the job was given. */
    countField: string;
  };
}

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asRecord = (value: unknown): Json => (value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {});

/** Cluster labels by id, from the job's stored extras (a few, at most SCREENING_MAX_CLUSTERS). */
const clusterLabels = (result: Json) => new Map(asArray(result.clusters).map((c) => [asRecord(c).cluster_id, String(asRecord(c).label ?? "")]));

/** An indexer record's own keys, not extracted fields. */
const RESERVED = new Set(["ID", "indexing_status"]);

/** A running indexer job's finished record as its handler appends it: the output record and, when it failed, its error. */
export type PartialRecord = Json & { record: Json; error?: string };

/** Criteria that argue for exclusion: an inclusion criterion not met, an exclusion criterion met. */
function screeningReasons(item: Json): string[] {
  if (item.decision !== "exclude") return [];
  return asArray(item.criteria_verdicts)
    .map(asRecord)
    .filter((c) => (c.type === "exclude" ? c.verdict === "met" : c.verdict === "not_met"))
    .map((c) => String(c.name || "unnamed criterion"));
}

const screening: JobKindTable = {
  operations: {
    create: operations.createScreeningJob,
    get: operations.getScreeningJob,
    list: operations.listScreeningJobs,
    active: operations.activeScreeningJob,
    estimate: operations.estimateScreening,
    artifact: operations.artifactScreeningJob,
    cancel: operations.cancelScreeningJob,
    delete: operations.deleteScreeningJob,
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
};

const indexer: JobKindTable = {
  operations: {
    create: operations.createIndexerJob,
    get: operations.getIndexerJob,
    list: operations.listIndexerJobs,
    active: operations.activeIndexerJob,
    estimate: operations.estimateIndexer,
    artifact: operations.artifactIndexerJob,
    cancel: operations.cancelIndexerJob,
    delete: operations.deleteIndexerJob,
  },
  list: "records",
  exclusiveProject: false,
  itemsField: "partial_results",
  inputKeys: { id: "ID", title: "Title", abstract: "Abstract" },
  view: (record, results, partial) => {
    if (results) return toIndexerJob(record, { items: results.items, errors: asArray(results.result.errors) as string[] });
    const finished = partial as readonly PartialRecord[];
    return toIndexerJob(record, { items: finished.map((p) => p.record), errors: finished.flatMap((p) => (p.error ? [p.error] : [])) });
  },
  listItem: (record) => toIndexerJobListItem(record),
  export: {
    needsSample: (record) => Number(record.config.fields_count ?? 1) > 0,
    isSample: (item) => Object.keys(item).some((key) => !RESERVED.has(key)),
    table(_record, _result, sample) {
      const fields = Object.keys(sample ?? {}).filter((key) => !RESERVED.has(key));
      return {
        header: ["ID", "indexing_status", ...fields.flatMap((f) => [f, `${f}_confidence`, `${f}_evidence`])],
        row(item) {
          return [
            item.ID,
            item.indexing_status,
            ...fields.flatMap((f) => {
              const value = asRecord(item[f]);
              return [value.value, value.confidence, asArray(value.evidence).map((e) => String(asRecord(e).quote ?? ""))];
            }),
          ];
        },
      };
    },
    line: () => (item) => item,
    ris: () => (item) => {
      const fields = Object.keys(item).filter((key) => !RESERVED.has(key));
      return {
        keywords: [`litrev: ${String(item.indexing_status)}`],
        notes: fields.map((f) => {
          const value = asRecord(item[f]);
          const shown = Array.isArray(value.value) ? value.value.join("; ") : String(value.value ?? "none");
          return `${f}: ${shown} (confidence ${String(value.confidence ?? "none")})`;
        }),
      };
    },
  },
  report: {
    task: "Extraction of typed fields from titles and abstracts, each value with a confidence and quotes the service verified against the record",
    limitations: [
      "Values rest on titles and abstracts only; the full texts were not read.",
      "Confidence is the model's own figure, lowered by the service when a quote could not be verified; it is not a calibrated probability.",
      "Quotes are checked against the record's text; the values drawn from them are not.",
    ],
    noun: "records",
    outcomeField: "indexing_status",
    failedOutcome: "error",
    votes: false,
    exclusionReasons: () => [],
    countField: "record_count",
  },
};

/** Every job kind's read side, by service. */
export const JOB_KINDS = { screening, indexer } as const satisfies Record<JobService, JobKindTable>;

/** The job kinds, in the table's order. */
export const JOB_SERVICES = Object.keys(JOB_KINDS) as JobService[];
