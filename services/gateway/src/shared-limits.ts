import { SharedRecords, type NatsLink, type RecordStore } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";

/** While the bucket is missing it is looked for again this often (one stream-info request; counted requests meanwhile stay local). */
const REOPEN_MS = 250;
/**
 * Each request to the bucket may take this long: a limit check waits KEY_LIMITS_WAIT_MS at most
 * whatever this is, but a beat that lands late still renews this gateway's share (a bucket slowed
 * past JetStream's usual 2 s would otherwise leave every gateway without one after the 15 s lease).
 */
const BUCKET_TIMEOUT_MS = 10_000;

/**
 * The limits bucket that every gateway shares, once NATS is connected and the bucket exists. The
 * services create it; a gateway only binds to it (on a locked-down NATS it may not create streams,
 * and an attempt would be logged as a violation), looking for it in the background until it is
 * there. Null meanwhile, and while NATS is unreachable: the limiter then counts in this process alone.
 */
export function sharedLimits(link: NatsLink, logger: Logger): () => RecordStore | null {
  let store: SharedRecords | null = null;
  const bind = () => {
    const nc = link.raw;
    if (!nc) return void setTimeout(bind, REOPEN_MS).unref();
    SharedRecords.open(nc, { create: false, timeoutMs: BUCKET_TIMEOUT_MS }).then(
      (opened) => (store = opened),
      (error: unknown) => {
        logger.debug({ err: error }, "the limits bucket is not there yet (no service has started); per-owner limits are counted by this gateway alone");
        setTimeout(bind, REOPEN_MS).unref();
      },
    );
  };
  void link.ready().then(bind, () => undefined);
  return () => (store && link.connected ? store : null);
}
