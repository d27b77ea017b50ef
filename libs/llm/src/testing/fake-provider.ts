import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isReasoningModel } from "../models";
import { FakeBucket, formatDuration } from "./fake-bucket";
import type { Oracle } from "./oracle";
import { type FieldRule, sampleFromSchema } from "./json-sample";
import { PROVIDER_PROFILES, SINGLE_CHOICE_MESSAGE, type ProfileName, type ProviderProfile } from "./profiles";
import { messageText, promptRecords, withPromptIds } from "./prompt-records";
import { strictSchemaProblem } from "./strict-check";
import type { FakeChatRequest, RespondContext } from "./fake-types";

/**
 * Forced failure modes, applied to chat requests while `modeTimes` lasts:
 * - `always429`: 429 `rate_limit_exceeded` with retry-after;
 * - `insufficient_quota`: 429 `insufficient_quota` (out of credit);
 * - `status500`: 500 server_error;
 * - `malformed`: 200 whose content is not JSON;
 * - `truncated`: 200 with finish_reason `length` and the JSON cut in half;
 * - `hang`: never answers (until the client gives up or the server closes).
 */
export type FakeMode = "normal" | "always429" | "insufficient_quota" | "status500" | "malformed" | "truncated" | "hang";

export type { FakeChatRequest, RespondContext } from "./fake-types";

export interface FakeBehaviour {
  /** Delay before every non-429 answer. */
  latencyMs?: number;
  /** Keys accepted; others get 401 `invalid_api_key`. Undefined: any key. */
  validKeys?: readonly string[] | undefined;
  /** Per-key budgets; when set, every response carries `x-ratelimit-*` headers. */
  requestsPerMinute?: number | undefined;
  tokensPerMinute?: number | undefined;
  /** Window over which the per-minute budgets are enforced (default 1 s). */
  burstSeconds?: number;
  mode?: FakeMode;
  /** How many chat requests the forced mode applies to before answering normally (default: all). */
  modeTimes?: number | undefined;
  /** `retry-after` of forced 429s (default 1000 ms). */
  retryAfterMs?: number;
  /** More headers on forced 429s, e.g. `x-ratelimit-*` that pause the key for a minute; they win over the budgets'. */
  headers429?: Readonly<Record<string, string>> | undefined;
  /** Values by property name, anywhere in the generated reply. */
  fields?: Readonly<Record<string, FieldRule>> | undefined;
  /**
   * Custom reply content: an object/array/number is sent as JSON, a string as-is; undefined
   * keeps the generated reply.
   */
  respond?: ((request: FakeChatRequest, context: RespondContext) => unknown) | undefined;
  /** Oracle mode (oracle.ts): screening labelling replies from a dataset's labels, used where `respond` gives undefined. */
  oracle?: Pick<Oracle, "respond"> | undefined;
  /** Models that exist; others get 404 `model_not_found`. Undefined: every model exists. */
  knownModels?: readonly string[] | undefined;
  /**
   * Behave like another OpenAI-compatible server (profiles.ts): its path, auth, model names, `n`,
   * `usage`, schema enforcement, error bodies and rate-limit headers. Undefined: OpenAI.
   */
  profile?: ProfileName | undefined;
  /**
   * Automatic prompt caching as OpenAI, Azure and Anthropic-compatible gateways report it: the
   * longest prefix of the prompt sent before (same model), at least 1,024 tokens, in 128-token
   * steps, is reported as `prompt_tokens_details.cached_tokens`. Default on; false: nothing cached.
   */
  promptCache?: boolean | undefined;
}

export interface FakeProviderOptions extends FakeBehaviour {
  port?: number;
  host?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names, as received (authorization included: this is a test double). */
  headers: Record<string, string>;
  body: unknown;
  receivedAt: number;
  /** HTTP status of the answer; undefined while pending (or forever, for `hang`). */
  status?: number;
  /** When the answer was sent. */
  answeredAt?: number;
}

export interface FakeProvider {
  /** Base URL ending in /v1, for `baseURL` / OPENAI_BASE_URL. */
  url: string;
  /** The base URL a profile's server is reached at (Azure: …/openai/v1). */
  baseUrl(profile?: ProfileName): string;
  port: number;
  /** Every request, in arrival order. */
  requests: RecordedRequest[];
  /** Chat-completion requests only. */
  chatRequests(): RecordedRequest[];
  /**
   * Merge new behaviour. Setting `mode` restarts the forced-mode count, and without `modeTimes`
   * the mode lasts until changed.
   */
  setBehaviour(patch: FakeBehaviour): void;
  /** Back to the start options: no recorded requests, counters, budgets or prompt cache. */
  reset(): void;
  close(): Promise<void>;
}

