import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { streamReplicas } from "./replicas";
import { keepStreamLimits, storageQuotas } from "./quotas";
import {
  CONFIG_BUCKET,
  LearnedProviderN,
  MODEL_ALIAS_KEYS,
  ModelAliasTable,
  type ModelAliasesPatch,
  type ModelAliasesResponse,
  ServiceConfigPatch,
  ServiceDefaults,
  applyConfigPatch,
  configKeys,
  defaultServiceConfig,
  type PromptMetadata,
  type ServiceConfigResponse,
} from "@litrev/contracts";

/** One configuration value (a service's defaults with its prompt list, a patch, an alias table). */
const MAX_CONFIG_VALUE_BYTES = 512 * 1024;

/**
 * Service configuration in one JetStream KV bucket: each service announces its defaults (and
 * prompt list) at start-up under `defaults.<id>`; client patches accumulate under
 * `overrides.<id>`. Every replica watches its own keys, so a PUT applies everywhere at once.
 */
export class ConfigStore {
  private constructor(private readonly kv: KV) {}

  /**
   * Creates the bucket (services; bringing its size limit up to date) or, with `create: false`,
   * binds to the existing one (the gateway, whose NATS user may not create streams).
   */
  static async open(nc: NatsConnection, options: { create?: boolean } = {}): Promise<ConfigStore> {
    if (options.create === false) {
      const kv = await new Kvm(nc).open(CONFIG_BUCKET);
      await kv.status(); // `open` only binds: fail here, not in the first read, while the bucket does not exist
      return new ConfigStore(kv);
    }
    const maxBytes = storageQuotas().configBytes;
    const kv = await new Kvm(nc).create(CONFIG_BUCKET, { history: 5, replicas: streamReplicas(), max_bytes: maxBytes, maxValueSize: MAX_CONFIG_VALUE_BYTES });
    await keepStreamLimits(await jetstreamManager(nc), `KV_${CONFIG_BUCKET}`, { max_bytes: maxBytes, max_msg_size: MAX_CONFIG_VALUE_BYTES });
    return new ConfigStore(kv);
  }

  async announce(serviceId: string, defaults: ServiceDefaults): Promise<void> {
    await this.kv.put(configKeys.defaults(serviceId), JSON.stringify(ServiceDefaults.parse(defaults)));
  }

