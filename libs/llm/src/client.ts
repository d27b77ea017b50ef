import { createHash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import OpenAI, { APIError } from "openai";
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { z } from "zod";
import { ServiceError, allowedModels, modelNotAllowedError, type LlmUsage } from "@litrev/contracts";
import { metrics } from "@litrev/telemetry";
import { LlmAbortError, classifyProviderError, invalidReplyError, isModelNotFound, modelUnavailableError, redactSecrets } from "./errors";
import { RateLimiter, rateLimitedFor, type Slot } from "./limiter";
import type { SharedBudgets } from "./shared-budget";
import { LruCache } from "./lru";
import { DEFAULT_MODEL_ALIASES, loadModelAliases, modelRequestParams, resolveModel, type ReasoningEffort } from "./models";
import { costUsd, estimateTokens, priceFor } from "./pricing";
import { DEFAULT_RETRY_POLICY, deadlineError, withRetry } from "./retry";
import { structuredFormat, type StructuredFormat } from "./schema";
import { providerIdentity, type ProviderIdentity } from "./provider-identity";
import { accumulateUsage, ZERO_USAGE } from "./usage";

/** The subset of a pino logger this library uses (it only reports retries and repairs). */
export interface LlmLogger {
  warn(details: Record<string, unknown>, message: string): void;
}

export interface LlmClientOptions {
  /** Default provider key; falls back to OPENAI_API_KEY. */
  apiKey?: string | undefined;
  /** OpenAI-compatible base URL ending in /v1; falls back to OPENAI_BASE_URL, then OpenAI. */
  baseURL?: string | undefined;
  logger?: LlmLogger | undefined;
  /** Requests in flight per provider key (default 48), across the replicas that share `sharedBudgets`. */
  concurrency?: number | undefined;
  /** The replicas' common membership per key (shared-budget.ts); without it, the budget is this process's alone. */
  sharedBudgets?: SharedBudgets | undefined;
  /** Fixed pace for providers that send no rate-limit headers. */
  requestsPerMinute?: number | undefined;
  tokensPerMinute?: number | undefined;
  /** Timeout of one HTTP attempt (default 60 s). */
  timeoutMs?: number | undefined;
  /** HTTP attempts per request, the first included (default 6). */
  maxAttempts?: number | undefined;
  /** How long a job's (`background`) call waits out the provider's rate limit before it fails (default 1 h). */
  rateLimitWaitMs?: number | undefined;
  /** Budget for a whole `structured` call: retries, waits and repairs (default 120 s). */
  deadlineMs?: number | undefined;
  /**
   * The same budget for an `interactive` call, one a client holds an HTTP request open for
   * (default 15 s): a rate limit that does not clear within it is handed back at once as a
   * `rate_limit` error with a retry-after, for the client to retry later.
   */
  interactiveDeadlineMs?: number | undefined;
  /** Extra requests when a reply does not match the schema (default 2). */
  repairAttempts?: number | undefined;
  /** Backoff for retries without a retry-after header (defaults 500 ms doubling, capped at 20 s). */
  baseDelayMs?: number | undefined;
  maxDelayMs?: number | undefined;
  /** Alias overrides; by default read from LLM_MODEL_ALIASES. */
  modelAliases?: Record<string, string> | undefined;
  /** Provider keys whose SDK client and limiter are kept (default 32). */
  maxCachedKeys?: number | undefined;
  /**
   * Model names allowed besides the live aliases and their targets (`ALLOWED_MODELS`). Set (even
   * empty), every call checks its model against the allowlist; undefined: no allowlist.
   */
  allowedModels?: readonly string[] | undefined;
  /**
   * What the server does with `n` > 1 (`LLM_PROVIDER_N`): `honoured` (OpenAI, vLLM) or `ignored`
   * (one choice per request: Ollama ignores `n`, llama.cpp refuses it). Undefined: learned from
   * the replies. It decides how estimates bill repetitions (`ignoresN`).
   */
  providerN?: "honoured" | "ignored" | undefined;
  /** Called once when a reply first shows the server ignores `n` (the service keeps it across restarts). */
  onLearnedIgnoresN?: (() => void) | undefined;
}

export interface StructuredRequest<S extends z.ZodType> {
  /** An alias (`llm-5-nano`) or a provider model name. */
  model: string;
  /**
   * The provider model to call, already resolved (a job pinned at admission): the live alias table
   * is not consulted, so a remap never moves a running job. `model` is still what the allowlist checks.
   */
  resolvedModel?: string | undefined;
  schema: S;
  /** Name of the response format, letters, digits, `_` and `-`. Keep it stable: it is part of the cached prefix. */
  schemaName: string;
  /** Fixed instructions first: the provider caches exact prompt prefixes. */
  system: string;
  user: string;
  /** Ignored for GPT-5 and o-series models, which only accept the default. */
  temperature?: number | undefined;
  /** For reasoning models this budget includes reasoning tokens. */
  maxOutputTokens?: number | undefined;
  /** Reasoning models only; `minimal` suits short scoring calls. */
  reasoningEffort?: ReasoningEffort | undefined;
  /** Number of choices to sample (default 1). */
  n?: number | undefined;
  /** Use this key instead of the configured one, for this call only. */
  providerKey?: string | undefined;
  /** A synchronous call: the short `interactiveDeadlineMs` budget applies instead of `deadlineMs`. */
  interactive?: boolean | undefined;
  /** A job's call, which no client waits on: a rate limit slows it down, never ends it (see `send`). */
  background?: boolean | undefined;
  signal?: AbortSignal | undefined;
}

/** What a probe of the server's handling of `n` is sent with (`LlmClient.probeN`). */
export interface ProbeOptions {
  model: string;
  resolvedModel?: string | undefined;
  providerKey?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Budget of the probe, retries included (default 30 s). */
  deadlineMs?: number | undefined;
}

/** One entry of the provider's `GET /models`, with a retirement date when the provider reports one. */
export interface ProviderModel {
  id: string;
  /** ISO date or provider text, from fields such as `shutdown_date` or `deprecation.shutdown_date`. */
  shutdownDate?: string | undefined;
}

export interface StructuredResult<T> {
  /** The first valid choice. */
  data: T;
  /** Every choice that parsed and validated (all of them when `n` is 1 and the call succeeded). */
  choices: T[];
  /**
   * Totals over every request the call made, repairs included (all of them are billed): `calls`
   * counts the replies, `retries` the attempts sent again, `models` the replies under the model
   * string the provider reported last.
   */
  usage: LlmUsage;
  /** The model the provider says answered, e.g. `gpt-5-nano-2025-08-07`. */
  modelVersion: string;
}

/** Everything kept per provider key. */
interface Provider {
  digest: string;
  sdk: OpenAI;
  limiter: RateLimiter;
  /** Set once the server refused `n` > 1 (llama.cpp): later calls ask for one choice. */
  singleChoice?: boolean;
  /** Set once a reply to this key gave one choice for `n` > 1 (Ollama). */
  ignoresN?: boolean;
  /** Set once a probe with this key got as many choices as `n` asked for. */
  honoursN?: boolean;
  /** The probe in flight for this key, shared by the jobs that start while it runs. */
  probing?: Promise<void> | undefined;
}

/** The 401 of a call with no provider key: neither a configured one nor the request's X-LLM-API-Key. */
export function noProviderKeyError(): ServiceError {
  return new ServiceError("auth", "No language-model provider key is configured: set OPENAI_API_KEY or send X-LLM-API-Key");
}
/** Echoing a long invalid reply back in a repair prompt costs input tokens for little gain. */
const MAX_REPAIR_ECHO_CHARS = 4000;

/** SHA-256 of a provider key: the only form in which a key is used as a map key or logged. */
export function keyDigest(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/**
 * Structured (JSON-schema) chat completions against any OpenAI-compatible provider, with one
 * retry policy, one limiter per provider key, reply validation and repair, and cost accounting.
 * Create one per process: a key's limiter coordinates the calls of this process, and, given
 * `sharedBudgets`, keeps them to this replica's share of the key's budget.
 */
export class LlmClient {
  private readonly apiKey: string | undefined;
  private readonly baseURL: string | undefined;
  private readonly logger: LlmLogger | undefined;
  private readonly baseAliases: Readonly<Record<string, string>>;
  private aliases: Readonly<Record<string, string>>;
  private readonly timeoutMs: number;
  private readonly deadlineMs: number;
  private readonly interactiveDeadlineMs: number;
  private readonly maxAttempts: number;
  private readonly rateLimitWaitMs: number;
  private readonly repairAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly limiterOptions: { concurrency?: number | undefined; requestsPerMinute?: number | undefined; tokensPerMinute?: number | undefined };
  private readonly providers: LruCache<string, Provider>;
  private readonly sharedBudgets: SharedBudgets | undefined;
  private readonly configuredModels: readonly string[] | undefined;
  private readonly declaredN: "honoured" | "ignored" | undefined;
  /** Set once any key's reply showed the server gives one choice for `n` > 1 (the same server for every key). */
  private learnedSingleChoice = false;
  /** Where `learnedSingleChoice` came from: a reply of this process, or what an earlier run kept. */
  private learnedFrom: "reply" | "kept" | undefined;
  private readonly onLearnedIgnoresN: (() => void) | undefined;
  /** Set once a probe showed the server gives as many choices as `n` asks for. */
  private probedHonoursN = false;

  constructor(options: LlmClientOptions = {}) {
    this.apiKey = nonEmpty(options.apiKey) ?? nonEmpty(process.env.OPENAI_API_KEY);
    this.baseURL = nonEmpty(options.baseURL) ?? nonEmpty(process.env.OPENAI_BASE_URL);
    this.logger = options.logger;
    this.baseAliases = options.modelAliases ? { ...DEFAULT_MODEL_ALIASES, ...options.modelAliases } : loadModelAliases();
    this.aliases = this.baseAliases;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.deadlineMs = options.deadlineMs ?? DEFAULT_RETRY_POLICY.deadlineMs;
    this.interactiveDeadlineMs = Math.min(options.interactiveDeadlineMs ?? DEFAULT_INTERACTIVE_DEADLINE_MS, this.deadlineMs);
    this.maxAttempts = options.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts;
    this.rateLimitWaitMs = options.rateLimitWaitMs ?? 60 * 60_000;
    this.repairAttempts = Math.max(0, options.repairAttempts ?? 2);
    this.baseDelayMs = options.baseDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs;
    this.maxDelayMs = options.maxDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs;
    this.limiterOptions = {
      concurrency: options.concurrency,
      requestsPerMinute: options.requestsPerMinute,
      tokensPerMinute: options.tokensPerMinute,
    };
    this.providers = new LruCache(options.maxCachedKeys ?? 32, (provider) => provider.limiter.busy);
    this.sharedBudgets = options.sharedBudgets;
    this.configuredModels = options.allowedModels;
    this.declaredN = options.providerN;
    this.onLearnedIgnoresN = options.onLearnedIgnoresN;
    // The server key's budget is joined at start, so that replicas know of each other before their
    // first calls rather than after (keys sent with a request join with their first call).
    if (this.apiKey && this.sharedBudgets) this.providerFor(undefined);
  }

  /**
   * Whether the server answers one choice per request whatever `n` says, so R samples cost R
   * requests (and R times the prompt): as declared, else as its replies have shown so far.
   */
  get ignoresN(): boolean {
    return this.declaredN !== undefined ? this.declaredN === "ignored" : this.learnedSingleChoice;
  }

  /**
   * Whether the server behind `providerKey` answers one choice whatever `n` says: as declared, as
   * an earlier run kept, else as this key's own replies and probe have shown (each key may reach a
   * server of its own, so what one key showed does not decide another's request shape).
   */
  ignoresNFor(providerKey: string | undefined): boolean {
    if (this.declaredN !== undefined) return this.declaredN === "ignored";
    if (this.learnedFrom === "kept") return true;
    const key = nonEmpty(providerKey) ?? this.apiKey;
    const provider = key ? this.providers.get(keyDigest(key)) : undefined;
    return provider?.ignoresN === true || provider?.singleChoice === true;
  }

  /** Whether `LLM_PROVIDER_N` declares what the server does with `n` (rather than replies showing it). */
  get declaresN(): boolean {
    return this.declaredN !== undefined;
  }

  /** What the client assumes of `n` and why, for readiness: declared, learned (this run or kept), or assumed honoured. */
  get providerN(): string {
    if (this.declaredN !== undefined) return `${this.declaredN} (declared: LLM_PROVIDER_N)`;
    if (this.learnedSingleChoice) return this.learnedFrom === "kept" ? "ignored (learned by an earlier run, kept in the config bucket)" : "ignored (learned from a reply)";
    if (this.probedHonoursN) return "honoured (found by a probe)";
    return "honoured (assumed until a probe or a reply shows otherwise)";
  }

  /** What an earlier run learned of this server: it ignores `n` (kept in the config bucket). */
  assumeIgnoresN(): void {
    if (this.learnedSingleChoice) return;
    this.learnedSingleChoice = true;
    this.learnedFrom = "kept";
  }

  /**
   * Finds out what the server does with `n` before it matters (a job's first labelling call): one
   * tiny request asking for two choices, unless `n` is declared, already learned or already
   * probed. Returns the probe's usage (it is billed: the caller meters it), zero when nothing was
   * sent. A failed probe is no error: the calls that follow learn from their replies, as before.
   */
  async probeN(options: ProbeOptions): Promise<LlmUsage> {
    if (this.declaredN !== undefined || this.learnedFrom === "kept") return ZERO_USAGE;
    let provider: Provider;
    try {
      provider = this.providerFor(options.providerKey);
    } catch {
      return ZERO_USAGE; // no key: the job's first call says so
    }
    if (provider.ignoresN || provider.singleChoice || provider.honoursN) return ZERO_USAGE;
    if (provider.probing) {
      await provider.probing;
      return ZERO_USAGE;
    }
    let usage: LlmUsage = ZERO_USAGE;
    provider.probing = this.#probe(options, provider).then(
      (used) => void (usage = used),
      (error: unknown) => this.logger?.warn({ err: error instanceof Error ? redactSecrets(error.message) : "unknown" }, "the probe of the provider's n failed; learning it from replies"),
    );
    try {
      await provider.probing;
    } finally {
      provider.probing = undefined;
    }
    return usage;
  }

  async #probe(options: ProbeOptions, provider: Provider): Promise<LlmUsage> {
    this.assertAllowed(options.model);
    const model = options.resolvedModel ?? resolveModel(options.model, this.aliases);
    const deadlineMs = Math.min(this.deadlineMs, options.deadlineMs ?? PROBE_DEADLINE_MS);
    const body: ChatCompletionCreateParamsNonStreaming = {
      model,
      messages: [{ role: "user", content: "Reply with the word ok." }],
      n: 2,
      ...modelRequestParams(model, { maxOutputTokens: PROBE_OUTPUT_TOKENS, reasoningEffort: "minimal" }),
    };
    const slot = await this.slotFor(provider, false, deadlineMs, options.signal);
    try {
      const call = { signal: options.signal, deadlineAt: Date.now() + deadlineMs, deadlineMs, requested: options.model, pinned: options.resolvedModel !== undefined };
      const completion = await this.send(provider, body, call, PROBE_OUTPUT_TOKENS + 8).catch((error: unknown) => {
        if (!refusesChoices(error)) throw error;
        provider.singleChoice = true;
        this.#learnedIgnoresN(provider); // llama.cpp: a 400 for n > 1 (not billed)
        return undefined;
      });
      if (!completion) return ZERO_USAGE;
      if (completion.choices.length === 1) this.#learnedIgnoresN(provider); // Ollama
      else if (completion.choices.length > 1) provider.honoursN = this.probedHonoursN = true;
      return { ...this.usageOf(completion, model, body), retries: 0, models: { [completion.model || model]: 1 } };
    } finally {
      slot.release();
    }
  }

  #learnedIgnoresN(provider: Provider): void {
    provider.ignoresN = true;
    if (this.learnedSingleChoice) return;
    this.learnedSingleChoice = true;
    this.learnedFrom = "reply";
    this.onLearnedIgnoresN?.();
  }

  /** The models calls may name now (live aliases, their targets, ALLOWED_MODELS); undefined without an allowlist. */
  get allowedModels(): string[] | undefined {
    return this.configuredModels ? allowedModels(this.aliases, this.configuredModels) : undefined;
  }

  /** Throws the 400 that names the allowed models when `model` is outside the allowlist. */
  assertAllowed(model: string): void {
    const allowed = this.allowedModels;
    if (allowed && !allowed.includes(model)) throw modelNotAllowedError(model, allowed);
  }

  /** Whether a default key is configured (per-call keys can still be supplied when it is not). */
  get hasDefaultKey(): boolean {
    return this.apiKey !== undefined;
  }

  /** The provider model an alias maps to. */
  resolveModel(modelOrAlias: string): string {
    return resolveModel(modelOrAlias, this.aliases);
  }

  /** The alias table in force: built-in and environment aliases, then the live overrides. */
  get modelAliases(): Readonly<Record<string, string>> {
    return this.aliases;
  }

  /** Where calls go, for a job's provenance: the base URL's host and the kind of server; never a key. */
  get provider(): ProviderIdentity {
    return providerIdentity(this.baseURL);
  }

  /** The built-in and environment aliases, what the live overrides apply over. */
  get defaultModelAliases(): Readonly<Record<string, string>> {
    return this.baseAliases;
  }

  /**
   * Replaces the live alias overrides (from the configuration bucket). Calls already sent keep
   * their model; the next call resolves against the new table.
   */
  setAliasOverrides(overrides: Readonly<Record<string, string>>): void {
    this.aliases = Object.freeze({ ...this.baseAliases, ...overrides });
  }

  /** The provider's `GET /models`, under the key's default (or given) provider key. */
  async listModels(options: { providerKey?: string; signal?: AbortSignal } = {}): Promise<ProviderModel[]> {
    const provider = this.providerFor(options.providerKey);
    return withRetry(
      async ({ signal, remainingMs }) => {
        const models: ProviderModel[] = [];
        // Bounded: a provider listing thousands of models (OpenRouter-style) is cut at 5,000.
        for await (const model of provider.sdk.models.list({ signal, timeout: Math.max(1, Math.min(this.timeoutMs, remainingMs)) })) {
          models.push({ id: model.id, shutdownDate: shutdownDateOf(model) });
          if (models.length >= 5000) break;
        }
        return models;
      },
      { maxAttempts: 2, deadlineMs: Math.min(this.deadlineMs, 15_000), signal: options.signal, baseDelayMs: this.baseDelayMs },
    );
  }

  /** One chat completion whose reply is parsed and validated against `schema`. */
  async structured<S extends z.ZodType>(request: StructuredRequest<S>): Promise<StructuredResult<z.output<S>>> {
    // Checked here too, not only at the gateway: a model set in a service's configuration, or a
    // request reaching NATS by another way, is held to the same allowlist before anything is spent.
    this.assertAllowed(request.model);
    const provider = this.providerFor(request.providerKey);
    const model = request.resolvedModel ?? resolveModel(request.model, this.aliases);
    const deadlineMs = request.interactive ? this.interactiveDeadlineMs : this.deadlineMs;
    const format = structuredFormat(request.schemaName, request.schema);
    const name = format.responseFormat.json_schema.name;
    const messages: ChatCompletionMessageParam[] = [
      { role: "system", content: request.system },
      { role: "user", content: request.user },
    ];

    const slot = await this.slotFor(provider, request.interactive === true, deadlineMs, request.signal);
    const call: Call = { signal: request.signal, deadlineAt: Date.now() + deadlineMs, deadlineMs, requested: request.model, pinned: request.resolvedModel !== undefined, tally: { retries: 0 }, background: request.background === true && !request.interactive };
    try {
      const usages: LlmUsage[] = [];
      let maxOutputTokens = request.maxOutputTokens;
      let repair: ChatCompletionMessageParam[] = [];
      let problem = "the provider returned no choices";
      const rounds = 1 + this.repairAttempts;

      for (let round = 1; round <= rounds; round++) {
        const body: ChatCompletionCreateParamsNonStreaming = {
          model,
          messages: [...messages, ...repair],
          response_format: format.responseFormat,
          ...(request.n !== undefined && request.n !== 1 && !provider.singleChoice ? { n: request.n } : {}),
          ...modelRequestParams(model, {
            temperature: request.temperature,
            maxOutputTokens,
            reasoningEffort: request.reasoningEffort,
          }),
        };
        const estimated = estimateTokens(request.system) + estimateTokens(request.user) + (maxOutputTokens ?? 0);
        const completion = await this.send(provider, body, call, estimated).catch(async (error: unknown) => {
          // A server that refuses several choices (llama.cpp: "Only one completion choice is
          // allowed"): ask for one; the caller sees one choice, as from a server that ignores `n`.
          if (body.n === undefined || !refusesChoices(error)) throw error;
          provider.singleChoice = true;
          this.#learnedIgnoresN(provider);
          const { n: _n, ...single } = body;
          this.logger?.warn({ model, key_digest: provider.digest.slice(0, 12) }, "provider refuses n > 1; asking for one choice per request");
          return this.send(provider, single, call, estimated);
        });
        if ((body.n ?? 1) > 1 && completion.choices.length === 1) this.#learnedIgnoresN(provider); // Ollama
        const modelVersion = completion.model || model;
        usages.push(this.usageOf(completion, model, body));

        const outcome = decodeChoices(format, completion);
        if (outcome.values.length > 0) {
          const [data] = outcome.values as [z.output<S>, ...z.output<S>[]];
          const usage = { ...accumulateUsage(usages), retries: call.tally?.retries ?? 0, models: { [modelVersion]: usages.length } };
          return { data, choices: outcome.values, usage, modelVersion };
        }
        if (outcome.refusal !== undefined) {
          // Asking again will not change the model's mind about this input.
          throw new ServiceError("validation", `The language model refused the request: ${redactSecrets(outcome.refusal)}`);
        }
        problem = outcome.problem;
        this.logger?.warn({ model, schema: name, round, problem, key_digest: provider.digest.slice(0, 12) }, "invalid structured reply");
        if (outcome.truncated) {
          // Cut off by the token limit: the same prompt with more room, no echo of the broken text.
          if (maxOutputTokens !== undefined) maxOutputTokens *= 2;
          repair = [];
        } else {
          repair = [
            { role: "assistant", content: outcome.content.slice(0, MAX_REPAIR_ECHO_CHARS) },
            {
              role: "user",
              content: `Your previous reply was rejected: ${problem}. Reply again with one JSON object that follows the ${name} schema exactly.`,
            },
          ];
        }
      }
      throw invalidReplyError(name, rounds, problem);
    } finally {
      slot.release();
    }
  }

  /**
   * Checks a key with one cheap request (GET /models). Resolves when the provider accepts it,
   * otherwise throws the classified ServiceError (`auth` for a rejected key).
   */
  async verifyKey(options: { providerKey?: string; signal?: AbortSignal } = {}): Promise<void> {
    const provider = this.providerFor(options.providerKey);
    await withRetry(
      async ({ signal, remainingMs }) => {
        await provider.sdk.models.list({ signal, timeout: Math.max(1, Math.min(this.timeoutMs, remainingMs)) });
      },
      { maxAttempts: 2, deadlineMs: Math.min(this.deadlineMs, 15_000), signal: options.signal, baseDelayMs: this.baseDelayMs },
    );
  }

  /**
   * A concurrency slot of the key. A job's call may queue for it as long as it takes (time queued
   * is not part of its deadline); a synchronous call may not: a key paused past its budget answers
   * a rate limit at once, and a queue that outlasts the budget ends the same way (or as a timeout
   * when the key is merely busy).
   */
  private async slotFor(provider: Provider, interactive: boolean, deadlineMs: number, signal: AbortSignal | undefined): Promise<Slot> {
    if (!interactive) return provider.limiter.acquireSlot(signal);
    if (provider.limiter.pausedForMs >= deadlineMs) throw rateLimitedFor(provider.limiter.pausedForMs);
    const budget = AbortSignal.timeout(deadlineMs);
    try {
      return await provider.limiter.acquireSlot(signal ? AbortSignal.any([signal, budget]) : budget);
    } catch (error) {
      if (signal?.aborted || !budget.aborted) throw error;
      throw provider.limiter.pausedForMs > 0 ? rateLimitedFor(provider.limiter.pausedForMs) : deadlineError(deadlineMs);
    }
  }

  /**
   * One HTTP request under the retry policy and the key's limiter. A rate limit that outlasts the retries
   * or the budget ends a call that a client waits on (its 429); a job's call waits it out, up to
   * `rateLimitWaitMs`, and its budget resumes where it stood: the provider's limit slows a job, and
   * fails it only when the provider refuses for that long (a key limited for good).
   */
  private async send(provider: Provider, body: ChatCompletionCreateParamsNonStreaming, call: Call, estimatedTokens: number): Promise<ChatCompletion> {
    const started = Date.now();
    const limitedSince = (call.limitedSince ??= started);
    return this.attempts(provider, body, call, estimatedTokens).catch(async (error: unknown) => {
      if (!call.background || !(error instanceof ServiceError) || error.category !== "rate_limit") throw error;
      if (Date.now() - limitedSince >= this.rateLimitWaitMs) {
        const waited = `${Math.round((Date.now() - limitedSince) / 1000)} s`;
        throw new ServiceError("rate_limit", `The language-model provider kept answering with its rate limit for ${waited} (LLM_RATE_LIMIT_WAIT_MS); check the key's limits with the provider`, { cause: error });
      }
      await delay(error.retryAfterMs ?? 1000, undefined, { signal: call.signal }).catch(() => Promise.reject(new LlmAbortError(call.signal?.reason)));
      call.deadlineAt += Date.now() - started;
      return this.send(provider, body, call, estimatedTokens);
    });
  }

  private async attempts(provider: Provider, body: ChatCompletionCreateParamsNonStreaming, call: Call, estimatedTokens: number): Promise<ChatCompletion> {
    const { signal, deadlineAt, deadlineMs } = call;
    if (signal?.aborted) throw new LlmAbortError(signal.reason);
    if (deadlineAt <= Date.now()) throw deadlineError(deadlineMs);
    return withRetry(
      async ({ signal: attemptSignal }) => {
        for (;;) {
          // A key paused by a 429 beyond this call's budget: hand the rate limit back now rather
          // than wait into a timeout. The same for a send booked past the deadline by the key's pace.
          const remainingMs = Math.max(0, call.deadlineAt - Date.now());
          if (provider.limiter.pausedForMs > 0 && provider.limiter.pausedForMs >= remainingMs) throw rateLimitedFor(provider.limiter.pausedForMs);
          await provider.limiter.pace(attemptSignal, estimatedTokens, deadlineAt);
          try {
            const { data, response } = await provider.sdk.chat.completions
              .create(body, { signal: attemptSignal, timeout: Math.max(1, Math.min(this.timeoutMs, remainingMs)) })
              .withResponse();
            provider.limiter.observe(response.headers);
            metrics.providerCall(body.model, "ok");
            return data;
          } catch (error) {
            const classified = classifyProviderError(error);
            metrics.providerCall(body.model, classified instanceof ServiceError ? classified.category : "aborted");
            if (isModelNotFound(error)) throw modelUnavailableError(body.model, call.requested, error, call.pinned);
            const rateLimited = error instanceof APIError && error.status === 429 && error.code !== "insufficient_quota";
            if (rateLimited) provider.limiter.onRateLimited(error.headers);
            else if (error instanceof APIError) provider.limiter.observe(error.headers);
            if (!rateLimited || !call.background) throw error;
            // A job's 429 is no failed attempt: it waits the key's pause (the provider's retry-after,
            // else a second) with every other caller of the key, not a backoff of its own, and sends again.
            metrics.retries("rate_limit");
            if (call.tally) call.tally.retries++;
          }
        }
      },
      {
        maxAttempts: this.maxAttempts,
        deadlineMs,
        deadlineAt,
        baseDelayMs: this.baseDelayMs,
        maxDelayMs: this.maxDelayMs,
        signal,
        onRetry: ({ attempt, delayMs, error }) => {
          metrics.retries(error.category);
          if (call.tally) call.tally.retries++;
          this.logger?.warn(
            { model: body.model, attempt, delay_ms: Math.round(delayMs), category: error.category, key_digest: provider.digest.slice(0, 12) },
            "language-model call failed; retrying",
          );
        },
      },
    );
  }

  private usageOf(completion: ChatCompletion, requestedModel: string, body: ChatCompletionCreateParamsNonStreaming): LlmUsage {
    // Price by the model that answered when we know it, else by the one we asked for.
    const pricedModel = completion.model && priceFor(completion.model, this.aliases).known ? completion.model : requestedModel;
    const usage = completion.usage;
    // Some self-hosted servers omit usage: estimate it rather than report a free call.
    const inputTokens = usage?.prompt_tokens ?? body.messages.reduce((sum, m) => sum + estimateTokens(String(m.content ?? "")), 0);
    const outputTokens = usage?.completion_tokens ?? completion.choices.reduce((sum, c) => sum + estimateTokens(c.message.content ?? ""), 0);
    const cachedInputTokens = usage?.prompt_tokens_details?.cached_tokens ?? 0;
    const cost = costUsd({ model: pricedModel, inputTokens, cachedInputTokens, outputTokens }, this.aliases);
    metrics.tokens(pricedModel, "input", inputTokens);
    metrics.tokens(pricedModel, "cached_input", cachedInputTokens);
    metrics.tokens(pricedModel, "output", outputTokens);
    metrics.costUsd(pricedModel, cost);
    return { calls: 1, input_tokens: inputTokens, cached_input_tokens: cachedInputTokens, output_tokens: outputTokens, cost_usd: cost };
  }

  private providerFor(providerKey: string | undefined): Provider {
    const override = nonEmpty(providerKey);
    const key = override ?? this.apiKey;
    if (!key) throw noProviderKeyError();
    const digest = keyDigest(key);
    return this.providers.getOrCreate(digest, () => ({
      digest,
      sdk: new OpenAI({
        apiKey: key,
        baseURL: this.baseURL,
        // Our retry policy is the only one: the SDK cannot tell a rate limit from an exhausted quota.
        maxRetries: 0,
        timeout: this.timeoutMs,
        // A caller's own key belongs to its own organisation: never attach ours from the environment.
        ...(override !== undefined && override !== this.apiKey ? { organization: null, project: null } : {}),
      }),
      limiter: this.limiterFor(digest),
      // A server declared to give one choice is never asked for more (llama.cpp would answer 400).
      singleChoice: this.declaredN === "ignored",
    }));
  }

  /** A key's limiter, kept to this replica's share of the key's budget when replicas share it. */
  private limiterFor(digest: string): RateLimiter {
    const limiter = new RateLimiter(this.limiterOptions);
    this.sharedBudgets?.join(digest, (share) => limiter.setShare(share), { concurrency: limiter.keyConcurrency, inFlight: () => limiter.inFlight });
    return limiter;
  }
}

