import { z } from "zod";

/**
 * The identifying and bibliographic fields a paper came with (from a database export or a reference
 * manager), all optional. A job keeps them beside its results and writes them back in its exports
 * (RIS with the tags reference managers read, CSV and JSON Lines as columns), so the decisions can be
 * matched to the team's library. They never reach the model: screening and extraction read the
 * title and abstract only.
 */
const text = (max: number) => z.string().max(max).nullish();
const list = (items: number, max: number) => z.array(z.string().max(max)).max(items).nullish();

export const bibliographyFields = {
  authors: list(5_000, 1_000).describe("Authors as the source wrote them, e.g. `Doe, Jane`, in order"),
  year: z.union([z.string().max(32), z.number().int()]).nullish().describe("Publication year (or date) as the source gave it"),
  journal: text(2_000).describe("Journal or other secondary title (book, conference)"),
  volume: text(200),
  issue: text(200),
  pages: text(200).describe("Pages, e.g. `12-19`"),
  doi: text(1_000),
  pmid: text(64).describe("PubMed id"),
  accession: text(500).describe("The source database's accession number (Embase, Web of Science, a Scopus EID)"),
  database: text(500).describe("The database the record came from, e.g. `Embase`"),
  url: text(4_000),
  keywords: list(1_000, 1_000).describe("The source's own keywords"),
};

export const Bibliography = z.object(bibliographyFields);
export type Bibliography = z.infer<typeof Bibliography>;

/** The field names, in the order exports write them. */
export const BIBLIOGRAPHY_KEYS = Object.keys(bibliographyFields) as (keyof Bibliography)[];

/** The bibliographic fields an input record carries (set and not empty), or null when it has none. */
export function bibliographyOf(record: Record<string, unknown>): Bibliography | null {
  const found: Record<string, unknown> = {};
  for (const key of BIBLIOGRAPHY_KEYS) {
    const value = record[key];
    if (value === null || value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) continue;
    found[key] = value;
  }
  return Object.keys(found).length > 0 ? (found as Bibliography) : null;
}
