import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authOptions, NATS_USERS, passwordEnvName, type NatsUser } from "@litrev/messaging";
import { freePort, ROOT, spawnService, stopProcess, waitForPort } from "../../scripts/lib/launch";
import { renderNatsDeployFiles } from "../../scripts/lib/nats-deploy-config";
import { waitFor } from "../support/stack";

/**
 * The deploy setups' NATS configuration: generated from the one permission table, and, run as
 * compose runs it (deploy/nats/nats.conf + auth.conf, certificates from scripts/nats-certs.sh),
 * a server that speaks only TLS and admits only the four users.
 */

describe("deploy NATS configuration", () => {
  it("is current: deploy/nats/auth.conf and deploy/k8s/nats-auth-values.yaml match `pnpm nats:config`", () => {
    for (const [path, content] of Object.entries(renderNatsDeployFiles())) {
      expect(readFileSync(join(ROOT, path), "utf8"), `${path} is stale: run pnpm nats:config`).toBe(content);
    }
  });

  describe("the compose server config as shipped, run locally (only the container's ports and mount paths mapped)", () => {
    let dir: string;
    let server: ChildProcess;
    let url: string;
    let monitor: string;
    const passwords = Object.fromEntries(NATS_USERS.map((u) => [u, `pw-${u}-${Math.random().toString(36).slice(2)}`])) as Record<NatsUser, string>;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "litrev-nats-deploy-"));
      const certs = spawnSync("bash", [join(ROOT, "scripts/nats-certs.sh"), join(dir, "tls")], { encoding: "utf8" });
      expect(certs.status, certs.stderr).toBe(0);
      const port = await freePort();
      const monitorPort = await freePort();
      monitor = `http://127.0.0.1:${monitorPort}`;
      // What compose maps (ports, mounts) and nothing else: every setting, sync_interval included, runs as shipped.
      const conf = readFileSync(join(ROOT, "deploy/nats/nats.conf"), "utf8")
        .replace(/^port: 4222$/m, `port: ${port}\nhost: 127.0.0.1`)
        .replace(/^http_port: 8222$/m, `http: "127.0.0.1:${monitorPort}"`)
        .replaceAll("/etc/nats/tls/", `${join(dir, "tls/server")}/`)
        .replace("/data/jetstream", join(dir, "jetstream"));
      writeFileSync(join(dir, "nats.conf"), conf);
      writeFileSync(join(dir, "auth.conf"), readFileSync(join(ROOT, "deploy/nats/auth.conf"), "utf8"));
      const env = { ...process.env, ...Object.fromEntries(NATS_USERS.map((u) => [passwordEnvName(u), passwords[u]])) };
      const check = spawnSync("nats-server", ["-t", "-c", join(dir, "nats.conf")], { env, encoding: "utf8" });
      expect(check.status, check.stderr + check.stdout).toBe(0);
      server = spawn("nats-server", ["-c", join(dir, "nats.conf")], { env, stdio: "ignore" });
      await waitForPort(port, 10_000, server);
      url = `tls://127.0.0.1:${port}`;
    }, 60_000);
    afterAll(async () => {
      if (server) await stopProcess(server);
      rmSync(dir, { recursive: true, force: true });
    });

    const ca = () => join(dir, "tls/ca/ca.pem");
    const outcome = (p: Promise<{ close(): Promise<void> }>) => p.then((nc) => nc.close().then(() => "connected")).catch((e: Error) => e.message);

    it("runs on the pinned nats-server with every write fsynced before its acknowledgement (sync_interval: always)", async () => {
      const varz = (await (await fetch(`${monitor}/varz`)).json()) as { version: string; jetstream?: { config?: { sync_always?: boolean; max_storage?: number } } };
      const [major, minor] = varz.version.split(".").map(Number);
      expect(major! * 1_000 + minor!, `nats-server ${varz.version}`).toBeGreaterThanOrEqual(2_015);
      expect(varz.jetstream?.config).toMatchObject({ sync_always: true, max_storage: 20 * 1024 ** 3 });
      expect((await fetch(`${monitor}/healthz`)).status).toBe(200);
    });

    it("refuses a client that cannot verify the server, and one without credentials", async () => {
      const plain = await outcome(connect({ servers: url.replace("tls://", "nats://"), reconnect: false, timeout: 3_000, user: "gateway", pass: passwords.gateway }));
      const untrusted = await outcome(connect({ servers: url, reconnect: false, timeout: 3_000, user: "gateway", pass: passwords.gateway }));
      // A nats:// client is upgraded to TLS (the server requires it) and, like any client without our CA, cannot verify it.
      expect(plain).toMatch(/certificate/);
      expect(untrusted).toMatch(/certificate/);
      // What the server announces to anyone who connects: TLS required, no plain-text protocol.
      const info = await new Promise<string>((resolve, reject) => {
        const socket = netConnect(Number(new URL(url).port), "127.0.0.1");
        socket.once("data", (chunk) => (socket.destroy(), resolve(chunk.toString())));
        socket.once("error", reject);
      });
      expect(info).toMatch(/"tls_required":true/);
      expect(info).toMatch(/"auth_required":true/);
      expect(await outcome(connect({ servers: url, reconnect: false, tls: { caFile: ca() } }))).toMatch(/authorization/i);
      expect(await outcome(connect({ servers: url, reconnect: false, ...authOptions({ user: "gateway", password: passwords.screening, tlsCaFile: ca() }) }))).toMatch(/authorization/i);
    });

    it("admits each user over TLS with its password, within its permissions", async () => {
      for (const user of NATS_USERS) {
        const nc = await connect({ servers: url, reconnect: false, ...authOptions({ user, password: passwords[user], tlsCaFile: ca() }) });
        const sub = nc.subscribe(">");
        const err = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r(undefined), 3_000))]);
        expect(String((err as Error | undefined)?.message), user).toMatch(/permission/i);
        await nc.close();
      }
    });

    it("runs a service from its environment alone: NATS_URL tls://, NATS_TLS_CA_FILE and NATS_PASSWORD (user = its kind)", async () => {
      const child = spawnService(
        "criteria",
        { NATS_URL: url, NATS_TLS_CA_FILE: ca(), NATS_PASSWORD: passwords.criteria, JOB_KEY_SECRET: "nats-config-test-job-key-secret", MONGO_URL: "", LOG_LEVEL: "info", SHUTDOWN_TIMEOUT_MS: "3000" },
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let output = "";
      child.stdout?.on("data", (c: Buffer) => (output += c.toString()));
      child.stderr?.on("data", (c: Buffer) => (output += c.toString()));
      try {
        await waitFor(() => output.includes('"service ready"') || child.exitCode !== null, 30_000);
        expect(output).toContain('"service ready"');
        // The password never reaches the log.
        expect(output).not.toContain(passwords.criteria);
      } finally {
        await stopProcess(child, "SIGTERM", 5_000);
      }
    });
  });
});
