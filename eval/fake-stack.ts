import { createOracle, startFakeProvider, type Oracle } from "@litrev/llm/testing";
import { startStack, TEST_API_KEY, type StackOptions } from "../test/support/stack";
import type { LabelledRecord } from "./datasets";

export interface FakeStack {
  baseUrl: string;
  apiKey: string;
  oracle: Oracle;
  stop(): Promise<void>;
}

/**
 * For runs without a provider (`--fake-oracle sens,spec`): a nats-server, the gateway and one
 * screening worker as separate processes, exactly as `npm start` runs them, pointed at the fake
 * provider answering labelling calls from the review's own labels (oracle mode). The figures then
 * measure the service and the harness, not a language model. One that does not come up within
 * `startTimeoutMs` is stopped whole (its processes and the fake provider) before the error reaches the caller.
 */
export async function startFakeStack(
  records: readonly LabelledRecord[],
  rates: { sensitivity: number; specificity: number; seed: number },
  options: Pick<StackOptions, "startTimeoutMs" | "signal"> = {},
): Promise<FakeStack> {
  const oracle = createOracle({ records, ...rates });
  const provider = await startFakeProvider({ oracle });
  try {
    const stack = await startStack({
      services: { screening: 1 },
      startTimeoutMs: options.startTimeoutMs,
      signal: options.signal,
      env: { OPENAI_API_KEY: "sk-fake-oracle", OPENAI_BASE_URL: provider.url },
    });
    return {
      baseUrl: stack.baseUrl,
      apiKey: TEST_API_KEY,
      oracle,
      async stop() {
        await stack.stop();
        await provider.close();
      },
    };
  } catch (error) {
    await provider.close();
    throw error;
  }
}
