import { referenceFromRis, risTagRecords } from "./ris";
import type { SourceReference } from "./record";

/**
 * PubMed's NBIB/MEDLINE export. No well-kept library reads it (citation-js's PubMed plugin only fetches
 * by id over the network), but its layout is RIS's with four-letter tags (`PMID- `, `TI  - `, values
 * wrapped onto lines indented by six spaces). So each tag line is renamed to its RIS tag and the RIS
 * reader does the parsing: records start at `PMID`, continuation lines stay as they are.
 */

const TAG_LINE = /^([A-Z][A-Z0-9]{0,3}) *- ?(.*)$/;
/**
 * The MEDLINE tags the import reads, as RIS tags (full author names `FAU`, MeSH headings `MH` and
 * other terms `OT` as keywords); every other tag becomes a note so its wrapped lines stay with it.
 */
const RIS_TAG: Record<string, string> = { PMID: "AN", TI: "TI", AB: "AB", FAU: "AU", DP: "PY", JT: "T2", VI: "VL", IP: "IS", PG: "SP", MH: "KW", OT: "KW" };

export function medlineToRis(text: string): string {
  const out: string[] = [];
  let open = false;
  for (const line of text.replace(/^\uFEFF/, "").split(/\r?\n|\r/)) {
    const match = TAG_LINE.exec(line);
    if (!match) {
      if (open && line.trim()) out.push(line);
      continue;
    }
    const [, tag, value] = match as unknown as [string, string, string];
    if (tag === "PMID") {
      if (open) out.push("ER  - ");
      out.push("TY  - JOUR", "DB  - PubMed");
      open = true;
    }
    if (!open) continue;
    const doi = (tag === "LID" || tag === "AID") && /\s\[doi\]\s*$/.test(value);
    out.push(doi ? `DO  - ${value.replace(/\s\[doi\]\s*$/, "")}` : `${RIS_TAG[tag] ?? "N1"}  - ${RIS_TAG[tag] ? value : `${tag}: ${value}`}`);
  }
  if (open) out.push("ER  - ");
  return out.join("\n");
}

export function medlineReferences(text: string): SourceReference[] {
  return risTagRecords(medlineToRis(text)).map(referenceFromRis);
}
