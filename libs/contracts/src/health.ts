import { z } from "zod";

export const HealthResponse = z.object({ status: z.literal("ok") });

/** `checks` holds the spec's `database` and `openai_key`, plus `nats` and one entry per service. */
export const ReadyResponse = z.object({
  status: z.enum(["ready", "degraded"]),
  checks: z.record(z.string(), z.string()),
});
export type ReadyResponse = z.infer<typeof ReadyResponse>;

/** A service instance's answer to the health broadcast. */
export const ServiceHealth = z.object({
  service: z.string(),
  instance: z.string(),
  /** `ok`, `error: <message>`, or `not_used` for a service without storage. */
  database: z.string(),
  /** Which store of record the instance uses, e.g. `jetstream (embedded, R1)` or `mongodb`; absent for a service without storage. */
  store: z.string().max(200).optional(),
  /** Whether the provider offers the models this instance uses (`ok …`, `missing: …`, `error: …`); absent without a provider key. */
  models: z.string().max(2000).optional(),
  /** What the instance assumes of its provider's handling of `n` and why (screening's forecast depends on it). */
  provider_n: z.string().max(200).optional(),
});
export type ServiceHealth = z.infer<typeof ServiceHealth>;
