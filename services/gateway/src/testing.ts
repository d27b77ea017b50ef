import type { FastifyInstance } from "fastify";
import { ServiceError } from "@litrev/contracts";
import type { ConfigStore, NatsLink } from "@litrev/messaging";
import { createLogger } from "@litrev/telemetry";
import { buildApp } from "./app";
import { GatewayEnv } from "./env";

/** For the gateway's unit tests: the app built in process, over a stand-in NATS link. */

/** A link whose NATS is unreachable, behaving as NatsLink does then. */
export function offlineLink(): NatsLink {
  return {
    connected: false,
    connection: () => {
      throw new ServiceError("service_unavailable", "The messaging system (NATS) is unreachable; retry shortly");
    },
    ready: () => new Promise(() => undefined),
    raw: undefined,
    close: async () => undefined,
  } as unknown as NatsLink;
}

/** No configuration bucket: configuration routes answer as when NATS has none yet. */
const noConfigStore = () => Promise.reject(new Error("no config store in this test")) as Promise<ConfigStore>;

/**
 * The gateway over `link`, configured by `env` (which names its API_KEY) on top of what every test
 * shares: an unreachable NATS URL, a job key secret, a silent logger.
 */
export function testGateway(link: NatsLink, env: Record<string, string>, configStore: () => Promise<ConfigStore> = noConfigStore): Promise<FastifyInstance> {
  return buildApp({
    env: GatewayEnv.parse({ NATS_URL: "nats://127.0.0.1:1", JOB_KEY_SECRET: "gateway-test-job-key-secret", ...env }),
    logger: createLogger("gateway-test", "silent"),
    link,
    configStore,
  });
}
