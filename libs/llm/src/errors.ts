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

/**
 * "This model does not exist / is retired": OpenAI answers 404 `model_not_found`, Azure 404
 * `DeploymentNotFound`, vLLM 404 "The model `x` does not exist.", LiteLLM 400 "Invalid model name
 * passed in model=x", Ollama 404 `model "x" not found`. Asking again never helps.
 */
export function isModelNotFound(error: unknown): boolean {
  if (!(error instanceof APIError) || (error.status !== 404 && error.status !== 400)) return false;
  const code = `${error.code ?? ""} ${(error.error as { type?: unknown } | undefined)?.type ?? ""}`;
  if (/model_not_found|deploymentnotfound|model_not_available|notfounderror/i.test(code)) return true;
  const message = providerMessage(error);
  return /\bmodel\b.*\b(does not exist|not found|not exist|is not available|deprecated|decommissioned|retired|shut ?down)/i.test(message)
    || /\b(deployment)\b.*\b(does not exist|not found)/i.test(message)
    || /invalid model name passed/i.test(message); // LiteLLM proxy
}

/** Whether `error` is `modelUnavailableError`'s (the provider's own not-found answer is its cause). */
export function isModelUnavailable(error: unknown): boolean {
  return error instanceof ServiceError && error.category === "validation" && isModelNotFound(error.cause);
}

/** A model the provider does not offer: a 400 `validation` that names it and says how to remap it. */
export function modelUnavailableError(model: string, requested: string, cause?: unknown, pinned = false): ServiceError {
  if (pinned) {
    // A job keeps the model it was admitted with, so a remap cannot rescue it: say what happened.
    return new ServiceError(
      "validation",
      `The language-model provider no longer offers the model '${model}' that this job was pinned to at creation` +
        `${requested === model ? "" : ` (alias '${requested}')`}; a remapped alias applies to new jobs only, so create the job again`,
      { cause },
    );
  }
  const named = requested === model ? `'${model}'` : `'${model}' (alias '${requested}')`;
  const remap =
    requested === model
      ? "send another `model`, or change the service's model with PUT /v1/config/services/{service_id}"
      : `remap the alias with PUT /v1/config/models {"aliases":{"${requested}":"<model>"}}, or send another \`model\``;
  return new ServiceError("validation", `The language-model provider does not offer the model ${named}: ${remap}`, { cause });
}

/** The reply never matched the schema, even after the repair attempts. */
export function invalidReplyError(schemaName: string, attempts: number, problem: string): ServiceError {
  return new ServiceError(
    "model_output",
    `The language model did not return a valid ${schemaName} reply after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${problem}`,
  );
}
