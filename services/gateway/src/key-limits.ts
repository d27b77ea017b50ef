import { ServiceError } from "@litrev/contracts";

export interface KeyLimitSettings {
  /** Requests of one owner in flight at once; 0: no limit. */
  concurrency: number;
  /** Sustained requests per second of one owner; 0: no limit. */
  ratePerS: number;
  /** Requests one owner may send at once above the sustained rate. */
  burst: number;
}

interface OwnerState {
  inFlight: number;
  /** Token bucket: requests allowed now, refilled at `ratePerS` up to `burst`. */
  tokens: number;
  refilledAt: number;
}

/** Either a place for the request (release it once, when the request ends) or the 429 to answer. */
export type Admission = { release: () => void; refusal?: undefined } | { refusal: ServiceError; release?: undefined };

/**
 * Per-owner concurrency and rate limits, so one client's burst cannot take the gateway (or the
 * services behind it) from the others. One entry per owner of a configured service key: requests
 * with an unknown key are refused before they get here, so the map holds at most that many.
 */
export function keyLimiter(settings: KeyLimitSettings, now: () => number = () => performance.now()) {
  const owners = new Map<string, OwnerState>();

  return (owner: string): Admission => {
    const at = now();
    let state = owners.get(owner);
    if (!state) owners.set(owner, (state = { inFlight: 0, tokens: settings.burst, refilledAt: at }));
    if (settings.concurrency > 0 && state.inFlight >= settings.concurrency) {
      // When one of them ends is unknown; a second is the shortest wait the header can say.
      return { refusal: refusal(`More than ${settings.concurrency} requests of this client in flight (KEY_CONCURRENCY, docs/limits.md); retry when one has ended`, 1_000) };
    }
    if (settings.ratePerS > 0) {
      state.tokens = Math.min(settings.burst, state.tokens + ((at - state.refilledAt) / 1_000) * settings.ratePerS);
      state.refilledAt = at;
      if (state.tokens < 1) {
        const waitMs = ((1 - state.tokens) / settings.ratePerS) * 1_000;
        return { refusal: refusal(`More than ${settings.ratePerS} requests per second from this client (KEY_RATE_PER_S, burst KEY_RATE_BURST, docs/limits.md)`, waitMs) };
      }
      state.tokens -= 1;
    }
    state.inFlight++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        state.inFlight--;
      },
    };
  };
}

const refusal = (message: string, retryAfterMs: number) => new ServiceError("rate_limit", message, { retryAfterMs });
