import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_BUCKET, jobNames } from "@litrev/contracts";
import { inboxPrefix, NATS_USERS, natsPermissions, renderAuthorization, type NatsUser } from "./permissions";

/** The permission table's own guarantees; test/security/nats-*.test.ts tries them on a real server. */

const all = (user: NatsUser) => {
  const p = natsPermissions(user);
  return [...p.publish, ...p.subscribe];
};
/** Prefixes that name a kind of thing rather than one thing. */
const NAMESPACES = new Set(["", "_INBOX", "litrev", "litrev.rpc", "litrev.jobs", "litrev.ckpt", "litrev.store", "$KV", "$O", "$JS", "$JS.API", "$JS.API.STREAM", "$JS.API.STREAM.INFO", "$JS.API.CONSUMER", "$JS.API.CONSUMER.CREATE", "$JS.API.DIRECT.GET", "$JS.FC", "$JS.ACK", "$SYS"]);
const OTHER_SERVICES: Record<Exclude<NatsUser, "gateway">, string[]> = {
  criteria: ["screening", "indexer"],
  screening: ["criteria", "indexer"],
  indexer: ["criteria", "screening"],
};

describe("NATS permission table", () => {
  it("grants no catch-all subject to anyone", () => {
    for (const user of NATS_USERS) {
      for (const subject of all(user)) {
        expect(subject, user).not.toMatch(/^(>|\*\.>|_INBOX\.>|\$JS\.API\.>|\$JS\.>|\$SYS\..*|\$KV\.>|\$O\.>|litrev\.>|litrev\.\*\..*)$/);
        // A wildcard never stands for a service, stream, bucket or user: what precedes it names one.
        const tokens = subject.split(".");
        const first = tokens.findIndex((t) => t === "*" || t === ">");
        if (first >= 0) expect(NAMESPACES.has(tokens.slice(0, first).join(".")), `${user}: ${subject}`).toBe(false);
      }
    }
  });

  it("lets each user subscribe only to its own inbox (and a service to its own requests, their cancellations and the health broadcast; the gateway to deleted jobs)", () => {
    expect(natsPermissions("gateway").subscribe).toEqual([`${inboxPrefix("gateway")}.>`, "litrev.jobs-erased.screening", "litrev.jobs-erased.indexer"]);
    for (const service of ["criteria", "screening", "indexer"] as const) {
      const jobCancels = service === "criteria" ? [] : [`litrev.jobs-cancel.${service}`];
      expect(natsPermissions(service).subscribe.sort()).toEqual([`${inboxPrefix(service)}.>`, `litrev.rpc.${service}.>`, `litrev.cancel.${service}`, ...jobCancels, "litrev.health"].sort());
      expect(natsPermissions(service).allowResponses).toBe(true);
    }
    expect(natsPermissions("gateway").allowResponses).toBe(false);
    expect(new Set(NATS_USERS.map(inboxPrefix)).size).toBe(NATS_USERS.length);
  });

  it("confines each service to its own streams, buckets and subjects, and lets none of them call another", () => {
    for (const [service, others] of Object.entries(OTHER_SERVICES)) {
      for (const subject of all(service as NatsUser)) {
        for (const other of others) expect(subject.toLowerCase().includes(other), `${service}: ${subject}`).toBe(false);
        expect(subject.startsWith("litrev.rpc.") && !subject.startsWith(`litrev.rpc.${service}.`), `${service}: ${subject}`).toBe(false);
      }
    }
  });

  it("lets the gateway write only overrides in the config bucket, and services only their own defaults and what they learned of the provider", () => {
    const writes = (user: NatsUser) => natsPermissions(user).publish.filter((s) => s.startsWith(`$KV.${CONFIG_BUCKET}.`));
    expect(writes("gateway").sort()).toEqual(
      [`$KV.${CONFIG_BUCKET}.aliases.overrides`, ...["criteria", "extraction", "screening"].map((id) => `$KV.${CONFIG_BUCKET}.overrides.${id}`)].sort(),
    );
    expect(writes("indexer").sort()).toEqual([`$KV.${CONFIG_BUCKET}.aliases.defaults.extraction`, `$KV.${CONFIG_BUCKET}.defaults.extraction`, `$KV.${CONFIG_BUCKET}.provider.n.extraction`]);
    // Stream-level powers over the config bucket: create (services), never for the gateway.
    expect(natsPermissions("gateway").publish).not.toContain(`$JS.API.STREAM.CREATE.KV_${CONFIG_BUCKET}`);
    expect(natsPermissions("criteria").publish).not.toContain(`$JS.API.STREAM.PURGE.KV_${CONFIG_BUCKET}`);
  });

  it("lets the gateway write no job state and no job data: of a job service's stores, only the staging store", () => {
    const publish = natsPermissions("gateway").publish;
    for (const service of ["screening", "indexer"] as const) {
      const names = jobNames(service);
      // Any `$KV.<state bucket>.…` or `$O.<data bucket>.…` publish would let it write a job's state, lock, input or results.
      expect(publish.filter((s) => s.startsWith(`$KV.${names.stateBucket}.`) || s.startsWith(`$O.${names.dataBucket}.`)), service).toEqual([]);
      expect(publish.filter((s) => s.includes(`.PURGE.`) && (s.includes(names.stateBucket) || s.includes(names.dataBucket) || s.includes(names.stagingBucket))), service).toEqual([]);
      expect(publish).toContain(`$O.${names.stagingBucket}.>`);
      expect(natsPermissions(service).publish).toContain(`$O.${names.stagingBucket}.>`);
    }
  });

  it("gives the gateway no stream-changing power at all, and no one the power to update or delete a stream", () => {
    const changes = natsPermissions("gateway").publish.filter((s) => /^\$JS\.API\.STREAM\.(CREATE|UPDATE|DELETE|MSG\.DELETE)\./.test(s));
    expect(changes).toEqual([]);
    // An update can add subjects: a stream that captures others' traffic would be readable by its owner.
    for (const user of NATS_USERS) expect(natsPermissions(user).publish.filter((s) => /^\$JS\.API\.STREAM\.(UPDATE|DELETE)\./.test(s)), user).toEqual([]);
  });

  it("renders an authorization block nats-server accepts", () => {
    const dir = mkdtempSync(join(tmpdir(), "litrev-perm-"));
    try {
      const conf = `port: 4222\njetstream { store_dir: ${JSON.stringify(dir)} }\n${renderAuthorization({
        gateway: { literal: 'p"w\\1' },
        criteria: { env: "CRITERIA_PW" },
        screening: { literal: "s" },
        indexer: { literal: "i" },
      })}\n`;
      writeFileSync(join(dir, "n.conf"), conf);
      const result = spawnSync("nats-server", ["-t", "-c", join(dir, "n.conf")], { env: { ...process.env, CRITERIA_PW: "c" }, encoding: "utf8" });
      expect(result.status, result.stderr + result.stdout).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
