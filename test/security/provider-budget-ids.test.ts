import { createHash, createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROVIDER_BUDGET_BUCKET } from "@litrev/contracts";
import { NatsLink, ProviderBudgets } from "@litrev/messaging";
import { startNatsServer, type NatsServerHandle } from "../../scripts/lib/launch";

/**
 * Anyone who can read the provider-budget bucket (any service's NATS user) sees every budget id.
 * With the id an HMAC under a public constant, a guessed provider key could be confirmed offline
 * by recomputing it; keyed with the deployment's secret (LLM_BUDGET_SECRET), it cannot.
 */

const KEY = "sk-guessable-provider-key-0001";
const digest = createHash("sha256").update(KEY).digest("hex");
/** What an attacker who knows the code but not the secret computes for a guessed key. */
const PUBLIC_CONSTANTS = ["litrev provider budget", "litrev provider budget\0", ""];

describe("provider budget ids in NATS", () => {
  let nats: NatsServerHandle;
  const links: NatsLink[] = [];
  const budgets: ProviderBudgets[] = [];
  const work = mkdtempSync(join(tmpdir(), "litrev-budget-ids-"));

  beforeAll(async () => {
    nats = await startNatsServer({ storeDir: join(work, "nats") });
  });
  afterAll(async () => {
    await Promise.all(budgets.map((b) => b.close()));
    await Promise.all(links.map((l) => l.close()));
    await nats?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  async function member(name: string, secret: string): Promise<ProviderBudgets> {
    const link = new NatsLink({ servers: nats.url, name });
    links.push(link);
    const opened = await ProviderBudgets.open(await link.ready(), { service: "screening", member: name, secret, heartbeatMs: 500 });
    budgets.push(opened);
    return opened;
  }

  it("cannot be recomputed from a guessed key without the deployment's secret; the same secret gives one budget", async () => {
    const a = await member("screening-a", "deployment-one-budget-secret");
    const b = await member("screening-b", "deployment-one-budget-secret");
    a.join(digest, () => undefined);
    b.join(digest, () => undefined);
    const kv = await new Kvm((await links[0]!.ready())).open(PROVIDER_BUDGET_BUCKET);
    const keys: string[] = [];
    const deadline = Date.now() + 5_000;
    while (keys.length < 2 && Date.now() < deadline) {
      keys.length = 0;
      for await (const key of await kv.keys()) keys.push(key);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(keys).toHaveLength(2);
    const ids = new Set(keys.map((k) => k.split(".")[0]));
    expect(ids.size).toBe(1);
    for (const constant of PUBLIC_CONSTANTS) {
      const guessed = createHmac("sha256", constant).update(digest).digest("hex").slice(0, 32);
      const guessedWithLabel = createHmac("sha256", constant).update("litrev provider budget\0").update(digest).digest("hex").slice(0, 32);
      expect(ids.has(guessed)).toBe(false);
      expect(ids.has(guessedWithLabel)).toBe(false);
    }
    // Another deployment's secret gives another id: nothing to compare across deployments either.
    const other = await member("screening-c", "another-deployment-budget-secret");
    expect(other.budgetId(digest)).not.toBe(a.budgetId(digest));
    // Members are named after their service, the layout NATS permissions check.
    for (const key of keys) expect(key).toMatch(/^[0-9a-f]{32}\.screening\.screening-[ab]$/);
  });
});
