import autocannon from "autocannon";

/** What one autocannon run against one URL shows. */
export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** Requests per second and latency of GETs to `url` over `connections` keep-alive connections. */
export async function measure(url: string, headers: Record<string, string>, seconds: number, connections: number): Promise<Figures> {
  const result = await autocannon({ url, connections, duration: seconds, headers });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors + result.timeouts };
}

/** The mean of one figure over rounds. */
export function mean(rows: readonly Figures[], key: keyof Figures): number {
  return rows.reduce((sum, row) => sum + row[key], 0) / rows.length;
}
