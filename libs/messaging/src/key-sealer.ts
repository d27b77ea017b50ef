import { createCipheriv, createDecipheriv, hash, hkdfSync, randomBytes } from "node:crypto";
import { z } from "zod";
import { ServiceError } from "@litrev/contracts";

const VERSION = "v2";
const IV_BYTES = 12;
const TAG_BYTES = 16;
// Fixed salt and info: a derived key depends only on its secret, so every replica agrees.
const SALT = Buffer.from("litrev-jobs/provider-key");
const INFO = Buffer.from("aes-256-gcm");
/** The key id `JOB_KEY_SECRET` (one secret) seals under; name it in `JOB_KEY_SECRETS` to rotate it out. */
export const SINGLE_SECRET_KID = "k0";
/** How long past its caller's deadline a request-bound token still opens (clock skew between hosts). */
export const REQUEST_TOKEN_SKEW_MS = 60_000;
const KID = /^[A-Za-z0-9_-]{1,32}$/;
const TOKEN_PART = /^[A-Za-z0-9_-]+$/;

/**
 * What a sealed provider key belongs to: it opens only for the same binding (it is the AEAD
 * associated data), so a token captured from one message is useless in any other.
 */
export type KeyBinding =
  | { kind: "job"; service: string; jobId: string }
  /**
   * A synchronous request: its NATS subject, request id and body (SHA-256); it also expires
   * (`expiresAt`, ms since epoch, sealed inside).
   */
  | { kind: "request"; subject: string; requestId: string; bodyDigest: string };

export const keyBindings = {
  job: (service: string, jobId: string): KeyBinding => ({ kind: "job", service, jobId }),
  request: (subject: string, requestId: string, body: Uint8Array | string): KeyBinding => ({
    kind: "request",
    subject,
    requestId,
    bodyDigest: hash("sha256", body, "base64url"),
  }),
};

const bindingText = (binding: KeyBinding) =>
  binding.kind === "job"
    ? `job\n${binding.service}\n${binding.jobId}`
    : `request\n${binding.subject}\n${binding.requestId}\n${binding.bodyDigest}`;

interface Sealed {
  /** The provider key. */
  k: string;
  /** Request-bound tokens: not valid after this (ms since epoch). */
  exp?: number;
}

export interface SecretEntry {
  kid: string;
  secret: string;
}

/**
 * Seals provider keys for the hop from the gateway to the process that calls the provider:
 * AES-256-GCM under a key derived (HKDF-SHA256) from a shared secret. A token names its secret's key
 * id, and its associated data is the job or request it belongs to, so it opens only there. The first
 * secret seals; every configured secret opens, so a secret is rotated by running old and new side by
 * side (docs/security.md). Only sealed tokens ever cross NATS or are stored.
 */
export class KeySealer {
  readonly #keys: Map<string, Buffer>;
  readonly #sealKid: string;

  private constructor(keys: Map<string, Buffer>, sealKid: string) {
    this.#keys = keys;
    this.#sealKid = sealKid;
  }

  /** One secret (`JOB_KEY_SECRET`), under key id `k0`. */
  static fromSecret(secret: string): KeySealer {
    return KeySealer.fromSecrets([{ kid: SINGLE_SECRET_KID, secret }]);
  }

