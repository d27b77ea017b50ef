import { normaliseDoi, normalisePmid, yearOf, type SourceReference } from "./record";
import { cleanText } from "./text";

/**
 * Web of Science's plain-text export ("Other file formats" → Plain text): `FN`/`VR` header, records
 * from `PT` to `ER`, a two-letter tag and a space before each value, continuation lines indented by
 * three spaces. No well-kept library reads it; the layout is simple enough to read line by line.
 * In the name lists (`AU`, `AF`) each line is one author; in `DE` keywords are separated by `; `;
 * elsewhere a continuation line continues the value.
 */

const TAG_LINE = /^([A-Z][A-Z0-9]) (.*)$/;
/** Tags whose lines are items of a list, one per line. */
const LINE_LISTS = new Set(["AU", "AF", "CR", "C1"]);

/** Whether the text starts like a Web of Science plain-text export. */
export const looksLikeWos = (head: string) => /^FN (?:Clarivate|Thomson|ISI)/m.test(head) || (/^PT [A-Z]\s*$/m.test(head) && /^UT (?:WOS|ISI):/m.test(head));

export function wosTagRecords(text: string): Map<string, string[]>[] {
  const records: Map<string, string[]>[] = [];
  let record: Map<string, string[]> | null = null;
  let tag = "";
  for (const raw of text.replace(/^\uFEFF/, "").split(/\r?\n|\r/)) {
    if (/^ER\s*$/.test(raw)) {
      if (record) records.push(record);
      record = null;
      continue;
    }
    const match = TAG_LINE.exec(raw);
    if (match && !raw.startsWith("   ")) {
      const [, name, value] = match as unknown as [string, string, string];
      if (name === "PT") record = new Map();
      if (!record || name === "FN" || name === "VR" || name === "EF") continue;
      tag = name;
      record.set(tag, [...(record.get(tag) ?? []), value.trim()]);
      continue;
    }
    if (!record || !tag || !raw.trim()) continue;
    const values = record.get(tag)!;
    if (LINE_LISTS.has(tag)) values.push(raw.trim());
    else values[values.length - 1] = `${values[values.length - 1]} ${raw.trim()}`;
  }
  if (record) records.push(record);
  return records;
}

const joined = (tags: Map<string, string[]>, name: string) => (tags.get(name) ?? []).join(" ").trim() || null;

function referenceFromWos(tags: Map<string, string[]>): SourceReference {
  const accession = joined(tags, "UT");
  const start = joined(tags, "BP");
  const end = joined(tags, "EP");
  return {
    sourceId: accession,
    title: cleanText(joined(tags, "TI")),
    abstract: cleanText(joined(tags, "AB")),
    doi: normaliseDoi(joined(tags, "DI")),
    pmid: normalisePmid(joined(tags, "PM")),
    included: null,
    authors: (tags.get("AF") ?? tags.get("AU") ?? []).filter(Boolean),
    year: yearOf(joined(tags, "PY")),
    journal: cleanText(joined(tags, "SO")) || null,
    volume: joined(tags, "VL"),
    issue: joined(tags, "IS"),
    pages: start && end && start !== end ? `${start}-${end}` : (start ?? joined(tags, "AR")),
    accession,
    database: "Web of Science",
    url: null,
    keywords: (joined(tags, "DE") ?? "").split(";").map((k) => k.trim()).filter(Boolean),
  };
}

export function wosReferences(text: string): SourceReference[] {
  return wosTagRecords(text).map(referenceFromWos);
}
