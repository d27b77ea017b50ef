import { describe, expect, it } from "vitest";
import { CheckedGatewayEnv, serviceKeys } from "./env";

const SECRET = "env-test-job-key-secret-0123";
const parse = (env: Record<string, string>) => CheckedGatewayEnv.safeParse({ JOB_KEY_SECRET: SECRET, ...env });

describe("gateway service keys (API_KEY, API_KEYS)", () => {
  it("reads API_KEY as the default owner's admin keys, exactly as before", () => {
    const parsed = parse({ API_KEY: "one-key, two-key ,one-key" });
    expect(parsed.success).toBe(true);
    expect(serviceKeys(parsed.data!)).toEqual([
      { key: "one-key", owner: "default", role: "admin" },
      { key: "two-key", owner: "default", role: "admin" },
      { key: "one-key", owner: "default", role: "admin" },
    ]);
  });

  it("reads API_KEYS as owner, role and key (the key may contain ':'), beside or instead of API_KEY", () => {
    const parsed = parse({ API_KEYS: "alice:admin:alice-key-0123456789, bob:use:bob:key:0123456789" });
    expect(parsed.success).toBe(true);
    expect(serviceKeys(parsed.data!)).toEqual([
      { key: "alice-key-0123456789", owner: "alice", role: "admin" },
      { key: "bob:key:0123456789", owner: "bob", role: "use" },
    ]);
    expect(parse({ API_KEY: "legacy-key", API_KEYS: "bob:use:bob-key-0123456789" }).success).toBe(true);
  });

  it("refuses no key at all, malformed entries, short keys, and one key for two owners or roles", () => {
    for (const env of <Record<string, string>[]>[
      {},
      { API_KEY: " , " },
      { API_KEYS: "alice:root:alice-key-0123456789" },
      { API_KEYS: "alice:admin" },
      { API_KEYS: "al ice:admin:alice-key-0123456789" },
      { API_KEYS: "alice:admin:short" },
      { API_KEYS: "alice:admin:same-key-0123456789,bob:use:same-key-0123456789" },
      { API_KEY: "same-key-0123456789", API_KEYS: "bob:admin:same-key-0123456789" },
    ]) {
      expect(parse(env).success, JSON.stringify(env)).toBe(false);
    }
    const refused = parse({ API_KEYS: "alice:admin:shortsecret" });
    expect(refused.success).toBe(false);
    expect(JSON.stringify(refused.error?.issues)).not.toContain("shortsecret");
  });
});
