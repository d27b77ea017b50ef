import { BaseEnv, parseEnv } from "@litrev/runtime";

export const CriteriaEnv = BaseEnv;
export type CriteriaEnv = BaseEnv;
export const loadEnv = () => parseEnv(CriteriaEnv);
