import { describe, expect, it } from "vitest";
import { loadNagtegaal } from "../../../../test/support/dataset";
import { EvidenceLocator } from "./evidence";
import { normalizeText, normalizeWithMap } from "./normalize";

const rows = loadNagtegaal().filter((r) => r.abstract.trim());

/** A deterministic pseudo-random sequence, so failures reproduce. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => ((state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** A passage of 4–25 words starting at a word boundary. */
function passage(text: string, rand: () => number): string {
  const words = [...text.matchAll(/\S+/g)];
  const from = Math.floor(rand() * Math.max(1, words.length - 4));
  const length = 4 + Math.floor(rand() * 21);
  const first = words[from]!;
  const last = words[Math.min(words.length - 1, from + length)]!;
  return text.slice(first.index, last.index + last[0].length);
}

/** How a model typically garbles a quote it copies. */
function garble(quote: string, rand: () => number): string {
  let out = quote
    .replace(/\s+/g, " ")
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[\u2013\u2014\u2010]/g, "-")
    .replace(/\u00a0/g, " ");
  if (rand() < 0.5) out = out.toLowerCase();
  if (rand() < 0.3) out = out.normalize("NFKD").replace(/\p{M}/gu, "");
  if (rand() < 0.5) out = `"${out}"`;
  if (rand() < 0.5) out = out.replace(/[.,;:]+$/, "");
  return out;
}

describe("EvidenceLocator on the real abstracts of nagtegaal_2019.csv", () => {
  it("finds verbatim passages exactly, with offsets that slice back to the quote", () => {
    const rand = random(1);
    let checked = 0;
    for (const row of rows) {
      const quote = passage(row.abstract, rand);
      const found = new EvidenceLocator({ title: row.title, abstract: row.abstract }).locate(quote, "abstract");
      expect(found).toMatchObject({ match: "exact", source: "abstract" });
      if ("reason" in found) continue;
      expect(row.abstract.slice(found.start, found.end)).toBe(quote);
      expect(found.quote).toBe(quote);
      checked++;
    }
    expect(checked).toBe(rows.length);
  });

  it("finds garbled copies (whitespace, case, quotes, dashes, accents, edge punctuation) and maps offsets back", () => {
    const rand = random(2);
    let normalized = 0;
    for (const row of rows) {
      const original = passage(row.abstract, rand);
      const quote = garble(original, rand);
      const found = new EvidenceLocator({ title: row.title, abstract: row.abstract }).locate(quote.replace(/^"|"$/g, ""), "abstract");
      expect("reason" in found, `record ${row.record_id}: ${quote}`).toBe(false);
      if ("reason" in found) continue;
      const slice = row.abstract.slice(found.start, found.end);
      expect(found.quote).toBe(slice);
      // Modulo the documented normalisation (and edge punctuation), the slice is the quote.
      const strip = (s: string) => normalizeText(s).replace(/^[\s.,;:!?'"()[\]{}-]+|[\s.,;:!?'"()[\]{}-]+$/g, "");
      expect(strip(slice)).toBe(strip(quote));
      if (found.match === "normalized") normalized++;
    }
    expect(normalized).toBeGreaterThan(rows.length / 4);
  });

  it("drops quotes that are not in the record, and counts them", () => {
    const rand = random(3);
    for (const row of rows.slice(0, 300)) {
      const other = rows[(rows.indexOf(row) + 7) % rows.length]!;
      const invented = `${passage(other.abstract, rand)} in ${row.record_id} invented patients`;
      const locator = new EvidenceLocator({ title: row.title, abstract: row.abstract });
      const { evidence, dropped } = locator.verify([{ quote: invented, source: "abstract" }]);
      expect(evidence).toEqual([]);
      expect(dropped).toEqual([{ quote: invented, reason: "not_found" }]);
    }
  });

  it("locates quotes in the title and prefers the source the model named", () => {
    const row = rows.find((r) => r.title.length > 40)!;
    const quote = row.title.slice(5, 35);
    const found = new EvidenceLocator({ title: row.title, abstract: row.abstract }).locate(quote, "title");
    expect(found).toMatchObject({ source: "title", start: 5, end: 35, quote });
    // Named the wrong source: still found where it is.
    const elsewhere = new EvidenceLocator({ title: row.title, abstract: "" }).locate(quote, "abstract");
    expect(elsewhere).toMatchObject({ source: "title" });
  });

  it("splits a quote at an ellipsis and needs every fragment", () => {
    const row = rows[0]!;
    const a = row.abstract.slice(0, 40);
    const b = row.abstract.slice(200, 260);
    const locator = new EvidenceLocator({ title: row.title, abstract: row.abstract });
    const both = locator.verify([{ quote: `${a} ... ${b}`, source: "abstract" }]);
    expect(both.evidence.map((e) => e.quote)).toEqual([a.trim(), b.trim()]);
    const half = locator.verify([{ quote: `${a} … no such words here at all`, source: "abstract" }]);
    expect(half.evidence).toEqual([]);
    expect(half.dropped[0]?.reason).toBe("not_found");
  });

  it("refuses quotes too short to prove anything, and non-text quotes", () => {
    const locator = new EvidenceLocator({ title: "A trial", abstract: "In 2006, 61% of 80 patients." });
    expect(locator.verify([{ quote: "In" }, { quote: 42 }, { quote: "  " }]).dropped.map((d) => d.reason)).toEqual([
      "too_short",
      "not_text",
      "too_short",
    ]);
    expect(locator.verify([{ quote: "61%" }]).evidence).toHaveLength(1);
  });

  it("keeps one element per span when the model repeats a quote", () => {
    const locator = new EvidenceLocator({ title: "", abstract: "Overall, 140 patients were included." });
    const { evidence } = locator.verify([{ quote: "140 patients" }, { quote: "140 PATIENTS" }]);
    expect(evidence).toHaveLength(1);
  });
});

describe("normalizeWithMap", () => {
  it("maps expanded, combined and astral characters back to their original spans", () => {
    const text = "The ﬁnal e\u0301tude\u00a0\u00a0reports 😀 “ten” cases\u2014all";
    const n = normalizeWithMap(text);
    expect(n.text).toBe('the final etude reports 😀 "ten" cases-all');
    for (let i = 0; i < n.text.length; i++) {
      const original = text.slice(n.starts[i], n.ends[i]);
      expect(original.length).toBeGreaterThan(0);
    }
    const locator = new EvidenceLocator({ title: "", abstract: text });
    const found = locator.locate('final etude reports 😀 "ten" cases-all');
    expect(found).toMatchObject({ match: "normalized" });
    if (!("reason" in found)) expect(text.slice(found.start, found.end)).toBe("ﬁnal e\u0301tude\u00a0\u00a0reports 😀 “ten” cases\u2014all");
  });

  it("drops zero-width characters and soft hyphens", () => {
    expect(normalizeText("thrombo\u00adprophylaxis\u200b rates")).toBe("thromboprophylaxis rates");
  });
});
