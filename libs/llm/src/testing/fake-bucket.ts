/**
 * The fake provider's budget for one key and one dimension (requests or tokens). Like OpenAI,
 * a per-minute limit is enforced over a short window: the bucket holds `burstSeconds` worth of
 * the limit and refills continuously, so 1,200 RPM means about 20 per second, not 1,200 at once.
 */
export class FakeBucket {
  private readonly capacity: number;
  private readonly perMs: number;
  private tokens: number;
  private updatedAt: number;

  constructor(
    readonly perMinute: number,
    burstSeconds: number,
    now: number,
  ) {
    this.capacity = Math.max(1, (perMinute * burstSeconds) / 60);
    this.perMs = perMinute / 60_000;
    this.tokens = this.capacity;
    this.updatedAt = now;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.updatedAt) * this.perMs);
    this.updatedAt = now;
  }

  /**
   * Takes `cost` if available and returns 0, else returns the ms until it would be. A cost above
   * the capacity is admitted from a full bucket (leaving a debt) so that big requests still pass.
   */
  take(cost: number, now: number): number {
    this.refill(now);
    const needed = Math.min(cost, this.capacity);
    if (this.tokens + 1e-9 >= needed) {
      this.tokens -= cost;
      return 0;
    }
    return Math.ceil((needed - this.tokens) / this.perMs);
  }

  remaining(now: number): number {
    this.refill(now);
    return Math.max(0, Math.floor(this.tokens));
  }

  /** Time until the bucket is full again (OpenAI's meaning of `x-ratelimit-reset-*`). */
  resetMs(now: number): number {
    this.refill(now);
    return Math.ceil((this.capacity - this.tokens) / this.perMs);
  }
}

/** OpenAI's duration style: `120ms`, `1.5s`, `6m0s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 60_000) return `${Math.round(ms) / 1000}s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes}m${Math.round((ms - minutes * 60_000) / 1000)}s`;
}
