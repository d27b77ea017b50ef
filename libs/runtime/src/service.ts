import { randomUUID } from "node:crypto";
import { configServiceId, ServiceHealth, subjects, type BackendService, type PromptMetadata, type ServiceConfigResponse } from "@litrev/contracts";
import { ConfigStore, duringStartUp, logNatsStatus, NatsLink, PayloadStore, ProviderBudgets, SharedRecords, natsAuthFromEnv, serveOperations, type HandlerEntry, type KeySealer, type NatsConnection, type RecordStore } from "@litrev/messaging";
import { LlmClient, ModelAvailability, chooseModel, providerIdentity } from "@litrev/llm";
import { serviceVersion, type ServiceVersion } from "./service-version";
import { createLogger, type Logger } from "@litrev/telemetry";

import { llmOptions, type BaseEnv } from "./env";
import { Shutdown } from "./shutdown";

export interface ServiceDefinition {
  service: BackendService;
  env: BaseEnv;
  /** Opens the provider keys the gateway seals for this service's provider-calling requests (JOB_KEY_SECRET). */
  sealer?: KeySealer;
  /** The service's own defaults and prompts, announced in the config bucket. */
  defaults: ServiceConfigResponse;
  prompts: PromptMetadata[];
  /** The spec's default models of the service's operations, checked against the provider's list. */
  models?: readonly string[];
  /** Database status for readiness: `ok`, `error: …`, or `not_used`. */
  databaseStatus?: () => string;
  /** Which store of record the service uses (readiness names it). */
  storeDescription?: () => string;
  handlers: (runtime: ServiceRuntime) => HandlerEntry[] | Promise<HandlerEntry[]>;
}

/** What a running service hands its handlers: connection, live config, logger, shutdown hooks. */
export interface ServiceRuntime {
  readonly service: BackendService;
  readonly instance: string;
  readonly logger: Logger;
  readonly nc: NatsConnection;
  readonly shutdown: Shutdown;
  /** The effective configuration, kept current by a KV watch. */
  config(): ServiceConfigResponse;
  /** The process's one provider client; its alias table follows the config bucket. */
  readonly llm: LlmClient;
  /** The limits bucket's records (per-owner counters shared by every replica, docs/limits.md). */
  readonly limits: RecordStore;
  /**
   * The model for a request whose contract filled in `specDefault` when the client sent none:
   * the request's model → the service config's model → the spec's default (docs/architecture.md).
   */
  model(requested: string, specDefault: string): string;
  /** The package version and git commit this process runs (a job's provenance names them). */
  readonly version: ServiceVersion;
}

/**
 * Starts a backend service: connects to NATS (waiting for it if it is down), announces the
 * service's defaults and prompts, keeps its configuration current, answers the health
 * broadcast, and serves its operations in the service's queue group.
 */
