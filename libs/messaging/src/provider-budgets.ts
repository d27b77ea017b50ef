import { createHmac } from "node:crypto";
import { Kvm, type KV, type KvWatchEntry } from "@nats-io/kv";
import { PROVIDER_BUDGET_BUCKET } from "@litrev/contracts";
import { jetstreamManager } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { keepStreamLimits } from "./quotas";
import { streamReplicas } from "./replicas";

/** One replica's place among a key's members; the shape libs/llm's SharedBudgets reports. */
export interface BudgetShare {
  index: number;
  members: number;
  /** Calls this replica may have in flight now (its claim, `JoinOptions`); absent: its share of the members. */
  limit?: number;
}

/** What a member's claims need: the key's whole concurrency and this replica's calls in flight. */
export interface JoinOptions {
  concurrency: number;
  inFlight: () => number;
}

/** A member's entry: when it last said it is alive, and the calls it claims of the key's concurrency. */
interface Entry {
  seenAt: number;
  /** Undefined for an entry without a claim (an older member): counted as the largest share. */
  claim: number | undefined;
}

interface Budget {
  onShare: (share: BudgetShare) => void;
  last?: string;
  join?: JoinOptions;
  /** The claim this member last wrote, and what it may use of it: what came back through the watch, no more than any claim written since. */
  published: number;
  echoed: number;
  /** Writes not yet come back (numbered), with their claims. */
  pending: { n: number; claim: number }[];
  writes: number;
  /** The claims could not be written or did not come back in time: its share of the members, as before claims. */
  alone: boolean;
  /** Reports again when a counted claim of another member would go stale. */
  recheck?: NodeJS.Timeout;
}

