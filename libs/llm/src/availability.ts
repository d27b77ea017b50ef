import type { LlmClient, ProviderModel } from "./client";
import { redactSecrets } from "./errors";

/** The part of LlmClient this check needs (a fake in unit tests). */
export type ModelLister = Pick<LlmClient, "listModels" | "resolveModel">;

/**
 * Whether the provider still offers the models a service is configured to use. Self-hosted
 * servers and retired snapshots make "model not found" a configuration problem, best seen on
 * `/health/ready` before the first request fails.
 */
export class ModelAvailability {
  #status: string | undefined;
  #running: Promise<string> | undefined;

  constructor(
    private readonly llm: ModelLister,
    /** Aliases or model names in use now (the service's defaults and its configured model). */
    private readonly wanted: () => readonly string[],
  ) {}

  /** `ok …`, `missing: …`, `error: …`, or undefined before the first check finished. */
  get status(): string | undefined {
    return this.#status;
  }

  /** Lists the provider's models and compares; concurrent calls share one request. */
  check(signal?: AbortSignal): Promise<string> {
    this.#running ??= this.#check(signal).finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #check(signal: AbortSignal | undefined): Promise<string> {
    let offered: ProviderModel[];
    try {
      offered = await this.llm.listModels(signal ? { signal } : {});
    } catch (error) {
      this.#status = `error: could not list the provider's models (${redactSecrets(error instanceof Error ? error.message : String(error))})`;
      return this.#status;
    }
    this.#status = describeAvailability(this.wanted(), offered, (name) => this.llm.resolveModel(name));
    return this.#status;
  }

  /** Checks now and every `intervalMs`; returns the stop function. */
  start(intervalMs: number): () => void {
    const run = () => void this.check().catch(() => undefined);
    run();
    const timer = setInterval(run, intervalMs);
    timer.unref?.();
    return () => clearInterval(timer);
  }
}

/** The readiness text for `wanted` (aliases resolved) against what the provider lists. */
export function describeAvailability(wanted: readonly string[], offered: readonly ProviderModel[], resolve: (name: string) => string): string {
  const byId = new Map(offered.map((model) => [model.id, model]));
  const missing: string[] = [];
  const retiring: string[] = [];
  const seen = new Set<string>();
  for (const name of wanted) {
    const model = resolve(name);
    const label = model === name ? model : `${model} (${name})`;
    if (seen.has(label)) continue;
    seen.add(label);
    const entry = byId.get(model);
    if (!entry) missing.push(label);
    else if (entry.shutdownDate) retiring.push(`${label} on ${entry.shutdownDate}`);
  }
  const parts: string[] = [];
  if (missing.length > 0) parts.push(`missing: ${missing.join(", ")}`);
  if (retiring.length > 0) parts.push(`shutting down: ${retiring.join(", ")}`);
  // Bounded: the text travels in a health reply and a readiness body.
  return parts.length > 0 ? truncate(parts.join("; "), 1000) : `ok (${seen.size} model${seen.size === 1 ? "" : "s"} offered)`;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
