import type { ExportFormat, JobService } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import { csvRow } from "./csv";
import type { JobRecord } from "./views";

/** A finished job as exports read it: its record, its small extras, and its items chunk by chunk (each call reads them again). */
export interface FinishedJob {
  record: JobRecord;
  result: JsonRecord;
  chunks: () => AsyncIterable<JsonRecord[]>;
}

/** A kind's CSV layout, fixed by one sample item (criteria and fields are the same for every item). */
interface Table {
  header: string[];
  row(item: JsonRecord): unknown[];
}

interface KindExport {
  /** Whether the columns depend on an item at all (a job with no criteria or no fields needs none). */
  needsSample(job: FinishedJob): boolean;
  /** Whether this item shows the job's criteria or fields (a lost paper may not). */
  isSample(item: JsonRecord): boolean;
  table(job: FinishedJob, sample: JsonRecord | undefined): Table;
  /** The JSON Lines object of one item. */
  line(job: FinishedJob): (item: JsonRecord) => JsonRecord;
}

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asRecord = (value: unknown): JsonRecord => (value && typeof value === "object" && !Array.isArray(value) ? (value as JsonRecord) : {});

/** Cluster labels by id, from the job's stored extras (a few, at most SCREENING_MAX_CLUSTERS). */
function clusterLabels(job: FinishedJob): Map<unknown, string> {
  return new Map(asArray(job.result.clusters).map((c) => [asRecord(c).cluster_id, String(asRecord(c).label ?? "")]));
}

const screening: KindExport = {
  needsSample: (job) => Number(job.record.config.criteria_count ?? 1) > 0,
  isSample: (item) => asArray(item.criteria_verdicts).length > 0,
  table(job, sample) {
    const labels = clusterLabels(job);
    const repetitions = job.record.config.repetitions;
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
  line(job) {
    const labels = clusterLabels(job);
    return (item) => ({ ...item, cluster_label: labels.get(item.cluster_id) ?? null });
  },
};

const RESERVED = new Set(["ID", "indexing_status"]);

const indexer: KindExport = {
  needsSample: (job) => Number(job.record.config.fields_count ?? 1) > 0,
  isSample: (item) => Object.keys(item).some((key) => !RESERVED.has(key)),
  table(_job, sample) {
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
};

/** How each job kind's results become rows: the one place the kinds differ in an export. */
export const JOB_EXPORTS: Record<JobService, KindExport> = { screening, indexer };

/**
 * A finished job's export as text pieces, produced chunk by chunk as the items are read (one chunk
 * in memory at a time), so a 50,000-paper export never exists whole in any process and its first
 * piece leaves before its last chunk is read. CSV reads ahead only as far as the first item that
 * shows the columns.
 */
export async function* exportBody(service: JobService, job: FinishedJob, format: ExportFormat): AsyncGenerator<string> {
  const kind = JOB_EXPORTS[service];
  if (format === "jsonl") {
    const line = kind.line(job);
    for await (const chunk of job.chunks()) if (chunk.length > 0) yield chunk.map((item) => `${JSON.stringify(line(item))}\n`).join("");
    return;
  }
  let sample: JsonRecord | undefined;
  if (kind.needsSample(job)) {
    search: for await (const chunk of job.chunks()) {
      for (const item of chunk) {
        if (kind.isSample(item)) {
          sample = item;
          break search;
        }
      }
    }
  }
  const table = kind.table(job, sample);
  yield csvRow(table.header);
  for await (const chunk of job.chunks()) if (chunk.length > 0) yield chunk.map((item) => csvRow(table.row(item))).join("");
}
