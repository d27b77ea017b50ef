import { z } from "zod";

/**
 * The error taxonomy shared by HTTP bodies (`error_code`) and failed jobs (`error_category`).
 * The first four come from the spec; the rest are documented extensions that tell a client
 * more precisely what to do (see docs/errors.md).
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

/** The spec's three HTTP error bodies. */
export const ClassifiedErrorBody = z.object({
  detail: z.object({ message: z.string(), error_code: z.string(), retryable: z.boolean() }),
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
