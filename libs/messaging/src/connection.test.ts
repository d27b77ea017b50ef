import { describe, expect, it } from "vitest";
import { getSha256Backend } from "@nats-io/obj";
import { authOptions, NatsAuthEnv, natsAuthFromEnv } from "./connection";

describe("the object store's SHA-256", () => {
  // Its pure-JS default hashed every staged creation and every read of a job on the gateway's
  // event loop: 4.6 s of one gateway's CPU in a 30 s two-owner attack (bench fair-owners).
  it("is node:crypto's in every process that connects", () => {
    expect(getSha256Backend()).toBe("native");
  });
});

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
