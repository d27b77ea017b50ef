import { limitKeys, ServiceError, type JobService } from "@litrev/contracts";
import type { RecordStore } from "@litrev/messaging";

export interface OwnerStorageSettings {
  /** Bytes one owner's jobs of this service may hold (inputs of live jobs, results kept); 0: no limit. */
  bytes: number;
  /** Pending and running jobs of one owner of this service at once. */
  liveJobs: number;
  /** How long a finished job's results stay stored (and counted). */
  keptForMs: number;
}

/** A live job's reservation: its input's bytes, its results' (an upper estimate) and when it was admitted. */
type LiveEntry = [input: number, results: number, admittedAt: number];

/**
 * What one owner's jobs of one service hold. Live jobs one by one (at most `liveJobs`); finished
 * jobs' results by the slot of time in which they expire (at most about 33 slots), so the record
 * stays small however many jobs an owner keeps.
 */
export interface StorageRecord {
  live: Record<string, LiveEntry>;
  kept: Record<string, number>;
}

/** Kept results are counted in slots of this share of their retention (they expire up to one slot late). */
const SLOTS = 32;
/** A reservation younger than this whose job has no live state yet is still live: its admission is writing the state. */
const ADMISSION_GRACE_MS = 10_000;
/** The shortest and longest wait a storage refusal suggests. */
const MIN_WAIT_MS = 5_000;
const MAX_WAIT_MS = 86_400_000;

const MB = 1024 * 1024;
const mb = (bytes: number) => (bytes < MB ? `${Math.ceil(bytes / 1024)} KB` : `${(bytes / MB).toFixed(1)} MB`);

/**
 * Per-owner quotas on what a job service's jobs hold in storage, checked at admission before the
 * job's input is stored: when storage runs short, the owner who filled it is refused (`429`, or
 * `413` for a job larger than the whole quota), never the others. One record per owner in the
 * shared limits bucket, changed by compare-and-set, so every replica of the service counts the same.
 * A job's reservation is its input's size plus an upper estimate of its results; when the job is no
 * longer live (ended, failed, expired or reaped: its live state says so), the input is released and
 * the results are counted until their retention ends.
 */
export class OwnerStorage {
  constructor(
    private readonly records: RecordStore,
    private readonly service: JobService,
    private readonly settings: OwnerStorageSettings,
    /** Whether a job is pending or running, has ended, or has no live state (never written, expired or released). */
    private readonly jobState: (jobId: string) => Promise<"active" | "ended" | "none">,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reserves the job's storage, or throws the refusal naming the limit. */
  async reserve(owner: string, jobId: string, bytes: { input: number; results: number }): Promise<void> {
    const key = limitKeys.storage(this.service, owner);
    const ended = await this.#ended(key, jobId);
    const refusal = await this.records.change(key, (record: StorageRecord | undefined) => admit(record, jobId, bytes, ended, this.settings, this.now()));
    if (refusal) throw refusal;
  }

  /**
   * Counts `bytes` a finished job's owner stores beside it (a validation sample with room for its
   * labels) until `keptForMs` from now, or throws the refusal naming the quota.
   */
  async keep(owner: string, bytes: number, keptForMs: number): Promise<void> {
    const key = limitKeys.storage(this.service, owner);
    const ended = await this.#ended(key, "");
    const refusal = await this.records.change(key, (record: StorageRecord | undefined) => keepBytes(record, bytes, keptForMs, ended, this.settings, this.now()));
    if (refusal) throw refusal;
  }

  /** Gives back the reservation of a job whose admission failed (it holds nothing). */
  async cancel(owner: string, jobId: string): Promise<void> {
    await this.records.change(limitKeys.storage(this.service, owner), (record: StorageRecord | undefined) => {
      const next = cleaned(record, [], this.settings, this.now());
      delete next.live[jobId];
      return { next, result: undefined };
    });
  }

  /** The owner's reservations whose jobs are no longer live (the record, then one look-up per reservation, from the service's mirror where it can). */
  async #ended(key: string, jobId: string): Promise<string[]> {
    const record = await this.records.change(key, (current: StorageRecord | undefined) => ({ next: cleaned(current, [], this.settings, this.now()), result: current }));
    const now = this.now();
    const candidates = Object.entries(record?.live ?? {}).filter(([id]) => id !== jobId);
    const states = await Promise.all(candidates.map(([id]) => this.jobState(id)));
    return candidates.filter(([, [, , at]], i) => states[i] === "ended" || (states[i] === "none" && now - at > ADMISSION_GRACE_MS)).map(([id]) => id);
  }
}

