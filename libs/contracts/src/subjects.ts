import { DEFAULT_JOB_OWNER } from "./owners";

/**
 * Every NATS name the system uses, built here so that no service holds a subject literal.
 * Layout: `litrev.rpc.<service>.<operation>` for request-reply (queue group = service),
 * `litrev.health` for the readiness broadcast, KV bucket `litrev_config` for configuration.
 */
/** Services that run durable jobs: one per job kind (`JOB_KINDS`, job-kinds.ts), named by its declaration. */
export type JobService = string;
/** The services behind the gateway: criteria and every job kind's. */
export type BackendService = "criteria" | JobService;
export type ServiceName = "gateway" | BackendService;

const ROOT = "litrev";

export const subjects = {
  rpc: (service: BackendService, operation: string) => `${ROOT}.rpc.${service}.${operation}`,
  rpcWildcard: (service: BackendService) => `${ROOT}.rpc.${service}.>`,
  health: () => `${ROOT}.health`,
  /**
   * Cancellations of a service's synchronous requests (the gateway's client went away): every
   * replica listens (no queue group), the one running the request aborts its provider calls.
   */
  cancel: (service: BackendService) => `${ROOT}.cancel.${service}`,
  /**
   * Cancellations of a job service's running jobs (`{job_id}`): published by the replica that took
   * the client's cancel, heard by every replica's worker (no queue group); the one running the job stops it.
   */
  jobCancel: (service: BackendService) => `${ROOT}.jobs-cancel.${service}`,
  /**
   * Erased jobs (`{job_id}`): published by the job service that deleted one, heard by every gateway,
   * which drops what it cached of the job.
   */
  jobErased: (service: BackendService) => `${ROOT}.jobs-erased.${service}`,
  /** Queue group shared by all replicas of one service, so each request reaches one replica. */
  queueGroup: (service: BackendService) => `${ROOT}-${service}`,
};

/** The KV bucket holding service defaults (announced by services) and patches (PUT by clients). */
export const CONFIG_BUCKET = "litrev_config";

/**
 * The KV bucket of the provider keys' shared budgets: heartbeats `<budget id>.<member>` of every
 * replica calling with a key (libs/messaging provider-budgets.ts); never a key, nor its plain hash.
 */
export const PROVIDER_BUDGET_BUCKET = "litrev_llm_budget";
export const configKeys = {
  defaults: (serviceId: string) => `defaults.${serviceId}`,
  overrides: (serviceId: string) => `overrides.${serviceId}`,
  allDefaults: () => "defaults.>",
  anyKind: (serviceId: string) => `*.${serviceId}`,
  /** What a service learned of its provider's handling of `n` (three tokens: outside `anyKind`). */
  providerN: (serviceId: string) => `provider.n.${serviceId}`,
};

/**
 * The KV bucket of per-owner limit counters that must hold across replicas (docs/limits.md): each
 * owner's request allowance shared by every gateway, and each owner's storage held by a job service's
 * jobs. Changed only by compare-and-set. Owner ids are one key token (`OWNER_ID`: never a dot).
 */
export const LIMITS_BUCKET = "litrev_limits";
export const limitKeys = {
  /** An owner's requests (rate, in flight, heavy reads, event streams) across every gateway. */
  gateway: (owner: string) => `gateway.${owner}`,
  gatewayPrefix: "gateway",
  /** Which gateways joined (each one's liveness is its own beat record), so that each knows its share of a limit when the others cannot be asked. */
  gateways: "gateways",
  /** One gateway's beat: when it last said it is alive and how many gateways it counted then (written by it alone: no contention). */
  gatewayBeat: (holder: string) => `gateway.beat.${holder}`,
  /** What one owner's jobs of a job service hold in storage (bytes, live jobs). */
  storage: (service: string, owner: string) => `storage.${service}.${owner}`,
  storagePrefix: (service: string) => `storage.${service}`,
};

/** NATS header names carried on every hop. `traceparent`/`tracestate` follow W3C. */
export const headers = {
  requestId: "x-request-id",
  providerKey: "x-llm-api-key",
  /** The same per-request provider key under the name the original system's clients send (HTTP only). */
  providerKeyAlias: "x-openai-api-key",
  /**
   * A provider key sealed with JOB_KEY_SECRET (AES-256-GCM), bound to the job or request it belongs
   * to: the only form in which a provider key crosses NATS (`X-LLM-API-Key` is the HTTP header).
   */
  sealedProviderKey: "x-llm-api-key-sealed",
  /** The id the gateway chose for a job it creates (its sealed provider key is bound to it). */
  jobId: "x-litrev-job-id",
  /** The client (service-key owner id) a job creation or read is made for; jobs of other owners are not found. */
  owner: "x-litrev-owner",
  /** A request or reply body too large for one message, parked in the payload object store. */
  payloadRef: "x-litrev-payload",
  /**
   * A random id the gateway gives a synchronous request so it can cancel it later (never the
   * client's x-request-id, which a client chooses and could aim at someone else's request).
   */
  cancelId: "x-litrev-cancel-id",
  /** A request that only asks "is anyone serving this subject?" (answered at once, no handler runs). */
  probe: "x-litrev-probe",
  /**
   * A job creation whose item list (papers, records) the gateway already wrote to the job data
   * bucket as JSON Lines: the staged object's `ObjectRef` as JSON; the body's list is then empty.
   */
  stagedInput: "x-litrev-staged-input",
  /** JetStream de-duplication id (a job command's job id). */
  msgId: "Nats-Msg-Id",
} as const;

/**
 * Durable-job names of one service (docs/jobs.md): a work-queue stream of job commands, one durable
 * pull consumer, a KV bucket of live job state, a stream of per-job checkpoints and an object store
 * for job inputs and results. Per-service streams keep consumers' filter subjects disjoint and each
 * consumer on a single filter subject (nats-server 2.9).
 */
