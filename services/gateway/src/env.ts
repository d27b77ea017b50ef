import { z } from "zod";
import { DEFAULT_JOB_OWNER, OWNER_ID, RequestLimits } from "@litrev/contracts";
import { JobKeySecretEnv, withJobKeySecrets } from "@litrev/jobs/client";
import { BaseEnv, parseEnv } from "@litrev/runtime";
import type { ServiceKey } from "./auth";

// JOB_KEY_SECRET(S): the gateway seals every provider key it forwards, per job or request (docs/security.md).
// Request limits (MAX_*): the bounds of one request's work, docs/limits.md.
export const GatewayEnv = BaseEnv.extend(JobKeySecretEnv.shape).extend(RequestLimits.shape).extend({
  /**
   * One or more service keys, comma-separated: one client (owner id `default`) that may do
   * everything. Only their digests are kept after start-up.
   */
  API_KEY: z
    .string()
    .transform((v) => v.split(",").map((k) => k.trim()).filter(Boolean))
    .pipe(z.array(z.string()).min(1, "API_KEY is required: one or more service keys, comma-separated"))
    .optional(),
  /**
   * Keys of several clients: `<owner>:<admin|use>:<key>`, comma-separated. A job belongs to the
   * owner whose key created it; `use` keys may not change configuration (docs/security.md).
   */
  API_KEYS: z
    .string()
    .transform((value, ctx) => {
      const keys: ServiceKey[] = [];
      for (const item of value.split(",").map((s) => s.trim()).filter(Boolean)) {
        const [owner = "", role = "", ...rest] = item.split(":");
        const key = rest.join(":");
        if (!OWNER_ID.test(owner) || (role !== "admin" && role !== "use") || key.length < MIN_KEY_LENGTH) {
          ctx.addIssue({ code: "custom", message: `each entry is <owner>:<admin|use>:<key>, the owner 1-64 letters, digits, '-' or '_', the key at least ${MIN_KEY_LENGTH} characters` });
          return z.NEVER;
        }
        keys.push({ owner, role, key });
      }
      if (keys.length === 0) ctx.addIssue({ code: "custom", message: "API_KEYS is empty" });
      return keys;
    })
    .optional(),
  PORT: z.coerce.number().int().min(0).max(65_535).default(8000),
  HOST: z.string().default("0.0.0.0"),
  /**
   * Largest accepted request body. Unset, it is derived from the largest legitimate request the
   * other limits admit (body-parser.ts, docs/limits.md): about 100 MB with the default limits.
   */
  BODY_LIMIT_MB: z.coerce.number().int().min(1).max(1024).optional(),
  /**
   * Per owner of service keys, across every gateway replica (docs/limits.md): requests other than
   * light reads (creations, synchronous calls, estimates, configuration writes, exports, reports,
   * validations) in flight at once, and their sustained rate per second (event streams included)
   * with the burst allowed above it. Beyond either: `429` with `Retry-After`. 0 turns a limit off.
   */
  KEY_CONCURRENCY: z.coerce.number().int().min(0).max(100_000).default(64),
  KEY_RATE_PER_S: z.coerce.number().min(0).max(1_000_000).default(100),
  KEY_RATE_BURST: z.coerce.number().int().min(1).max(1_000_000).default(300),
  /** Per owner, across replicas: exports, reports, validations and polls of large finished jobs in flight at once (each reads a whole finished job). 0: no limit. */
  KEY_HEAVY_CONCURRENCY: z.coerce.number().int().min(0).max(100_000).default(4),
  /**
   * How long a counted request waits for the shared limits bucket at most (within it, a few of the
   * bucket's usual round trips); beyond it (or while NATS is
   * unreachable) the gateway decides alone on its share of each limit, limit ÷ the gateways alive (docs/limits.md).
   */
  KEY_LIMITS_WAIT_MS: z.coerce.number().int().min(10).max(10_000).default(500),
  /** Upper bound on a synchronous provider-backed call (criteria, indexer helpers). */
  RPC_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  /** Upper bound on reads (polls, listings, active job). */
  READ_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** Share of job polls and active-job reads that get a server span (every other request always does). */
  OTEL_POLL_TRACE_RATIO: z.coerce.number().min(0).max(1).default(0.01),
  /** How long readiness waits for services to report their database status. */
  READY_WAIT_MS: z.coerce.number().int().min(50).default(500),
  /**
   * Whether `/docs` and `/openapi.json` are served without a service key. Closed by default (the
   * spec opens only the health routes); `npm start` opens them for local use.
   */
  DOCS_PUBLIC: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
  /**
   * Longest time to receive a whole request (headers and body), so a slow upload cannot hold a
   * connection. Response time is not limited by it (long polls and streams are unaffected).
   */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(120_000),
  /** Longest time to receive a request's headers. */
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(30_000),
  /** How long an idle keep-alive connection stays open. */
  KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).default(72_000),
  /** Socket inactivity limit: a connection that sends and receives nothing for this long is closed. */
  CONNECTION_TIMEOUT_MS: z.coerce.number().int().min(0).default(0),
  /** Job event streams (server-sent events) one gateway serves at once; one more is answered 503. */
  MAX_EVENT_STREAMS: z.coerce.number().int().min(1).max(100_000).default(1000),
  /** Job event streams one owner holds open at once across every gateway (its share of the streams); one more is answered 429. 0: no limit. */
  EVENT_STREAMS_PER_OWNER: z.coerce.number().int().min(0).max(100_000).default(100),
  /** How often an open event stream gets a comment line, so proxies and clients see it alive. */
  EVENT_HEARTBEAT_MS: z.coerce.number().int().min(100).max(300_000).default(15_000),
});
export type GatewayEnv = z.infer<typeof GatewayEnv>;

/** Minimum length of a key in API_KEYS (API_KEY keeps accepting what it always did). */
const MIN_KEY_LENGTH = 16;

/** Every service key: API_KEY's as the `default` owner's admin keys, then API_KEYS. */
export function serviceKeys(env: Pick<GatewayEnv, "API_KEY" | "API_KEYS">): ServiceKey[] {
  const single = (env.API_KEY ?? []).map((key): ServiceKey => ({ key, owner: DEFAULT_JOB_OWNER, role: "admin" }));
  return [...single, ...(env.API_KEYS ?? [])];
}

const withServiceKeys = <S extends z.ZodType<Pick<GatewayEnv, "API_KEY" | "API_KEYS">>>(schema: S) =>
  schema.superRefine((env, ctx) => {
    if (!env.API_KEY?.length && !env.API_KEYS?.length) {
      ctx.addIssue({ code: "custom", path: ["API_KEY"], message: "API_KEY is required: one or more service keys, comma-separated (or API_KEYS=<owner>:<admin|use>:<key>,…)" });
    }
    // The same key for two owners or roles would make its requests ambiguous (a plain repeat is harmless).
    const seen = new Map<string, string>();
    for (const { key, owner, role } of serviceKeys(env)) {
      const who = `${owner}:${role}`;
      if ((seen.get(key) ?? who) !== who) ctx.addIssue({ code: "custom", path: ["API_KEYS"], message: "a service key is given to two owners or roles" });
      seen.set(key, who);
    }
  });

/** The gateway's environment with the rules that span variables (service keys, provider-key secrets). */
export const CheckedGatewayEnv = withServiceKeys(withJobKeySecrets(GatewayEnv));

export const loadEnv = () => parseEnv(CheckedGatewayEnv);
