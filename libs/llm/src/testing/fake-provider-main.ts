/**
 * Runs the fake provider on its own, for manual runs and local stacks:
 *   PORT=8089 FAKE_LATENCY_MS=200 FAKE_RPM=1200 tsx libs/llm/src/testing/fake-provider-main.ts
 * then point OPENAI_BASE_URL at the printed URL. Optional: FAKE_TPM, FAKE_VALID_KEYS (comma list),
 * FAKE_MODE (always429, insufficient_quota, status500, malformed, truncated, hang), FAKE_PROFILE
 * (a server to imitate: azure, vllm, ollama, ollama-cloud, llamacpp, litellm; docs/providers.md), and
 * oracle mode (oracle.ts): FAKE_ORACLE_DATASET=data/synergy/Sep_2021.jsonl.gz FAKE_ORACLE_RATES=0.9,0.8
 * (per-vote sensitivity, specificity) FAKE_ORACLE_SEED=1.
 */
import { type FakeMode, startFakeProvider } from "./fake-provider";
import { createOracle, loadOracleRecords } from "./oracle";
import { PROVIDER_PROFILES, type ProfileName } from "./profiles";

const MODES: readonly FakeMode[] = ["normal", "always429", "insufficient_quota", "status500", "malformed", "truncated", "hang"];

function numberFromEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return value;
}

const mode = (process.env.FAKE_MODE ?? "normal") as FakeMode;
if (!MODES.includes(mode)) throw new Error(`FAKE_MODE must be one of ${MODES.join(", ")}`);

const profile = process.env.FAKE_PROFILE || undefined;
if (profile !== undefined && !Object.hasOwn(PROVIDER_PROFILES, profile)) {
  throw new Error(`FAKE_PROFILE must be one of ${Object.keys(PROVIDER_PROFILES).join(", ")}`);
}
const oracleRates = (process.env.FAKE_ORACLE_RATES ?? "0.9,0.8").split(",").map(Number);
const oracle = process.env.FAKE_ORACLE_DATASET
  ? createOracle({
      records: loadOracleRecords(process.env.FAKE_ORACLE_DATASET),
      sensitivity: oracleRates[0]!,
      specificity: oracleRates[1]!,
      seed: process.env.FAKE_ORACLE_SEED ?? 1,
    })
  : undefined;

const provider = await startFakeProvider({
  port: numberFromEnv("PORT") ?? 0,
  host: process.env.HOST ?? "127.0.0.1",
  latencyMs: numberFromEnv("FAKE_LATENCY_MS") ?? 0,
  requestsPerMinute: numberFromEnv("FAKE_RPM"),
  tokensPerMinute: numberFromEnv("FAKE_TPM"),
  validKeys: process.env.FAKE_VALID_KEYS ? process.env.FAKE_VALID_KEYS.split(",").map((k) => k.trim()).filter(Boolean) : undefined,
  mode,
  profile: profile as ProfileName | undefined,
  oracle,
});
console.log(provider.baseUrl(profile as ProfileName | undefined));

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void provider.close().then(() => process.exit(0));
  });
}
