import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { NATS_USERS, renderAuthorization, type NatsUser } from "@litrev/messaging";

/**
 * Credentials for a locked-down nats-server started by `npm start` or a test stack: one user per
 * process kind with a random password, and the server's `authorization` block rendered from the
 * permission table in libs/messaging/src/permissions.ts.
 */
export type NatsCredentials = Record<NatsUser, string>;

export function generateNatsCredentials(): NatsCredentials {
  return Object.fromEntries(NATS_USERS.map((user) => [user, randomBytes(24).toString("base64url")])) as NatsCredentials;
}

/** Reads the credentials kept in `file`, creating it (mode 0600) on first use; a user missing from an older file gets a password. */
export function loadOrCreateNatsCredentials(file: string): NatsCredentials {
  const stored = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Partial<NatsCredentials>) : {};
  const fresh = generateNatsCredentials();
  const credentials = Object.fromEntries(
    NATS_USERS.map((user) => [user, typeof stored[user] === "string" && stored[user] ? stored[user] : fresh[user]]),
  ) as NatsCredentials;
  if (NATS_USERS.some((user) => stored[user] !== credentials[user])) writeFileSync(file, JSON.stringify(credentials, null, 2), { mode: 0o600 });
  return credentials;
}

/** The server config: every user with its password and permissions; anonymous connections refused. */
export function lockedNatsConfig(credentials: NatsCredentials): string {
  return renderAuthorization(Object.fromEntries(NATS_USERS.map((user) => [user, { literal: credentials[user] ?? "" }])));
}

/** The environment that makes a process of kind `user` connect with its credentials. */
export function natsCredentialsEnv(credentials: NatsCredentials, user: NatsUser): NodeJS.ProcessEnv {
  return { NATS_USER: user, NATS_PASSWORD: credentials[user] };
}
