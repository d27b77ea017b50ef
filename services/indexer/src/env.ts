import { z } from "zod";
import { JobsEnv, withJobKeySecrets } from "@litrev/jobs";
import { BaseEnv, parseEnv } from "@litrev/runtime";

export const IndexerEnv = BaseEnv.extend(JobsEnv.shape).extend({
  /** Provider calls in flight per running job (a sync run uses the request's `max_workers`). */
  INDEXER_JOB_RECORD_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(8),
  /**
   * Time budget of a synchronous run; keep it below the gateway's RPC_TIMEOUT_MS (120 s) so the
   * answer, with unreached records marked `not_processed`, arrives before the gateway gives up.
   */
  INDEXER_RUN_BUDGET_MS: z.coerce.number().int().min(1_000).default(100_000),
});
export type IndexerEnv = z.infer<typeof IndexerEnv>;

export const loadEnv = () => parseEnv(withJobKeySecrets(IndexerEnv));
