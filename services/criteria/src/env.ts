import type { z } from "zod";
import { JobKeySecretEnv, withJobKeySecrets } from "@litrev/messaging";
import { BaseEnv, parseEnv } from "@litrev/runtime";

// JOB_KEY_SECRET(S): opens the provider keys the gateway seals for each request (docs/security.md).
export const CriteriaEnv = BaseEnv.extend(JobKeySecretEnv.shape);
export type CriteriaEnv = z.infer<typeof CriteriaEnv>;
export const loadEnv = () => parseEnv(withJobKeySecrets(CriteriaEnv));
