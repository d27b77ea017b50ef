import {
  CONFIG_BUCKET,
  LIMITS_BUCKET,
  limitKeys,
  configServiceId,
  jobKind,
  JOB_SERVICES,
  MODEL_ALIAS_KEYS,
  PROVIDER_BUDGET_BUCKET,
  configKeys,
  jobNames,
  operations,
  payloadBucket,
  subjects,
  type BackendService,
  type JobService,
  type ServiceName,
} from "@litrev/contracts";

/**
 * Who may do what on NATS: one user per process kind, each allowed exactly the subjects its code
 * uses (docs/security.md § NATS). This table is the single source of the permissions: the
 * nats-server configs of `npm start`, the test stacks, deploy/nats/nats.conf and the Helm values
 * are all rendered from it (scripts/nats-config.ts), and a test checks the committed files match.
 *
 * Subject layout that the table relies on (nats-server 2.9):
 * - request-reply: `litrev.rpc.<service>.<op>`; replies go to the requester's own inbox
 *   `_INBOX.<user>.>` (the `inboxPrefix` each connection sets), which only that user may subscribe
 *   to; responders publish replies through `allow_responses` only, never to `_INBOX.>` at large.
 * - JetStream API `$JS.API.<verb…>.<stream>[.…]`, flow control `$JS.FC.<stream>.>`, acks
 *   `$JS.ACK.<stream>.>`; KV bucket B is stream `KV_B` on `$KV.B.>`; object store O is stream
 *   `OBJ_O` on `$O.O.>`.
 */
/** The backend services: criteria and every job kind's (`JOB_SERVICES`). */
const backends = (): BackendService[] => ["criteria", ...JOB_SERVICES];

/** Every NATS user: the gateway and each backend service (a job kind is a user of its own). */
export const NATS_USERS: readonly ServiceName[] = ["gateway", ...backends()];
export type NatsUser = ServiceName;

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
  /** Replies to requests this user received (one reply each, for a short while). */
  allowResponses: boolean;
}

/** The inbox prefix of a user's connections: replies to its requests arrive only there. */
export const inboxPrefix = (user: NatsUser): string => `_INBOX.${user}`;

const kvStream = (bucket: string) => `KV_${bucket}`;
const objStream = (bucket: string) => `OBJ_${bucket}`;

/**
 * Reading a stream: its info, single-message gets, and ephemeral (ordered) consumers over it. A
 * reader that does not own the stream may not delete consumers: a permission names no consumer's
 * owner, so the right to delete one's own would be the right to delete everyone's (a service's
 * config watcher, say). Its ordered consumers left behind by a reset expire on their own
 * (their inactivity threshold), the library ignoring the refused delete.
 */
function readStream(stream: string, { deleteConsumers = true } = {}): string[] {
  return [
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.*`,
    ...(deleteConsumers ? [`$JS.API.CONSUMER.DELETE.${stream}.*`] : []),
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
    `$JS.FC.${stream}.>`,
  ];
}

/** What the gateway reads: never deleting a consumer, its own included (see `readStream`). */
const gatewayRead = (stream: string) => readStream(stream, { deleteConsumers: false });

/**
 * Owning a stream: reading it, creating it, durable consumers and acks. Never updating it: a stream
 * update can add subjects, so a service allowed to update its own stream could make it capture
 * anyone's traffic (requests, other users' replies) and read that. Limits of an existing stream
 * are changed by an operator (docs/operations.md).
 */
function ownStream(stream: string): string[] {
  return [
    ...readStream(stream),
    `$JS.API.STREAM.CREATE.${stream}`,
    `$JS.API.STREAM.PURGE.${stream}`,
    `$JS.API.STREAM.MSG.DELETE.${stream}`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.*`,
    `$JS.API.CONSUMER.NAMES.${stream}`,
    `$JS.API.CONSUMER.LIST.${stream}`,
    `$JS.ACK.${stream}.>`,
  ];
}

/**
 * A bucket every service shares (config, limits, provider budgets): created by whoever starts
 * first and read by all, but never purged, never a message deleted, and never a consumer deleted,
 * since a permission names no consumer's owner: the right to delete one's own watcher would be
 * the right to delete another service's (see `readStream`).
 */
const shareStream = (stream: string) => ownStream(stream).filter((s) => !s.includes(".PURGE.") && !s.includes(".MSG.DELETE.") && !s.includes(".CONSUMER.DELETE."));

/** Everything one job service owns: command, checkpoint and index streams, its buckets and object stores. */
function ownJobs(service: JobService): string[] {
  const names = jobNames(service);
  return [
    ...ownStream(names.commandStream),
    names.commandSubjects,
    ...ownStream(names.checkpointStream),
    names.checkpointSubjects,
    ...ownStream(names.storeIndexStream),
    names.storeIndexSubject,
    ...ownStream(kvStream(names.stateBucket)),
    `$KV.${names.stateBucket}.>`,
    ...ownStream(kvStream(names.storeBucket)),
    `$KV.${names.storeBucket}.>`,
    ...ownStream(objStream(names.dataBucket)),
    `$O.${names.dataBucket}.>`,
    ...ownStream(objStream(names.stagingBucket)),
    `$O.${names.stagingBucket}.>`,
    ...ownStream(objStream(names.storeItemsBucket)),
    `$O.${names.storeItemsBucket}.>`,
    ...ownStream(kvStream(names.validationBucket)),
    `$KV.${names.validationBucket}.>`,
  ];
}

/**
 * What the gateway uses of a job service, none of which can change a job's state, ownership, input
 * or results: its live state, read only (its mirror; no `$KV.…` publish at all, so no job's state,
 * lease, owner or project lock can be written, forged or deleted through the gateway — admission,
 * the first terminal poll's release and every state change happen in the owning service); its job
 * data, read only (running jobs' partial items); and the staging store, where it writes the large
 * creation lists it stages for admission (never purged or deleted by it).
 */
