/**
 * The most any deployment may configure. The contracts' schemas carry these ceilings (so a
 * service accepts whatever a gateway configured within them); the gateway enforces the limits
 * configured for the deployment (`RequestLimits`, docs/limits.md), which default far lower.
 */
export const LIMIT_CEILINGS = {
  papers: 1_000_000,
  records: 1_000_000,
  runRecords: 20_000,
  fields: 500,
  criteria: 5_000,
  criterionChars: 50_000,
  repetitions: 100,
  title: 50_000,
  abstract: 500_000,
  listLimit: 10_000,
  /** V8's longest string is about 536 million characters: a result must serialise into one. */
  resultsMillionChars: 500,
} as const;
