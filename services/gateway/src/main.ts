import { ConfigStore, logNatsStatus, NatsLink, natsAuthFromEnv } from "@litrev/messaging";
import { ServiceError } from "@litrev/contracts";
import { EXIT_CONFIG, Shutdown } from "@litrev/runtime";
import { createLogger } from "@litrev/telemetry";
import { buildApp } from "./app";
import { loadEnv } from "./env";

const env = loadEnv();
const logger = createLogger("gateway", env.LOG_LEVEL);
const shutdown = new Shutdown(logger, env.SHUTDOWN_TIMEOUT_MS);
shutdown.listen();

// The gateway starts even while NATS is down: it answers health, reports itself degraded and
// returns a retryable error on routes that need a service, until the connection is made.
const link = new NatsLink({
  servers: env.NATS_URL,
  name: `gateway-${process.pid}`,
  auth: natsAuthFromEnv(env, "gateway"),
  onStatus: logNatsStatus(logger),
});
shutdown.add("nats", () => link.close());
// The per-owner limits on a connection of their own: a limit check never waits behind an export's bytes.
const limitsLink = new NatsLink({ servers: env.NATS_URL, name: `gateway-${process.pid}-limits`, auth: natsAuthFromEnv(env, "gateway") });
shutdown.add("nats-limits", () => limitsLink.close());
let store: Promise<ConfigStore> | undefined;
const configStore = () => {
  // The services create the bucket. On an open NATS the gateway creates it too, as it always did; a
  // locked-down gateway may not, so until a service has started it answers a retryable 503.
  store ??= link.ready().then((nc) =>
    ConfigStore.open(nc, { create: false })
      .catch(() => ConfigStore.open(nc))
      .catch((error: unknown) => {
        throw new ServiceError("service_unavailable", "The configuration store is not available yet (no service has started); retry shortly", { cause: error });
      }),
  );
  store.catch(() => (store = undefined));
  return store;
};

const app = await buildApp({ env, logger, link, limitsLink, configStore });
shutdown.add("http", () => app.close());
const address = await app.listen({ port: env.PORT, host: env.HOST }).catch((error: NodeJS.ErrnoException) => {
  // A taken port is a configuration problem: one line, and an exit code the supervisor does not restart.
  if (error.code !== "EADDRINUSE" && error.code !== "EADDRNOTAVAIL" && error.code !== "EACCES") throw error;
  logger.fatal(`cannot listen on ${env.HOST}:${env.PORT} (${error.code}); set PORT or HOST`);
  process.exit(EXIT_CONFIG);
});
logger.info({ address, docs: `${address}/docs` }, "gateway listening");