function readJobs(service: JobService): string[] {
  const names = jobNames(service);
  return [
    ...gatewayRead(kvStream(names.stateBucket)),
    ...gatewayRead(objStream(names.dataBucket)),
    ...gatewayRead(objStream(names.stagingBucket)),
    `$O.${names.stagingBucket}.>`,
    ...gatewayRead(kvStream(names.validationBucket)),
  ];
}

/** A payload object store: written and read by its service and by the gateway, which calls it. */
function usePayloads(service: BackendService, owner: boolean): string[] {
  const bucket = payloadBucket(service);
  const stream = objStream(bucket);
  return [...(owner ? ownStream(stream) : [...gatewayRead(stream), `$JS.API.STREAM.PURGE.${stream}`]), `$O.${bucket}.>`];
}

function configWrites(keys: string[]): string[] {
  return keys.map((key) => `$KV.${CONFIG_BUCKET}.${key}`);
}

/** The permissions of one user, built from the subject layout in @litrev/contracts. */
export function natsPermissions(user: NatsUser): NatsPermissions {
  const common = ["$JS.API.INFO"];
  const inbox = [`${inboxPrefix(user)}.>`];
  if (user === "gateway") {
    return {
      publish: [
        ...common,
        ...[...Object.values(operations), ...JOB_SERVICES.flatMap((s) => Object.values(jobKind(s).operations))].map((op) => subjects.rpc(op.service, op.name)),
        // Cancelling a synchronous request whose HTTP client went away.
        ...backends().map((s) => subjects.cancel(s)),
        subjects.health(),
        ...gatewayRead(kvStream(CONFIG_BUCKET)),
        ...configWrites(backends().map((s) => configKeys.overrides(configServiceId(s))).concat(MODEL_ALIAS_KEYS.overrides)),
        ...JOB_SERVICES.flatMap(readJobs),
        ...backends().flatMap((s) => usePayloads(s, false)),
        // The per-owner request counters every gateway shares, and the record of which gateways are
        // alive (each one's share of a limit when the bucket is slow); never the services' storage records.
        ...readStream(kvStream(LIMITS_BUCKET)),
        `$KV.${LIMITS_BUCKET}.${limitKeys.gatewayPrefix}.>`,
        `$KV.${LIMITS_BUCKET}.${limitKeys.gateways}`,
      ],
      // A deleted job's cached artifact is dropped by every gateway.
      subscribe: [...inbox, ...JOB_SERVICES.map((s) => subjects.jobErased(s))],
      allowResponses: false,
    };
  }
  const configId = configServiceId(user);
  return {
    publish: [
      ...common,
      // Creating the shared config bucket (whoever starts first); writing only its own defaults.
      ...shareStream(kvStream(CONFIG_BUCKET)),
      ...configWrites([configKeys.defaults(configId), configKeys.providerN(configId), MODEL_ALIAS_KEYS.defaultsOf(configId)]),
      // Creating the limits bucket (whoever starts first); a job service writes only its own storage records.
      ...shareStream(kvStream(LIMITS_BUCKET)),
      ...(user === "criteria" ? [] : [`$KV.${LIMITS_BUCKET}.${limitKeys.storagePrefix(user)}.>`]),
      ...usePayloads(user, true),
      ...(user === "criteria" ? [] : [...ownJobs(user), subjects.jobCancel(user), subjects.jobErased(user)]),
      // Every replica that calls a provider: its heartbeats in the keys' shared budgets (created by
      // whoever starts first), only as `<budget>.<service>.<instance>`: no service can forge, refresh
      // or delete another's members (and so shrink or grow its share).
      ...shareStream(kvStream(PROVIDER_BUDGET_BUCKET)),
      `$KV.${PROVIDER_BUDGET_BUCKET}.*.${user}.*`,
    ],
    subscribe: [...inbox, subjects.rpcWildcard(user), subjects.cancel(user), ...(user === "criteria" ? [] : [subjects.jobCancel(user)]), subjects.health()],
    allowResponses: true,
  };
}

/** How a user's password appears in a rendered config: a literal, or a `$VARIABLE` nats-server reads from its environment. */
export type PasswordSource = { literal: string } | { env: string };

/** The environment variable nats-server reads a user's password from in deploy configs. */
export const passwordEnvName = (user: NatsUser): string => `NATS_${user.toUpperCase()}_PASSWORD`;

const quote = (value: string) => JSON.stringify(value);

/**
 * The `authorization { users: [...] }` block of a nats-server config for every user. A user
 * with no entry in `passwords` is left out (cannot connect). Connections without credentials
 * are refused, since the block lists users only.
 */
export function renderAuthorization(passwords: Partial<Record<NatsUser, PasswordSource>>): string {
  const lines = ["authorization {", "  users: ["];
  for (const user of NATS_USERS) {
    const source = passwords[user];
    if (!source) continue;
    const perms = natsPermissions(user);
    const password = "literal" in source ? quote(source.literal) : `$${source.env}`;
    lines.push(`    {`);
    lines.push(`      user: ${quote(user)}`);
    lines.push(`      password: ${password}`);
    lines.push(`      permissions: {`);
    lines.push(`        publish: { allow: [${perms.publish.map(quote).join(", ")}] }`);
    lines.push(`        subscribe: { allow: [${perms.subscribe.map(quote).join(", ")}] }`);
    if (perms.allowResponses) lines.push(`        allow_responses: true`);
    lines.push(`      }`);
    lines.push(`    }`);
  }
  lines.push("  ]", "}");
  return lines.join("\n");
}
