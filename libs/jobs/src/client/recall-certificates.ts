import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { jobNames, StoredCertificate, type JobService, type ReportCertificate } from "@litrev/contracts";

/**
 * The latest recall certificate of a job, as its methods report cites it: read from the owning
 * service's validation bucket (read only, like the job data), so a report needs no request to the
 * service. Another owner's certificate, none yet, or a kind that keeps no samples: null.
 */
export class RecallCertificates {
  readonly #kv = new Map<JobService, Promise<KV>>();

  constructor(private readonly connection: () => NatsConnection) {}

  async latest(service: JobService, jobId: string, owner: string): Promise<ReportCertificate | null> {
    const kv = await this.#bucket(service);
    if (!kv) return null;
    const entry = await kv.get(jobNames(service).certificateKey(jobId));
    if (!entry || entry.operation !== "PUT") return null;
    const stored = StoredCertificate.safeParse(entry.json());
    return stored.success && stored.data.owner === owner ? stored.data.certificate : null;
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