  /** Several secrets by key id; the first seals, all open. */
  static fromSecrets(entries: readonly SecretEntry[]): KeySealer {
    if (entries.length === 0) throw new Error("at least one provider-key secret is required");
    const keys = new Map<string, Buffer>();
    for (const { kid, secret } of entries) {
      if (!KID.test(kid)) throw new Error(`a key id is 1-32 letters, digits, '-' or '_' (got ${JSON.stringify(kid.slice(0, 40))})`);
      if (secret.length < MIN_SECRET_LENGTH) throw new Error(`the secret of key id ${kid} must be at least ${MIN_SECRET_LENGTH} characters`);
      if (keys.has(kid)) throw new Error(`key id ${kid} is given twice`);
      keys.set(kid, Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), SALT, INFO, 32)));
    }
    return new KeySealer(keys, entries[0]!.kid);
  }

  /** From a parsed environment (`JobKeySecretEnv`). */
  static fromEnv(env: JobKeySecretEnv): KeySealer {
    return KeySealer.fromSecrets(secretEntries(env));
  }

  /**
   * A secret for another purpose (`purpose` names it), derived from the sealing secret: the provider
   * budgets' ids when LLM_BUDGET_SECRET is unset. Never the sealing key itself.
   */
  derivedSecret(purpose: string): Buffer {
    return Buffer.from(hkdfSync("sha256", this.#keys.get(this.#sealKid)!, SALT, Buffer.from(`litrev derived: ${purpose}`), 32));
  }

  /** The key id new tokens are sealed under. */
  get sealingKid(): string {
    return this.#sealKid;
  }

  /**
   * `v2.<kid>.<iv>.<ciphertext+tag>` (base64url), a fresh IV each time. A request-bound token also
   * carries its expiry (`expiresAt`, required for those) inside the ciphertext.
   */
  seal(plain: string, binding: KeyBinding, expiresAt?: number): string {
    if (binding.kind === "request" && expiresAt === undefined) throw new Error("a request-bound provider key needs an expiry");
    const kid = this.#sealKid;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#keys.get(kid)!, iv);
    cipher.setAAD(aad(kid, binding));
    const payload: Sealed = binding.kind === "request" ? { k: plain, exp: expiresAt } : { k: plain };
    const body = Buffer.concat([cipher.update(JSON.stringify(payload), "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${kid}.${iv.toString("base64url")}.${body.toString("base64url")}`;
  }

  /**
   * The plain key. A token for another job or request, under an unknown key id, altered, or past
   * its expiry is an `auth` error whose message never quotes the token.
   */
  open(token: string, binding: KeyBinding, now = Date.now()): string {
    const parts = token.split(".");
    const [version, kid, iv, body] = parts;
    if (parts.length !== 4 || version !== VERSION || !kid || !iv || !body || !TOKEN_PART.test(iv) || !TOKEN_PART.test(body)) {
      throw unreadable("it is not a provider-key token of this version");
    }
    const key = this.#keys.get(kid);
    if (!key) throw unreadable(`its key id ${kid.slice(0, 32)} is not among JOB_KEY_SECRETS`);
    const data = Buffer.from(body, "base64url");
    if (data.length < TAG_BYTES) throw unreadable("it is truncated");
    let payload: Sealed;
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAAD(aad(kid, binding));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(data.subarray(0, data.length - TAG_BYTES)), decipher.final()]).toString("utf8");
      payload = JSON.parse(plain) as Sealed;
    } catch (error) {
      throw unreadable("it was sealed for another job or request, under another secret, or altered", error);
    }
    if (typeof payload.k !== "string") throw unreadable("it holds no key");
    if (binding.kind === "request" && !(typeof payload.exp === "number" && now <= payload.exp)) throw unreadable("it has expired");
    return payload.k;
  }
}

const aad = (kid: string, binding: KeyBinding) => Buffer.from(`litrev-provider-key/${VERSION}\n${kid}\n${bindingText(binding)}`, "utf8");

const unreadable = (why: string, cause?: unknown) =>
  new ServiceError("auth", `The provider key could not be unsealed: ${why}`, cause === undefined ? {} : { cause });

export const MIN_SECRET_LENGTH = 16;

const secretList = z
  .string()
  .transform((value, ctx) => {
    const entries: SecretEntry[] = [];
    for (const item of value.split(",").map((s) => s.trim()).filter(Boolean)) {
      const colon = item.indexOf(":");
      const kid = colon > 0 ? item.slice(0, colon) : "";
      const secret = colon > 0 ? item.slice(colon + 1) : "";
      if (!KID.test(kid)) {
        ctx.addIssue({ code: "custom", message: "each entry is <key id>:<secret>, the key id 1-32 letters, digits, '-' or '_'" });
        return z.NEVER;
      }
      if (secret.length < MIN_SECRET_LENGTH) {
        ctx.addIssue({ code: "custom", message: `the secret of key id ${kid} must be at least ${MIN_SECRET_LENGTH} characters` });
        return z.NEVER;
      }
      if (entries.some((e) => e.kid === kid)) {
        ctx.addIssue({ code: "custom", message: `key id ${kid} is given twice` });
        return z.NEVER;
      }
      entries.push({ kid, secret });
    }
    if (entries.length === 0) {
      ctx.addIssue({ code: "custom", message: "JOB_KEY_SECRETS is empty" });
      return z.NEVER;
    }
    return entries;
  });

/**
 * The provider-key secrets of the gateway and every service that calls the provider: one secret
 * (`JOB_KEY_SECRET`, key id `k0`), or several by key id for a rotation
 * (`JOB_KEY_SECRETS="k1:new,k0:old"`, the first seals). At least one is required; when both are
 * set, JOB_KEY_SECRETS decides and JOB_KEY_SECRET must be one of its secrets (so a deployment that
 * requires JOB_KEY_SECRET can rotate). `withJobKeySecrets` checks that.
 */
export const JobKeySecretEnv = z.object({
  JOB_KEY_SECRET: z.string().min(MIN_SECRET_LENGTH, `JOB_KEY_SECRET must be at least ${MIN_SECRET_LENGTH} characters`).optional(),
  JOB_KEY_SECRETS: secretList.optional(),
});
export type JobKeySecretEnv = z.infer<typeof JobKeySecretEnv>;

const MISSING =
  "JOB_KEY_SECRET is required: a shared secret (at least 16 characters) that the gateway and the services use to seal provider keys (or JOB_KEY_SECRETS=<kid>:<secret>,… to rotate it)";

const BOTH = "when JOB_KEY_SECRETS is set, JOB_KEY_SECRET must be unset or one of its secrets (JOB_KEY_SECRETS decides)";

/** An env schema with the rules of JOB_KEY_SECRET and JOB_KEY_SECRETS (see `JobKeySecretEnv`). */
export function withJobKeySecrets<S extends z.ZodType<JobKeySecretEnv>>(schema: S) {
  return schema.superRefine((env, ctx) => {
    if (!env.JOB_KEY_SECRET && !env.JOB_KEY_SECRETS) ctx.addIssue({ code: "custom", path: ["JOB_KEY_SECRET"], message: MISSING });
    if (env.JOB_KEY_SECRET && env.JOB_KEY_SECRETS && !env.JOB_KEY_SECRETS.some((e) => e.secret === env.JOB_KEY_SECRET)) {
      ctx.addIssue({ code: "custom", path: ["JOB_KEY_SECRETS"], message: BOTH });
    }
  });
}

function secretEntries(env: JobKeySecretEnv): SecretEntry[] {
  if (env.JOB_KEY_SECRETS) {
    if (env.JOB_KEY_SECRET && !env.JOB_KEY_SECRETS.some((e) => e.secret === env.JOB_KEY_SECRET)) throw new Error(BOTH);
    return env.JOB_KEY_SECRETS;
  }
  if (env.JOB_KEY_SECRET) return [{ kid: SINGLE_SECRET_KID, secret: env.JOB_KEY_SECRET }];
  throw new Error(MISSING);
}
