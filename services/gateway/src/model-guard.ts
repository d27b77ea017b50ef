import { MODEL, allowedModels, modelNotAllowedError, type ModelAliasesResponse } from "@litrev/contracts";
import type { GatewayDeps } from "./deps";

/** How long the alias table read from the config bucket is trusted before a re-read. */
const TABLE_TTL_MS = 5_000;

/**
 * The deployment's model allowlist at the edge: the live alias table (aliases and the models they
 * point at, GET /v1/config/models) plus `ALLOWED_MODELS`. The table is read from the config bucket
 * and kept for a few seconds; a name not in the kept copy is checked against a fresh read before
 * the 400, so an alias added a moment ago on another replica is never refused.
 */
export class ModelGuard {
  #table: { allowed: Set<string>; list: string[]; readAt: number } | undefined;
  #reading: Promise<void> | undefined;
  readonly #always: Set<string>;

  constructor(
    private readonly configured: readonly string[],
    private readonly readAliases: () => Promise<ModelAliasesResponse>,
    private readonly now: () => number = Date.now,
  ) {
    this.#always = new Set([...Object.values(MODEL), ...configured]);
  }

  /** Resolves when `model` is allowed; rejects with the 400 that names what is allowed. */
  async check(model: string): Promise<void> {
    // The spec's names and ALLOWED_MODELS need no read: the common request costs nothing here.
    if (this.#always.has(model)) return;
    const table = this.#table;
    if (table && table.allowed.has(model) && this.now() - table.readAt < TABLE_TTL_MS) return;
    await this.#refresh();
    const fresh = this.#table!;
    if (!fresh.allowed.has(model)) throw modelNotAllowedError(model, fresh.list);
  }

  /** One read at a time: a burst of requests shares it. */
  #refresh(): Promise<void> {
    this.#reading ??= this.readAliases()
      .then(({ aliases }) => {
        // The spec's own model names stay allowed even before any service has announced its table.
        const list = allowedModels(aliases, [...Object.values(MODEL), ...this.configured]);
        this.#table = { allowed: new Set(list), list, readAt: this.now() };
      })
      .finally(() => (this.#reading = undefined));
    return this.#reading;
  }
}

/** The guard of one gateway process, over its config bucket. */
export function modelGuardFor(deps: Pick<GatewayDeps, "env" | "configStore" | "link">): ModelGuard {
  return new ModelGuard(deps.env.ALLOWED_MODELS, async () => {
    deps.link.connection(); // fail fast with a retryable error while NATS is down
    return (await deps.configStore()).modelAliases();
  });
}
