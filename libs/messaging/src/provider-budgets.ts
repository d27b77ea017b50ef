import { createHmac } from "node:crypto";
import { Kvm, type KV, type KvWatchEntry } from "@nats-io/kv";
import { PROVIDER_BUDGET_BUCKET } from "@litrev/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import { streamReplicas } from "./replicas";

/** One replica's place among a key's members; the shape libs/llm's SharedBudgets reports. */
export interface BudgetShare {
  index: number;
  members: number;
}

export interface ProviderBudgetOptions {
  /** The service (its NATS user): NATS lets it write only members under its own name. */
  service: string;
  /** This replica's member name: unique per process (the service's instance id), no dots. */
  member: string;
  /**
   * The deployment's secret the budget ids are keyed with (LLM_BUDGET_SECRET, docs/security.md):
   * without it, anyone who reads the bucket could confirm a guessed provider key offline.
   */
  secret: string | Buffer;
  /** How often a member says it is alive (default 5 s); a member silent for three of these is gone. */
  heartbeatMs?: number;
  /** Keys whose budgets one process takes part in at once (default 64); the longest unused is left. */
  maxBudgets?: number;
}

/** The bucket holds heartbeats only: a few hundred bytes per member and key. */
const BUCKET_MAX_BYTES = 1 << 20;
/** Entries of other members tracked at once, over every key (far above what the bucket can hold). */
const MAX_TRACKED_MEMBERS = 20_000;

/**
 * Membership of the provider keys' shared budgets, in the NATS KV bucket `litrev_llm_budget`: each
 * replica that calls with a key keeps an entry `<budget id>.<member>` alive and watches the key's
 * other entries, and every member derives the same sorted member list, hence its share
 * (libs/llm shared-budget.ts). No call waits on NATS: shares change when members come or go, and
 * a NATS outage leaves each replica with the share it last had.
 *
 * The budget id is an HMAC of the key's SHA-256 under the deployment's secret, so neither the key nor
 * its plain hash is ever stored or published in NATS, and a guessed key cannot be checked against the
 * bucket without the secret. A member is `<service>.<instance>`: NATS permissions let a service
 * write entries under its own name only (libs/messaging/src/permissions.ts).
 */
export class ProviderBudgets {
  readonly #kv: KV;
  /** `<service>.<instance>`. */
  readonly #member: string;
  readonly #secret: string | Buffer;
  readonly #heartbeatMs: number;
  readonly #maxBudgets: number;
  /** Budget id → the other members seen in the bucket, each with when (local clock) it was last heard of. */
  readonly #others = new Map<string, Map<string, number>>();
  #tracked = 0;
  /** Budget ids this replica takes part in → the limiter to tell and the share last told. */
  readonly #budgets = new Map<string, { onShare: (share: BudgetShare) => void; last?: string }>();
  #timer: NodeJS.Timeout | undefined;
  #stopWatch: (() => void) | undefined;

  private constructor(kv: KV, options: ProviderBudgetOptions) {
    this.#kv = kv;
    if (!/^[\w-]+$/.test(options.service) || !/^[\w-]+$/.test(options.member)) throw new Error("a budget member's service and name are letters, digits, '_' or '-'");
    this.#member = `${options.service}.${options.member}`;
    this.#secret = options.secret;
    this.#heartbeatMs = options.heartbeatMs ?? 5_000;
    this.#maxBudgets = options.maxBudgets ?? 64;
  }

  /** Creates the bucket if needed and starts watching it. */
  static async open(nc: NatsConnection, options: ProviderBudgetOptions): Promise<ProviderBudgets> {
    const heartbeatMs = options.heartbeatMs ?? 5_000;
    const kv = await new Kvm(nc).create(PROVIDER_BUDGET_BUCKET, {
      history: 1,
      // Entries of a member that stopped without leaving expire on their own.
      ttl: 3 * heartbeatMs,
      replicas: streamReplicas(),
      max_bytes: BUCKET_MAX_BYTES,
    });
    const budgets = new ProviderBudgets(kv, options);
    await budgets.#watch();
    budgets.#timer = setInterval(() => void budgets.#heartbeat(), heartbeatMs);
    budgets.#timer.unref();
    return budgets;
  }

