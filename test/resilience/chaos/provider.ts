import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder, promptRecord } from "../../../services/indexer/src/testing/responder";
import { promptTitles, schemaNameOf, screeningResponder } from "../../e2e/screening-fixtures";
import type { History } from "./history";

/**
 * The fake OpenAI-compatible provider of a chaos run, and a tap that moves its recorded chat calls
 * into the history (then drops them, so a long run holds no request bodies). Every paper and
 * record title starts with `[<unit id>]`, which names the job and the item a call was made for.
 */

export const unitTag = (unit: string, title: string) => `[${unit}] ${title}`;
const tagOf = (title: string | undefined) => /^\[([^\]\s]+)\]/.exec(title ?? "")?.[1];

export interface ChaosProvider {
  provider: FakeProvider;
  /** Moves the calls recorded so far into the history. */
  drain(): void;
  close(): Promise<void>;
}

export async function startChaosProvider(history: History, latencyMs: number): Promise<ChaosProvider> {
  const screening = screeningResponder();
  const extraction = extractionResponder();
  const provider = await startFakeProvider({
    latencyMs,
    respond: (request, context) => (schemaNameOf(request).startsWith("screening_") ? screening(request, context) : extraction(request)),
  });
  const drain = () => {
    const calls = provider.requests.splice(0, provider.requests.length);
    for (const call of calls) {
      if (call.path !== "/v1/chat/completions") continue;
      const request = call.body as FakeChatRequest;
      const schema = schemaNameOf(request);
      if (schema.startsWith("screening_labels_")) {
        const units = promptTitles(request).map(tagOf).filter((u): u is string => u !== undefined);
        history.add("provider", "ok", { f: "call", call: "label", units, http: call.status }, call.receivedAt);
      } else if (schema === "indexer_extraction") {
        const unit = tagOf(promptRecord(request)?.title);
        history.add("provider", "ok", { f: "call", call: "extract", units: unit ? [unit] : [], http: call.status }, call.receivedAt);
      } else {
        history.add("provider", "ok", { f: "call", call: "other", http: call.status }, call.receivedAt);
      }
    }
  };
  const timer = setInterval(drain, 1_000);
  return {
    provider,
    drain,
    async close() {
      clearInterval(timer);
      drain();
      await provider.close();
    },
  };
}
