import type { JetStreamManager } from "@nats-io/jetstream";
import type { ObjectStore } from "@nats-io/obj";
import { jobDataObjects, type ObjectRef } from "@litrev/contracts";
import type { JobData } from "./data";
import { isNotFound } from "./nats-errors";

/**
 * Erases everything the job data store holds of one job: its input, the finished items of every
 * run (`partial/…`), and its artifact (head, items, titles and abstracts). `input` names a list the
 * gateway staged for it, in the staging store, when the caller knows it (the job's command). One
 * function for every caller that must leave nothing of a job behind (DELETE of a job). The stored
 * row, checkpoints, live state and validation samples live elsewhere and are the caller's to erase.
 */
export async function eraseJobData(data: JobData, jobId: string, input?: ObjectRef | null): Promise<void> {
  if (input) await data.deleteLines(input);
  await data.deleteByPrefix(jobDataObjects.ofJob(jobId));
}

/** At most this many subjects of one stream are looked at per erasure (a stream's subjects are bounded by its quota). */
const MAX_SUBJECTS = 1_000_000;

/** The object name a metadata subject stands for. */
function nameOfMetaSubject(bucket: string, subject: string): string {
  return Buffer.from(subject.slice(`$O.${bucket}.M.`.length), "base64url").toString();
}

/** The subjects of `stream` under `filter` (with their message counts): one stream-info request. */
async function subjectsOf(jsm: JetStreamManager, stream: string, filter: string): Promise<string[]> {
  try {
    const info = await jsm.streams.info(stream, { subjects_filter: filter });
    return Object.keys(info.state.subjects ?? {}).slice(0, MAX_SUBJECTS);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

/**
 * Removes every key of a KV bucket whose name holds `token` (a job id) with its whole history:
 * its subject is purged, so not even a delete marker is left.
 */
export async function eraseKeysNaming(jsm: JetStreamManager, bucket: string, token: string): Promise<number> {
  const stream = `KV_${bucket}`;
  const subjects = (await subjectsOf(jsm, stream, `$KV.${bucket}.>`)).filter((subject) => subject.split(".").includes(token));
  for (const subject of subjects) await jsm.streams.purge(stream, { filter: subject });
  return subjects.length;
}

/**
 * Removes every object of a store whose name holds `token` (a job id): its chunks, and its
 * metadata's subject purged, so no delete marker is left either (an object deleted earlier, e.g. a
 * finished job's input, left one).
 */
export async function eraseObjectsNaming(jsm: JetStreamManager, store: ObjectStore, bucket: string, token: string): Promise<number> {
  const stream = `OBJ_${bucket}`;
  const metas = (await subjectsOf(jsm, stream, `$O.${bucket}.M.>`)).filter((subject) => nameOfMetaSubject(bucket, subject).split("/").includes(token));
  for (const subject of metas) {
    // Its chunks first (a no-op for an object already deleted), then every trace of its name.
    await store.delete(nameOfMetaSubject(bucket, subject)).catch(() => undefined);
    await jsm.streams.purge(stream, { filter: subject });
  }
  return metas.length;
}
