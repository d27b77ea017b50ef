import { describe, expect, it } from "vitest";
import { authOptions, NatsAuthEnv, natsAuthFromEnv } from "./connection";

describe("NATS credentials from the environment", () => {
  it("defaults the user to the process kind when only a password is given", () => {
    const env = NatsAuthEnv.parse({ NATS_PASSWORD: "pw" });
    expect(natsAuthFromEnv(env, "screening")).toEqual({ user: "screening", password: "pw", tlsCaFile: undefined });
    expect(natsAuthFromEnv(NatsAuthEnv.parse({ NATS_USER: "other", NATS_PASSWORD: "pw" }), "screening").user).toBe("other");
    expect(natsAuthFromEnv(NatsAuthEnv.parse({}), "screening").user).toBeUndefined();
  });

  it("gives each user its own inbox prefix, and TLS with the CA when one is named", () => {
    expect(authOptions({ user: "gateway", password: "pw" })).toEqual({ user: "gateway", pass: "pw", inboxPrefix: "_INBOX.gateway" });
    expect(authOptions({ tlsCaFile: "/ca.pem" })).toEqual({ tls: { caFile: "/ca.pem" } });
    expect(authOptions({})).toEqual({});
  });

  it("rejects a user name that could not be an inbox token", () => {
    expect(NatsAuthEnv.safeParse({ NATS_USER: "a.b" }).success).toBe(false);
    expect(NatsAuthEnv.safeParse({ NATS_USER: ">" }).success).toBe(false);
  });
});
