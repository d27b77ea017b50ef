import { setTimeout as sleep } from "node:timers/promises";
import { Kvm, type KV, type KvEntry, type KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { jobNames, jobStateKeys, ProjectLock, type JobService, type LiveJobState } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import { isWrongRevision, unavailable } from "../nats-errors";
import { parseState } from "../registry";
import { isActive, ownedBy } from "../state";
import { safeJson } from "../safe-json";

export interface MirrorEntry {
  state: LiveJobState;
  revision: number;
  /** When this copy was last confirmed (watch delivery or direct read), ms since epoch. */
  seenAt: number;
}

/** Told of every newer copy of one job, and of its removal (null). */
export type MirrorListener = (entry: MirrorEntry | null) => void;

/** An active job whose copy was not refreshed for this long is read again directly (a stalled watch heals itself). */
const STALE_ACTIVE_MS = 15_000;
/** How long a project question waits for the first full copy of the bucket before reading directly. */
const SYNC_WAIT_MS = 5_000;
/** The event loop's heartbeat; a gap longer than STALL_MS means the process was stopped or starved. */
const TICK_MS = 250;
const STALL_MS = 1_000;
/**
 * The copy is proven current this often: the stream leader is asked for the bucket's last sequence,
 * and once the watch has delivered that sequence, every write made before the question is in the
 * copy. Copies of active jobs are trusted only while the last proof is younger than PATH_TRUST_MS.
 * A path that stalls without disconnecting (a silent partition), a leader that is gone or paused,
 * and a watch whose consumer lags or died with its server (on a cluster the watch may be served by a
 * replica behind the leader) all leave the proof to age, and polls then read the leader directly
 * (failing retryably while there is none) instead of serving copies other replicas have passed.
 */
const PATH_PROBE_MS = 100;
/** The most a copy served to a poll may lag behind the leader (docs/jobs.md: polls across gateways). */
export const MIRROR_STALENESS_MS = 300;
const PATH_TRUST_MS = MIRROR_STALENESS_MS;
/** How long a read waits for its copy to be proven current before it reads the leader directly. */
const BARRIER_MS = 1_000;

/**
 * An in-process copy of one service's job-state bucket, kept current by a KV watch, so a poll or
 * an active-job question is answered from memory instead of a NATS round trip (the gateway's hot
 * path; the services use the same copy when they answer themselves). A miss falls back to a direct
 * read, so a job created a moment ago through another gateway is still found.
 *
 * "The active job of a project" is defined here, once for every job kind: the newest pending or
 * running job whose state names the project.
 */
export class JobMirror {
  readonly #jobs = new Map<string, MirrorEntry>();
  /** Active jobs by project, from the states themselves. */
  readonly #byProject = new Map<number, Set<string>>();
  readonly #synced: Promise<void>;
  #markSynced!: () => void;
  #isSynced = false;
  /**
   * Copies confirmed before this moment are not trusted for active jobs: the connection dropped or
   * the watch restarted since, so updates may have been missed meanwhile (a poll on this replica
   * must not show an older state than one another replica has already shown).
   */
  #staleBefore = 0;
  #lastTick = Date.now();
  /** When the last barrier question was asked whose answer the watch reached in time (see PATH_TRUST_MS). */
  #pathConfirmedAt = 0;
  /** The highest stream sequence the watch delivered. */
  #watchedSeq = 0;
  readonly #ticker: NodeJS.Timeout;
  #stopped = false;
  #stopWatch: (() => void) | undefined;
  /** Readers waiting for the watch to deliver a sequence (at most the two barrier questions' worth). */
  readonly #seqWaiters = new Set<{ seq: number; reached: () => void }>();
  /** The barrier question under way, and the next one, shared by every reader who came after it was sent. */
  #barrierInFlight: Promise<boolean> | undefined;
  #barrierQueued: Promise<boolean> | undefined;
  /** Listeners by job: the one watch fans out in process (no NATS traffic per listener). */
  readonly #listeners = new Map<string, Set<MirrorListener>>();
  /** Told of each job this copy held as pending or running once it is seen ended or removed (its state then). */
  onEnded: ((state: LiveJobState) => void) | undefined;

  private constructor(
    readonly kv: KV,
    private readonly logger: Logger,
  ) {
    this.#synced = new Promise((resolve) => (this.#markSynced = resolve));
    this.#ticker = setInterval(() => (this.#lastTick = Date.now()), TICK_MS);
    this.#ticker.unref();
  }

  static async open(nc: NatsConnection, service: JobService, logger: Logger): Promise<JobMirror> {
    const kv = await new Kvm(nc).open(jobNames(service).stateBucket);
    const mirror = new JobMirror(kv, logger);
    void mirror.#watchForever();
    void mirror.#distrustAcrossReconnects(nc);
    void mirror.#proveCurrent(nc);
    return mirror;
  }

  /**
   * The in-memory copy only (no I/O). After the process was stopped or starved (a gap in the event
   * loop's heartbeat: SIGSTOP, a long GC pause), copies of active jobs are not trusted until read
   * again: the watch may not have delivered what changed meanwhile.
   */
  get(jobId: string): MirrorEntry | undefined {
    const now = Date.now();
    if (now - this.#lastTick > STALL_MS) {
      this.#staleBefore = now;
      this.#lastTick = now;
    }
    const entry = this.#jobs.get(jobId);
    if (entry && isActive(entry.state) && (now - entry.seenAt > STALE_ACTIVE_MS || entry.seenAt < this.#staleBefore || now - this.#pathConfirmedAt > PATH_TRUST_MS)) return undefined;
    return entry;
  }

  /** The copy, or a direct read when it is missing or stale. */
  async fetch(jobId: string): Promise<MirrorEntry | null> {
    return this.get(jobId) ?? this.read(jobId);
  }

  /** A direct read of the bucket (the copy is updated with it). */
  async read(jobId: string): Promise<MirrorEntry | null> {
    const live = parseState(await this.#read(jobStateKeys.job(jobId)));
    if (!live) {
      this.#drop(jobId);
      return null;
    }
    return this.#apply(jobId, live.state, live.revision);
  }

  /**
   * The project's active job — the newest pending or running one (of `owner`, when given) — or null. Answered from memory
   * once the mirror holds the whole bucket; before that (a process that just started) it waits a
   * moment for the first full copy, and reads the bucket directly if that takes too long.
   */
  async activeForProject(projectId: number, owner?: string): Promise<MirrorEntry | null> {
    if (!this.#isSynced) {
      const synced = await Promise.race([this.#synced.then(() => true), sleep(SYNC_WAIT_MS, false)]);
      if (!synced) return this.#scanForProject(projectId, owner);
    }
    // Every admission and every end before this question is in the copy, or the bucket is read directly.
    if (!(await this.#barrier())) return this.#scanForProject(projectId, owner);
    let newest: MirrorEntry | null = null;
    for (const jobId of [...(this.#byProject.get(projectId) ?? [])]) {
      const entry = await this.fetch(jobId);
      if (entry && isActive(entry.state) && ownedBy(entry.state, owner) && (!newest || entry.state.created_at > newest.state.created_at)) newest = entry;
    }
    return newest;
  }

  /**
   * The job holding the owner's admission lock of the project (job kinds with one active job per
   * project), read directly: it names a job the moment its admission took the project, before any
   * watch delivers the job's state to this process.
   */
  async lockedJob(projectId: number, owner: string | undefined): Promise<MirrorEntry | null> {
    const entry = await this.#read(jobStateKeys.lock(projectId, owner));
    if (!entry || entry.operation !== "PUT") return null;
    const lock = ProjectLock.safeParse(safeJson(entry));
    if (!lock.success) return null;
    const job = await this.read(lock.data.job_id);
    return job && isActive(job.state) ? job : null;
  }

  /**
   * Removes a terminal job from the live registry if nobody changed or removed it since `entry` was
   * read (the spec's "a terminal job leaves the registry on its first poll"). True for exactly one caller.
   */
  async removeIfUnchanged(jobId: string, entry: MirrorEntry): Promise<boolean> {
    try {
      await this.kv.delete(jobStateKeys.job(jobId), { previousSeq: entry.revision });
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw unavailable(error, "The job-state store");
    }
    if (this.#jobs.get(jobId)?.revision === entry.revision) this.#drop(jobId);
    return true;
  }

  /**
   * Calls `listener` with each newer copy of the job as the watch (or a direct read) brings it, and
   * with null when its state is removed; returns the function that stops listening.
   */
  listen(jobId: string, listener: MirrorListener): () => void {
    let set = this.#listeners.get(jobId);
    if (!set) this.#listeners.set(jobId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#listeners.get(jobId) === set) this.#listeners.delete(jobId);
    };
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#ticker);
    this.#stopWatch?.();
  }

  async #read(key: string): Promise<KvEntry | null> {
    try {
      return await this.kv.get(key);
    } catch (error) {
      throw unavailable(error, "The job-state store");
    }
  }

  /** The slow path for a process whose copy is not complete yet: every live job, read directly. */
  async #scanForProject(projectId: number, owner: string | undefined): Promise<MirrorEntry | null> {
    let newest: MirrorEntry | null = null;
    try {
      for await (const key of await this.kv.keys(jobStateKeys.allJobs())) {
        const live = parseState(await this.kv.get(key));
        if (!live || live.state.project_id !== projectId || !isActive(live.state) || !ownedBy(live.state, owner)) continue;
        const entry = this.#apply(live.state.job_id, live.state, live.revision);
        if (!newest || entry.state.created_at > newest.state.created_at) newest = entry;
      }
    } catch (error) {
      throw unavailable(error, "The job-state store");
    }
    return newest;
  }

  #apply(jobId: string, state: LiveJobState, revision: number): MirrorEntry {
    const current = this.#jobs.get(jobId);
    if (current && current.revision > revision) return current;
    const entry: MirrorEntry = { state, revision, seenAt: Date.now() };
    this.#jobs.set(jobId, entry);
    this.#index(jobId, current?.state, state);
    if (current?.revision !== revision) this.#notify(jobId, entry);
    if (current && isActive(current.state) && !isActive(state)) this.onEnded?.(state);
    return entry;
  }

  #drop(jobId: string): void {
    const current = this.#jobs.get(jobId);
    this.#jobs.delete(jobId);
    this.#index(jobId, current?.state, undefined);
    this.#notify(jobId, null);
    if (current && isActive(current.state)) this.onEnded?.(current.state);
  }

  #notify(jobId: string, entry: MirrorEntry | null): void {
    const set = this.#listeners.get(jobId);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(entry);
      } catch (error) {
        this.logger.warn({ err: error, jobId }, "job-state listener failed");
      }
    }
  }

  #index(jobId: string, before: LiveJobState | undefined, after: LiveJobState | undefined): void {
    const was = before && isActive(before) ? before.project_id : null;
    const is = after && isActive(after) ? after.project_id : null;
    if (was === is) return;
    if (was !== null) {
      const set = this.#byProject.get(was);
      set?.delete(jobId);
      if (set?.size === 0) this.#byProject.delete(was);
    }
    if (is !== null) {
      const set = this.#byProject.get(is) ?? new Set<string>();
      set.add(jobId);
      this.#byProject.set(is, set);
    }
  }

  #onEntry(entry: KvWatchEntry): void {
    this.#watched(entry.revision);
    if (entry.key.startsWith(jobStateKeys.prefixJob)) {
      const jobId = entry.key.slice(jobStateKeys.prefixJob.length);
      const live = parseState(entry);
      if (live) this.#apply(jobId, live.state, live.revision);
      else if ((this.#jobs.get(jobId)?.revision ?? 0) <= entry.revision) this.#drop(jobId);
    }
    if (!this.#isSynced && (entry.isUpdate || entry.delta === 0)) this.#setSynced();
  }

  #setSynced(): void {
    this.#isSynced = true;
    this.#markSynced();
  }

  async #distrustAcrossReconnects(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (this.#stopped) return;
      if (status.type === "disconnect" || status.type === "reconnect") this.#staleBefore = Date.now();
    }
  }

  /** One question at a time (shared with readers' barriers): a stalled path or an absent leader leaves it pending, and the proof ages meanwhile. */
  async #proveCurrent(nc: NatsConnection): Promise<void> {
    while (!this.#stopped && !nc.isClosed()) {
      await this.#barrier();
      await sleep(PATH_PROBE_MS, undefined, { ref: false });
    }
  }

  /**
   * True once the copy holds every write the bucket had taken when this was called: the stream
   * leader is asked for its last sequence and the watch must deliver it. One question at a time;
   * callers arriving while one is under way share the next. False when there is no answer or the
   * watch does not catch up within BARRIER_MS (a leader election, a lagging or dead watch).
   */
  #barrier(): Promise<boolean> {
    if (!this.#barrierInFlight) {
      const asked = this.#askLeader();
      this.#barrierInFlight = asked;
      void asked.finally(() => {
        if (this.#barrierInFlight === asked) this.#barrierInFlight = undefined;
      });
      return asked;
    }
    this.#barrierQueued ??= this.#barrierInFlight.then(() => {
      this.#barrierQueued = undefined;
      return this.#barrier();
    });
    return this.#barrierQueued;
  }

  async #askLeader(): Promise<boolean> {
    const askedAt = Date.now();
    const timer = new AbortController();
    const expired = sleep(BARRIER_MS, undefined, { signal: timer.signal, ref: false }).then(
      (): false => false,
      (): false => false,
    );
    try {
      const leader = await Promise.race([this.#leaderSeq(), expired]);
      if (leader === false) return false;
      const reached = await Promise.race([this.#watchReaches(leader.held), expired]);
      if (reached) this.#pathConfirmedAt = Math.max(this.#pathConfirmedAt, askedAt);
      return reached;
    } catch {
      return false;
    } finally {
      timer.abort();
    }
  }

  /** The last sequence the bucket's stream leader holds (0 for an empty bucket: nothing to watch for). */
  async #leaderSeq(): Promise<{ held: number }> {
    const { state } = (await this.kv.status()).streamInfo;
    return { held: state.messages === 0 ? 0 : state.last_seq };
  }

  #watchReaches(seq: number): Promise<boolean> {
    if (this.#watchedSeq >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      // No waiter outlives its barrier.
      const giveUp = setTimeout(() => {
        this.#seqWaiters.delete(waiter);
        resolve(false);
      }, BARRIER_MS).unref();
      const waiter = {
        seq,
        reached: () => {
          clearTimeout(giveUp);
          resolve(true);
        },
      };
      this.#seqWaiters.add(waiter);
    });
  }

  /** The watch delivered `seq`: every barrier waiting for a sequence up to it is through. */
  #watched(seq: number): void {
    if (seq <= this.#watchedSeq) return;
    this.#watchedSeq = seq;
    for (const waiter of this.#seqWaiters) {
      if (waiter.seq > seq) continue;
      this.#seqWaiters.delete(waiter);
      waiter.reached();
    }
  }

  /** Watches until stopped; a watch that ends (server restart, lost consumer) is started again. */
  async #watchForever(): Promise<void> {
    while (!this.#stopped) {
      try {
        this.#staleBefore = Date.now();
        const watcher = await this.kv.watch({ key: ">" });
        this.#stopWatch = () => watcher.stop();
        if (this.#stopped) watcher.stop();
        // An empty bucket delivers nothing: the copy is complete at once.
        if (!this.#isSynced && (await this.kv.status()).values === 0) this.#setSynced();
        for await (const entry of watcher) this.#onEntry(entry);
      } catch (error) {
        if (!this.#stopped) this.logger.warn({ err: error }, "job-state watch failed; restarting");
      }
      if (!this.#stopped) await sleep(1_000);
    }
  }
}