  /** The budget id of a key, from its SHA-256 (never from the key), keyed with the deployment's secret. */
  budgetId(keyDigest: string): string {
    return createHmac("sha256", this.#secret).update("litrev provider budget\0").update(keyDigest).digest("hex").slice(0, 32);
  }

  /** SharedBudgets.join: takes part in the key's budget and reports this replica's share. */
  join(keyDigest: string, onShare: (share: BudgetShare) => void): void {
    const id = this.budgetId(keyDigest);
    const existing = this.#budgets.get(id);
    if (existing) {
      existing.onShare = onShare;
      delete existing.last;
      this.#report(id);
      return;
    }
    if (this.#budgets.size >= this.#maxBudgets) {
      const [oldest] = this.#budgets.keys();
      this.#budgets.delete(oldest!);
      void this.#kv.delete(this.#entry(oldest!)).catch(() => undefined);
    }
    this.#budgets.set(id, { onShare });
    this.#report(id);
    void this.#kv.put(this.#entry(id), String(Date.now())).catch(() => undefined);
  }

  /** This replica's share of the key's budget as last reported; undefined before it joined. */
  share(keyDigest: string): BudgetShare | undefined {
    const last = this.#budgets.get(this.budgetId(keyDigest))?.last;
    if (!last) return undefined;
    const [index, members] = last.split("/").map(Number);
    return { index: index!, members: members! };
  }

  /** Leaves every budget (graceful shutdown): the other members take over the shares at once. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#stopWatch?.();
    await Promise.all([...this.#budgets.keys()].map((id) => this.#kv.delete(this.#entry(id)).catch(() => undefined)));
    this.#budgets.clear();
    this.#others.clear();
    this.#tracked = 0;
  }

  #entry(id: string): string {
    return `${id}.${this.#member}`;
  }

  async #watch(): Promise<void> {
    const watcher = await this.#kv.watch({ key: ">" });
    this.#stopWatch = () => watcher.stop();
    void (async () => {
      for await (const entry of watcher) this.#seen(entry);
    })().catch(() => undefined);
  }

  /** Every key's members are tracked, not only joined ones: a replica joining later knows the others at once. */
  #seen(entry: KvWatchEntry): void {
    const dot = entry.key.indexOf(".");
    const id = entry.key.slice(0, dot);
    const member = entry.key.slice(dot + 1);
    if (dot <= 0 || member === this.#member) return;
    let members = this.#others.get(id);
    if (entry.operation === "PUT") {
      if (!members) this.#others.set(id, (members = new Map()));
      if (!members.has(member)) {
        if (this.#tracked >= MAX_TRACKED_MEMBERS) return;
        this.#tracked++;
      }
      members.set(member, Date.now());
    } else if (members?.delete(member)) {
      this.#tracked--;
    }
    this.#report(id);
  }

  async #heartbeat(): Promise<void> {
    const now = Date.now();
    for (const [id, members] of this.#others) {
      // Silent for three heartbeats: stopped without leaving (its entry's TTL removes it from the bucket).
      for (const [member, seenAt] of members) {
        if (now - seenAt <= 3 * this.#heartbeatMs) continue;
        members.delete(member);
        this.#tracked--;
      }
      if (members.size === 0) this.#others.delete(id);
      this.#report(id);
    }
    for (const id of this.#budgets.keys()) await this.#kv.put(this.#entry(id), String(now)).catch(() => undefined);
  }

  /** Tells the limiter its share when it changed: its place among the sorted members, itself included. */
  #report(id: string): void {
    const budget = this.#budgets.get(id);
    if (!budget) return;
    const sorted = [this.#member, ...(this.#others.get(id)?.keys() ?? [])].sort();
    const share = { index: sorted.indexOf(this.#member), members: sorted.length };
    const key = `${share.index}/${share.members}`;
    if (budget.last === key) return;
    budget.last = key;
    budget.onShare(share);
  }
}
