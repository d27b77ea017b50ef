import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { jobNames, sampleNotFound, ServiceError, StoredValidationSample, type ReportCertificate, type StoredCertificate } from "@litrev/contracts";
import { isWrongRevision } from "@litrev/jobs";
import { streamReplicas } from "@litrev/messaging";

/**
 * Validation samples, kept by the screening service in its own KV bucket: one value per sample
 * (`sample.<job>.<sample>`), holding its owner, its papers' votes and job decisions (so a look
 * needs no second read of the job), its labels and every look. A batch of labels is one
 * compare-and-set on the value's revision, so two batches at once never lose each other's labels.
 * The record's schema (`StoredValidationSample`) is in libs/contracts: gateways read a sample's
 * papers and labels from it for an export that marks them.
 */

/** Bucket size: a few hundred full samples of long ids; samples expire with the store of record's rows (`JOB_STORE_RETENTION_MS`). */
const BUCKET_BYTES = 256 * 1024 * 1024;
/** One record must fit one NATS message (1 MiB by default) with room to spare. */
const MAX_RECORD_BYTES = 900 * 1024;

export class SampleStore {
  private constructor(private readonly kv: KV) {}

  static async open(nc: NatsConnection, retentionMs: number): Promise<SampleStore> {
    const names = jobNames("screening");
    const kv = await new Kvm(nc).create(names.validationBucket, { history: 1, ttl: retentionMs, replicas: streamReplicas(), max_bytes: BUCKET_BYTES, allow_direct: false });
    return new SampleStore(kv);
  }

  /** The record and its revision, or a 404 when it is missing or another client's (as a poll answers). */
  async read(jobId: string, sampleId: string, owner: string | undefined): Promise<{ record: StoredValidationSample; revision: number }> {
    const entry = await this.kv.get(jobNames("screening").validationKey(jobId, sampleId));
    if (!entry || entry.operation !== "PUT") throw sampleNotFound();
    const record = StoredValidationSample.parse(entry.json());
    if (owner !== undefined && record.owner !== owner) throw sampleNotFound();
    return { record, revision: entry.revision };
  }

  /** Keeps `record`'s certificate as its job's latest, for the methods report any gateway reads. */
  async putCertificate(record: StoredValidationSample): Promise<void> {
    const stored: StoredCertificate = { owner: record.owner, certificate: reportCertificateOf(record) };
    await this.kv.put(jobNames("screening").certificateKey(record.sample.job_id), JSON.stringify(stored));
  }

  async create(record: StoredValidationSample): Promise<void> {
    await this.kv.create(jobNames("screening").validationKey(record.sample.job_id, record.sample.sample_id), encode(record));
  }

  /** Writes over `revision` only: false when another batch got there first (the caller reads again). */
  async update(record: StoredValidationSample, revision: number): Promise<boolean> {
    try {
      await this.kv.update(jobNames("screening").validationKey(record.sample.job_id, record.sample.sample_id), encode(record), revision);
      return true;
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw error;
    }
  }
}

/** Room counted per paper of a sample for its label (id, decision, a discordance entry) and for the looks of its batches. */
const LABEL_BYTES = 256;
const LOOKS_BYTES = 64 * 1024;

/** What a sample's record may come to hold once labelled: its size when drawn plus room for every label, at most one record. */
export function sampleBytes(record: StoredValidationSample): number {
  return Math.min(MAX_RECORD_BYTES, Buffer.byteLength(JSON.stringify(record)) + record.sample.paper_ids.length * LABEL_BYTES + LOOKS_BYTES);
}

function encode(record: StoredValidationSample): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(record));
  if (bytes.length > MAX_RECORD_BYTES) {
    throw new ServiceError("validation", `The sample's record would be ${Math.ceil(bytes.length / 1024)} KiB, over the ${MAX_RECORD_BYTES / 1024} KiB one record may hold: draw a smaller sample`, { simple: true });
  }
  return bytes;
}

/** A labelled sample's certificate as the methods report cites it (the sample's newest look). */
function reportCertificateOf({ sample }: StoredValidationSample): ReportCertificate {
  const cert = sample.certificate;
  return {
    sample_id: sample.sample_id,
    design: sample.design,
    plan: sample.plan,
    look: cert.look,
    sample_size: sample.paper_ids.length,
    labelled: cert.labelled,
    labelled_included: cert.labelled_included,
    threshold: cert.recommended?.votes ?? null,
    recall_lower: cert.recommended?.recall_lower ?? null,
    statement: cert.statement,
    method: cert.method,
    at: sample.looks.at(-1)!.at,
  };
}
