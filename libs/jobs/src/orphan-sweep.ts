import { setTimeout as sleep } from "node:timers/promises";
import pLimit from "p-limit";
import { jobKind, jobStateKeys } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import type { JobInfra } from "./infra";
import { readArtifactHead } from "./artifact";
import { reapIfOrphaned, type OrphanRule } from "./orphans";
import { isActive } from "./state";
import type { JobStore } from "./store/job-store";

export interface OrphanSweepOptions {
  /** `JOB_ORPHAN_LEASE_MS`: a job unseen this long whose command is not queued is an orphan. */
  leaseMs: number;
  /** `JOB_ORPHAN_SWEEP_MS`: the pause between two passes. */
  intervalMs: number;
  logger: Logger;
}

/** Live jobs one pass looks at, at most (the bucket's oldest writes first: a stuck job stops writing). */
const MAX_JOBS_PER_PASS = 100_000;
/** Jobs checked at once within a pass. */
const CHECKS_IN_FLIGHT = 8;

/**
 * Fails the orphans of one service's jobs, every job kind alike: each replica of a job-owning
 * service runs one, a pass every `intervalMs`, over the live states in the state bucket.
 *
 * Why a sweep: an admission writes the pending state (and then the row) before it queues the
 * command, so that a poll right after the 200 finds the job and the 409 rules hold; an admission
 * killed or cut off from NATS in between leaves a pending job that no worker will run and no client
 * polls (it was told 504). Queueing first would not remove the gap (a pending state without a
 * command would still be possible) and would let a worker start a job before its own admission
 * finished. Only exclusive kinds met an orphan again (at their project's next creation); the sweep
 * ends it for every kind, with the same rule (`reapIfOrphaned`: fresh reads, compare-and-set on
 * the live state), so any number of replicas may sweep at once and a job a worker took or ended
 * meanwhile is left alone. A live admission beats the pending state's heartbeat until its command
 * is queued, so it is never taken for an orphan.
 *
 * The same pass releases finished jobs' live entries: once a job's artifact is in place every read
 * of it is answered from there, so its live entry only costs memory in every mirror. It is removed
 * `leaseMs` after the job ended (watchers and pollers see the terminal state first), by
 * compare-and-set, so a state changed meanwhile stays.
 */
export class OrphanSweep {
  readonly #controller = new AbortController();
  #loop: Promise<void> | undefined;
  readonly #rule: OrphanRule;
  readonly #exclusive: boolean;

  constructor(
    private readonly infra: JobInfra,
    private readonly store: JobStore,
    private readonly options: OrphanSweepOptions,
  ) {
    this.#exclusive = jobKind(infra.service).exclusiveProject;
    this.#rule = {
      leaseMs: options.leaseMs,
      explain: ({ job_id, status, started_at }) =>
        status === "pending" && !started_at
          ? `Job ${job_id} was never queued: its admission was interrupted (the service was stopped or cut off from NATS before queueing it), so it never ran and was marked failed; create it again`
          : `Job ${job_id} was orphaned: its worker is gone and its command is no longer queued, so it was marked failed`,
    };
  }

  /** Starts the passes (the first after one interval); `stop()` ends them. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Ends the passes; a pass under way stops before its next job. */
  async stop(): Promise<void> {
    this.#controller.abort();
    await this.#loop;
  }

  /** One pass: the ids of the jobs it failed. */
  async sweep(): Promise<string[]> {
    const { infra, store, options } = this;
    const signal = this.#controller.signal;
    const ids = await this.#liveJobIds();
    const limit = pLimit(CHECKS_IN_FLIGHT);
    const reaped: string[] = [];
    let failures = 0;
    let firstError: unknown;
    await Promise.all(
      ids.map((id) =>
        limit(async () => {
          if (signal.aborted) return;
          try {
            const job = await reapIfOrphaned(infra, store, id, this.#rule, options.logger);
            if (!job) return void (await releaseIfRead(infra, id, options.leaseMs));
            if (this.#exclusive && job.project_id) await infra.registry.releaseLock(job.project_id, id, job.owner).catch(() => undefined);
            reaped.push(id);
          } catch (error) {
            failures++;
            firstError ??= error;
          }
        }),
      ),
    );
    // One line per pass, not per job: during a NATS outage every check fails alike.
    if (failures) options.logger.warn({ err: firstError, failures }, "orphan sweep: some jobs could not be checked; the next pass tries again");
    return reaped;
  }

  async #run(): Promise<void> {
    const signal = this.#controller.signal;
    while (!signal.aborted) {
      try {
        await sleep(this.options.intervalMs, undefined, { signal });
        await this.sweep();
      } catch (error) {
        if (!signal.aborted) this.options.logger.warn({ err: error }, "orphan sweep pass failed; the next pass tries again");
      }
    }
  }

  async #liveJobIds(): Promise<string[]> {
    const prefix = jobStateKeys.job("");
    const ids: string[] = [];
    const keys = await this.infra.registry.kv.keys(jobStateKeys.allJobs());
    // A listing can wait up to the consumer's idle heartbeat (5 s) for its end when keys change under
    // it; `stop()` must not wait that long (a service shutting down, or a test's clean-up).
    const signal = this.#controller.signal;
    const end = () => keys.stop();
    signal.addEventListener("abort", end, { once: true });
    try {
      for await (const key of keys) {
        if (signal.aborted) break;
        ids.push(key.slice(prefix.length));
        if (ids.length >= MAX_JOBS_PER_PASS) break;
      }
    } finally {
      signal.removeEventListener("abort", end);
    }
    return ids;
  }
}

/** Removes a finished job's live entry once its artifact is in place and it ended more than `lingerMs` ago. */
async function releaseIfRead(infra: JobInfra, id: string, lingerMs: number): Promise<void> {
  const entry = await infra.registry.get(id);
  if (!entry || isActive(entry.state) || !entry.state.releasable) return;
  const ended = Date.parse(entry.state.completed_at ?? "");
  if (!Number.isFinite(ended) || Date.now() - ended < lingerMs) return;
  if (!(await readArtifactHead(infra.data, id))) return;
  await infra.registry.removeIfUnchanged(id, entry.revision);
}
