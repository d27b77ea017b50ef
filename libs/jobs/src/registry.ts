import type { KV, KvEntry } from "@nats-io/kv";
import { jobStateKeys, LiveJobState, ProjectLock } from "@litrev/contracts";
import { isWrongRevision, throughElections } from "./nats-errors";
import { safeJson } from "./safe-json";

export interface LiveEntry {
  state: LiveJobState;
  /** The KV revision this state was read at: the token for compare-and-set writes. */
  revision: number;
}

/** An `update`'s outcome: the entry as it now stands, and whether this call wrote it. */
export interface UpdatedEntry extends LiveEntry {
  written: boolean;
}

export interface LockEntry {
  lock: ProjectLock;
  revision: number;
}

const encoder = new TextEncoder();
const encode = (value: unknown) => encoder.encode(JSON.stringify(value));

/**
 * Live job state in a service's KV bucket: `job.<id>` holds a `LiveJobState`, the lock key of an
 * (owner, project) its active job (`jobStateKeys.lock`: each client's project ids are its own, so
 * one client's job never holds another's project). Lock methods take the owner explicitly. Every write after creation is a compare-and-set on the entry revision, so
 * concurrent writers (a worker, a slow replica, an orphan reaper) never overwrite each other blindly.
 * Writes are sent again while the bucket's stream has no leader (a cluster electing one): nothing
 * was stored then, so even a create-if-absent may be repeated.
 */
export class JobRegistry {
  constructor(readonly kv: KV) {}

  /** Creates the entry; fails if a job with this id exists. */
  async create(state: LiveJobState): Promise<LiveEntry> {
    const revision = await throughElections(() => this.kv.create(jobStateKeys.job(state.job_id), encode(state)));
    return { state, revision };
  }

  async get(jobId: string): Promise<LiveEntry | null> {
    return parseState(await this.kv.get(jobStateKeys.job(jobId)));
  }

  /**
   * Read-modify-write with compare-and-set, retried on a lost race. `change` returns the next
   * state, or null to leave the entry as it is (the current entry is returned, `written: false`).
   * Resolves to null when the job has no live entry.
   */
  async update(jobId: string, change: (state: LiveJobState) => LiveJobState | null): Promise<UpdatedEntry | null> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.get(jobId);
      if (!current) return null;
      const next = change(current.state);
      if (!next) return { ...current, written: false };
      try {
        const revision = await throughElections(() => this.kv.update(jobStateKeys.job(jobId), encode(next), current.revision));
        return { state: next, revision, written: true };
      } catch (error) {
        if (!isWrongRevision(error) || attempt >= 50) throw error;
      }
    }
  }

  async remove(jobId: string): Promise<void> {
    await throughElections(() => this.kv.delete(jobStateKeys.job(jobId)));
  }

  /** Removes the job's live entry if it is still at `revision`; false when it changed or is gone. */
  async removeIfUnchanged(jobId: string, revision: number): Promise<boolean> {
    try {
      await this.kv.delete(jobStateKeys.job(jobId), { previousSeq: revision });
      return true;
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw error;
    }
  }

  /** Takes the owner's project slot atomically (KV create-if-absent), or says who holds it. */
  async acquireLock(projectId: number, jobId: string, owner: string | undefined): Promise<{ ok: true; revision: number } | ({ ok: false } & LockEntry)> {
    const lock: ProjectLock = { version: 1, type: "job.lock", job_id: jobId, created_at: new Date().toISOString(), ...(owner ? { owner } : {}) };
    try {
      return { ok: true, revision: await throughElections(() => this.kv.create(jobStateKeys.lock(projectId, owner), encode(lock))) };
    } catch (error) {
      if (!isWrongRevision(error)) throw error;
      const holder = await this.lockHolder(projectId, owner);
      // Released between our create and our read: report a lost race as "try again".
      if (!holder) return { ok: false, lock: { ...lock, job_id: "" }, revision: 0 };
      return { ok: false, ...holder };
    }
  }

  async lockHolder(projectId: number, owner: string | undefined): Promise<LockEntry | null> {
    const entry = await this.kv.get(jobStateKeys.lock(projectId, owner));
    if (!entry || entry.operation !== "PUT") return null;
    const lock = ProjectLock.safeParse(entry.json());
    return lock.success ? { lock: lock.data, revision: entry.revision } : null;
  }

  /** Frees the owner's project slot if `jobId` still holds it. */
  async releaseLock(projectId: number, jobId: string, owner: string | undefined): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const holder = await this.lockHolder(projectId, owner);
      if (!holder || holder.lock.job_id !== jobId) return;
      if (await this.removeLockIfUnchanged(projectId, owner, holder.revision)) return;
    }
  }

  /**
   * Rewrites the lock unchanged if it is still at `held.revision`, moving its revision on: a
   * competitor that judged the lock stale at the old revision can then no longer remove it.
   * False when it changed or is gone.
   */
  async confirmLock(projectId: number, owner: string | undefined, held: LockEntry): Promise<boolean> {
    try {
      await this.kv.update(jobStateKeys.lock(projectId, owner), encode(held.lock), held.revision);
      return true;
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw error;
    }
  }

  async removeLockIfUnchanged(projectId: number, owner: string | undefined, revision: number): Promise<boolean> {
    try {
      await throughElections(() => this.kv.delete(jobStateKeys.lock(projectId, owner), { previousSeq: revision }));
      return true;
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw error;
    }
  }

  /** Every live job (a scan: for maintenance and tests, not for request paths). */
  async list(): Promise<LiveEntry[]> {
    const out: LiveEntry[] = [];
    for await (const key of await this.kv.keys(jobStateKeys.allJobs())) {
      const entry = parseState(await this.kv.get(key));
      if (entry) out.push(entry);
    }
    return out;
  }
}

export function parseState(entry: KvEntry | null): LiveEntry | null {
  if (!entry || entry.operation !== "PUT") return null;
  const parsed = LiveJobState.safeParse(safeJson(entry));
  return parsed.success ? { state: parsed.data, revision: entry.revision } : null;
}
