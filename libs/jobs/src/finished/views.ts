import type { JobKindResults, LiveJobState } from "@litrev/contracts";
import type { JsonRecord, StoredJob } from "../store/job-store";

/** A terminal job's results as the worker stored them: per-item results and the small extras. */
export type JobResults = JobKindResults;

export type JobRecord = LiveJobState | StoredJob;

/** A record's small result extras (a stored row's; a live state has none). */
export const resultOf = (record: JobRecord): JsonRecord => ("fence" in record && record.result ? record.result : {});
