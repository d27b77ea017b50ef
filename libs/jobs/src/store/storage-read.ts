import { ServiceError } from "@litrev/contracts";
import type { JobStore } from "./job-store";

/** A database error on a read is a retryable 503 (`service_unavailable`), not a 500 with internals. */
export async function storageRead<T>(store: JobStore, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw new ServiceError("service_unavailable", `The job database is unavailable (${store.kind}); retry shortly`, { cause: error });
  }
}
