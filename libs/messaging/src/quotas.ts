import type { DiscardPolicy, JetStreamManager } from "@nats-io/jetstream";
import { z } from "zod";

const MiB = 1024 * 1024;
const mb = (fallback: number) => z.coerce.number().int().min(1).max(1024 * 1024).default(fallback);

/**
 * Size limits of every stream, KV bucket and object store, in MiB (docs/limits.md § Storage).
 * JetStream reserves each stream's `max_bytes` against the server's `max_file_store` when the
 * stream is created, so the defaults add up to about 16.3 GiB: they fit the 20 GB the compose and
 * Kubernetes setups give NATS, with room for the server's own needs.
 */
export const NatsQuotaEnv = z.object({
  /** Shared configuration bucket (defaults, overrides, model aliases). */
  NATS_QUOTA_CONFIG_MB: mb(16),
  /** Per backend service: request-reply bodies over 512 KiB, kept at most an hour. */
  NATS_QUOTA_PAYLOAD_MB: mb(256),
  /** Per job service: queued job commands (a command is a few hundred bytes). */
  NATS_QUOTA_JOB_COMMANDS_MB: mb(64),
  /** Per job service: checkpoints of running jobs (purged when a job ends). */
  NATS_QUOTA_CHECKPOINTS_MB: mb(1024),
  /** Per job service: live job state (one small record per job, kept JOB_RETENTION_MS). */
  NATS_QUOTA_JOB_STATE_MB: mb(128),
  /** Per job service: job inputs, partial results and finished artifacts, every job's results (kept the longer of JOB_RETENTION_MS and JOB_STORE_RETENTION_MS). */
  NATS_QUOTA_JOB_DATA_MB: mb(4096),
  /** Per job service: large creation lists staged by the gateway, then the inputs of their jobs (kept JOB_RETENTION_MS). */
  NATS_QUOTA_JOB_STAGING_MB: mb(1024),
  /** Per job service: the embedded store of record's rows (kept JOB_STORE_RETENTION_MS). */
  NATS_QUOTA_STORE_ROWS_MB: mb(512),
  /** Per job service: the embedded store's creation index. */
  NATS_QUOTA_STORE_INDEX_MB: mb(64),
  /** Per job service: the embedded store's rows too large for one message (kept JOB_STORE_RETENTION_MS). */
  NATS_QUOTA_STORE_ITEMS_MB: mb(1024),
  /** Shared: per-owner limit counters (one small record per owner and gateway or job service). */
  NATS_QUOTA_LIMITS_MB: mb(8),
});
export type NatsQuotaEnv = z.infer<typeof NatsQuotaEnv>;

/** Limits in bytes (and message counts where a count is the natural bound). */
export interface StorageQuotas {
  configBytes: number;
  payloadBytes: number;
  jobCommandsBytes: number;
  /** Queued commands of one service at once; beyond it admission fails instead of dropping a job. */
  jobCommandsMsgs: number;
  checkpointsBytes: number;
  jobStateBytes: number;
  jobDataBytes: number;
  jobStagingBytes: number;
  storeRowsBytes: number;
  storeIndexBytes: number;
  storeItemsBytes: number;
  limitsBytes: number;
}

export const MAX_QUEUED_JOB_COMMANDS = 100_000;

/**
 * The quotas from the environment. Each process's env schema includes NatsQuotaEnv, so an invalid
 * value has already stopped the process at start-up; here a bad value can only mean a caller
 * outside a service (tests, scripts) and falls back to the default.
 */
export function storageQuotas(env: NodeJS.ProcessEnv = process.env): StorageQuotas {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([key, v]) => key.startsWith("NATS_QUOTA_") && v !== undefined && v !== ""));
  const parsed = NatsQuotaEnv.safeParse(cleaned);
  const q = parsed.success ? parsed.data : NatsQuotaEnv.parse({});
  return {
    configBytes: q.NATS_QUOTA_CONFIG_MB * MiB,
    payloadBytes: q.NATS_QUOTA_PAYLOAD_MB * MiB,
    jobCommandsBytes: q.NATS_QUOTA_JOB_COMMANDS_MB * MiB,
    jobCommandsMsgs: MAX_QUEUED_JOB_COMMANDS,
    checkpointsBytes: q.NATS_QUOTA_CHECKPOINTS_MB * MiB,
    jobStateBytes: q.NATS_QUOTA_JOB_STATE_MB * MiB,
    jobDataBytes: q.NATS_QUOTA_JOB_DATA_MB * MiB,
    jobStagingBytes: q.NATS_QUOTA_JOB_STAGING_MB * MiB,
    storeRowsBytes: q.NATS_QUOTA_STORE_ROWS_MB * MiB,
    storeIndexBytes: q.NATS_QUOTA_STORE_INDEX_MB * MiB,
    storeItemsBytes: q.NATS_QUOTA_STORE_ITEMS_MB * MiB,
    limitsBytes: q.NATS_QUOTA_LIMITS_MB * MiB,
  };
}

export interface StreamLimits {
  max_bytes?: number;
  max_msgs?: number;
  max_age?: number;
  max_msgs_per_subject?: number;
  max_msg_size?: number;
  max_consumers?: number;
  discard?: DiscardPolicy;
  /** Expiry markers (nats-server 2.11+): set on a bucket made before its watchers relied on them. */
  allow_msg_ttl?: boolean;
  subject_delete_marker_ttl?: number;
}

/**
 * Brings an existing stream's limits in line with `limits` (Kvm/Objm `create` open an existing
 * bucket as it is, so a bucket made before a quota existed, or with another value, is updated here).
 * On a locked-down NATS no service may update a stream (docs/security.md § NATS): then the stream
 * keeps its limits, a warning names what differs, and an operator applies it. Returns whether the
 * stream's limits now match.
 */
export async function keepStreamLimits(jsm: JetStreamManager, stream: string, limits: StreamLimits): Promise<boolean> {
  const info = await jsm.streams.info(stream);
  const config = info.config as unknown as Record<string, unknown>;
  const differs = Object.entries(limits).filter(([key, value]) => value !== undefined && config[key] !== value);
  if (differs.length === 0) return true;
  try {
    await jsm.streams.update(stream, { ...info.config, ...limits });
    return true;
  } catch (error) {
    const wanted = differs.map(([key, value]) => `${key}=${String(value)} (is ${String(config[key])})`).join(", ");
    process.emitWarning(`stream ${stream}: could not apply ${wanted}: ${(error as Error).message}; apply it as an operator (nats stream edit)`, {
      code: "LITREV_STREAM_LIMITS",
    });
    return false;
  }
}
