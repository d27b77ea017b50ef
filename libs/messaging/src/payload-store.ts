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

  /** Reads a parked body and deletes it: each body is read exactly once. */
  async take(name: string): Promise<Uint8Array> {
    const bytes = await this.store.getBlob(name);
    if (!bytes) throw new ServiceError("unknown", "A large message body could not be found in the payload store (expired?)");
    void this.store.delete(name).catch(() => undefined);
    return bytes;
  }
}
