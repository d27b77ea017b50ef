import type { ServiceConfigResponse } from "@litrev/contracts";
import type { z } from "zod";
import type { StructuredCaller } from "../pipeline/extract-record";
import { systemPrompt, type PromptKey } from "../prompts";

/** A helper endpoint's structured call to the model: low effort, at least `minOutputTokens` of reply. */
export function askHelper<S extends z.ZodType>(
  llm: StructuredCaller,
  config: ServiceConfigResponse,
  call: { prompt: PromptKey; schema: S; schemaName: string; model: string; user: string; minOutputTokens: number },
  providerKey: string | undefined,
  signal: AbortSignal | undefined,
) {
  return llm.structured({
    model: call.model,
    schema: call.schema,
    schemaName: call.schemaName,
    system: systemPrompt(config, call.prompt),
    user: call.user,
    temperature: config.temperature,
    maxOutputTokens: Math.max(config.max_output_tokens, call.minOutputTokens),
    reasoningEffort: "low",
    providerKey,
    signal,
    // Synchronous endpoint: a rate limit that does not clear soon goes back to the client as a 429.
    interactive: true,
  });
}
