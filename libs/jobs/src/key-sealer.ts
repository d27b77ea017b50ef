import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { z } from "zod";
import { ServiceError } from "@litrev/contracts";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
// Fixed salt and info: the derived key depends only on the secret, so every replica agrees.
const SALT = Buffer.from("litrev-jobs/provider-key");
const INFO = Buffer.from("aes-256-gcm");

/**
 * Seals provider keys for the time a job waits and runs: AES-256-GCM with a key derived (HKDF-SHA256)
 * from JOB_KEY_SECRET, shared by the gateway and every worker. A sealed key is all that is ever
 * carried in a header, stored in a stream, bucket or database; only a worker opens it.
 */
export class KeySealer {
  readonly #key: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
  }

  static fromSecret(secret: string): KeySealer {
    if (secret.length < MIN_SECRET_LENGTH) throw new Error(`JOB_KEY_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
    return new KeySealer(Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), SALT, INFO, 32)));
  }

  /** `v1.<iv>.<ciphertext+tag>` in base64url; a fresh IV each time, so equal keys seal differently. */
  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${iv.toString("base64url")}.${body.toString("base64url")}`;
  }

  /** The plain key; a token sealed under another secret, or altered, is an `auth` error (never echoed). */
  open(token: string): string {
    const [version, iv, body] = token.split(".");
    if (version !== VERSION || !iv || !body) throw unreadable();
    const data = Buffer.from(body, "base64url");
    if (data.length < TAG_BYTES) throw unreadable();
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      return Buffer.concat([decipher.update(data.subarray(0, data.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch (error) {
      throw unreadable(error);
    }
  }
}

const unreadable = (cause?: unknown) =>
  new ServiceError("auth", "The job's provider key could not be unsealed (JOB_KEY_SECRET differs between gateway and workers?)", {
    cause,
  });

export const MIN_SECRET_LENGTH = 16;

export const JobKeySecretEnv = z.object({
  JOB_KEY_SECRET: z
    .string({
      error:
        "JOB_KEY_SECRET is required: a shared secret (at least 16 characters) that the gateway and job workers use to encrypt provider keys of queued jobs",
    })
    .min(MIN_SECRET_LENGTH, `JOB_KEY_SECRET must be at least ${MIN_SECRET_LENGTH} characters`),
});

/** Reads JOB_KEY_SECRET or stops the process with a message saying what to set (exit 78, EX_CONFIG). */
export function loadJobKeySecret(env: NodeJS.ProcessEnv = process.env): string {
  const parsed = JobKeySecretEnv.safeParse({ JOB_KEY_SECRET: env.JOB_KEY_SECRET || undefined });
  if (parsed.success) return parsed.data.JOB_KEY_SECRET;
  process.stderr.write(`Invalid configuration in the environment:\n  JOB_KEY_SECRET: ${parsed.error.issues[0]?.message}\n`);
  process.exit(78);
}
