import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { jobNames, SampleMembership, StoredCertificate, type JobService, type ReportCertificate } from "@litrev/contracts";
import type { z } from "zod";
import { sampleMarksOf, type SampleMarks } from "./sample-marks";

/**
 * What gateways read of the owning service's validation bucket (read only, like the job data), so
 * neither a report nor an export needs a request to the service: a job's latest recall certificate,
 * as its methods report cites it, and one of its samples, as an export marks it. Another owner's
 * record, none yet, or a kind that keeps no samples: null.
 */
export class RecallCertificates {
  readonly #kv = new Map<JobService, Promise<KV>>();

  constructor(private readonly connection: () => NatsConnection) {}

  async latest(service: JobService, jobId: string, owner: string): Promise<ReportCertificate | null> {
    return (await this.#read(service, jobNames(service).certificateKey(jobId), StoredCertificate, owner))?.certificate ?? null;
  }

  /** One of the job's validation samples, read once (at most MAX_VALIDATION_SAMPLE papers). */
  async sampleMarks(service: JobService, jobId: string, sampleId: string, owner: string): Promise<SampleMarks | null> {
    const stored = await this.#read(service, jobNames(service).validationKey(jobId, sampleId), SampleMembership, owner);
    return stored && stored.sample.job_id === jobId ? sampleMarksOf(stored.sample) : null;
  }

  /** The record under `key` when it is `owner`'s; null when missing, unreadable or another's. */
  async #read<T extends { owner: string | null }>(service: JobService, key: string, schema: z.ZodType<T>, owner: string): Promise<T | null> {
    const kv = await this.#bucket(service);
    if (!kv) return null;
    const entry = await kv.get(key);
    if (!entry || entry.operation !== "PUT") return null;
    const stored = schema.safeParse(entry.json());
    return stored.success && stored.data.owner === owner ? stored.data : null;
  }

  /** The bucket, or null until its service has created it (no sample drawn yet anywhere). */
  async #bucket(service: JobService): Promise<KV | null> {
    let kv = this.#kv.get(service);
    if (!kv) {
      // `status()` asks for the stream: opening alone does not tell a missing bucket.
      kv = new Kvm(this.connection()).open(jobNames(service).validationBucket).then(async (opened) => (await opened.status(), opened));
      this.#kv.set(service, kv);
    }
    try {
      return await kv;
    } catch {
      this.#kv.delete(service);
      return null;
    }
  }
}