/** What a call's requests share; `deadlineAt` moves on by a job's (`background`) waits for the rate limit. */
type Call = { signal: AbortSignal | undefined; deadlineAt: number; deadlineMs: number; requested: string; pinned?: boolean; tally?: { retries: number }; background?: boolean; limitedSince?: number };

interface DecodedChoices<T> {
  values: T[];
  /** Set when every choice was a refusal or filtered. */
  refusal: string | undefined;
  /** First problem found, and the text it was found in (for the repair prompt). */
  problem: string;
  content: string;
  truncated: boolean;
}

function decodeChoices<S extends z.ZodType>(format: StructuredFormat<S>, completion: ChatCompletion): DecodedChoices<z.output<S>> {
  const values: z.output<S>[] = [];
  const refusals: string[] = [];
  let problem: string | undefined;
  let content = "";
  let truncated = false;
  for (const choice of completion.choices) {
    if (choice.message.refusal) {
      refusals.push(choice.message.refusal);
      continue;
    }
    if (choice.finish_reason === "content_filter") {
      refusals.push("the reply was withheld by the provider's content filter");
      continue;
    }
    const text = choice.message.content ?? "";
    const decoded = format.decode(text);
    if (decoded.ok) {
      values.push(decoded.value);
    } else if (problem === undefined) {
      truncated = choice.finish_reason === "length";
      problem = truncated ? "the reply was cut off at the output-token limit (finish_reason length)" : decoded.problem;
      content = text;
    }
  }
  const allRefused = completion.choices.length > 0 && refusals.length === completion.choices.length;
  return {
    values,
    refusal: allRefused ? refusals[0] : undefined,
    problem: problem ?? "the provider returned no choices",
    content,
    truncated,
  };
}

const DEFAULT_INTERACTIVE_DEADLINE_MS = 15_000;
/** The probe of `n` asks for a word; a reasoning model's budget includes its (minimal) reasoning. */
const PROBE_OUTPUT_TOKENS = 16;
const PROBE_DEADLINE_MS = 30_000;

/** A 400 that rejects the `n` parameter rather than the request. */
function refusesChoices(error: unknown): boolean {
  return (
    error instanceof ServiceError &&
    error.category === "validation" &&
    /only one completion choice|\bn\b[^.]*\b(not supported|must be 1|unsupported)|'n' is not supported/i.test(error.message)
  );
}

/** Retirement dates some providers attach to a model entry (fields vary; none is standard). */
function shutdownDateOf(model: object): string | undefined {
  const record = model as Record<string, unknown>;
  const nested = record.deprecation as Record<string, unknown> | undefined;
  for (const value of [record.shutdown_date, record.deprecation_date, nested?.shutdown_date, nested?.date]) {
    if (typeof value === "string" && value.trim()) return value.trim().slice(0, 64);
    if (typeof value === "number" && Number.isFinite(value)) return new Date(value * (value < 1e12 ? 1000 : 1)).toISOString().slice(0, 10);
  }
  return undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}
