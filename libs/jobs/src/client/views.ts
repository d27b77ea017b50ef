import {
  toIndexerJob,
  toIndexerJobListItem,
  toScreeningJob,
  toScreeningJobListItem,
  type JobService,
  type LiveJobState,
} from "@litrev/contracts";
import type { JsonRecord, StoredJob } from "../store/job-store";

/** A terminal job's results as the worker stored them: per-item results and the small extras. */
export interface JobResults {
  items: JsonRecord[];
  result: JsonRecord;
}

/**
 * A running indexer job's finished records, as its handler appends them (`ctx.partials`): the
 * output record and, when the record failed, its error.
 */
export type PartialRecord = JsonRecord & {
  record: JsonRecord;
  error?: string;
};

export type JobRecord = LiveJobState | StoredJob;

/** A record's small result extras (a stored row's; a live state has none). */
export const resultOf = (record: JobRecord): JsonRecord => ("fence" in record && record.result ? record.result : {});

export interface JobView {
  /** The poll body: terminal `results` when the job ended, `partial` items while it runs. */
  job(record: JobRecord, results: JobResults | null, partial: readonly JsonRecord[]): unknown;
  listItem(record: JobRecord): unknown;
}

/** The spec's response shapes of each job kind: the one place the kinds differ in what a read returns. */
export const JOB_VIEWS: Record<JobService, JobView> = {
  screening: {
    job: (record, results) =>
      toScreeningJob(record, results ? { results: results.items, clusters: (results.result.clusters as unknown[] | undefined) ?? [] } : null),
    listItem: (record) => toScreeningJobListItem(record),
  },
  indexer: {
    job: (record, results, partial) => {
      if (results) return toIndexerJob(record, { items: results.items, errors: (results.result.errors as string[] | undefined) ?? [] });
      const finished = partial as unknown as readonly PartialRecord[];
      return toIndexerJob(record, { items: finished.map((p) => p.record), errors: finished.flatMap((p) => (p.error ? [p.error] : [])) });
    },
    listItem: (record) => toIndexerJobListItem(record),
  },
};