/** Heartbeats after which a member's claim no longer counts if it was not renewed. */
const CLAIM_FRESH_BEATS = 1.5;

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
  /** Budget id → the other members seen in the bucket, each with when (local clock) it was last heard of and its claim. */
  readonly #others = new Map<string, Map<string, Entry>>();
  #tracked = 0;
  /** Budget ids this replica takes part in → the limiter to tell, the share last told and this member's claim. */
  readonly #budgets = new Map<string, Budget>();
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
    // Entries of a member that stopped without leaving expire on their own, and the server tells every
    // watch so with a delete marker (nats-server 2.11+): the others drop the member then.
    const ttl = 3 * heartbeatMs;
    const kv = await new Kvm(nc).create(PROVIDER_BUDGET_BUCKET, { history: 1, ttl, markerTTL: ttl, replicas: streamReplicas(), max_bytes: BUCKET_MAX_BYTES });
    await keepStreamLimits(await jetstreamManager(nc), `KV_${PROVIDER_BUDGET_BUCKET}`, { allow_msg_ttl: true, subject_delete_marker_ttl: nanos(ttl) });
    const budgets = new ProviderBudgets(kv, options);
    await budgets.#watch();
    budgets.#timer = setInterval(() => budgets.#heartbeat(), heartbeatMs);
    budgets.#timer.unref();
    return budgets;
  }

  /** The budget id of a key, from its SHA-256 (never from the key), keyed with the deployment's secret. */
  budgetId(keyDigest: string): string {
    return createHmac("sha256", this.#secret).update("litrev provider budget\0").update(keyDigest).digest("hex").slice(0, 32);
  }

  /**
   * SharedBudgets.join: takes part in the key's budget and reports this replica's share. With
   * `join` (the key's concurrency and this replica's calls in flight) the share is a claim: a
   * member raises its claim by writing it and uses it only once its entry came back through the
   * watch, by then having seen every claim written before its own; whoever wrote later counted it.
   * So members whose first calls start at once (a key's first use) never take more than the
   * key's concurrency together: each starts at no call until its claim came back (a moment),
   * and a member gives a claim back only down to the calls it still has in flight.
   */
  join(keyDigest: string, onShare: (share: BudgetShare) => void, join?: JoinOptions): void {
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
    const budget: Budget = { onShare, published: 0, echoed: 0, pending: [], writes: 0, alone: false, ...(join ? { join } : {}) };
    this.#budgets.set(id, budget);
    this.#report(id);
    this.#write(id, budget);
    // A claim that never comes back (NATS slow or down): the share of the members seen, rather than no call at all.
    if (join) setTimeout(() => budget.echoed === 0 && budget.published > 0 && ((budget.alone = true), this.#report(id)), 3 * this.#heartbeatMs).unref();
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
    for (const budget of this.#budgets.values()) clearTimeout(budget.recheck);
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

  /** Writes this member's entry: alive now, with its claim. */
  #write(id: string, budget: Budget): void {
    const n = ++budget.writes;
    // Bounded: a write that never comes back is forgotten once 64 newer ones are waiting.
    budget.pending = [...budget.pending.slice(-63), { n, claim: budget.published }];
    void this.#kv.put(this.#entry(id), JSON.stringify({ at: Date.now(), claim: budget.published, n })).catch(() => undefined);
  }

  /** Every key's members are tracked, not only joined ones: a replica joining later knows the others at once. */
  #seen(entry: KvWatchEntry): void {
    const dot = entry.key.indexOf(".");
    const id = entry.key.slice(0, dot);
    const member = entry.key.slice(dot + 1);
    if (dot <= 0) return;
    if (member === this.#member) {
      // This member's own claim came back: every claim written before it has been seen.
      const budget = this.#budgets.get(id);
      if (budget && entry.operation === "PUT") {
        const n = numberOf(entry, "n") ?? 0;
        budget.pending = budget.pending.filter((w) => w.n > n);
        // Members that wrote after a claim still waiting to come back may have counted it: no more than the least of them.
        budget.echoed = Math.min(numberOf(entry, "claim") ?? 0, ...budget.pending.map((w) => w.claim));
        budget.alone = false;
        this.#report(id);
      }
      return;
    }
    let members = this.#others.get(id);
    if (entry.operation === "PUT") {
      if (!members) this.#others.set(id, (members = new Map()));
      if (!members.has(member)) {
        if (this.#tracked >= MAX_TRACKED_MEMBERS) return;
        this.#tracked++;
      }
      // When the server stored it, not when it reached us: a replica that starts after another died
      // must not take the dead one's last entry (replayed by its watch) for a fresh one.
      members.set(member, { seenAt: Math.min(Date.now(), entry.created.getTime()), claim: numberOf(entry, "claim") });
    } else if (members?.delete(member)) {
      // Left, or its entry expired (the server's marker): gone.
      this.#tracked--;
      if (members.size === 0) this.#others.delete(id);
    }
    this.#report(id);
  }

  #heartbeat(): void {
    for (const [id, budget] of this.#budgets) {
      this.#report(id); // a claim above the share is given back as the calls in flight end
      this.#write(id, budget);
    }
  }

  /** Tells the limiter its share when it changed: its place among the sorted members, itself included, and with claims what it may use now. */
  #report(id: string): void {
    const budget = this.#budgets.get(id);
    if (!budget) return;
    const others = this.#others.get(id);
    const sorted = [this.#member, ...(others?.keys() ?? [])].sort();
    const share: BudgetShare = { index: sorted.indexOf(this.#member), members: sorted.length };
    if (budget.join && !budget.alone) share.limit = this.#claim(id, budget, share, others);
    const key = `${share.index}/${share.members}/${share.limit ?? ""}`;
    if (budget.last === key) return;
    budget.last = key;
    budget.onShare(share);
  }

  /** What this member may use now (at most its claim that came back), writing a raised or lowered claim. */
  #claim(id: string, budget: Budget, share: BudgetShare, others: Map<string, Entry> | undefined): number {
    const total = budget.join!.concurrency;
    const largest = shareOf(total, { index: 0, members: share.members });
    // A member claims only while it beats: a claim not renewed within 1.5 heartbeats (a member
    // killed without leaving) stops counting, so a replacement is not held to no call until the
    // dead member's entry expires (3 heartbeats); it still counts among the members until then.
    const now = Date.now();
    let claimed = 0;
    let renewBy = Infinity;
    for (const entry of others?.values() ?? []) {
      const staleAt = entry.seenAt + CLAIM_FRESH_BEATS * this.#heartbeatMs;
      if (staleAt <= now) continue;
      claimed += entry.claim ?? largest;
      renewBy = Math.min(renewBy, staleAt);
    }
    // Asked again when the first counted claim would go stale (a member that beats will have renewed it).
    if (renewBy !== Infinity) {
      clearTimeout(budget.recheck);
      budget.recheck = setTimeout(() => this.#report(id), renewBy - now + 1).unref();
    }
    // Every member keeps one call when there are more members than calls (as shares do), or its jobs would stall.
    const allowed = Math.max(share.members > total ? 1 : 0, Math.min(shareOf(total, share), total - claimed));
    const want = Math.max(allowed, Math.min(budget.published, budget.join!.inFlight()));
    if (want !== budget.published) {
      budget.published = want;
      this.#write(id, budget);
    }
    return Math.min(allowed, budget.echoed);
  }
}

/** A member's part of `total`: an equal split, the remainder to the first members, never below one (libs/llm shared-budget.ts's rule). */
function shareOf(total: number, share: BudgetShare): number {
  const members = Math.max(1, share.members);
  return Math.max(1, Math.floor(total / members) + (share.index < total % members ? 1 : 0));
}

/** A whole number an entry carries: its claim, its write's number (undefined for an entry of an older member, whose value is a time). */
function numberOf(entry: KvWatchEntry, field: "claim" | "n"): number | undefined {
  try {
    const value = (JSON.parse(entry.string()) as Record<string, unknown> | null)?.[field];
    return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  } catch {
    return undefined;
  }
}
