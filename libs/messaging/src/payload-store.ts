import { jetstreamManager } from "@nats-io/jetstream";
import { Objm, type ObjectStore } from "@nats-io/obj";
import { streamReplicas } from "./replicas";
import type { NatsConnection } from "@nats-io/transport-node";
import { nanos } from "@nats-io/transport-node";
import { randomUUID } from "node:crypto";
import { payloadBucket, ServiceError, type BackendService } from "@litrev/contracts";
import { keepStreamLimits, storageQuotas } from "./quotas";

/**
 * Bodies above this size are parked in the payload object store and only their name travels in
 * the message (header `x-litrev-payload`): NATS' default max payload is 1 MB, and a screening job's
 * papers or a poll's results are many MB.
 */
export const SPILL_THRESHOLD_BYTES = 512 * 1024;

/** Parked bodies not taken within this time are swept by the bucket's max age. */
export const PAYLOAD_TTL_MS = 60 * 60 * 1000;

/** Text per part of a body parked by `parkParts`. */
const PART_CHARS = 1024 * 1024;
const encoder = new TextEncoder();

/** Where a body parked in parts is: `<name>/0 … <name>/<parts-1>`. */
export interface PartsRef {
  name: string;
  parts: number;
  bytes: number;
}

const stores = new WeakMap<NatsConnection, Map<BackendService, Promise<PayloadStore>>>();

/**
 * Request and reply bodies too large for one NATS message, in a JetStream Object Store (128 KiB
 * chunks), one bucket per backend service (`litrev_payloads_<service>`): the service creates it
 * with its size limit (NATS_QUOTA_PAYLOAD_MB) at start-up; the gateway, which may not create
 * streams, binds to it.
 */
export class PayloadStore {
  private constructor(private readonly store: ObjectStore) {}

  /** Creates the service's bucket (or brings its limits up to date): the owning service, at start-up. */
  static async create(nc: NatsConnection, service: BackendService): Promise<PayloadStore> {
    const bucket = payloadBucket(service);
    const maxBytes = storageQuotas().payloadBytes;
    const os = await new Objm(nc).create(bucket, { ttl: nanos(PAYLOAD_TTL_MS), replicas: streamReplicas(), max_bytes: maxBytes });
    await keepStreamLimits(await jetstreamManager(nc), `OBJ_${bucket}`, { max_bytes: maxBytes, max_age: nanos(PAYLOAD_TTL_MS) });
    const store = new PayloadStore(os);
    cache(nc).set(service, Promise.resolve(store));
    return store;
  }

  /** One store per connection and service, bound on first use to the bucket the service created. */
  static for(nc: NatsConnection, service: BackendService): Promise<PayloadStore> {
    const byService = cache(nc);
    let store = byService.get(service);
    if (!store) {
      store = new Objm(nc).open(payloadBucket(service)).then((os) => new PayloadStore(os));
      store.catch(() => byService.delete(service));
      byService.set(service, store);
    }
    return store;
  }

  /** Stores `bytes` under a fresh name and returns the name. */
  async park(bytes: Uint8Array): Promise<string> {
    const name = randomUUID();
    await this.store.putBlob({ name }, bytes);
    return name;
  }

  /** Drops a parked body nobody will take (its request found no responder). */
  async discard(name: string): Promise<void> {
    await this.store.delete(name);
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

function cache(nc: NatsConnection): Map<BackendService, Promise<PayloadStore>> {
  let byService = stores.get(nc);
  if (!byService) {
    byService = new Map();
    stores.set(nc, byService);
  }
  return byService;
}
