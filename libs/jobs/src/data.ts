import { Objm, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { jobNames, type JobService, type ObjectRef } from "@litrev/contracts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Job inputs and results in a JetStream Object Store (128 KiB chunks), so no value of any size ever
 * rides in one NATS message: a 10,000-paper input is ~15 MB, its result several MB.
 */
export class JobData {
  constructor(readonly store: ObjectStore) {}

  /** Binds to a service's existing data store (readers such as the gateway; `openJobInfra` creates it). */
  static async open(nc: NatsConnection, service: JobService): Promise<JobData> {
    return new JobData(await new Objm(nc).open(jobNames(service).dataBucket));
  }

  async putJson(name: string, value: unknown): Promise<ObjectRef> {
    const bytes = encoder.encode(JSON.stringify(value));
    await this.store.putBlob({ name }, bytes);
    return { object: name, bytes: bytes.length };
  }

  /** The parsed value, or null when the object does not exist (expired, deleted). */
  async getJson<T = unknown>(name: string): Promise<T | null> {
    const bytes = await this.store.getBlob(name);
    if (!bytes) return null;
    return JSON.parse(decoder.decode(bytes)) as T;
  }

  async delete(name: string): Promise<void> {
    try {
      await this.store.delete(name);
    } catch {
      // Already gone: deleting is housekeeping, the bucket's max age sweeps leftovers.
    }
  }
}
