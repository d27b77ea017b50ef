import { ServiceError } from "@litrev/contracts";
import type { ConfigStore, NatsLink } from "@litrev/messaging";
import { createLogger } from "@litrev/telemetry";
import { buildApp } from "../../services/gateway/src/app";
import { GatewayEnv } from "../../services/gateway/src/env";

/**
 * The gateway's OpenAPI document without any running infrastructure: the gateway factory with a
 * NATS link that is never connected (the document depends on routes and contracts only).
 */
export async function offlineOpenApiDocument(): Promise<Record<string, unknown>> {
  const unreachable = () => {
    throw new ServiceError("service_unavailable", "offline: building the OpenAPI document only");
  };
  const link = {
    connected: false,
    connection: unreachable,
    ready: () => new Promise(() => undefined),
    close: async () => undefined,
  } as unknown as NatsLink;
  const app = await buildApp({
    // Placeholders: the factory needs a valid environment, nothing here is ever used to serve.
    env: GatewayEnv.parse({ API_KEY: "offline-document-only", JOB_KEY_SECRET: "offline-document-only-secret", DOCS_PUBLIC: "true" }),
    logger: createLogger("openapi-document", "silent"),
    link,
    configStore: () => Promise.reject(new Error("offline")) as Promise<ConfigStore>,
  });
  try {
    const response = await app.inject({ method: "GET", url: "/openapi.json" });
    if (response.statusCode !== 200) throw new Error(`GET /openapi.json answered ${response.statusCode}`);
    return response.json();
  } finally {
    await app.close();
  }
}
