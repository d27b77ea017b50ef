import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { LlmAbortError, classifyProviderError, invalidReplyError, isModelNotFound, isModelUnavailable, modelUnavailableError, redactSecrets } from "./errors";

/** An SDK error exactly as the SDK builds it from an HTTP answer. */
function httpError(status: number, error: Record<string, unknown>, headers: Record<string, string> = {}): APIError {
  return APIError.generate(status, { error }, undefined, new Headers(headers));
}

function classify(error: unknown): ServiceError {
  const classified = classifyProviderError(error);
  expect(classified).toBeInstanceOf(ServiceError);
  return classified as ServiceError;
}

describe("classifyProviderError", () => {
  const key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";

  it.each([401, 403])("maps %i to auth without echoing the provider's text or the key", (status) => {
    const masked = `${key.slice(0, 8)}****${key.slice(-4)}`;
    const error = classify(httpError(status, { message: `Incorrect API key provided: ${masked} (full ${key})`, code: "invalid_api_key" }));
    expect(error.category).toBe("auth");
    expect(error.retryable).toBe(false);
    expect(error.message).toBe("The language-model provider rejected the API key");
    const everything = JSON.stringify({ wire: error.toWire(), message: error.message, cause: String(error.cause) });
    expect(everything).not.toContain(key.slice(-4));
    expect(everything).not.toContain(key.slice(0, 8));
  });

  it("tells an exhausted quota (never retry) from a rate limit (retry)", () => {
    const quota = classify(httpError(429, { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" }));
    expect(quota.category).toBe("quota");
    expect(quota.retryable).toBe(false);
    const limited = classify(httpError(429, { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" }, { "retry-after": "2" }));
    expect(limited.category).toBe("rate_limit");
    expect(limited.retryable).toBe(true);
  });

  it("maps 400 and 404 (unknown model) to validation, quoting the provider", () => {
    const bad = classify(httpError(400, { message: "Unsupported value: 'temperature' does not support 0.2 with this model.", code: "unsupported_value" }));
    expect(bad.category).toBe("validation");
    expect(bad.retryable).toBe(false);
    expect(bad.message).toBe("provider rejected the request: Unsupported value: 'temperature' does not support 0.2 with this model.");
    const missing = classify(httpError(404, { message: "The model `gpt-9` does not exist or you do not have access to it.", code: "model_not_found" }));
    expect(missing.category).toBe("validation");
    expect(missing.message).toContain("gpt-9");
  });

  it.each([500, 502, 503, 529])("maps %i to a retryable provider_unavailable", (status) => {
    const error = classify(httpError(status, { message: "boom" }));
    expect(error.category).toBe("provider_unavailable");
    expect(error.retryable).toBe(true);
  });

  it("maps connection failures and timeouts", () => {
    const connection = classify(new APIConnectionError({ cause: new TypeError("fetch failed") }));
    expect(connection.category).toBe("provider_unavailable");
    expect(connection.retryable).toBe(true);
    const timeout = classify(new APIConnectionTimeoutError());
    expect(timeout.category).toBe("timeout");
    expect(timeout.retryable).toBe(true);
    expect(classify(new TypeError("fetch failed")).category).toBe("provider_unavailable");
  });

  it("turns a cancellation into LlmAbortError, not a ServiceError", () => {
    expect(classifyProviderError(new APIUserAbortError())).toBeInstanceOf(LlmAbortError);
    expect(classifyProviderError(new DOMException("aborted", "AbortError"))).toBeInstanceOf(LlmAbortError);
  });

  it("passes ServiceErrors through and hides unexpected errors behind unknown", () => {
    const existing = new ServiceError("quota", "already classified");
    expect(classifyProviderError(existing)).toBe(existing);
    const unexpected = classify(new RangeError("internal detail"));
    expect(unexpected.category).toBe("unknown");
    expect(unexpected.message).not.toContain("internal detail");
  });

  it("redacts anything key-shaped from provider text it does quote", () => {
    const error = classify(httpError(400, { message: `bad request for ${key}` }));
    expect(error.message).not.toContain(key.slice(5));
    expect(redactSecrets("Authorization: Bearer abc.def")).toBe("Authorization: Bearer [redacted]");
  });

  it("tells a model the provider does not offer from other validation errors (an indexer job stops on it)", () => {
    const notFound = httpError(404, { message: "The model `gpt-9` does not exist or you do not have access to it.", code: "model_not_found" });
    expect(isModelUnavailable(modelUnavailableError("gpt-9", "llm-5-nano", notFound, true))).toBe(true);
    expect(isModelUnavailable(classify(httpError(400, { message: "bad temperature", code: "unsupported_value" })))).toBe(false);
    expect(isModelUnavailable(new Error("gpt-9"))).toBe(false);
  });

  it("builds the invalid-reply error as model_output (a known cause, never `unknown`), naming the schema", () => {
    const error = invalidReplyError("screening_decision", 3, "the reply is not valid JSON");
    expect(error.category).toBe("model_output");
    expect(error.message).toBe("The language model did not return a valid screening_decision reply after 3 attempts: the reply is not valid JSON");
  });
});

describe("isModelNotFound", () => {
  it.each([
    ["OpenAI", 404, { message: "The model `gpt-9` does not exist or you do not have access to it.", type: "invalid_request_error", code: "model_not_found" }],
    ["Azure", 404, { code: "DeploymentNotFound", message: "The API deployment for this resource does not exist." }],
    ["Ollama", 404, { message: 'model "qwen9" not found, try pulling it first', type: "api_error" }],
    ["LiteLLM", 400, { message: "/chat/completions: Invalid model name passed in model=x. Call `/v1/models` to view available models for your key.", type: "None", code: "400" }],
    ["a retired model", 404, { message: "The model `text-davinci-003` has been deprecated." }],
  ])("recognises %s's answer", (_server, status, body) => {
    expect(isModelNotFound(httpError(status, body))).toBe(true);
  });

  it("recognises vLLM's top-level error body", () => {
    const body = { object: "error", message: "The model `qwen` does not exist.", type: "NotFoundError", param: null, code: 404 };
    expect(isModelNotFound(APIError.generate(404, body, JSON.stringify(body), new Headers()))).toBe(true);
  });

  it.each([
    "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
    "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
    "Invalid schema for response_format 'x': additionalProperties must be false.",
  ])("leaves other 400s alone: %s", (message) => {
    expect(isModelNotFound(httpError(400, { message, type: "invalid_request_error" }))).toBe(false);
    expect(isModelNotFound(httpError(429, { message: "model rate limit; model not found" }))).toBe(false);
  });

  it("names the model, its alias and the remedy", () => {
    expect(modelUnavailableError("gpt-5-nano", "llm-5-nano").message).toContain(`PUT /v1/config/models {"aliases":{"llm-5-nano":"<model>"}}`);
    expect(modelUnavailableError("gpt-9", "gpt-9").message).toContain("PUT /v1/config/services/{service_id}");
  });
});
