import type { JsonSchema } from "../schema";

/*
 * The fake provider's request and reply-context types, apart from the server so that its helpers
 * (the oracle, the prompt records) can use them without importing the server that imports them.
 */

/** A chat request as the fake saw it (the parsed JSON body). */
export interface FakeChatRequest {
  model: string;
  messages: { role: string; content?: unknown }[];
  n?: number;
  temperature?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  reasoning_effort?: string;
  response_format?: { type: string; json_schema?: { name?: string; strict?: boolean; schema?: JsonSchema } };
  [field: string]: unknown;
}

export interface RespondContext {
  /** 0 for the first successful chat reply since start (or `reset()`), then 1, 2, ... (for sequences). */
  index: number;
  /** Which of the `n` choices is being produced. */
  choice: number;
  /** What the fake would answer by default (conforming to the request's schema). */
  generated: unknown;
  /** The caller's key, as sent in `Authorization: Bearer`. */
  apiKey: string;
}
