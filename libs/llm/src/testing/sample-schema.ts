import { z } from "zod";

/**
 * A small schema shaped like a screening decision, for benchmarks, demos and manual runs
 * (scripts outside the workspace packages cannot import zod themselves).
 */
export const SampleDecision = z.object({
  decision: z.enum(["include", "exclude", "uncertain"]),
  confidence: z.number().min(0).max(1),
  reasons: z.array(z.string()).min(1).max(5),
  note: z.string().optional(),
});
export type SampleDecision = z.infer<typeof SampleDecision>;