export const jobNames = (service: JobService) => {
  const upper = service.toUpperCase();
  return {
    service,
    commandStream: `LITREV_JOBS_${upper}`,
    /** One subject per job, so "is this job's command still queued?" is a last-by-subject lookup. */
    commandSubject: (jobId: string) => `${ROOT}.jobs.${service}.${jobId}`,
    commandSubjects: `${ROOT}.jobs.${service}.*`,
    consumer: `${service}-workers`,
    checkpointStream: `LITREV_CKPT_${upper}`,
    checkpointSubject: (jobId: string, stage: string, unit: string) => `${ROOT}.ckpt.${service}.${jobId}.${stage}.${unit}`,
    checkpointStageSubjects: (jobId: string, stage: string) => `${ROOT}.ckpt.${service}.${jobId}.${stage}.*`,
    checkpointJobSubjects: (jobId: string) => `${ROOT}.ckpt.${service}.${jobId}.>`,
    checkpointSubjects: `${ROOT}.ckpt.${service}.>`,
    stateBucket: `litrev_jobs_${service}`,
    dataBucket: `litrev_jobdata_${service}`,
    /**
     * Large creation lists the gateway stages for admission (`staged/<uuid>/…`), apart from the job
     * data: the gateway may write here and nowhere in the job data, so it cannot change any job's
     * input, partial items or results.
     */
    stagingBucket: `litrev_staging_${service}`,
    /**
     * The embedded store of record (libs/jobs/src/store/embedded-job-store.ts): a KV bucket with one
     * row per job plus an `active.<project>.<job>` key while the row is pending/running, a stream
     * indexing jobs in order of their first write (newest-first listings read it backwards), and an
     * object store holding rows too large for their key (a job's items live in its artifact).
     */
    storeBucket: `litrev_store_${service}`,
    storeJobKey: (jobId: string) => `job.${jobId}`,
    storeActiveKey: (projectId: number, jobId: string) => `active.${projectId}.${jobId}`,
    storeActiveKeys: (projectId: number) => `active.${projectId}.*`,
    storeIndexStream: `LITREV_STORE_INDEX_${upper}`,
    storeIndexSubject: `${ROOT}.store.${service}.created`,
    storeItemsBucket: `litrev_store_items_${service}`,
    /** A row too large for one message, whole, written under `fence` (its key then holds the row without its result and extras). */
    storeRowObject: (jobId: string, fence: number) => `${jobId}/${fence}/row`,
    /** Validation samples of finished jobs (screening only): one record per sample, its labels and looks. */
    validationBucket: `litrev_validation_${service}`,
    validationKey: (jobId: string, sampleId: string) => `sample.${jobId}.${sampleId}`,
    /** The job's latest recall certificate (its newest look on any sample), for the methods report. */
    certificateKey: (jobId: string) => `certificate.${jobId}`,
  };
};
export type JobNames = ReturnType<typeof jobNames>;

/**
 * Keys of a job-state bucket: one live record per job, one lock per (owner, project) with an active
 * job. `project_id` is each client's own key, so two clients' project 7 are different projects. The
 * default owner (a single `API_KEY`, jobs from before owners) keeps the key it always had,
 * `lock.<project>`, so a deployment with one key behaves as before, across a rolling upgrade too.
 * Owner ids are letters, digits, '-' and '_' (`OWNER_ID`): one key token, never a dot.
 */
export const jobStateKeys = {
  job: (jobId: string) => `job.${jobId}`,
  lock: (projectId: number, owner: string | undefined) =>
    owner === undefined || owner === DEFAULT_JOB_OWNER ? `lock.${projectId}` : `lock.${owner}.${projectId}`,
  allJobs: () => "job.*",
  prefixJob: "job.",
  prefixLock: "lock.",
};

/** Object names in a job data bucket. */
export const jobDataObjects = {
  input: (jobId: string) => `input/${jobId}`,
  /** A job's item list as the gateway received it (JSON Lines), before the service admits the job. */
  staged: (id: string) => `staged/${id}`,
  /** The chunked list of the items a job's run (fenced by its delivery number) finished so far (chunks only, no head). */
  partial: (jobId: string, fence: number) => `partial/${jobId}/${fence}`,
  /** A finished job's artifact head (`JobArtifactHead`), written last: found means complete. */
  artifactHead: (jobId: string) => `finished/${jobId}/head`,
  /** The artifact's items, a chunked list of the run that ended the job (chunks only: the artifact head says where). */
  artifactItems: (jobId: string, fence: number) => `finished/${jobId}/${fence}`,
  /** Each artifact item's title, one line per item in the items' order (every export and sample download reads them). */
  artifactTitles: (jobId: string, fence: number) => `finished/${jobId}/titles/${fence}`,
  /** Each artifact item's abstract, likewise (only RIS exports and sample downloads read them). */
  artifactAbstracts: (jobId: string, fence: number) => `finished/${jobId}/abstracts/${fence}`,
  /** Each artifact item's bibliographic fields as JSON text (`""`: none), likewise (every export reads them). */
  artifactBibliography: (jobId: string, fence: number) => `finished/${jobId}/bibliography/${fence}`,
  /** Every name prefix the data store keeps one job's objects under (its input, any run's items, its artifact): erasure deletes them all. */
  ofJob: (jobId: string) => [`input/${jobId}`, `partial/${jobId}/`, `finished/${jobId}/`],
};

/**
 * Object store for request-reply bodies larger than one NATS message (libs/messaging payload-store),
 * one per backend service: requests to a service and its replies are parked in its own bucket, so
 * no other service's NATS user can read them.
 */
export const payloadBucket = (service: BackendService) => `litrev_payloads_${service}`;
