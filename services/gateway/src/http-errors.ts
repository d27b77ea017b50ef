import { SPEC_CODE, ServiceError, type ErrorCategory } from "@litrev/contracts";

/** The one table from error category to HTTP status (docs/errors.md). */
const HTTP_STATUS: Record<ErrorCategory, number> = {
  validation: 400,
  auth: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limit: 429,
  // An exhausted provider account: the spec's `auth` (the original's documentation), so its 401.
  quota: 401,
  // A job larger than its client's whole storage quota: no retry can help.
  too_large: 413,
  unknown: 500,
  // The model answered, but not usably (the spec's codes: a failure on the server's side).
  model_output: 500,
  orphan_cleanup: 500,
  // Jobs only (a cancelled job's category): the client's own request ended the job.
  cancelled: 409,
  not_implemented: 501,
  provider_unavailable: 502,
  service_unavailable: 503,
  timeout: 504,
};

/** A ServiceError as the spec's HTTP status and body (simple, field list, or classified with the spec's code and the finer reason). */
export function toHttp(error: ServiceError): { status: number; body: unknown } {
  const status = HTTP_STATUS[error.category];
  if (error.issues) return { status, body: { detail: error.issues } };
  if (error.simple) return { status, body: { detail: error.message } };
  return { status, body: { detail: { message: error.message, error_code: SPEC_CODE[error.category], error_reason: error.category, retryable: error.retryable } } };
}