export async function startService(definition: ServiceDefinition): Promise<ServiceRuntime> {
  const { service, env } = definition;
  const logger = createLogger(service, env.LOG_LEVEL);
  const instance = `${service}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const shutdown = new Shutdown(logger, env.SHUTDOWN_TIMEOUT_MS);
  shutdown.listen();

  const link = new NatsLink({
    servers: env.NATS_URL,
    name: instance,
    auth: natsAuthFromEnv(env, service),
    onStatus: logNatsStatus(logger),
  });
  shutdown.add("nats", () => link.close());
  const nc = await link.ready();

  const configId = configServiceId(service);
  // Each step on JetStream waits out a NATS cluster electing its leaders (docs/resilience.md).
  const starting = <T>(what: string, step: () => Promise<T>) => duringStartUp(what, step, logger);
  const store = await starting("config bucket", () => ConfigStore.open(nc));
  // The service's bucket for large request and reply bodies exists before it serves a request.
  await starting("payload store", () => PayloadStore.create(nc, service));
  // The per-owner limit counters that gateways share and job services keep storage quotas in.
  const limits = await starting("limits bucket", () => SharedRecords.open(nc));
  await starting("announcement", () => store.announce(configId, { config: definition.defaults, prompts: definition.prompts }));
  let current = definition.defaults;
  const announced = definition.defaults.model;
  // One budget per provider key across every replica that calls with it (docs/operations.md), its id
  // keyed with the deployment's secret.
  const budgetSecret = env.LLM_BUDGET_SECRET ?? definition.sealer?.derivedSecret("provider budgets");
  if (!budgetSecret) throw new Error("LLM_BUDGET_SECRET or JOB_KEY_SECRET is required: the provider budgets' ids are keyed with it");
  const sharedBudgets = await starting("provider budgets", () => ProviderBudgets.open(nc, { service, member: instance, secret: budgetSecret }));
  shutdown.add("provider budgets", () => sharedBudgets.close());
  // What the service learns of its provider's `n` outlives the process: kept in the config bucket
  // for the provider host it was learned on, so the first forecast after a start already knows it.
  const providerHost = providerIdentity(env.OPENAI_BASE_URL).host ?? "unknown";
  const llm = new LlmClient({
    ...llmOptions(env),
    logger,
    sharedBudgets,
    onLearnedIgnoresN: () => {
      store.keepProviderN(configId, { n: "ignored", host: providerHost, learned_at: new Date().toISOString() }).then(
        () => logger.info({ host: providerHost }, "the provider ignores n: kept in the config bucket"),
        (error: unknown) => logger.warn({ err: error }, "could not keep what was learned of the provider's n"),
      );
    },
  });
  const kept = await store.learnedProviderN(configId).catch(() => null);
  if (kept && kept.host === providerHost) llm.assumeIgnoresN();
  const availability = new ModelAvailability(llm, () => [current.model, ...(definition.models ?? [announced])]);
  const recheckModels = () => {
    if (env.OPENAI_API_KEY) void availability.check().catch(() => undefined);
  };
  const stopWatch = await starting("config watch", () => store.watch(
    configId,
    (config) => {
      const modelChanged = config.model !== current.model;
      current = config;
      if (modelChanged) recheckModels();
      logger.info({ model: config.model, prompt_template_id: config.prompt_template_id }, "configuration applied");
    },
    (key) => logger.warn({ key }, "malformed configuration entry ignored"),
  ));
  shutdown.add("config watch", stopWatch);

  const model = (requested: string, specDefault: string) => {
    const chosen = chooseModel({ requested, specDefault, configured: current.model, announced });
    llm.assertAllowed(chosen); // the gateway checks the request; this also covers the configured model
    return chosen;
  };
  await starting("model aliases", () => store.announceModelAliases(configId, llm.defaultModelAliases));
  let aliasesApplied = false;
  const stopAliasWatch = await starting("model alias watch", () => store.watchModelAliases(
    (overrides) => {
      llm.setAliasOverrides(overrides);
      logger.info({ aliases: llm.modelAliases }, "model aliases applied");
      // A remapped alias may point at a model the provider lacks: say so on /health/ready now.
      if (aliasesApplied) recheckModels();
      aliasesApplied = true;
    },
    (key) => logger.warn({ key }, "malformed model alias table ignored"),
  ));
  shutdown.add("model alias watch", stopAliasWatch);
  if (env.OPENAI_API_KEY) shutdown.add("model availability", availability.start(env.LLM_MODEL_CHECK_INTERVAL_MS));

  const version = serviceVersion(env.SERVICE_COMMIT);
  const runtime: ServiceRuntime = { service, instance, logger, nc, shutdown, config: () => current, llm, model, version, limits };

  const health = nc.subscribe(subjects.health(), {
    callback: (_err, msg) => {
      const models = availability.status;
      const body: ServiceHealth = {
        service,
        instance,
        database: definition.databaseStatus?.() ?? "not_used",
        ...(definition.storeDescription ? { store: definition.storeDescription() } : {}),
        ...(models !== undefined ? { models } : {}),
        provider_n: llm.providerN,
      };
      msg.respond(JSON.stringify(body));
    },
  });
  shutdown.add("health", () => health.unsubscribe());

  const entries = (await definition.handlers(runtime)).map((entry) => withHandledLog(entry, logger));
  const sub = serveOperations(nc, service, entries, {
    onError: (error, subject) => logger.error({ err: error, subject }, "operation failed"),
    onRejected: (subject, reason) => logger.warn({ subject, reason }, "malformed request rejected"),
    sealer: definition.sealer,
  });
  // Drain first on shutdown: in-flight requests finish, new ones go to other replicas.
  shutdown.add("operations", () => sub.drain());
  logger.info({ instance, operations: entries.map((e) => e.operation.name) }, "service ready");
  return runtime;
}

/**
 * One debug line per answered operation (with its trace id via the logger's mixin): shows which
 * replica served a request when debugging load sharing, and costs nothing at the default level.
 */
function withHandledLog(entry: HandlerEntry, logger: Logger): HandlerEntry {
  return {
    operation: entry.operation,
    handle: async (input, ctx) => {
      const started = performance.now();
      const output = await entry.handle(input, ctx);
      if (logger.isLevelEnabled("debug")) {
        const ms = Math.round((performance.now() - started) * 100) / 100;
        logger.debug({ operation: entry.operation.name, request_id: ctx.requestId, ms }, "operation handled");
      }
      return output;
    },
  };
}
