import { z } from "zod";
import { JobKeySecretEnv } from "@litrev/jobs";
import { BaseEnv, parseEnv } from "@litrev/runtime";

// JOB_KEY_SECRET: the gateway seals provider keys of screening jobs for the workers (docs/jobs.md).
export const GatewayEnv = BaseEnv.extend(JobKeySecretEnv.shape).extend({
  /** One or more service keys, comma-separated. Only their digests are kept after start-up. */
  API_KEY: z
    .string({ error: "API_KEY is required: one or more service keys, comma-separated" })
    .transform((v) => v.split(",").map((k) => k.trim()).filter(Boolean))
    .pipe(z.array(z.string()).min(1, "API_KEY is required: one or more service keys, comma-separated")),
  PORT: z.coerce.number().int().min(0).max(65_535).default(8000),
  HOST: z.string().default("0.0.0.0"),
  /** Largest accepted request body; sized for a 20,000-paper screening job (docs/limits.md). */
  BODY_LIMIT_MB: z.coerce.number().int().min(1).max(1024).default(100),
  /** Upper bound on a synchronous provider-backed call (criteria, indexer helpers). */
  RPC_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  /** Upper bound on reads (polls, listings, active job). */
  READ_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** Share of job polls and active-job reads that get a server span (every other request always does). */
  OTEL_POLL_TRACE_RATIO: z.coerce.number().min(0).max(1).default(0.01),
  /** How long readiness waits for services to report their database status. */
  READY_WAIT_MS: z.coerce.number().int().min(50).default(500),
  /** Job event streams (server-sent events) one gateway serves at once; one more is answered 503. */
  MAX_EVENT_STREAMS: z.coerce.number().int().min(1).max(100_000).default(1000),
  /** How often an open event stream gets a comment line, so proxies and clients see it alive. */
  EVENT_HEARTBEAT_MS: z.coerce.number().int().min(100).max(300_000).default(15_000),
});
export type GatewayEnv = z.infer<typeof GatewayEnv>;

export const loadEnv = () => parseEnv(GatewayEnv);
