import { randomUUID } from "node:crypto";
import { CONFIG_SERVICE_ID, ServiceHealth, subjects, type BackendService, type PromptMetadata, type ServiceConfigResponse } from "@litrev/contracts";
import { ConfigStore, NatsLink, serveOperations, type HandlerEntry, type NatsConnection } from "@litrev/messaging";
import { createLogger, type Logger } from "@litrev/telemetry";

import type { BaseEnv } from "./env";
import { Shutdown } from "./shutdown";

export interface ServiceDefinition {
  service: BackendService;
  env: BaseEnv;
  /** The service's own defaults and prompts, announced in the config bucket. */
  defaults: ServiceConfigResponse;
  prompts: PromptMetadata[];
  /** Database status for readiness: `ok`, `error: …`, or `not_used`. */
  databaseStatus?: () => string;
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
    onStatus: (event, server) => logger.info({ event, server }, "nats connection"),
  });
  shutdown.add("nats", () => link.close());
  const nc = await link.ready();

  const configId = CONFIG_SERVICE_ID[service];
  const store = await ConfigStore.open(nc);
  await store.announce(configId, { config: definition.defaults, prompts: definition.prompts });
  let current = definition.defaults;
  const stopWatch = await store.watch(
    configId,
    (config) => {
      current = config;
      logger.info({ model: config.model, prompt_template_id: config.prompt_template_id }, "configuration applied");
    },
    (key) => logger.warn({ key }, "malformed configuration entry ignored"),
  );
  shutdown.add("config watch", stopWatch);

  const runtime: ServiceRuntime = { service, instance, logger, nc, shutdown, config: () => current };

  const health = nc.subscribe(subjects.health(), {
    callback: (_err, msg) => {
      const body: ServiceHealth = { service, instance, database: definition.databaseStatus?.() ?? "not_used" };
      msg.respond(JSON.stringify(body));
    },
  });
  shutdown.add("health", () => health.unsubscribe());

  const entries = (await definition.handlers(runtime)).map((entry) => withHandledLog(entry, logger));
  const sub = serveOperations(nc, service, entries, {
    onError: (error, subject) => logger.error({ err: error, subject }, "operation failed"),
    onRejected: (subject, reason) => logger.warn({ subject, reason }, "malformed request rejected"),
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
