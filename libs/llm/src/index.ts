export { ModelAvailability, describeAvailability } from "./availability";
export type { ModelLister } from "./availability";
export { LlmClient, keyDigest, noProviderKeyError } from "./client";
export type { LlmClientOptions, LlmLogger, ProviderModel, StructuredRequest, StructuredResult } from "./client";
export {
  LlmAbortError,
  classifyProviderError,
  invalidReplyError,
  isAbortError,
  isModelNotFound,
  isModelUnavailable,
  modelUnavailableError,
  redactSecrets,
} from "./errors";
export { errorHeaders, parseResetDuration, readRateLimitHeaders, retryAfterMs } from "./headers";
export type { HeaderReader, RateLimitSnapshot } from "./headers";
export { DEFAULT_CONCURRENCY, RateLimiter } from "./limiter";
export type { LimiterOptions, Slot } from "./limiter";
export { shareOf, type BudgetShare, type SharedBudgets } from "./shared-budget";
export {
  DEFAULT_MODEL_ALIASES,
  baseModelName,
  chooseModel,
  isReasoningModel,
  loadModelAliases,
  ModelAliasesEnv,
  modelRequestParams,
  resolveModel,
  sentParameters,
} from "./models";
export type { GenerationSettings, ModelRequestParams, ReasoningEffort } from "./models";
export { CostCeiling, PRICES, costAt, costCeiling, costUsd, estimateTokens, loadModelPrices, meteredCost, priceFor, requirePrice } from "./pricing";
export type { ModelPrice, PriceLookup, TokenCounts } from "./pricing";
export { DEFAULT_RETRY_POLICY, RETRIED_CATEGORIES, deadlineError, withRetry, withRetryAfter } from "./retry";
export type { AttemptContext, RetryClock, RetryInfo, RetryOptions, RetryPolicy } from "./retry";
export { StrictSchemaError, responseFormat, schemaName, structuredFormat, toStrictJsonSchema } from "./schema";
export type { DecodeResult, JsonSchema, JsonSchemaResponseFormat, StructuredFormat } from "./schema";
export { providerIdentity } from "./provider-identity";
export type { ProviderIdentity } from "./provider-identity";
export { ZERO_USAGE, accumulateUsage, addUsage, firstModel, toContractUsage } from "./usage";
