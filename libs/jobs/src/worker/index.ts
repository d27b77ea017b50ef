/** The worker side of the job machinery: the pull loop, leases, progress, checkpoints. */
export { cancellationOf, cancelledFailure, JobCancelled, PartialFailure } from "./errors";
export { JobWorker } from "./job-worker";
export type { JobWorkerOptions } from "./types";
export { arrayChunks, HandedBackError, ITEM_CHUNK, LeaseLostError } from "./types";
export type { ItemChunks, JobContext, JobHandler, JobOutcome } from "./types";
export { forEachLimited } from "./for-each-limited";
export { CheckpointedStage } from "./unit-loop";
export type { UnitLoop, UnitLoopJob } from "./unit-loop";
