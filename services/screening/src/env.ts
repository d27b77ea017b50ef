import { z } from "zod";
import { JobsEnv, withJobKeySecrets } from "@litrev/jobs";
import { BaseEnv, parseEnv } from "@litrev/runtime";
import { DEFAULT_MAX_LOST_PAPER_SHARE } from "./pipeline/run";

export const ScreeningEnv = BaseEnv.extend(JobsEnv.shape).extend({
  /**
   * Papers per labelling call (decisions stay per paper; fewer calls, shared instructions). 10 from
   * measurements (docs/performance.md): the fixed prefix (~380 tokens) costs 38 tokens a paper a pass
   * instead of 76 at 5, half the calls (the rate-limit bound), and the oracle harness's decisions on
   * the three built-in reviews were the same at 5 and 10.
   */
  SCREENING_LABEL_BATCH: z.coerce.number().int().min(1).max(20).default(10),
  /** Papers per reasoning call. */
  SCREENING_REASON_BATCH: z.coerce.number().int().min(1).max(20).default(5),
  /** Reasons per clustering map call. */
  SCREENING_CLUSTER_CHUNK: z.coerce.number().int().min(10).max(500).default(120),
  /** Papers per assignment call. */
  SCREENING_ASSIGN_BATCH: z.coerce.number().int().min(1).max(200).default(40),
  /** Most clusters a job reports. */
  SCREENING_MAX_CLUSTERS: z.coerce.number().int().min(1).max(50).default(8),
  /** Provider calls one job keeps in flight (the per-key limiter in libs/llm paces them further). */
  SCREENING_CALL_CONCURRENCY: z.coerce.number().int().min(1).max(512).default(32),
  /** Abstract characters sent to the reasoning stage (the labelling stage sends the whole abstract). */
  SCREENING_REASONING_ABSTRACT_CHARS: z.coerce.number().int().min(0).max(50_000).default(800),
  /**
   * The share of a job's papers the model may lose (no full set of votes even when asked about a
   * paper alone) before the job fails; lost papers within it go to a human (docs/limits.md).
   */
  MAX_LOST_PAPER_SHARE: z.coerce.number().min(0).max(1).default(DEFAULT_MAX_LOST_PAPER_SHARE),
});
export type ScreeningEnv = z.infer<typeof ScreeningEnv>;

export const loadEnv = () => parseEnv(withJobKeySecrets(ScreeningEnv));
