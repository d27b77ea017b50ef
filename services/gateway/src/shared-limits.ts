import { SharedRecords, type NatsLink, type RecordStore } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";

/** After a failed open, the bucket is tried again this much later (counted requests meanwhile stay local). */
const REOPEN_MS = 5_000;

/**
 * The limits bucket that every gateway shares, once NATS is connected and the bucket exists (the
 * services create it; on an open NATS the gateway creates it too, as it does the config bucket).
 * Null while it is not there: the limiter then counts in this process alone.
 */
export function sharedLimits(link: NatsLink, logger: Logger): () => RecordStore | null {
  let store: SharedRecords | null = null;
  let opening = false;
  let retryAt = 0;
  const get = (): RecordStore | null => {
    if (store) return link.connected ? store : null;
    const nc = link.raw;
    if (!nc || !link.connected || opening || Date.now() < retryAt) return null;
    opening = true;
    SharedRecords.open(nc, { create: false })
      .catch(() => SharedRecords.open(nc))
      .then(
        (opened) => (store = opened),
        (error: unknown) => {
          retryAt = Date.now() + REOPEN_MS;
          logger.debug({ err: error }, "the limits bucket is not there yet; per-owner limits are counted by this gateway alone");
        },
      )
      .finally(() => (opening = false));
    return null;
  };
  // Opened as soon as NATS is reached, so that the first counted requests are shared already.
  void link.ready().then(get, () => undefined);
  return get;
}
