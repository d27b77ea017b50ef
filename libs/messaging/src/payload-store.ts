import { Objm, type ObjectStore } from "@nats-io/obj";
import { streamReplicas } from "./replicas";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomUUID } from "node:crypto";
import { PAYLOAD_BUCKET, ServiceError } from "@litrev/contracts";

/**
 * Bodies above this size are parked in the payload object store and only their name travels in
 * the message (header `x-litrev-payload`): NATS' default max payload is 1 MB, and a screening job's
 * papers or a poll's results are many MB.
 */
export const SPILL_THRESHOLD_BYTES = 512 * 1024;

/** Parked bodies not taken within this time are swept by the bucket's max age. */
const PAYLOAD_TTL_MS = 60 * 60 * 1000;

/** Text per part of a body parked by `parkParts`. */
const PART_CHARS = 1024 * 1024;
const encoder = new TextEncoder();

/** Where a body parked in parts is: `<name>/0 … <name>/<parts-1>`. */
export interface PartsRef {
  name: string;
  parts: number;
  bytes: number;
}

const stores = new WeakMap<NatsConnection, Promise<PayloadStore>>();

/** Request and reply bodies too large for one NATS message, in a JetStream Object Store (128 KiB chunks). */
export class PayloadStore {
  private constructor(private readonly store: ObjectStore) {}

  /** One store per connection, opened (and created if needed) on first use. */
  static for(nc: NatsConnection): Promise<PayloadStore> {
    let store = stores.get(nc);
    if (!store) {
      store = new Objm(nc)
        .create(PAYLOAD_BUCKET, { ttl: PAYLOAD_TTL_MS * 1_000_000, replicas: streamReplicas() })
        .then((os) => new PayloadStore(os));
      store.catch(() => stores.delete(nc));
      stores.set(nc, store);
    }
    return store;
  }

  /** Stores `bytes` under a fresh name and returns the name. */
  async park(bytes: Uint8Array): Promise<string> {
    const name = randomUUID();
    await this.store.putBlob({ name }, bytes);
    return name;
  }

  /**
   * Parks a body produced piece by piece (`StreamedBody`) as numbered parts of about 1 MB, each
   * written once it is full: the whole body is never one string or buffer. Parts are not deleted
   * by readers (several may share one body); the bucket's max age sweeps them.
   */
  async parkParts(pieces: AsyncIterable<string>): Promise<PartsRef> {
    const name = randomUUID();
    let parts = 0;
    let bytes = 0;
    let buffered: string[] = [];
    let size = 0;
    // One part written while the next is produced; a failed write fails the whole body.
    let writing: Promise<unknown> = Promise.resolve();
    const flush = async () => {
      const data = encoder.encode(buffered.join(""));
      buffered = [];
      size = 0;
      await writing;
      writing = this.store.putBlob({ name: `${name}/${parts}` }, data);
      writing.catch(() => undefined); // awaited before the next write and at the end
      parts++;
      bytes += data.length;
    };
    for await (const piece of pieces) {
      buffered.push(piece);
      size += piece.length;
      if (size >= PART_CHARS) await flush();
    }
    if (size > 0 || parts === 0) await flush();
    await writing;
    return { name, parts, bytes };
  }

  /** The parts of a body parked by `parkParts`, in order, one at a time. */
  async *readParts(ref: PartsRef): AsyncGenerator<Uint8Array> {
    for (let n = 0; n < ref.parts; n++) yield await this.readPart(ref, n);
  }

  /** Part `n` of a body parked by `parkParts`. */
  async readPart(ref: PartsRef, n: number): Promise<Uint8Array> {
    const bytes = await this.store.getBlob(`${ref.name}/${n}`);
    if (!bytes) throw new ServiceError("unknown", "A large message body could not be found in the payload store (expired?)");
    return bytes;
  }

  /** Reads a parked body and deletes it: each body is read exactly once. */
  async take(name: string): Promise<Uint8Array> {
    const bytes = await this.store.getBlob(name);
    if (!bytes) throw new ServiceError("unknown", "A large message body could not be found in the payload store (expired?)");
    void this.store.delete(name).catch(() => undefined);
    return bytes;
  }
}
