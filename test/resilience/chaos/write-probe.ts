import { DeliverPolicy, jetstream, jetstreamManager, StorageType, type JetStreamClient } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { History, ProbeStore } from "./history";

/**
 * Acknowledged writes, read back: while the nemesis runs, one writer appends to a stream and one
 * puts fresh keys into a KV bucket (the kinds of write the services make: commands and checkpoints,
 * job state and rows), each write recorded in the history with the sequence the server acknowledged.
 * After the cluster is healed every message of both streams is read back once, and each read is
 * recorded too; the checker (`write-lost`) fails the run on any acknowledged write that is missing
 * or changed, and on any it could not read back. Same server, same faults as the services' writes:
 * a leader elected without writes the cluster acknowledged (a "rewind") shows here as a loss.
 */

const STREAM = "CHAOS_PROBE";
const SUBJECT = "chaos.probe";
const BUCKET = "chaos_probe";
/** Pause between one writer's writes, so the probe adds little to a loaded machine. */
const GAP_MS = 10;
const WRITE_TIMEOUT_MS = 3_000;
const READ_TIMEOUT_MS = 60_000;

export class WriteProbe {
  #running = true;
  readonly #loops: Promise<void>[];

  private constructor(
    private readonly nc: NatsConnection,
    private readonly history: History,
    js: JetStreamClient,
    kv: { put(key: string, value: string): Promise<number> },
  ) {
    this.#loops = [
      this.#writer("stream", (n, value) => js.publish(`${SUBJECT}.${n}`, value, { timeout: WRITE_TIMEOUT_MS }).then((ack) => ack.seq)),
      this.#writer("kv", (n, value) => kv.put(`w${n}`, value)),
    ];
  }

  /** Creates the probe's stream and bucket with `replicas` copies and starts writing. */
  static async start(history: History, natsUrl: string, replicas: number): Promise<WriteProbe> {
    const nc = await connect({ servers: natsUrl.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 250, name: "chaos-probe" });
    try {
      const jsm = await jetstreamManager(nc, { timeout: 10_000 });
      await jsm.streams.add({ name: STREAM, subjects: [`${SUBJECT}.>`], num_replicas: replicas, storage: StorageType.File });
      const kv = await new Kvm(nc).create(BUCKET, { replicas, history: 1, timeout: 10_000 });
      return new WriteProbe(nc, history, jetstream(nc, { timeout: WRITE_TIMEOUT_MS }), { put: (key, value) => kv.put(key, value, { timeout: WRITE_TIMEOUT_MS }) });
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  async #writer(store: ProbeStore, write: (n: number, value: string) => Promise<number>): Promise<void> {
    for (let n = 1; this.#running; n++) {
      const value = `${store}-${n}-${Date.now()}`;
      const complete = this.history.invoke(`probe-${store}`, { f: "write", probe: { store, key: String(n), value } });
      try {
        complete("ok", { probe: { store, key: String(n), value, seq: await write(n, value) } });
      } catch (error) {
        // Not acknowledged: it may or may not have landed, so nothing is promised for it.
        complete("info", { error: (error as Error).message.slice(0, 200) });
      }
      await new Promise((r) => setTimeout(r, GAP_MS));
    }
  }

  /** Stops writing (the writes in flight complete first). */
  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }

  /**
   * Reads every message of both streams back from their current leaders (retrying while the cluster
   * settles) and records what each sequence holds; a read that fails is recorded as such.
   */
  async readBack(timeoutMs = 120_000): Promise<void> {
    for (const [store, stream, prefix] of [["stream", STREAM, `${SUBJECT}.`], ["kv", `KV_${BUCKET}`, `$KV.${BUCKET}.w`]] as const) {
      const deadline = Date.now() + timeoutMs;
      for (let attempt = 1; ; attempt++) {
        try {
          const held = await this.#readAll(stream);
          for (const [seq, { subject, value }] of held) {
            if (subject.startsWith(prefix)) this.history.add("probe-read", "ok", { f: "readback", probe: { store, key: subject.slice(prefix.length), value, seq } });
          }
          this.history.add("probe-read", "ok", { f: "readback", readback: { store, messages: held.size } });
          break;
        } catch (error) {
          if (Date.now() > deadline) {
            this.history.add("probe-read", "fail", { f: "readback", readback: { store, messages: 0 }, error: `after ${attempt} attempt(s): ${(error as Error).message.slice(0, 200)}` });
            break;
          }
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    }
  }

  async #readAll(stream: string): Promise<Map<number, { subject: string; value: string }>> {
    const js = jetstream(this.nc, { timeout: 10_000 });
    const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
    const held = new Map<number, { subject: string; value: string }>();
    try {
      const info = await consumer.info(true);
      if (info.num_pending === 0) return held;
      const messages = await consumer.consume({ max_messages: 1_024 });
      // A read that stops delivering (its consumer lost with a server) is given up and tried again.
      const timer = setTimeout(() => void messages.close().catch(() => undefined), READ_TIMEOUT_MS);
      let complete = false;
      try {
        for await (const msg of messages) {
          held.set(msg.seq, { subject: msg.subject, value: msg.string() });
          if (msg.info.pending === 0) {
            complete = true;
            break;
          }
        }
      } finally {
        clearTimeout(timer);
        await messages.close().catch(() => undefined);
      }
      if (!complete) throw new Error(`${stream}: the read back stopped after ${held.size} messages`);
    } finally {
      await consumer.delete().catch(() => undefined);
    }
    return held;
  }

  async close(): Promise<void> {
    this.#running = false;
    await this.nc.close().catch(() => undefined);
  }
}
