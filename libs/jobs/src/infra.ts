import { AckPolicy, DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { jobNames, type JobNames, type JobService } from "@litrev/contracts";
import { keepStreamLimits, storageQuotas, streamReplicas } from "@litrev/messaging";
import { CheckpointLog } from "./checkpoints";
import { JobData } from "./data";
import { isNotFound } from "./nats-errors";
import { JobQueue } from "./queue";
import { JobRegistry } from "./registry";

export interface JobInfraOptions {
  /** JetStream ack wait of the worker consumer; workers heartbeat at a third of it. */
  ackWaitMs?: number;
  /** Deliveries after a crash before the job is failed (graceful hand-backs are not counted). */
  maxAttempts?: number;
  /** How long live state, data objects and checkpoints outlive their last write. */
  retentionMs?: number;
  /** How long a finished job's artifact (its results' only home) is kept: the data store keeps objects the longer of the two. */
  resultsRetentionMs?: number;
}

export interface ResolvedJobInfraOptions {
  ackWaitMs: number;
  maxAttempts: number;
  retentionMs: number;
  resultsRetentionMs: number;
}

export const DEFAULT_JOB_INFRA_OPTIONS: ResolvedJobInfraOptions = {
  ackWaitMs: 30_000,
  maxAttempts: 5,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  // As long as the store of record keeps the job's row (JOB_STORE_RETENTION_MS' default).
  resultsRetentionMs: 30 * 24 * 60 * 60 * 1000,
};

/** Everything a process needs to admit, run or read one service's jobs. */
export interface JobInfra {
  service: JobService;
  names: JobNames;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  registry: JobRegistry;
  data: JobData;
  checkpoints: CheckpointLog;
  queue: JobQueue;
  options: ResolvedJobInfraOptions;
}

/**
 * Creates (idempotently) and opens one service's job stream, worker consumer, state bucket,
 * checkpoint stream, data store and staging store. Safe to call from every replica at once.
 */
export async function openJobInfra(nc: NatsConnection, service: JobService, options: JobInfraOptions = {}): Promise<JobInfra> {
  const resolved: ResolvedJobInfraOptions = { ...DEFAULT_JOB_INFRA_OPTIONS, ...definedOnly(options) };
  const replicas = streamReplicas();
  const names = jobNames(service);
  const quotas = storageQuotas();
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);

  await ensureStream(jsm, {
    name: names.commandStream,
    subjects: [names.commandSubjects],
    // Work queue: a command leaves the stream when its worker acks (or terms) it.
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: replicas,
    // Full: a new admission fails (and says so) rather than an older queued job being dropped.
    discard: DiscardPolicy.New,
    max_bytes: quotas.jobCommandsBytes,
    max_msgs: quotas.jobCommandsMsgs,
    duplicate_window: nanos(2 * 60 * 1000),
  });
  await ensureConsumer(jsm, names, resolved.ackWaitMs);
  await ensureStream(jsm, {
    name: names.checkpointStream,
    subjects: [names.checkpointSubjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: replicas,
    max_age: nanos(resolved.retentionMs),
    // Full: the oldest checkpoints (of long-finished or abandoned jobs) go first; a job whose
    // checkpoint was dropped redoes that unit, nothing is lost. Only a unit's last save is read.
    discard: DiscardPolicy.Old,
    max_bytes: quotas.checkpointsBytes,
    max_msgs_per_subject: 1,
    duplicate_window: nanos(2 * 60 * 1000),
  });

  const kv = await new Kvm(js).create(names.stateBucket, {
    history: 1,
    // Job states are read from the stream leader: on a cluster a replica may lag behind the last write.
    allow_direct: false,
    ttl: resolved.retentionMs,
    storage: StorageType.File,
    replicas,
    max_bytes: quotas.jobStateBytes,
  });
  await keepStreamLimits(jsm, `KV_${names.stateBucket}`, { max_bytes: quotas.jobStateBytes });
  /** An object store kept `ms`, within its quota (an existing one brought to both). */
  const objectStore = async (bucket: string, maxBytes: number, ms: number) => {
    const limits = { max_bytes: maxBytes, max_consumers: OBJECT_READERS_MAX };
    const store = await new Objm(js).create(bucket, { ttl: nanos(ms), storage: StorageType.File, replicas, ...limits });
    await keepStreamLimits(jsm, `OBJ_${bucket}`, { ...limits, max_age: nanos(ms) });
    return store;
  };
  // Finished artifacts are their jobs' only results: kept as long as the rows that list them.
  const objects = await objectStore(names.dataBucket, quotas.jobDataBytes, Math.max(resolved.retentionMs, resolved.resultsRetentionMs));
  // Staged lists become their jobs' inputs as they are: kept as long as job data.
  const staging = await objectStore(names.stagingBucket, quotas.jobStagingBytes, resolved.retentionMs);

  return {
    service,
    names,
    nc,
    js,
    jsm,
    registry: new JobRegistry(kv),
    data: new JobData(objects, {}, staging),
    checkpoints: new CheckpointLog(js, jsm, names),
    queue: new JobQueue(js, jsm, names),
    options: resolved,
  };
}

/**
 * Every object read is an ephemeral consumer of the store's stream, gone some seconds after the
 * read ends; nats-server 2.15 limits a stream to 1,000 consumers unless it sets its own limit, which
 * an export storm reached ("maximum consumers limit reached", answered 503). About 2,000 reads a
 * second at a 5 s linger.
 */
const OBJECT_READERS_MAX = 10_000;

type StreamConfig = Parameters<JetStreamManager["streams"]["add"]>[0];

async function ensureStream(jsm: JetStreamManager, config: StreamConfig & { name: string }): Promise<void> {
  try {
    await jsm.streams.info(config.name);
    // Only what differs is updated (a locked-down NATS lets no service update a stream: then a warning says what differs).
    const { max_age, max_bytes, max_msgs, max_msgs_per_subject, discard } = config;
    await keepStreamLimits(jsm, config.name, { max_age, max_bytes, max_msgs, max_msgs_per_subject, discard });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      await jsm.streams.add(config);
    } catch (addError) {
      // Another replica created it between our look-up and our add.
      await jsm.streams.info(config.name).catch(() => {
        throw addError;
      });
    }
  }
}

async function ensureConsumer(jsm: JetStreamManager, names: JobNames, ackWaitMs: number): Promise<void> {
  const config = {
    durable_name: names.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ackWaitMs),
    // Attempts are counted by the worker (crashes only, not graceful hand-backs), which fails the
    // job itself; the server must keep redelivering so that a worker sees the last delivery.
    max_deliver: -1,
    filter_subject: names.commandSubjects,
    max_ack_pending: 10_000,
  };
  try {
    const info = await jsm.consumers.info(names.commandStream, names.consumer);
    if (info.config.ack_wait !== config.ack_wait) await jsm.consumers.update(names.commandStream, names.consumer, { ack_wait: config.ack_wait });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      await jsm.consumers.add(names.commandStream, config);
    } catch (addError) {
      await jsm.consumers.info(names.commandStream, names.consumer).catch(() => {
        throw addError;
      });
    }
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
