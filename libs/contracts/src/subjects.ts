/**
 * Every NATS name the system uses, built here so that no service holds a subject literal.
 * Layout: `litrev.rpc.<service>.<operation>` for request-reply (queue group = service),
 * `litrev.health` for the readiness broadcast, KV bucket `litrev_config` for configuration.
 */
export const ServiceName = ["gateway", "criteria", "screening", "indexer"] as const;
export type ServiceName = (typeof ServiceName)[number];
export type BackendService = Exclude<ServiceName, "gateway">;

const ROOT = "litrev";

export const subjects = {
  rpc: (service: BackendService, operation: string) => `${ROOT}.rpc.${service}.${operation}`,
  rpcWildcard: (service: BackendService) => `${ROOT}.rpc.${service}.>`,
  health: () => `${ROOT}.health`,
  /** Queue group shared by all replicas of one service, so each request reaches one replica. */
  queueGroup: (service: BackendService) => `${ROOT}-${service}`,
};

/** The KV bucket holding service defaults (announced by services) and patches (PUT by clients). */
export const CONFIG_BUCKET = "litrev_config";
export const configKeys = {
  defaults: (serviceId: string) => `defaults.${serviceId}`,
  overrides: (serviceId: string) => `overrides.${serviceId}`,
  allDefaults: () => "defaults.>",
  anyKind: (serviceId: string) => `*.${serviceId}`,
};

/** Configuration id of each backend service (the spec calls the indexer's `extraction`). */
export const CONFIG_SERVICE_ID: Record<BackendService, string> = {
  criteria: "criteria",
  screening: "screening",
  indexer: "extraction",
};

/** NATS header names carried on every hop. `traceparent`/`tracestate` follow W3C. */
export const headers = {
  requestId: "x-request-id",
  providerKey: "x-llm-api-key",
} as const;
