import { z } from "zod";

/** An indexer field definition: what a job is asked to extract (its request, and its provenance). */

export const DataTypePrimary = z.enum(["text", "number", "yes_no", "list_text", "list_number"]);
export type DataTypePrimary = z.infer<typeof DataTypePrimary>;

export const IndexerField = z.object({
  name: z.string().min(1).max(100),
  description: z.string().max(5_000),
  data_type_primary: DataTypePrimary,
  data_type_secondary: z.string().max(50).default("NA"),
  examples: z.array(z.string().max(500)).max(100).optional(),
  examples_mode: z.enum(["guide", "enum"]).optional(),
  depth: z.enum(["minimal", "full"]).optional(),
});
export type IndexerField = z.infer<typeof IndexerField>;
