import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { ServiceError } from "@litrev/contracts";

/**
 * The caller cancelled (its AbortSignal fired). Not a ServiceError on purpose: a cancellation is
 * neither a provider failure to report nor something to retry, so it must travel up untouched.
 */
export class LlmAbortError extends Error {
  override readonly name = "AbortError";
  constructor(reason?: unknown) {
    super("The language-model call was cancelled", reason === undefined ? undefined : { cause: reason });
  }
}

export function isAbortError(error: unknown): error is LlmAbortError {
  return error instanceof LlmAbortError;
}

/** Provider messages can quote the key (OpenAI's 401 shows a masked one); never pass such text on. */
export function redactSecrets(text: string): string {
  return text
    .replace(/\bsk-[A-Za-z0-9_*.-]{3,}/g, "[redacted]")
    .replace(/\bBearer\s+\S+/gi, "Bearer [redacted]")
    .slice(0, 500);
}

function providerMessage(error: APIError): string {
  const body = error.error as { message?: unknown } | undefined;
  const message = typeof body?.message === "string" && body.message ? body.message : error.message;
  return redactSecrets(message);
}

/** Maps anything a provider call can throw to a ServiceError, or to LlmAbortError for a cancellation. */
export function classifyProviderError(error: unknown): ServiceError | LlmAbortError {
  if (error instanceof ServiceError || error instanceof LlmAbortError) return error;
  // Order matters: the SDK's abort and timeout errors are subclasses of APIConnectionError/APIError.
  if (error instanceof APIUserAbortError) return new LlmAbortError(error);
  if (error instanceof APIConnectionTimeoutError) {
    return new ServiceError("timeout", "The language-model provider did not answer in time", { cause: error });
  }
  if (error instanceof APIConnectionError) {
    return new ServiceError("provider_unavailable", "The language-model provider could not be reached", { cause: error });
  }
  if (error instanceof APIError && typeof error.status === "number") return classifyStatus(error, error.status);
  if (error instanceof Error && error.name === "AbortError") return new LlmAbortError(error);
  if (error instanceof Error && error.name === "TimeoutError") {
    return new ServiceError("timeout", "The language-model provider did not answer in time", { cause: error });
  }
  if (error instanceof TypeError && /fetch failed|network|socket/i.test(error.message)) {
    return new ServiceError("provider_unavailable", "The language-model provider could not be reached", { cause: error });
  }
  return new ServiceError("unknown", "Unexpected error while calling the language-model provider", { cause: error });
}

function classifyStatus(error: APIError, status: number): ServiceError {
  if (status === 401 || status === 403) {
    // No cause attached: the SDK error's message quotes the provider's text, which may echo the key.
    return new ServiceError("auth", "The language-model provider rejected the API key");
  }
  if (status === 429) {
    // Out of credit looks like a rate limit on the wire but never clears by waiting.
    if (error.code === "insufficient_quota" || error.type === "insufficient_quota") {
      return new ServiceError("quota", "The language-model provider account has no quota left (insufficient_quota)", { cause: error });
    }
    return new ServiceError("rate_limit", "The language-model provider's rate limit was exceeded", { cause: error });
  }
  if (status === 400 || status === 404 || status === 413 || status === 422) {
    return new ServiceError("validation", `provider rejected the request: ${providerMessage(error)}`, { cause: error });
  }
  if (status === 408) return new ServiceError("timeout", "The language-model provider did not answer in time", { cause: error });
  // 409 is a transient conflict at OpenAI (the SDK retries it too); 5xx are outages.
  if (status === 409 || status >= 500) {
    return new ServiceError("provider_unavailable", `The language-model provider is unavailable (HTTP ${status})`, { cause: error });
  }
  return new ServiceError("unknown", `The language-model provider answered with HTTP ${status}: ${providerMessage(error)}`, { cause: error });
}

/** The reply never matched the schema, even after the repair attempts. */
export function invalidReplyError(schemaName: string, attempts: number, problem: string): ServiceError {
  return new ServiceError(
    "unknown",
    `The language model did not return a valid ${schemaName} reply after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${problem}`,
  );
}
