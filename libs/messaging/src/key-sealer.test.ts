import { describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { JobKeySecretEnv, keyBindings, KeySealer, withJobKeySecrets } from "./key-sealer";

const OLD = "old-secret-0123456789abcdef";
const NEW = "new-secret-0123456789abcdef";
const job = keyBindings.job("screening", "job-1");

describe("KeySealer", () => {
  it("round-trips, never repeats a token, and never shows the key", () => {
    const sealer = KeySealer.fromSecret(OLD);
    const a = sealer.seal("sk-test-123", job);
    const b = sealer.seal("sk-test-123", job);
    expect(a).not.toBe(b);
    expect(a).not.toContain("sk-test");
    expect(a.startsWith("v2.k0.")).toBe(true);
    expect(sealer.open(a, job)).toBe("sk-test-123");
  });

  it("opens a token only for the job or request it was sealed for", () => {
    const sealer = KeySealer.fromSecret(OLD);
    const token = sealer.seal("sk-test", job);
    for (const other of [keyBindings.job("screening", "job-2"), keyBindings.job("indexer", "job-1"), keyBindings.request("screening", "job-1", "{}")]) {
      expect(() => sealer.open(token, other)).toThrow(ServiceError);
    }
    const subject = "litrev.rpc.criteria.picos";
    const body = JSON.stringify({ project_description: "p" });
    const request = sealer.seal("sk-test", keyBindings.request(subject, "r1", body), Date.now() + 1_000);
    expect(sealer.open(request, keyBindings.request(subject, "r1", body))).toBe("sk-test");
    expect(() => sealer.open(request, keyBindings.request(subject, "r2", body))).toThrow(/another job or request/);
    expect(() => sealer.open(request, keyBindings.request(subject, "r1", JSON.stringify({ project_description: "q" })))).toThrow(ServiceError);
    expect(() => sealer.open(request, keyBindings.request("litrev.rpc.indexer.run", "r1", body))).toThrow(ServiceError);
    expect(() => sealer.open(request, keyBindings.request(subject, "r1", body), Date.now() + 2_000)).toThrow(/expired/);
    expect(() => sealer.seal("sk", keyBindings.request(subject, "r1", body))).toThrow(/expiry/);
  });

  it("refuses another secret, a swapped key id and a tampered token, without quoting it", () => {
    const sealer = KeySealer.fromSecret(OLD);
    const token = sealer.seal("sk-test", job);
    expect(() => KeySealer.fromSecret(NEW).open(token, job)).toThrow(ServiceError);
    const both = KeySealer.fromSecrets([{ kid: "k1", secret: NEW }, { kid: "k0", secret: OLD }]);
    expect(() => both.open(token.replace("v2.k0.", "v2.k1."), job)).toThrow(ServiceError);
    // A character well inside the ciphertext: the last one of base64url may only carry padding bits,
    // so changing it can leave the bytes (and the token) as they were.
    const at = token.length - 6;
    const tampered = token.slice(0, at) + (token[at] === "A" ? "B" : "A") + token.slice(at + 1);
    const error = (() => {
      try {
        sealer.open(tampered, job);
      } catch (e) {
        return e as ServiceError;
      }
      return null;
    })();
    expect(error?.category).toBe("auth");
    expect(error?.message).not.toContain(tampered);
    expect(() => sealer.open("v1.abc.def", job)).toThrow(ServiceError);
  });

  it("rotates: old and new side by side, the first seals and all open; dropping the old refuses its tokens", () => {
    const before = KeySealer.fromSecret(OLD);
    const during = KeySealer.fromSecrets([{ kid: "k1", secret: NEW }, { kid: "k0", secret: OLD }]);
    const after = KeySealer.fromSecrets([{ kid: "k1", secret: NEW }]);
    const oldToken = before.seal("sk-a", job);
    const newToken = during.seal("sk-b", job);
    expect(during.sealingKid).toBe("k1");
    expect(during.open(oldToken, job)).toBe("sk-a");
    expect(after.open(newToken, job)).toBe("sk-b");
    expect(() => before.open(newToken, job)).toThrow(/not among/);
    expect(() => after.open(oldToken, job)).toThrow(/not among/);
  });
});

describe("JobKeySecretEnv", () => {
  const parse = (env: Record<string, string>) => withJobKeySecrets(JobKeySecretEnv).safeParse(env);
  it("takes one secret or a list by key id (which decides; a JOB_KEY_SECRET beside it must be in it), never neither", () => {
    expect(parse({ JOB_KEY_SECRET: OLD }).success).toBe(true);
    const list = parse({ JOB_KEY_SECRETS: `k1:${NEW}, k0:${OLD}` });
    expect(list.success && list.data.JOB_KEY_SECRETS).toEqual([
      { kid: "k1", secret: NEW },
      { kid: "k0", secret: OLD },
    ]);
    expect(parse({}).success).toBe(false);
    expect(parse({ JOB_KEY_SECRET: OLD, JOB_KEY_SECRETS: `k1:${NEW}` }).success).toBe(false);
    const both = parse({ JOB_KEY_SECRET: OLD, JOB_KEY_SECRETS: `k1:${NEW},k0:${OLD}` });
    expect(both.success).toBe(true);
    expect(KeySealer.fromEnv(both.data!).sealingKid).toBe("k1");
    expect(parse({ JOB_KEY_SECRETS: `k1:short` }).success).toBe(false);
    expect(parse({ JOB_KEY_SECRETS: `${NEW}` }).success).toBe(false);
    expect(parse({ JOB_KEY_SECRETS: `k1:${NEW},k1:${OLD}` }).success).toBe(false);
  });
});
