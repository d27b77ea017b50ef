import type { CsvMode, ItemText } from "@litrev/contracts";
import { cleanText } from "@litrev/references/text";
import { csvRow, UTF8_BOM } from "./csv";
import { withTexts, type FinishedJob } from "./exports";
import { risRecord } from "./ris";

/** The ways a validation sample downloads. */
export type SampleFormat = "csv" | "ris";

/**
 * A validation sample for blind screening: its papers in the order to screen them, each with its
 * title and abstract and nothing of the model's (no decision, vote or score), plus an empty
 * `included` column for the team's labels. The job's items are read chunk by chunk, keeping only
 * the sample's papers (at most MAX_VALIDATION_SAMPLE).
 */
export async function sampleDownload(job: FinishedJob, paperIds: readonly (string | number)[], format: SampleFormat, csv: CsvMode = "spreadsheet"): Promise<string> {
  const wanted = new Set(paperIds.map(String));
  const texts = new Map<string, ItemText>();
  for await (const { items, titles, abstracts } of withTexts(job, true)) {
    items.forEach((item, i) => {
      const id = String(item.id);
      // Markup cleaned as in every export (tags removed, entities decoded).
      if (wanted.has(id)) texts.set(id, { title: cleanText(titles[i]), abstract: cleanText(abstracts![i]) });
    });
  }
  const empty: ItemText = { title: "", abstract: "" };
  if (format === "ris") return paperIds.map((id) => risRecord({ id: String(id), ...(texts.get(String(id)) ?? empty), keywords: [], notes: [] })).join("");
  const guard = csv === "spreadsheet";
  const rows = paperIds.map((id, i) => {
    const text = texts.get(String(id)) ?? empty;
    // The order and the id are written as they are: the labels are joined back by id.
    return csvRow([i + 1, id, text.title, text.abstract, ""], guard, 2);
  });
  return `${guard ? UTF8_BOM : ""}${csvRow(["order", "id", "title", "abstract", "included"], guard)}${rows.join("")}`;
}
