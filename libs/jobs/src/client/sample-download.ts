import type { CsvMode, ItemText } from "@litrev/contracts";
import { cleanText } from "@litrev/references/text";
import { csvRow, UTF8_BOM } from "./csv";
import type { FinishedJob } from "../finished/finished-job";
import { withTexts } from "./exports";
import { risRecord } from "./ris";

/** The ways a validation sample downloads. */
export type SampleFormat = "csv" | "ris";

/** Texts of the sample held at once, in characters (a pass over the job gathers at most this much, plus one paper). */
export const SAMPLE_WINDOW_CHARS = 8 * 1024 * 1024;

/**
 * A validation sample for blind screening: its papers in the order to screen them, each with its
 * title and abstract and nothing of the model's (no decision, vote or score), plus an empty
 * `included` column for the team's labels, as text pieces. The order is the sample's, not the
 * job's, so the texts are gathered in windows: each pass over the job's chunks keeps the texts
 * of the next papers in the sample's order up to `windowChars`, then those rows leave and the
 * next pass starts where they stopped. A sample of 5,000 long abstracts (about 100 MB) never
 * exists whole in the gateway: it costs a few passes over the job instead.
 */
export async function* sampleDownload(
  job: FinishedJob,
  paperIds: readonly (string | number)[],
  format: SampleFormat,
  csv: CsvMode = "spreadsheet",
  windowChars = SAMPLE_WINDOW_CHARS,
): AsyncGenerator<string> {
  const positions = new Map<string, number>();
  paperIds.forEach((id, i) => positions.set(String(id), i));
  const guard = csv === "spreadsheet";
  if (format === "csv") yield `${guard ? UTF8_BOM : ""}${csvRow(["order", "id", "title", "abstract", "included"], guard)}`;
  const empty: ItemText = { title: "", abstract: "" };
  for (let start = 0; start < paperIds.length; ) {
    const { texts, end } = await gatherWindow(job, positions, start, paperIds.length, windowChars);
    let piece = "";
    for (let i = start; i < end; i++) {
      const id = paperIds[i]!;
      const text = texts.get(i) ?? empty;
      // The order and the id are written as they are: the labels are joined back by id.
      piece += format === "ris" ? risRecord({ id: String(id), ...text, keywords: [], notes: [] }) : csvRow([i + 1, id, text.title, text.abstract, ""], guard);
      if (piece.length >= 64 * 1024) {
        yield piece;
        piece = "";
      }
    }
    if (piece) yield piece;
    start = end;
  }
}

/**
 * One pass over the job: the texts of the sample's papers from position `start` on, as many as
 * fit in `windowChars` (at least the one at `start`); `end` is the first position not gathered.
 */
async function gatherWindow(job: FinishedJob, positions: Map<string, number>, start: number, count: number, windowChars: number) {
  const texts = new Map<number, ItemText>();
  let end = count;
  let held = 0;
  for await (const { items, titles, abstracts } of withTexts(job, true)) {
    items.forEach((item, i) => {
      const at = positions.get(String(item.id));
      if (at === undefined || at < start || at >= end) return;
      // Markup cleaned as in every export (tags removed, entities decoded).
      const text = { title: cleanText(titles[i]), abstract: cleanText(abstracts![i]) };
      texts.set(at, text);
      held += text.title.length + text.abstract.length;
      // Over the window: drop the papers furthest in the order until it fits (the next pass gathers them).
      while (held > windowChars && end - 1 > start) {
        end--;
        const dropped = texts.get(end);
        if (dropped) {
          held -= dropped.title.length + dropped.abstract.length;
          texts.delete(end);
        }
      }
    });
  }
  return { texts, end };
}