  async effective(serviceId: string): Promise<ServiceConfigResponse> {
    const [defaults, overrides] = await Promise.all([this.#defaults(serviceId), this.#overrides(serviceId)]);
    return merge(serviceId, defaults, overrides.patch);
  }

  /** Applies a patch with compare-and-set, so concurrent PUTs from many gateways all land. */
  async patch(serviceId: string, patch: ServiceConfigPatch): Promise<ServiceConfigResponse> {
    const key = configKeys.overrides(serviceId);
    for (let attempt = 0; ; attempt++) {
      const current = await this.#overrides(serviceId);
      const next = mergePatches(current.patch, patch);
      try {
        if (current.revision === 0) await this.kv.create(key, JSON.stringify(next));
        else await this.kv.update(key, JSON.stringify(next), current.revision);
        return merge(serviceId, await this.#defaults(serviceId), next);
      } catch (error) {
        if (attempt >= 10) throw error;
      }
    }
  }

  /** Drops every override of a service: its configuration is the announced defaults again. */
  async reset(serviceId: string): Promise<ServiceConfigResponse> {
    await this.kv.delete(configKeys.overrides(serviceId));
    return merge(serviceId, await this.#defaults(serviceId), {});
  }

  /** Prompt metadata of every service that has announced itself. */
  async prompts(): Promise<PromptMetadata[]> {
    const keys = await this.kv.keys(configKeys.allDefaults());
    const prompts: PromptMetadata[] = [];
    for await (const key of keys) {
      const entry = await this.kv.get(key);
      const parsed = entry?.operation === "PUT" ? ServiceDefaults.safeParse(entryJson(entry)) : undefined;
      if (parsed?.success) prompts.push(...parsed.data.prompts);
    }
    return prompts.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Ids that have announced defaults or been patched. */
  async serviceIds(): Promise<string[]> {
    const ids = new Set<string>();
    for await (const key of await this.kv.keys()) {
      // Only service keys: the alias table lives under `aliases.*`.
      if (key.startsWith("defaults.") || key.startsWith("overrides.")) ids.add(key.slice(key.indexOf(".") + 1));
    }
    return [...ids].sort();
  }

  /**
   * Calls `onChange` with the effective config now and after every change to the service's
   * defaults or overrides, until the returned stop function is called.
   */
  async watch(
    serviceId: string,
    onChange: (config: ServiceConfigResponse) => void,
    onMalformed?: (key: string) => void,
  ): Promise<() => void> {
    // One filter subject: several (a key list) need nats-server 2.10.
    const watcher = await this.kv.watch({ key: configKeys.anyKind(serviceId) });
    let defaults: ServiceConfigResponse | undefined;
    let overrides: ServiceConfigPatch = {};
    void (async () => {
      for await (const entry of watcher) {
        // A value that is not valid configuration (e.g. garbage written to the bucket) counts as
        // absent: the watch, and the process, carry on.
        const value = entry.operation === "PUT" ? entryJson(entry) : undefined;
        if (entry.key === configKeys.defaults(serviceId)) {
          const parsed = value === undefined ? undefined : ServiceDefaults.safeParse(value);
          if (entry.operation === "PUT" && !parsed?.success) onMalformed?.(entry.key);
          defaults = parsed?.data?.config;
        } else {
          const parsed = value === undefined ? undefined : ServiceConfigPatch.safeParse(value);
          if (entry.operation === "PUT" && !parsed?.success) onMalformed?.(entry.key);
          overrides = parsed?.data ?? {};
        }
        onChange(merge(serviceId, defaults, overrides));
      }
    })().catch(() => undefined); // only a throwing onChange gets here; never an unhandled rejection
    return () => watcher.stop();
  }

  /** What an earlier run of the service learned of its provider's `n`; null when nothing (or nothing readable) is kept. */
  async learnedProviderN(serviceId: string): Promise<LearnedProviderN | null> {
    const entry = await this.kv.get(configKeys.providerN(serviceId));
    if (!entry || entry.length === 0) return null;
    const parsed = LearnedProviderN.safeParse(entryJson(entry));
    return parsed.success ? parsed.data : null;
  }

  async keepProviderN(serviceId: string, learned: LearnedProviderN): Promise<void> {
    await this.kv.put(configKeys.providerN(serviceId), JSON.stringify(LearnedProviderN.parse(learned)));
  }

  /** A service's built-in and environment aliases, under its own key (no service can write another's). */
  async announceModelAliases(serviceId: string, defaults: ModelAliasTable): Promise<void> {
    await this.kv.put(MODEL_ALIAS_KEYS.defaultsOf(serviceId), JSON.stringify(ModelAliasTable.parse(defaults)));
  }

  async modelAliases(): Promise<ModelAliasesResponse> {
    const [defaults, overrides] = await Promise.all([this.#aliasDefaults(), this.#aliasTable(MODEL_ALIAS_KEYS.overrides)]);
    return { aliases: { ...defaults, ...overrides.table }, defaults, overrides: overrides.table };
  }

  /** Every service's announced aliases in one table, merged in the order of the service ids (the same on every gateway). */
  async #aliasDefaults(): Promise<ModelAliasTable> {
    const keys: string[] = [];
    for await (const key of await this.kv.keys(MODEL_ALIAS_KEYS.allDefaults)) keys.push(key);
    const tables = await Promise.all(keys.sort().map(async (key) => (await this.#aliasTable(key)).table));
    return Object.assign({}, ...tables) as ModelAliasTable;
  }

  /** Sets (or, with null, drops) alias overrides with compare-and-set, like `patch`. */
  async patchModelAliases(patch: ModelAliasesPatch): Promise<ModelAliasesResponse> {
    const key = MODEL_ALIAS_KEYS.overrides;
    for (let attempt = 0; ; attempt++) {
      const current = await this.#aliasTable(key);
      const next: ModelAliasTable = { ...current.table };
      for (const [alias, model] of Object.entries(patch.aliases)) {
        if (model === null) delete next[alias];
        else next[alias] = model;
      }
      try {
        if (current.revision === 0) await this.kv.create(key, JSON.stringify(next));
        else await this.kv.update(key, JSON.stringify(next), current.revision);
        const defaults = await this.#aliasDefaults();
        return { aliases: { ...defaults, ...next }, defaults, overrides: next };
      } catch (error) {
        if (attempt >= 10) throw error;
      }
    }
  }

  /**
   * Calls `onChange` with the alias overrides now and after every change, until stopped. Each
   * process applies them over its own built-in and environment aliases.
   */
  async watchModelAliases(onChange: (overrides: ModelAliasTable) => void, onMalformed?: (key: string) => void): Promise<() => void> {
    const watcher = await this.kv.watch({ key: MODEL_ALIAS_KEYS.overrides });
    void (async () => {
      for await (const entry of watcher) {
        const parsed = entry.operation === "PUT" ? ModelAliasTable.safeParse(entryJson(entry)) : undefined;
        if (parsed && !parsed.success) onMalformed?.(entry.key);
        onChange(parsed?.data ?? {});
      }
    })().catch(() => undefined);
    return () => watcher.stop();
  }

  async #aliasTable(key: string): Promise<{ table: ModelAliasTable; revision: number }> {
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== "PUT") return { table: {}, revision: entry?.revision ?? 0 };
    return { table: ModelAliasTable.safeParse(entryJson(entry)).data ?? {}, revision: entry.revision };
  }

  async #defaults(serviceId: string): Promise<ServiceConfigResponse | undefined> {
    const entry = await this.kv.get(configKeys.defaults(serviceId));
    if (!entry || entry.operation !== "PUT") return undefined;
    return ServiceDefaults.safeParse(entryJson(entry)).data?.config;
  }

  async #overrides(serviceId: string): Promise<{ patch: ServiceConfigPatch; revision: number }> {
    const entry = await this.kv.get(configKeys.overrides(serviceId));
    if (!entry || entry.operation !== "PUT") return { patch: {}, revision: entry?.revision ?? 0 };
    return { patch: ServiceConfigPatch.safeParse(entryJson(entry)).data ?? {}, revision: entry.revision };
  }
}

/** The entry's JSON value, or undefined when it is not JSON. */
function entryJson(entry: KvEntry): unknown {
  try {
    return entry.json<unknown>();
  } catch {
    return undefined;
  }
}

function merge(serviceId: string, defaults: ServiceConfigResponse | undefined, patch: ServiceConfigPatch) {
  return applyConfigPatch(defaults ?? defaultServiceConfig(serviceId), patch);
}

/**
 * The stored overrides after a client's patch: a value replaces, `null` drops the override (the
 * default shows again), in `extra` key by key; the stored patch never holds a null.
 */
export function mergePatches(a: ServiceConfigPatch, b: ServiceConfigPatch): ServiceConfigPatch {
  const next: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    if (value === undefined || key === "extra") continue;
    if (value === null) delete next[key];
    else next[key] = value;
  }
  if (b.extra === null) delete next.extra;
  else if (b.extra) {
    const extra: Record<string, unknown> = { ...a.extra };
    for (const [key, value] of Object.entries(b.extra)) {
      if (value === null) delete extra[key];
      else extra[key] = value;
    }
    if (Object.keys(extra).length > 0) next.extra = extra;
    else delete next.extra;
  }
  return next as ServiceConfigPatch;
}