const DATE_SUFFIXES: [RegExp, string][] = [
  [/^gpt-5/, "2025-08-07"],
  [/^gpt-4\.1/, "2025-04-14"],
  [/^gpt-4o-mini/, "2024-07-18"],
];

/** `gpt-5-nano` → `gpt-5-nano-2025-08-07`, as OpenAI reports the snapshot that answered. */
export function datedModel(model: string): string {
  if (/-\d{4}-\d{2}-\d{2}$/.test(model)) return model;
  const suffix = DATE_SUFFIXES.find(([pattern]) => pattern.test(model))?.[1] ?? "2025-01-01";
  return `${model}-${suffix}`;
}

/** Prompt caching's rules at OpenAI: a prefix of at least 1,024 tokens, matched in steps of 128. */
const CACHE_MIN_TOKENS = 1024;
const CACHE_STEP_TOKENS = 128;
/** Prefix digests kept (about 40 bytes each): the oldest are forgotten first. */
const CACHE_MAX_PREFIXES = 200_000;

const REASONING_TOKENS: Record<string, number> = { minimal: 0, low: 64, medium: 192, high: 512 };

function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Starts an OpenAI-compatible HTTP server on 127.0.0.1 (port 0 = any free port). */
export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const { port: requestedPort = 0, host = "127.0.0.1", ...initial } = options;
  let behaviour: FakeBehaviour = { ...initial };
  let forcedUsed = 0;
  let replies = 0;
  let completionIds = 0;
  const requests: RecordedRequest[] = [];
  const budgets = new Map<string, { requests?: FakeBucket; tokens?: FakeBucket }>();
  /** Digests of prompt prefixes at 128-token boundaries, oldest first (bounded, as a real cache evicts). */
  const seenPrefixes = new Set<string>();
  const hanging = new Set<ServerResponse>();

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, undefined, 500, {}, errorBody(String(error), "server_error", null));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = (req.url ?? "/").split("?")[0] as string;
    let body: unknown = undefined;
    let bodyInvalid = false;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        bodyInvalid = true;
      }
    }
    const record: RecordedRequest = { method: req.method ?? "GET", path, headers: flatHeaders(req), body, receivedAt: Date.now() };
    requests.push(record);

    const profile = profileOf(behaviour);
    const bearer = /^Bearer\s+(.+)$/i.exec(record.headers.authorization ?? "")?.[1]?.trim() ?? "";
    const apiKey = profile?.auth === "azure" ? (record.headers["api-key"]?.trim() || bearer) : bearer;
    if (profile?.auth !== "ignored") {
      if (!apiKey) {
        return sendError(res, record, 401, {}, "You didn't provide an API key.", "invalid_request_error", null);
      }
      if (behaviour.validKeys && !behaviour.validKeys.includes(apiKey)) {
        return sendError(res, record, 401, {}, `Incorrect API key provided: ${maskKey(apiKey)}. You can find your API key in your account settings.`, "invalid_request_error", "invalid_api_key");
      }
    }
    // Each server's own base path (Azure: /openai/v1); anything else is a 404 as on the real one.
    const basePath = profile?.basePath ?? "/v1";
    const route = path.startsWith(`${basePath}/`) ? path.slice(basePath.length) : "";

    if (record.method === "GET" && route === "/models") {
      const models = behaviour.knownModels ?? profile?.models ?? ["gpt-5-nano", "gpt-5-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4o-mini"];
      return sendJson(res, record, 200, {}, {
        object: "list",
        data: models.map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "fake-provider" })),
      });
    }
    if (record.method !== "POST" || route !== "/chat/completions") {
      return sendError(res, record, 404, {}, `Invalid URL (${record.method} ${path})`, "invalid_request_error", null);
    }
    if (bodyInvalid || typeof body !== "object" || body === null) {
      return sendError(res, record, 400, {}, "We could not parse the JSON body of your request.", "invalid_request_error", null);
    }
    return chat(body as FakeChatRequest, apiKey || "anonymous", record, res);
  }

  async function chat(request: FakeChatRequest, apiKey: string, record: RecordedRequest, res: ServerResponse): Promise<void> {
    const invalid = requestProblem(request);
    if (invalid) return sendJson(res, record, invalid.status, {}, invalid.body);
    const profile = profileOf(behaviour);

    const askedN = Math.max(1, Math.floor(request.n ?? 1));
    if (profile?.n === "rejected" && askedN > 1) return sendError(res, record, 400, {}, SINGLE_CHOICE_MESSAGE, "invalid_request_error", null);
    const n = profile?.n === "ignored" ? 1 : askedN;
    const promptText = request.messages.map((m) => messageText(m.content)).join("\n");
    const promptTokens = estimateTokens(promptText);
    const maxOutput = request.max_completion_tokens ?? request.max_tokens;
    const now = Date.now();
    const budget = budgetFor(apiKey, now);
    const limitHeaders = (): Record<string, string> => rateLimitHeaders(budget, Date.now(), profile?.rateLimitHeaders ?? "openai");
    const retryHeaders = (ms: number): Record<string, string> => (profile && !profile.retryAfterHeaders ? {} : retryAfterHeaders(ms));

    // Forced 429s come before budgets, the other forced modes after them (like real processing).
    const early = behaviour.mode === "always429" || behaviour.mode === "insufficient_quota";
    let mode: FakeMode = early ? currentMode() : "normal";
    if (mode === "always429") {
      const wait = behaviour.retryAfterMs ?? 1000;
      return sendError(res, record, 429, { ...limitHeaders(), ...retryHeaders(wait), ...behaviour.headers429 }, "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded");
    }
    if (mode === "insufficient_quota") {
      return sendError(res, record, 429, limitHeaders(), "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota");
    }

    // Budgets: OpenAI counts the prompt plus the requested output allowance against the TPM.
    const requestWait = budget.requests?.take(1, now) ?? 0;
    if (requestWait > 0) {
      const limit = budget.requests?.perMinute;
      return sendError(res, record, 429, { ...limitHeaders(), ...retryHeaders(requestWait) }, `Rate limit reached on requests per min (RPM): Limit ${limit}. Please try again in ${formatDuration(requestWait)}.`, "requests", "rate_limit_exceeded");
    }
    const tokenWait = budget.tokens?.take(promptTokens + (maxOutput ?? 0) * n, now) ?? 0;
    if (tokenWait > 0) {
      const limit = budget.tokens?.perMinute;
      return sendError(res, record, 429, { ...limitHeaders(), ...retryHeaders(tokenWait) }, `Rate limit reached on tokens per min (TPM): Limit ${limit}. Please try again in ${formatDuration(tokenWait)}.`, "tokens", "rate_limit_exceeded");
    }

    if (!early) mode = currentMode();
    if (mode === "hang") {
      hanging.add(res);
      res.on("close", () => hanging.delete(res));
      return;
    }
    if (behaviour.latencyMs) await new Promise((resolve) => setTimeout(resolve, behaviour.latencyMs));
    if (mode === "status500") {
      return sendError(res, record, 500, limitHeaders(), "The server had an error while processing your request. Sorry about that!", "server_error", null);
    }

    const index = replies++;
    const schema = request.response_format?.type === "json_schema" ? request.response_format.json_schema?.schema : undefined;
    const reasoning = isReasoningModel(request.model) ? (REASONING_TOKENS[request.reasoning_effort ?? "medium"] ?? 0) : 0;
    const choices = [];
    let completionTokens = 0;
    // Replies that list items quote the ids of the prompt's data-block records, as a model would.
    const ids = promptRecords(request).flatMap((r) => (typeof r.id === "string" ? [r.id] : []));
    for (let choice = 0; choice < n; choice++) {
      const generated = schema ? withPromptIds(sampleFromSchema(schema, { fields: behaviour.fields }), ids) : { answer: "sample text" };
      const context: RespondContext = { index, choice, generated, apiKey };
      const custom = behaviour.respond?.(request, context) ?? behaviour.oracle?.respond(request, context);
      const value = custom === undefined ? generated : custom;
      // A server that does not enforce the schema: every other first reply leaves out a required
      // property, and a repair (the bad reply sent back with the error) comes back right. By reply
      // count alone, concurrent calls could each draw a broken reply at every attempt.
      const repairing = request.messages?.some((m) => m.role === "assistant") === true;
      const broken = profile?.schema === "unenforced" && schema !== undefined && !repairing && (index + choice) % 2 === 0 ? withoutFirstProperty(value) : value;
      let content = typeof broken === "string" ? broken : JSON.stringify(broken);
      let finishReason = "stop";
      if (mode === "malformed") content = `Sure! Here is the JSON you asked for: {${content.slice(1, 20)}`;
      if (mode === "truncated") {
        content = content.slice(0, Math.max(1, Math.floor(content.length / 2)));
        finishReason = "length";
      }
      const tokens = mode === "truncated" && maxOutput !== undefined ? maxOutput : estimateTokens(content) + reasoning;
      completionTokens += tokens;
      choices.push({ index: choice, message: { role: "assistant", content, refusal: null }, finish_reason: finishReason, logprobs: null });
    }

    const fullUsage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: cachedTokens(request, promptText), audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: reasoning * n, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
    const usageMode = profile?.usage ?? "full";
    sendJson(res, record, 200, { ...limitHeaders(), "openai-processing-ms": String(behaviour.latencyMs ?? 0) }, {
      id: `chatcmpl-fake-${++completionIds}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: profile ? profile.replyModel(request.model) : datedModel(request.model),
      choices,
      ...(usageMode === "full" ? { usage: fullUsage } : {}),
      ...(usageMode === "basic" ? { usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens } } : {}),
      service_tier: "default",
      system_fingerprint: "fp_fake",
    });
  }

  /** The checks OpenAI makes that our request builder must pass (model-family quirks, strict schema). */
  function requestProblem(request: FakeChatRequest): { status: number; body: object } | undefined {
    const bad = (message: string, param: string | null, code: string | null) => ({
      status: 400,
      body: { error: { message, type: "invalid_request_error", param, code } },
    });
    if (typeof request.model !== "string" || !request.model) return bad("you must provide a model parameter", "model", null);
    if (!Array.isArray(request.messages) || request.messages.length === 0) return bad("'messages' must be a non-empty array", "messages", null);
    const profile = profileOf(behaviour);
    const offered = behaviour.knownModels ?? (profile && !profile.servesAnyModel ? profile.models : undefined);
    if (offered && !offered.includes(request.model)) return (profile ?? PROVIDER_PROFILES.openai).modelNotFound(request.model);
    if (isReasoningModel(request.model)) {
      if (request.temperature !== undefined && request.temperature !== 1) {
        return bad(`Unsupported value: 'temperature' does not support ${request.temperature} with this model. Only the default (1) value is supported.`, "temperature", "unsupported_value");
      }
      if (request.max_tokens !== undefined) {
        return bad("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter");
      }
    } else if (request.reasoning_effort !== undefined) {
      return bad("Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort", "unsupported_parameter");
    }
    const format = request.response_format;
    if (format?.type === "json_schema") {
      const name = format.json_schema?.name ?? "";
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) return bad("Invalid 'response_format.json_schema.name'.", "response_format", "invalid_value");
      // Only OpenAI-run servers check strict-mode rules; self-hosted ones compile what they get.
      if (format.json_schema?.strict && (profile?.schema ?? "strict") === "strict") {
        const problem = strictSchemaProblem(format.json_schema.schema);
        if (problem) return bad(`Invalid schema for response_format '${name}': ${problem}.`, "response_format", "invalid_json_schema");
      }
    }
    return undefined;
  }

  /** An error in the active profile's shape (OpenAI's without one). */
  function sendError(res: ServerResponse, record: RecordedRequest, status: number, headers: Record<string, string>, message: string, type: string, code: string | null): void {
    const openai = { message, type, code };
    const profile = profileOf(behaviour);
    sendJson(res, record, status, headers, profile ? profile.errorBody(status, openai) : errorBody(message, type, code));
  }

  function currentMode(): FakeMode {
    const mode = behaviour.mode ?? "normal";
    if (mode === "normal") return mode;
    if (forcedUsed >= (behaviour.modeTimes ?? Number.POSITIVE_INFINITY)) return "normal";
    forcedUsed++;
    return mode;
  }

  function budgetFor(apiKey: string, now: number): { requests?: FakeBucket; tokens?: FakeBucket } {
    let budget = budgets.get(apiKey);
    if (!budget) {
      budget = {};
      const burst = behaviour.burstSeconds ?? 1;
      if (behaviour.requestsPerMinute) budget.requests = new FakeBucket(behaviour.requestsPerMinute, burst, now);
      if (behaviour.tokensPerMinute) budget.tokens = new FakeBucket(behaviour.tokensPerMinute, burst, now);
      budgets.set(apiKey, budget);
    }
    return budget;
  }

  /**
   * Automatic prompt caching: the longest prefix of the prompt's text (its messages in order) that
   * an earlier request of the same model sent, counted in 128-token steps from 1,024 tokens on.
   * Every step's prefix is remembered by digest, so a byte-identical prefix is what hits.
   */
  function cachedTokens(request: FakeChatRequest, promptText: string): number {
    if (behaviour.promptCache === false) return 0;
    const stepChars = CACHE_STEP_TOKENS * 4;
    const hash = createHash("sha256").update(`${request.model}\u0000`);
    let cached = 0;
    for (let end = stepChars; end <= promptText.length; end += stepChars) {
      hash.update(promptText.slice(end - stepChars, end));
      const tokens = end / 4;
      if (tokens < CACHE_MIN_TOKENS) continue;
      const key = hash.copy().digest("base64");
      if (seenPrefixes.has(key)) cached = tokens;
      else {
        seenPrefixes.add(key);
        if (seenPrefixes.size > CACHE_MAX_PREFIXES) seenPrefixes.delete(seenPrefixes.values().next().value!);
      }
    }
    return cached;
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(requestedPort, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://${host}:${port}/v1`,
    baseUrl: (profile) => `http://${host}:${port}${profile ? PROVIDER_PROFILES[profile].basePath : "/v1"}`,
    port,
    requests,
    chatRequests: () => requests.filter((r) => r.path.endsWith("/chat/completions")),
    setBehaviour(patch) {
      if ("mode" in patch || "modeTimes" in patch) forcedUsed = 0;
      // New budgets apply from a fresh bucket.
      if ("requestsPerMinute" in patch || "tokensPerMinute" in patch || "burstSeconds" in patch) budgets.clear();
      behaviour = { ...behaviour, ...("mode" in patch && !("modeTimes" in patch) ? { modeTimes: undefined } : {}), ...patch };
    },
    reset() {
      behaviour = { ...initial };
      requests.length = 0;
      forcedUsed = 0;
      replies = 0;
      budgets.clear();
      seenPrefixes.clear();
    },
    close() {
      return new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function rateLimitHeaders(budget: { requests?: FakeBucket; tokens?: FakeBucket }, now: number, style: ProviderProfile["rateLimitHeaders"]): Record<string, string> {
  const headers: Record<string, string> = {};
  if (style === "none") return headers;
  for (const [dimension, bucket] of [["requests", budget.requests], ["tokens", budget.tokens]] as const) {
    if (!bucket) continue;
    headers[`x-ratelimit-remaining-${dimension}`] = String(bucket.remaining(now));
    if (style === "remaining") continue;
    headers[`x-ratelimit-limit-${dimension}`] = String(bucket.perMinute);
    headers[`x-ratelimit-reset-${dimension}`] = formatDuration(bucket.resetMs(now));
  }
  return headers;
}

function profileOf(behaviour: FakeBehaviour): ProviderProfile | undefined {
  return behaviour.profile ? PROVIDER_PROFILES[behaviour.profile] : undefined;
}

/** The reply with its first property dropped: what a server that ignores the schema may send. */
function withoutFirstProperty(value: unknown): unknown {
  if (!value || typeof value !== "object" || Array.isArray(value)) return value;
  const [first] = Object.keys(value);
  if (first === undefined) return value;
  const { [first]: _dropped, ...rest } = value as Record<string, unknown>;
  return rest;
}

function retryAfterHeaders(ms: number): Record<string, string> {
  return { "retry-after-ms": String(Math.ceil(ms)), "retry-after": String(Math.max(1, Math.ceil(ms / 1000))) };
}

function errorBody(message: string, type: string, code: string | null): object {
  return { error: { message, type, param: null, code } };
}

/** OpenAI shows the first and last few characters of a rejected key. */
function maskKey(key: string): string {
  return key.length <= 8 ? "*".repeat(key.length) : `${key.slice(0, 3)}${"*".repeat(Math.min(20, key.length - 7))}${key.slice(-4)}`;
}

function sendJson(res: ServerResponse, record: RecordedRequest | undefined, status: number, headers: Record<string, string>, body: unknown): void {
  if (record) {
    record.status = status;
    record.answeredAt = Date.now();
  }
  if (res.destroyed || res.writableEnded) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload),
    "x-request-id": `req_fake_${Math.random().toString(36).slice(2, 10)}`,
    ...headers,
  });
  res.end(payload);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}
