import { z } from "zod";

/**
 * The service's own causes of failure, finer than the spec's taxonomy: what every layer throws and
 * a job records. Clients see them as `error_reason`, beside the spec's `error_code` /
 * `error_category` (`SPEC_CODE`; the table is docs/errors.md).
 */
export const ErrorCategory = z.enum([
  "validation",
  "auth",
  "forbidden",
  "rate_limit",
  "unknown",
  "orphan_cleanup",
  "not_found",
  "conflict",
  "quota",
  "too_large",
  "provider_unavailable",
  "service_unavailable",
  "timeout",
  "not_implemented",
  "model_output",
  "cancelled",
]);
export type ErrorCategory = z.infer<typeof ErrorCategory>;

/** Whether a client (or a job runner) may retry after an error of this category. */
export const RETRYABLE: Record<ErrorCategory, boolean> = {
  validation: false,
  auth: false,
  forbidden: false,
  rate_limit: true,
  unknown: false,
  orphan_cleanup: true,
  not_found: false,
  conflict: false,
  quota: false,
  too_large: false,
  provider_unavailable: true,
  service_unavailable: true,
  timeout: true,
  not_implemented: false,
  model_output: false,
  cancelled: false,
};

/**
 * The spec's taxonomy: the only values `error_code` (HTTP bodies) and `error_category` (failed jobs)
 * carry, so a client that routes on the documented values never falls into its default branch.
 */
export const SpecErrorCode = z.enum(["validation", "auth", "rate_limit", "unknown", "orphan_cleanup"]);
export type SpecErrorCode = z.infer<typeof SpecErrorCode>;

/** Each cause under its spec code: the client's mistake, a key or account problem, a rate limit, or the server's side. */
export const SPEC_CODE: Record<ErrorCategory, SpecErrorCode> = {
  validation: "validation",
  not_found: "validation",
  conflict: "validation",
  too_large: "validation",
  // The client's own request ended the job: nothing to retry, nothing wrong on the server.
  cancelled: "validation",
  auth: "auth",
  forbidden: "auth",
  // The original documents an exhausted provider quota as a key problem: the account must be fixed.
  quota: "auth",
  rate_limit: "rate_limit",
  unknown: "unknown",
  model_output: "unknown",
  not_implemented: "unknown",
  provider_unavailable: "unknown",
  service_unavailable: "unknown",
  timeout: "unknown",
  orphan_cleanup: "orphan_cleanup",
};

/**
 * A recorded cause as the two fields a client reads: the spec's code, and the cause itself as
 * `error_reason`. A cause this build does not know (a row written by another version) is `unknown`.
 */
export function specErrorFields(reason: string | null): { error_category: SpecErrorCode | null; error_reason: string | null } {
  if (reason === null) return { error_category: null, error_reason: null };
  const known = ErrorCategory.safeParse(reason);
  return { error_category: known.success ? SPEC_CODE[known.data] : "unknown", error_reason: reason };
}

/** A job view's error fields: the spec's `error_category` and the added `error_reason` beside it. */
export const jobErrorShape = {
  error_category: SpecErrorCode.nullable().describe("The spec's taxonomy (`orphan_cleanup` for a reaped job): route on this"),
  error_reason: z.string().nullable().describe("The finer cause behind `error_category`, e.g. `cancelled`, `quota`, `timeout` (docs/errors.md)"),
};

/** One field-level validation problem, in the spec's (FastAPI-compatible) shape. */
export const ValidationIssue = z.object({
  type: z.string(),
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
});
export type ValidationIssue = z.infer<typeof ValidationIssue>;

/** Error as it crosses NATS: enough for the gateway to build any of the spec's three bodies. */
export const WireError = z.object({
  category: ErrorCategory,
  message: z.string(),
  retryable: z.boolean(),
  /** Field-level problems for a `validation` error that maps to the list body. */
  issues: z.array(ValidationIssue).optional(),
  /** Use the spec's simple `{detail: string}` body (404, 409, cost ceiling). */
  simple: z.boolean().optional(),
  /** How long a client should wait before retrying a `rate_limit` error (the gateway's Retry-After). */
  retry_after_ms: z.number().int().min(0).max(86_400_000).optional(),
});
export type WireError = z.infer<typeof WireError>;

/** The spec's three HTTP error bodies (the classified one with the added `error_reason`). */
export const ClassifiedErrorBody = z.object({
  detail: z.object({
    message: z.string(),
    error_code: SpecErrorCode.describe("The spec's taxonomy: route on this"),
    error_reason: ErrorCategory.describe("The finer cause behind `error_code` (docs/errors.md)"),
    retryable: z.boolean(),
  }),
});
export const SimpleErrorBody = z.object({ detail: z.string() });
export const ValidationErrorBody = z.object({ detail: z.array(ValidationIssue) });
export type ClassifiedErrorBody = z.infer<typeof ClassifiedErrorBody>;
export type SimpleErrorBody = z.infer<typeof SimpleErrorBody>;
export type ValidationErrorBody = z.infer<typeof ValidationErrorBody>;

interface ServiceErrorOptions {
  cause?: unknown;
  retryable?: boolean;
  issues?: ValidationIssue[];
  simple?: boolean;
  retryAfterMs?: number | undefined;
}

/**
 * The one error class every layer throws for an expected failure. It carries its category,
 * so the gateway maps it to HTTP and a job runner records it, without string matching.
 */
export class ServiceError extends Error {
  override readonly name = "ServiceError";
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly issues: ValidationIssue[] | undefined;
  readonly simple: boolean;
  /** Set on a rate limit that outlasted the caller's budget: when the provider expects the next try. */
  readonly retryAfterMs: number | undefined;

  constructor(category: ErrorCategory, message: string, options: ServiceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.category = category;
    this.retryable = options.retryable ?? RETRYABLE[category];
    this.issues = options.issues;
    this.simple = options.simple ?? false;
    this.retryAfterMs = options.retryAfterMs === undefined ? undefined : Math.max(0, Math.round(options.retryAfterMs));
  }

  toWire(): WireError {
    return {
      category: this.category,
      message: this.message,
      retryable: this.retryable,
      ...(this.issues ? { issues: this.issues } : {}),
      ...(this.simple ? { simple: true } : {}),
      ...(this.retryAfterMs !== undefined ? { retry_after_ms: Math.min(this.retryAfterMs, 86_400_000) } : {}),
    };
  }

  static fromWire(wire: WireError): ServiceError {
    return new ServiceError(wire.category, wire.message, {
      retryable: wire.retryable,
      ...(wire.issues ? { issues: wire.issues } : {}),
      ...(wire.simple ? { simple: true } : {}),
      ...(wire.retry_after_ms !== undefined ? { retryAfterMs: wire.retry_after_ms } : {}),
    });
  }

  /** Any thrown value as a ServiceError; unexpected ones become `unknown` without leaking internals. */
  static from(error: unknown): ServiceError {
    if (error instanceof ServiceError) return error;
    return new ServiceError("unknown", "Unexpected server error", { cause: error });
  }
}

/** The one answer for a job that does not exist or belongs to another owner (the spec's 404 body). */
export const jobNotFound = () => new ServiceError("not_found", "Job not found", { simple: true });
