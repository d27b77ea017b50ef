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
