import type { LiveJobState } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import type { ProgressReport } from "../state";
import type { JobStore, JsonRecord } from "../store/job-store";
import type { JobInfra } from "../infra";
import type { KeySealer } from "../key-sealer";
import type { PromptInstructions } from "../finished/report";

/**
 * Per-item results built chunk by chunk: `chunk(n)` builds chunk n (0 … count-1) when the worker
 * stores it, so a large job's results are never all held as objects, nor serialised, at once.
 */
export interface ItemChunks {
  readonly count: number;
  chunk(index: number): JsonRecord[] | Promise<JsonRecord[]>;
}

/** Items per stored chunk when a handler returns a plain array. */
export const ITEM_CHUNK = 500;

/** An array's items as chunks of ITEM_CHUNK. */
export function arrayChunks(items: readonly JsonRecord[]): ItemChunks {
  return { count: Math.ceil(items.length / ITEM_CHUNK), chunk: (n) => items.slice(n * ITEM_CHUNK, (n + 1) * ITEM_CHUNK) };
}

/** What a handler returns: per-item results (stored apart), small result extras, and live extras. */
export interface JobOutcome {
  items?: JsonRecord[] | ItemChunks;
  result?: JsonRecord;
  extra?: JsonRecord;
}

/** Everything a handler gets for one run of one job. */
export interface JobContext {
  readonly jobId: string;
  /** The live state when this run took the job. */
  readonly state: LiveJobState;
  readonly params: JsonRecord;
  /** Deliveries that ended in a crash so far, plus this one (1 on a first run). */
  readonly attempt: number;
  /** Aborted on graceful shutdown (the job is handed to another replica) or when the lease is lost. */
  readonly signal: AbortSignal;
  /** The client's provider key, unsealed; undefined means "use the server's key". */
  readonly providerKey: string | undefined;
  readonly logger: Logger;
  /** The whole input as one value (small inputs; a large list is better read with `inputItems`). */
  input<T = unknown>(): Promise<T>;
  /** The input's fields other than its list `list` (e.g. screening's criteria), and the list's length. */
  inputHead<T = Record<string, unknown>>(list: string): Promise<{ head: T; count: number }>;
  /** The input's list `list` in order, one stored chunk (about 1 MB) at a time, read as it is consumed. */
  inputItems<T = unknown>(list: string): AsyncIterable<T[]>;
  /** Progress (never backwards), stage changes (timed), live extras. Throttled; a stage change is written at once. */
  report(report: ProgressReport): Promise<void>;
  /**
   * Resolves while this run holds the job's lease as of the last half ack wait, else once a read of
   * the live state shows it still does (waiting out a NATS outage); throws LeaseLostError once
   * another run holds the job. Awaited before every provider call, so that a run cut off from NATS
   * sends none after its job may have passed to another run.
   */
  leaseHeld(): Promise<void>;
  readonly checkpoints: {
    load<T = unknown>(stage: string): Promise<Map<string, T>>;
    /** Saved only while this run holds the job's lease. */
    save(stage: string, unit: string, data: unknown): Promise<void>;
  };
  /**
   * Items finished so far, for polls of the running job (the indexer's `partial_results`): kept in
   * immutable chunks that readers cache, so a poll never re-reads the job's checkpoints.
   */
  readonly partials: {
    append(items: readonly JsonRecord[]): Promise<void>;
  };
}

export type JobHandler = (ctx: JobContext) => Promise<JobOutcome>;

/** The run no longer owns the job: another replica took it over after this one stalled. */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(jobId: string) {
    super(`job ${jobId} was taken over by another worker`);
  }
}

/** The run was handed back on graceful shutdown: nothing more may be written or acked. */
export class HandedBackError extends Error {
  override readonly name = "HandedBackError";
}

/** What a JobWorker runs with (here beside the handler type: a run and its worker both use it). */
export interface JobWorkerOptions {
  infra: JobInfra;
  store: JobStore;
  sealer: KeySealer;
  logger: Logger;
  /** This process's instance id (recorded as the job's worker). */
  instance: string;
  handler: JobHandler;
  /** Jobs run at once by this process (default 2). */
  concurrency?: number;
  /** Minimum interval between progress writes (default 250 ms). */
  reportIntervalMs?: number;
  /** The built-in instructions of the kind's prompts, for the methods report in each finished job's artifact. */
  prompts?: PromptInstructions;
  /** How long a finishing run retries its writes to the store of record before leaving them kept (default 30 s). */
  storeWaitMs?: number;
}
