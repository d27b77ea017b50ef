import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { jobNames, jobStateKeys, ProjectLock, type JobService, type LiveJobState } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import { isWrongRevision, unavailable } from "./nats-errors";
import { parseState } from "./registry";
import { isActive } from "./state";

export interface MirrorEntry {
  state: LiveJobState;
  revision: number;
  /** When this copy was last confirmed (watch delivery or direct read), ms since epoch. */
  seenAt: number;
}

interface LockCopy {
  jobId: string;
  revision: number;
}

/** An active job whose copy was not refreshed for this long is read again directly (a stalled watch heals itself). */
const STALE_ACTIVE_MS = 15_000;

/**
 * An in-process copy of one service's job-state bucket, kept current by a KV watch, so a poll is
 * answered from memory instead of a NATS round trip (the gateway's hot path). A miss falls back
 * to a direct read, so a job created a moment ago through another gateway is still found.
 */
export class JobMirror {
  readonly #jobs = new Map<string, MirrorEntry>();
  readonly #locks = new Map<number, LockCopy>();
  #stopped = false;
  #stopWatch: (() => void) | undefined;

  private constructor(
    readonly kv: KV,
    private readonly logger: Logger,
  ) {}

  static async open(nc: NatsConnection, service: JobService, logger: Logger): Promise<JobMirror> {
    // Bind with the same settings the services use, so whoever comes first creates it identically.
    const kv = await new Kvm(nc).open(jobNames(service).stateBucket);
    const mirror = new JobMirror(kv, logger);
    void mirror.#watchForever();
    return mirror;
  }

  get size(): number {
    return this.#jobs.size;
  }

  /** The in-memory copy only (no I/O). */
  get(jobId: string): MirrorEntry | undefined {
    const entry = this.#jobs.get(jobId);
    if (entry && isActive(entry.state) && Date.now() - entry.seenAt > STALE_ACTIVE_MS) return undefined;
    return entry;
  }

  /** The copy, or a direct read when it is missing or stale. */
  async fetch(jobId: string): Promise<MirrorEntry | null> {
    const cached = this.get(jobId);
    if (cached) return cached;
    const live = parseState(await this.#get(jobStateKeys.job(jobId)));
    if (!live) {
      this.#jobs.delete(jobId);
      return null;
    }
    return this.#apply(jobId, live.state, live.revision);
  }

  /** The project's pending or running job, or null. */
  async activeForProject(projectId: number): Promise<MirrorEntry | null> {
    let lock = this.#locks.get(projectId);
    if (!lock) {
      const entry = await this.#get(jobStateKeys.lock(projectId));
      const parsed = entry?.operation === "PUT" ? ProjectLock.safeParse(safeJson(entry)) : undefined;
      if (!parsed?.success) return null;
      lock = { jobId: parsed.data.job_id, revision: entry!.revision };
    }
    const job = await this.fetch(lock.jobId);
    return job && isActive(job.state) ? job : null;
  }

  /**
   * Removes a job from the live registry if nobody changed or removed it since `entry` was read
   * (spec: a terminal job leaves the registry on its first poll). True for exactly one caller.
   */
  async removeIfUnchanged(jobId: string, entry: MirrorEntry): Promise<boolean> {
    try {
      await this.kv.delete(jobStateKeys.job(jobId), { previousSeq: entry.revision });
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw unavailable(error, "The job-state store");
    }
    if (this.#jobs.get(jobId)?.revision === entry.revision) this.#jobs.delete(jobId);
    return true;
  }

  stop(): void {
    this.#stopped = true;
    this.#stopWatch?.();
  }

  async #get(key: string): Promise<KvEntry | null> {
    try {
      return await this.kv.get(key);
    } catch (error) {
      throw unavailable(error, "The job-state store");
    }
  }

  #apply(jobId: string, state: LiveJobState, revision: number): MirrorEntry {
    const current = this.#jobs.get(jobId);
    if (current && current.revision > revision) return current;
    const entry: MirrorEntry = { state, revision, seenAt: Date.now() };
    this.#jobs.set(jobId, entry);
    return entry;
  }

  #onEntry(entry: KvEntry): void {
    if (entry.key.startsWith(jobStateKeys.prefixJob)) {
      const jobId = entry.key.slice(jobStateKeys.prefixJob.length);
      const live = parseState(entry);
      if (live) this.#apply(jobId, live.state, live.revision);
      else if ((this.#jobs.get(jobId)?.revision ?? 0) <= entry.revision) this.#jobs.delete(jobId);
    } else if (entry.key.startsWith(jobStateKeys.prefixLock)) {
      const projectId = Number(entry.key.slice(jobStateKeys.prefixLock.length));
      const parsed = entry.operation === "PUT" ? ProjectLock.safeParse(safeJson(entry)) : undefined;
      if (parsed?.success) this.#locks.set(projectId, { jobId: parsed.data.job_id, revision: entry.revision });
      else this.#locks.delete(projectId);
    }
  }

  /** Watches until stopped; a watch that ends (server restart, lost consumer) is started again. */
  async #watchForever(): Promise<void> {
    while (!this.#stopped) {
      try {
        const watcher = await this.kv.watch({ key: ">" });
        this.#stopWatch = () => watcher.stop();
        if (this.#stopped) watcher.stop();
        for await (const entry of watcher) this.#onEntry(entry);
      } catch (error) {
        if (!this.#stopped) this.logger.warn({ err: error }, "job-state watch failed; restarting");
      }
      if (!this.#stopped) await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

function safeJson(entry: KvEntry): unknown {
  try {
    return entry.json();
  } catch {
    return undefined;
  }
}