/** The record with expired slots dropped and `ended` jobs moved from live to kept (their results only). */
export function cleaned(record: StorageRecord | undefined, ended: readonly string[], settings: OwnerStorageSettings, now: number): StorageRecord {
  const slotMs = Math.max(60_000, Math.ceil(settings.keptForMs / SLOTS));
  const kept: Record<string, number> = {};
  for (const [slot, bytes] of Object.entries(record?.kept ?? {})) if (Number(slot) * slotMs > now) kept[slot] = bytes;
  const live = { ...record?.live };
  const expiry = String(Math.ceil((now + settings.keptForMs) / slotMs));
  for (const id of ended) {
    const entry = live[id];
    if (!entry) continue;
    delete live[id];
    kept[expiry] = (kept[expiry] ?? 0) + entry[1];
  }
  return { live, kept };
}

/** Admits the job's reservation, or says which limit refuses it (pure: it may run again on a fresh record). */
export function admit(
  record: StorageRecord | undefined,
  jobId: string,
  bytes: { input: number; results: number },
  ended: readonly string[],
  settings: OwnerStorageSettings,
  now: number,
): { next: StorageRecord; result: ServiceError | null } {
  const next = cleaned(record, ended, settings, now);
  const refuse = (error: ServiceError) => ({ next, result: error });
  const live = Object.keys(next.live).filter((id) => id !== jobId);
  if (live.length >= settings.liveJobs) {
    return refuse(
      new ServiceError("rate_limit", `This client already has ${settings.liveJobs} jobs pending or running (OWNER_MAX_LIVE_JOBS, docs/limits.md); retry when one has finished`, {
        retryAfterMs: 30_000,
      }),
    );
  }
  const over = overQuota(next, live, bytes.input + bytes.results, "This job would hold about %s of storage (input and results)", settings, now);
  if (over) return refuse(over);
  next.live[jobId] = [bytes.input, bytes.results, now];
  return { next, result: null };
}

/** Counts bytes kept beside a finished job until `keptForMs` from now, or says why the quota refuses them (pure). */
function keepBytes(
  record: StorageRecord | undefined,
  bytes: number,
  keptForMs: number,
  ended: readonly string[],
  settings: OwnerStorageSettings,
  now: number,
): { next: StorageRecord; result: ServiceError | null } {
  const next = cleaned(record, ended, settings, now);
  const over = overQuota(next, Object.keys(next.live), bytes, "This would store about %s more", settings, now);
  if (over) return { next, result: over };
  const slotMs = Math.max(60_000, Math.ceil(settings.keptForMs / SLOTS));
  const expiry = String(Math.ceil((now + keptForMs) / slotMs));
  next.kept[expiry] = (next.kept[expiry] ?? 0) + bytes;
  return { next, result: null };
}

/** The refusal when `wanted` more bytes would cross the owner's quota (413 when they alone would), else null; `what` says what they are (%s: their size). */
function overQuota(next: StorageRecord, live: readonly string[], wanted: number, what: string, settings: OwnerStorageSettings, now: number): ServiceError | null {
  if (settings.bytes <= 0) return null;
  if (wanted > settings.bytes) {
    return new ServiceError(
      "too_large",
      `${what.replace("%s", mb(wanted))}, more than this client's whole quota of ${mb(settings.bytes)} (OWNER_STORAGE_MB, docs/limits.md): split it into smaller jobs`,
      { simple: true },
    );
  }
  const held = live.reduce((sum, id) => sum + next.live[id]![0] + next.live[id]![1], 0) + Object.values(next.kept).reduce((sum, b) => sum + b, 0);
  if (held + wanted <= settings.bytes) return null;
  const slotMs = Math.max(60_000, Math.ceil(settings.keptForMs / SLOTS));
  const firstExpiry = Math.min(...Object.keys(next.kept).map((slot) => Number(slot) * slotMs));
  const waitMs = live.length > 0 || !Number.isFinite(firstExpiry) ? 60_000 : firstExpiry - now;
  return new ServiceError(
    "rate_limit",
    `This client's jobs hold ${mb(held)} of storage; this one would add about ${mb(wanted)}, over its quota of ${mb(settings.bytes)} (OWNER_STORAGE_MB, docs/limits.md). ` +
      "Space frees as its running jobs finish and its finished jobs' results expire",
    { retryAfterMs: Math.min(MAX_WAIT_MS, Math.max(MIN_WAIT_MS, waitMs)) },
  );
}
