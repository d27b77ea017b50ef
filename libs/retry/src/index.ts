export { backoffDelayMs, realClock, retryWithPolicy } from "./policy";
export type { Backoff, RetryClock, RetryInfo, RetryPolicyOptions } from "./policy";
