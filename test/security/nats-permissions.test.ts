import { randomUUID } from "node:crypto";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONFIG_BUCKET, configKeys, jobNames, LIMITS_BUCKET, MODEL_ALIAS_KEYS, payloadBucket, PROVIDER_BUDGET_BUCKET, subjects } from "@litrev/contracts";
import { authOptions, type NatsUser } from "@litrev/messaging";
import { startStack, waitFor, type Stack } from "../support/stack";

/**
 * What each NATS user may NOT do, tried against a real locked-down nats-server (test/support/stack.ts
 * with `lockedNats`) with the real services running. Each refusal is paired with an allowed action
 * of the same user, so a broken connection cannot pass for a refusal.
 */

const REFUSAL_MS = 3_000;

describe("NATS users and permissions (locked-down nats-server, real services)", () => {
  let stack: Stack;
  let jobId: string;
  const open: NatsConnection[] = [];

  beforeAll(async () => {
    stack = await startStack({ lockedNats: true, services: { criteria: 1, screening: 1, indexer: 1 } });
    // A job, so that every job stream and bucket holds something worth stealing.
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: [{ id: "p1", title: "t", abstract: "a" }], mock: true, project_id: 5 });
    expect(created.status).toBe(200);
    jobId = created.body.job_id as string;
  }, 120_000);
  afterAll(async () => {
    await Promise.all(open.map((nc) => nc.close().catch(() => undefined)));
    await stack?.stop();
  });

  async function as(user: NatsUser): Promise<NatsConnection> {
    const nc = await connect({ servers: stack.natsUrl, ...authOptions({ user, password: stack.natsCredentials![user] }), name: `security-${user}` });
    open.push(nc);
    return nc;
  }

  /** Resolves with the subscription's error: the server's permission violation, or "open" when none arrived in time. */
  async function trySubscribe(nc: NatsConnection, subject: string, queue?: string): Promise<string> {
    const sub = nc.subscribe(subject, queue ? { queue } : {});
    const closed = sub.closed.then((err) => (err ? String(err.message) : "closed"));
    const result = await Promise.race([closed, new Promise<string>((r) => setTimeout(() => r("open"), REFUSAL_MS))]);
    sub.unsubscribe();
    return result;
  }

  /** Why a request (JetStream API call, KV or object operation) failed, or "ok". */
  async function attempt(action: () => Promise<unknown>): Promise<string> {
    try {
      await action();
      return "ok";
    } catch (error) {
      return String((error as Error).message);
    }
  }

  const PERMISSION = /permission/i;

  /** Reads a KV bucket: one key and the key listing (a consumer over the bucket's stream). */
  async function readKv(nc: NatsConnection, bucket: string): Promise<void> {
    const kv = await new Kvm(jetstream(nc, { timeout: REFUSAL_MS })).open(bucket);
    await kv.get("job.none");
    for await (const _ of await kv.keys()) break;
  }

  async function listObjects(nc: NatsConnection, bucket: string): Promise<void> {
    const os = await new Objm(jetstream(nc, { timeout: REFUSAL_MS })).open(bucket);
    await os.list();
  }

  it("refuses a connection without credentials, and one with a wrong password", async () => {
    const anonymous = await attempt(() => connect({ servers: stack.natsUrl, reconnect: false }).then((nc) => nc.close()));
    expect(anonymous).toMatch(/authorization/i);
    const wrong = await attempt(() => connect({ servers: stack.natsUrl, reconnect: false, user: "gateway", pass: "not-the-password" }).then((nc) => nc.close()));
    expect(wrong).toMatch(/authorization/i);
    // Another user's password does not work for this user either.
    const swapped = await attempt(() =>
      connect({ servers: stack.natsUrl, reconnect: false, user: "gateway", pass: stack.natsCredentials!.screening }).then((nc) => nc.close()),
    );
    expect(swapped).toMatch(/authorization/i);
  });

  it("gateway: cannot subscribe to everything, to a service's requests, or to another user's replies", async () => {
    const nc = await as("gateway");
    expect(await trySubscribe(nc, ">")).toMatch(PERMISSION);
    expect(await trySubscribe(nc, "litrev.>")).toMatch(PERMISSION);
    expect(await trySubscribe(nc, subjects.rpcWildcard("screening"))).toMatch(PERMISSION);
    // Joining a service's queue group would steal a share of its requests.
    expect(await trySubscribe(nc, subjects.rpc("indexer", "run"), subjects.queueGroup("indexer"))).toMatch(PERMISSION);
    expect(await trySubscribe(nc, "_INBOX.>")).toMatch(PERMISSION);
    expect(await trySubscribe(nc, "_INBOX.screening.>")).toMatch(PERMISSION);
    expect(await trySubscribe(nc, jobNames("screening").commandSubjects)).toMatch(PERMISSION);
    // Its own inbox is fine.
    expect(await trySubscribe(nc, "_INBOX.gateway.probe")).toBe("open");
  });

  it("gateway: cannot publish job commands, read commands, checkpoints or the store of record", async () => {
    const nc = await as("gateway");
    const screening = jobNames("screening");
    const js = jetstream(nc, { timeout: REFUSAL_MS });
    const jsm = await jetstreamManager(nc, { timeout: REFUSAL_MS });
    const before = (await jetstreamManager(await as("screening")).then((m) => m.streams.info(screening.commandStream))).state.last_seq;

    expect(await attempt(() => js.publish(screening.commandSubject("forged-job"), JSON.stringify({ job_id: "forged-job" })))).toMatch(PERMISSION);
    const after = (await jetstreamManager(await as("screening")).then((m) => m.streams.info(screening.commandStream))).state.last_seq;
    expect(after).toBe(before);

    expect(await attempt(() => jsm.streams.info(screening.commandStream))).toMatch(PERMISSION);
    expect(await attempt(() => jsm.consumers.add(screening.commandStream, { durable_name: "thief", ack_policy: "explicit" as never }))).toMatch(PERMISSION);
    expect(await attempt(() => jsm.streams.info(screening.checkpointStream))).toMatch(PERMISSION);
    expect(await attempt(() => readKv(nc, screening.storeBucket))).toMatch(PERMISSION);
    expect(await attempt(() => listObjects(nc, screening.storeItemsBucket))).toMatch(PERMISSION);
    expect(await attempt(() => jsm.streams.delete(`KV_${screening.stateBucket}`))).toMatch(PERMISSION);
    expect(await attempt(() => jsm.streams.add({ name: "STOLEN", subjects: ["litrev.rpc.>"] }))).toMatch(PERMISSION);
    // What it needs: the live job state.
    expect(await attempt(() => readKv(nc, screening.stateBucket))).toBe("ok");
    expect(await attempt(() => listObjects(nc, screening.dataBucket))).toBe("ok");
  });

  it("gateway: reads job data but writes only the staging store: no job's input, partial items or result object can be written", async () => {
    const nc = await as("gateway");
    const js = jetstream(nc, { timeout: REFUSAL_MS });
    for (const service of ["screening", "indexer"] as const) {
      const names = jobNames(service);
      const data = await new Objm(js).open(names.dataBucket);
      for (const name of [`input/${jobId}`, `input/${jobId}/head`, `input/${jobId}/0`, `partial/${jobId}/1/0`, `finished/${jobId}/head`]) {
        expect(await attempt(() => data.putBlob({ name }, new TextEncoder().encode("forged"))), `${service} ${name}`).toMatch(PERMISSION);
      }
      // An object the service wrote can be neither replaced nor deleted by the gateway.
      const own = await new Objm(jetstream(await as(service))).open(names.dataBucket);
      const name = `input/${randomUUID()}/head`;
      await own.putBlob({ name }, new TextEncoder().encode("{}"));
      expect(await attempt(() => data.putBlob({ name }, new TextEncoder().encode("forged")))).toMatch(PERMISSION);
      expect(await attempt(() => data.delete(name))).toMatch(PERMISSION);
      expect(new TextDecoder().decode((await own.getBlob(name))!)).toBe("{}");
      await own.delete(name);
      expect(await attempt(() => js.publish(`$O.${names.dataBucket}.C.forged`, "forged"))).toMatch(PERMISSION);
      // What it needs: staging a large creation list for the service.
      const staging = await new Objm(js).open(names.stagingBucket);
      expect(await attempt(() => staging.putBlob({ name: `staged/${randomUUID()}/0` }, new TextEncoder().encode("{}\n")))).toBe("ok");
    }
  });

  it("gateway: may read job state but not write it: every put, create, update or delete of a job.* or lock.* key is refused", async () => {
    const nc = await as("gateway");
    const screening = jobNames("screening");
    const indexer = jobNames("indexer");
    const kv = await new Kvm(jetstream(nc, { timeout: REFUSAL_MS })).open(screening.stateBucket);
    const real = await kv.get(`job.${jobId}`);
    expect(real?.operation).toBe("PUT"); // reading is allowed: the gateway's mirror
    const forged = JSON.stringify({ ...(real!.json() as object), status: "failed", owner: "mallory", worker: "forged", attempt: 99 });
    for (const key of [`job.${jobId}`, "job.00000000-0000-4000-8000-000000000000", "job.forged", "lock.5", "lock.alice.5"]) {
      expect(await attempt(() => kv.put(key, forged)), key).toMatch(PERMISSION);
      expect(await attempt(() => kv.create(key, forged)), key).toMatch(PERMISSION);
      expect(await attempt(() => kv.delete(key)), key).toMatch(PERMISSION);
      expect(await attempt(() => kv.purge(key)), key).toMatch(PERMISSION);
    }
    expect(await attempt(() => kv.update(`job.${jobId}`, forged, real!.revision))).toMatch(PERMISSION);
    const indexerKv = await new Kvm(jetstream(nc, { timeout: REFUSAL_MS })).open(indexer.stateBucket);
    expect(await attempt(() => indexerKv.put("job.forged", forged))).toMatch(PERMISSION);
    // A raw publish on the key's subject (what a KV put is underneath) is refused by the server as well.
    expect(await attempt(() => jetstream(nc, { timeout: REFUSAL_MS }).publish(`$KV.${screening.stateBucket}.job.${jobId}`, forged))).toMatch(PERMISSION);
    // The job's state is exactly what its service wrote.
    const after = await new Kvm(jetstream(await as("screening"))).open(screening.stateBucket).then((own) => own.get(`job.${jobId}`));
    expect(after?.revision).toBeGreaterThanOrEqual(real!.revision);
    expect(after?.json()).not.toMatchObject({ owner: "mallory" });
    expect(after?.json()).not.toMatchObject({ worker: "forged" });
  });

  it("gateway: cannot smuggle a job command in through a consumer whose deliver subject is a command subject", async () => {
    const nc = await as("gateway");
    const screening = jobNames("screening");
    const commands = await jetstreamManager(await as("screening"));
    const before = (await commands.streams.info(screening.commandStream)).state.last_seq;
    // It may create consumers on the live-state bucket (its watch), here over a real job's key...
    const jsm = await jetstreamManager(nc, { timeout: REFUSAL_MS });
    const consumer = await attempt(() =>
      jsm.consumers.add(`KV_${screening.stateBucket}`, {
        name: "smuggler",
        deliver_subject: screening.commandSubject(jobId),
        filter_subject: `$KV.${screening.stateBucket}.job.${jobId}`,
        ack_policy: AckPolicy.None,
        deliver_policy: DeliverPolicy.LastPerSubject,
      }),
    );
    // ...but a push consumer delivers only where someone subscribed, and only the screening user may: nothing reaches the queue.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await commands.streams.info(screening.commandStream)).state.last_seq).toBe(before);
    if (consumer === "ok") await jsm.consumers.delete(`KV_${screening.stateBucket}`, "smuggler").catch(() => undefined);
  });

  it("gateway: may write configuration overrides but not a service's announced defaults", async () => {
    const nc = await as("gateway");
    const config = await new Kvm(jetstream(nc, { timeout: REFUSAL_MS })).open(CONFIG_BUCKET);
    expect(await attempt(() => config.put(configKeys.defaults("screening"), "{}"))).toMatch(PERMISSION);
    expect(await attempt(() => config.put("anything.else", "{}"))).toMatch(PERMISSION);
    expect(await attempt(() => config.get(configKeys.defaults("screening")))).toBe("ok");
  });

  /** A watcher as a service makes one: an ephemeral consumer over the bucket's stream, gone after `inactiveSeconds` unused. */
  const addWatcher = (jsm: JetStreamManager, bucket: string, inactiveSeconds: number) =>
    jsm.consumers.add(`KV_${bucket}`, {
      name: `watcher-${randomUUID().slice(0, 8)}`,
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.New,
      filter_subject: `$KV.${bucket}.>`,
      inactive_threshold: nanos(inactiveSeconds * 1_000),
    });

  it("gateway: cannot delete another user's consumers (a service's config watcher, a job state watcher)", async () => {
    const gateway = await jetstreamManager(await as("gateway"), { timeout: REFUSAL_MS });
    const screening = await jetstreamManager(await as("screening"), { timeout: REFUSAL_MS });
    for (const bucket of [CONFIG_BUCKET, jobNames("screening").stateBucket]) {
      const stream = `KV_${bucket}`;
      const name = (await addWatcher(screening, bucket, 60)).name;
      expect(await attempt(() => gateway.consumers.delete(stream, name))).toMatch(PERMISSION);
      // Still there for its owner; the gateway may still look at it (and read the bucket).
      expect(await attempt(() => screening.consumers.info(stream, name))).toBe("ok");
      expect(await attempt(() => gateway.consumers.info(stream, name))).toBe("ok");
      // Left to expire (its inactivity threshold): on the shared config bucket no user may delete a consumer.
      await screening.consumers.delete(stream, name).catch(() => undefined);
    }
  });

  it("a service cannot delete another service's consumers on the buckets they share (config, limits, provider budgets)", async () => {
    const screening = await jetstreamManager(await as("screening"), { timeout: REFUSAL_MS });
    const criteria = await jetstreamManager(await as("criteria"), { timeout: REFUSAL_MS });
    for (const bucket of [CONFIG_BUCKET, LIMITS_BUCKET, PROVIDER_BUDGET_BUCKET]) {
      const stream = `KV_${bucket}`;
      const watcher = await addWatcher(screening, bucket, 5);
      expect(await attempt(() => criteria.consumers.delete(stream, watcher.name)), bucket).toMatch(PERMISSION);
      expect(await attempt(() => screening.consumers.info(stream, watcher.name)), bucket).toBe("ok");
    }
  });

  it("a service cannot write the config bucket beyond its own defaults, nor touch another service's subjects, streams or buckets", async () => {
    const nc = await as("screening");
    const js = jetstream(nc, { timeout: REFUSAL_MS });
    const config = await new Kvm(js).open(CONFIG_BUCKET);
    expect(await attempt(() => config.put(configKeys.overrides("screening"), JSON.stringify({ temperature: 2 })))).toMatch(PERMISSION);
    expect(await attempt(() => config.put(configKeys.overrides("criteria"), "{}"))).toMatch(PERMISSION);
    expect(await attempt(() => config.put(configKeys.defaults("criteria"), "{}"))).toMatch(PERMISSION);
    expect(await attempt(() => config.delete(configKeys.defaults("extraction")))).toMatch(PERMISSION);

    expect(await trySubscribe(nc, subjects.rpcWildcard("indexer"))).toMatch(PERMISSION);
    expect(await trySubscribe(nc, "_INBOX.gateway.>")).toMatch(PERMISSION);
    expect(await attempt(() => nc.request(subjects.rpc("criteria", "picos"), "{}", { timeout: REFUSAL_MS }))).toMatch(PERMISSION);
    const indexer = jobNames("indexer");
    expect(await attempt(() => js.publish(indexer.commandSubject("forged"), "{}"))).toMatch(PERMISSION);
    expect(await attempt(() => readKv(nc, indexer.stateBucket))).toMatch(PERMISSION);
    expect(await attempt(() => listObjects(nc, indexer.dataBucket))).toMatch(PERMISSION);
    expect(await attempt(() => listObjects(nc, payloadBucket("indexer")))).toMatch(PERMISSION);
    expect(await attempt(() => listObjects(nc, payloadBucket("criteria")))).toMatch(PERMISSION);
    // Its own: fine.
    expect(await attempt(() => readKv(nc, jobNames("screening").stateBucket))).toBe("ok");
    expect(await attempt(() => listObjects(nc, payloadBucket("screening")))).toBe("ok");

    // Not even its own streams may be widened: an added subject would capture others' traffic for it to read.
    const jsm = await jetstreamManager(nc, { timeout: REFUSAL_MS });
    const own = jobNames("screening").commandStream;
    const ownConfig = (await jsm.streams.info(own)).config;
    expect(await attempt(() => jsm.streams.update(own, { ...ownConfig, subjects: [...ownConfig.subjects, "litrev.rpc.indexer.>", "_INBOX.gateway.>"] }))).toMatch(PERMISSION);
    const configStream = `KV_${CONFIG_BUCKET}`;
    const configInfo = (await jsm.streams.info(configStream)).config;
    expect(await attempt(() => jsm.streams.update(configStream, { ...configInfo, subjects: [...configInfo.subjects, "litrev.rpc.>"] }))).toMatch(PERMISSION);
    expect((await jsm.streams.info(own)).config.subjects).toEqual(ownConfig.subjects);

    const criteria = await as("criteria");
    expect(await attempt(() => jetstreamManager(criteria, { timeout: REFUSAL_MS }).then((m) => m.streams.info(jobNames("screening").commandStream)))).toMatch(PERMISSION);
    expect(await trySubscribe(criteria, subjects.rpcWildcard("screening"))).toMatch(PERMISSION);
  });

  it("a service writes only its own members of a provider budget: another's cannot be forged or deleted", async () => {
    const budgets = async (user: NatsUser) => new Kvm(jetstream(await as(user), { timeout: REFUSAL_MS })).open(PROVIDER_BUDGET_BUCKET);
    const [screening, criteria, gateway] = [await budgets("screening"), await budgets("criteria"), await budgets("gateway").catch(() => null)];
    const budget = "0123456789abcdef0123456789abcdef";
    // Its own member: fine (a heartbeat), and its own member's leaving.
    expect(await attempt(() => criteria.put(`${budget}.criteria.criteria-1-aaaa`, String(Date.now())))).toBe("ok");
    expect(await attempt(() => screening.put(`${budget}.screening.screening-1-bbbb`, String(Date.now())))).toBe("ok");
    // Another service's member: neither forged, nor refreshed, nor deleted or purged.
    expect(await attempt(() => screening.put(`${budget}.criteria.criteria-forged`, String(Date.now())))).toMatch(PERMISSION);
    expect(await attempt(() => screening.put(`${budget}.criteria.criteria-1-aaaa`, String(Date.now())))).toMatch(PERMISSION);
    expect(await attempt(() => screening.delete(`${budget}.criteria.criteria-1-aaaa`))).toMatch(PERMISSION);
    expect(await attempt(() => screening.purge(`${budget}.criteria.criteria-1-aaaa`))).toMatch(PERMISSION);
    // A member outside the `<budget>.<service>.<instance>` layout, which would count for everyone.
    expect(await attempt(() => screening.put(`${budget}.forged`, String(Date.now())))).toMatch(PERMISSION);
    expect(await attempt(() => screening.put(`${budget}.screening.a.b`, String(Date.now())))).toMatch(PERMISSION);
    // The gateway calls no provider: it has no member at all.
    if (gateway) expect(await attempt(() => gateway.put(`${budget}.gateway.g`, "1"))).toMatch(PERMISSION);
    expect((await criteria.get(`${budget}.criteria.criteria-1-aaaa`))?.operation).toBe("PUT");
    await criteria.delete(`${budget}.criteria.criteria-1-aaaa`);
    await screening.delete(`${budget}.screening.screening-1-bbbb`);
  });

  it("the model-alias defaults: each service writes only its own, nobody the shared table the gateway once served", async () => {
    const config = async (user: NatsUser) => new Kvm(jetstream(await as(user), { timeout: REFUSAL_MS })).open(CONFIG_BUCKET);
    const [screening, criteria, gateway] = [await config("screening"), await config("criteria"), await config("gateway")];
    const forged = JSON.stringify({ "llm-5-mini": "attacker-model" });
    // The single shared key every service used to write.
    expect(await attempt(() => screening.put("aliases.defaults", forged))).toMatch(PERMISSION);
    expect(await attempt(() => screening.put(MODEL_ALIAS_KEYS.defaultsOf("screening"), JSON.stringify({})))).toBe("ok");
    expect(await attempt(() => screening.put(MODEL_ALIAS_KEYS.defaultsOf("criteria"), forged))).toMatch(PERMISSION);
    expect(await attempt(() => screening.delete(MODEL_ALIAS_KEYS.defaultsOf("criteria")))).toMatch(PERMISSION);
    expect(await attempt(() => criteria.put(MODEL_ALIAS_KEYS.defaultsOf("extraction"), forged))).toMatch(PERMISSION);
    expect(await attempt(() => gateway.put(MODEL_ALIAS_KEYS.defaultsOf("screening"), forged))).toMatch(PERMISSION);
    // What the gateway serves was announced by the services themselves.
    const served = await stack.http("GET", "/v1/config/models");
    expect(served.status).toBe(200);
    expect(JSON.stringify(served.body)).not.toContain("attacker-model");
  });

  it("no user can reach the system account or list every stream", async () => {
    for (const user of ["gateway", "screening"] as const) {
      const nc = await as(user);
      const jsm = await jetstreamManager(nc, { timeout: REFUSAL_MS });
      expect(await attempt(async () => { for await (const _ of jsm.streams.list()) break; })).toMatch(PERMISSION);
      expect(await trySubscribe(nc, "$SYS.>")).toMatch(PERMISSION);
    }
  });

  it("every stream, bucket and object store on the server has a size limit", async () => {
    const jsz = await waitFor(async () => {
      const res = await fetch(`${stack.natsMonitorUrl}/jsz?accounts=true&streams=true&config=true`);
      return res.ok ? ((await res.json()) as Jsz) : null;
    });
    const streams = (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []);
    const names = streams.map((s) => s.name).sort();
    // Everything the three services create: 8 per job service, the config bucket, a payload bucket each.
    for (const service of ["screening", "indexer"] as const) {
      const n = jobNames(service);
      for (const name of [n.commandStream, n.checkpointStream, n.storeIndexStream, `KV_${n.stateBucket}`, `KV_${n.storeBucket}`, `OBJ_${n.dataBucket}`, `OBJ_${n.stagingBucket}`, `OBJ_${n.storeItemsBucket}`]) {
        expect(names).toContain(name);
      }
    }
    for (const service of ["criteria", "screening", "indexer"] as const) expect(names).toContain(`OBJ_${payloadBucket(service)}`);
    expect(names).toContain(`KV_${CONFIG_BUCKET}`);
    for (const stream of streams) {
      expect(stream.config.max_bytes, stream.name).toBeGreaterThan(0);
    }
    const byName = new Map(streams.map((s) => [s.name, s.config]));
    expect(byName.get(jobNames("screening").commandStream)!.discard).toBe("new");
    expect(byName.get(jobNames("screening").commandStream)!.max_msgs).toBeGreaterThan(0);
    expect(byName.get(jobNames("screening").checkpointStream)!.max_msgs_per_subject).toBe(1);
  });
});

interface Jsz {
  account_details?: { stream_detail?: { name: string; config: { max_bytes: number; max_msgs: number; max_msgs_per_subject: number; discard: string } }[] }[];
}
