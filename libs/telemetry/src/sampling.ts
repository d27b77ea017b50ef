/** Paths polled by probes and scrapers: a span per probe would drown the traces that matter. */
const UNTRACED_PATHS = /^\/(metrics|health(\/ready)?)(\?|$)/;

/** Job polls and active-job reads of every job kind (`/<kind>/jobs/<id>`, `/<kind>/active-job`): served from memory, many per job, cheap to answer. */
const POLL_PATHS = /^(\/v1)?\/[a-z][a-z0-9-]*\/(jobs\/[^/?]+|active-job)(\?|$)/;

/**
 * Which incoming requests get no server span. Probes never do; job polls are sampled at
 * OTEL_POLL_TRACE_RATIO (default 0.01), because a span per poll costs about a sixth of the
 * gateway's poll throughput (docs/performance.md) while telling little that one in a hundred
 * does not. Every other request is traced.
 */
export function skipServerSpan(method: string | undefined, url: string | undefined, pollRatio: number, draw = Math.random): boolean {
  const path = url ?? "";
  if (UNTRACED_PATHS.test(path)) return true;
  return method === "GET" && POLL_PATHS.test(path) && draw() >= pollRatio;
}
