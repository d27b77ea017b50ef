import type { ImportedRecord } from "./record";

/**
 * Duplicates across and within files: the same DOI, the same PMID, or the same title once case,
 * accents, markup and punctuation are set aside. A title alone does not join two records whose DOIs
 * or PMIDs differ (a conference abstract and the paper, an erratum), and titles too short to tell
 * papers apart ("Editorial", "Reply") are not compared.
 */

export type DuplicateKey = "doi" | "pmid" | "title";

/** Records found to be one paper, in import order, and the keys they share. */
export interface DuplicateGroup {
  ids: string[];
  keys: { key: DuplicateKey; value: string }[];
}

/** Shorter normalised titles are not compared. */
const MIN_TITLE_CHARS = 20;

/** Lower case, accents off, letters and digits only, single spaces. */
export function normaliseTitle(title: string): string {
  return title
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

type Keyed = Pick<ImportedRecord, "title" | "doi" | "pmid">;

function keysOf(record: Keyed): { key: DuplicateKey; value: string }[] {
  const keys: { key: DuplicateKey; value: string }[] = [];
  if (record.doi) keys.push({ key: "doi", value: record.doi });
  if (record.pmid) keys.push({ key: "pmid", value: record.pmid });
  const title = normaliseTitle(record.title);
  if (title.length >= MIN_TITLE_CHARS) keys.push({ key: "title", value: title });
  return keys;
}

/** Two records' identifiers disagree: both have a DOI, or both a PMID, and they differ. */
function conflict(a: Keyed, b: Keyed): boolean {
  return (a.doi !== null && b.doi !== null && a.doi !== b.doi) || (a.pmid !== null && b.pmid !== null && a.pmid !== b.pmid);
}

/**
 * Each key value maps to the records that carry it; `match(candidate)` gives the indexes of the
 * records it duplicates and the keys it shares with them. Shared by duplicate finding and by
 * matching a list of included studies against the screened records.
 */
export function keyIndex(records: readonly Keyed[]): (candidate: Keyed) => { index: number; key: DuplicateKey; value: string }[] {
  const index = new Map<string, number[]>();
  records.forEach((record, i) => {
    for (const { key, value } of keysOf(record)) {
      const slot = `${key}:${value}`;
      const list = index.get(slot);
      if (list) list.push(i);
      else index.set(slot, [i]);
    }
  });
  return (candidate) =>
    keysOf(candidate).flatMap(({ key, value }) =>
      (index.get(`${key}:${value}`) ?? []).filter((i) => key !== "title" || !conflict(records[i]!, candidate)).map((i) => ({ index: i, key, value })),
    );
}

/**
 * The earliest record carrying each key value that a later record may join, each lookup O(1), so
 * finding duplicates is linear in the records however many share an identifier. For a DOI or PMID
 * that is the first record with it. For a title it is the first with it whose DOI and PMID do not
 * conflict with the candidate's, i.e. whose DOI is none or the candidate's and whose PMID likewise:
 * a title keeps its first record per (DOI, PMID) pair, per DOI, per PMID and overall, and a
 * candidate looks up the (at most four) entries that cannot conflict with it.
 */
class FirstCarriers {
  readonly #first = new Map<string, number>();

  /** The earliest record the candidate joins through each of its keys. */
  match(record: Keyed): { index: number; key: DuplicateKey; value: string }[] {
    return keysOf(record).flatMap(({ key, value }) => {
      const slots = key === "title" ? titleLookups(value, record) : [`${key}:${value}`];
      let index: number | undefined;
      for (const slot of slots) {
        const found = this.#first.get(slot);
        if (found !== undefined && (index === undefined || found < index)) index = found;
      }
      return index === undefined ? [] : [{ index, key, value }];
    });
  }

  /** Records `record` (at `index`, after every earlier one) where it is the first. */
  add(record: Keyed, index: number): void {
    for (const { key, value } of keysOf(record)) {
      const slots = key === "title" ? titleEntries(value, record) : [`${key}:${value}`];
      for (const slot of slots) if (!this.#first.has(slot)) this.#first.set(slot, index);
    }
  }
}

/** `*` stands for any value, the empty string for none (a normalised DOI or PMID is never empty). */
const titleSlot = (title: string, doi: string, pmid: string) => `title:${title}\u0000${doi}\u0000${pmid}`;

function titleEntries(title: string, { doi, pmid }: Keyed): string[] {
  const [d, p] = [doi ?? "", pmid ?? ""];
  return [titleSlot(title, d, p), titleSlot(title, d, "*"), titleSlot(title, "*", p), titleSlot(title, "*", "*")];
}

function titleLookups(title: string, { doi, pmid }: Keyed): string[] {
  if (doi !== null && pmid !== null) return [titleSlot(title, "", ""), titleSlot(title, "", pmid), titleSlot(title, doi, ""), titleSlot(title, doi, pmid)];
  if (doi !== null) return [titleSlot(title, "", "*"), titleSlot(title, doi, "*")];
  if (pmid !== null) return [titleSlot(title, "*", ""), titleSlot(title, "*", pmid)];
  return [titleSlot(title, "*", "*")];
}

export function findDuplicates(records: readonly ImportedRecord[]): DuplicateGroup[] {
  const parent = records.map((_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i]!]!;
    return i;
  };
  const links: { a: number; b: number; key: DuplicateKey; value: string }[] = [];
  const carriers = new FirstCarriers();
  records.forEach((record, b) => {
    // One link per key value, to the earliest record carrying it: enough to join the group.
    for (const { index: a, key, value } of carriers.match(record)) {
      links.push({ a, b, key, value });
      const [ra, rb] = [root(a), root(b)];
      if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
    }
    carriers.add(record, b);
  });
  const groups = new Map<number, { members: Set<number>; keys: Map<string, { key: DuplicateKey; value: string }> }>();
  for (const { a, b, key, value } of links) {
    const r = root(a);
    const group = groups.get(r) ?? { members: new Set<number>(), keys: new Map() };
    group.members.add(a).add(b);
    group.keys.set(`${key}:${value}`, { key, value });
    groups.set(r, group);
  }
  return [...groups.values()].map((group) => ({
    ids: [...group.members].sort((x, y) => x - y).map((i) => records[i]!.id),
    keys: [...group.keys.values()],
  }));
}

/**
 * One record per group: the first in import order keeps its id and its text, and takes what it lacks
 * (title, abstract, DOI, PMID) from the others, the longest abstract first; a label is `true` when any
 * record of the group was included.
 */
export function mergeDuplicates(records: readonly ImportedRecord[], groups: readonly DuplicateGroup[]): ImportedRecord[] {
  const byId = new Map(records.map((record) => [record.id, record]));
  const merged = new Map<string, ImportedRecord>();
  const dropped = new Set<string>();
  for (const group of groups) {
    const members = group.ids.map((id) => byId.get(id)!);
    const [keep, ...others] = members as [ImportedRecord, ...ImportedRecord[]];
    const longest = [...members].sort((a, b) => b.abstract.length - a.abstract.length)[0]!;
    const labels = members.map((m) => m.included).filter((v): v is boolean => v !== null);
    merged.set(keep.id, {
      ...keep,
      title: keep.title || (others.find((o) => o.title)?.title ?? ""),
      abstract: keep.abstract || longest.abstract,
      doi: keep.doi ?? others.find((o) => o.doi)?.doi ?? null,
      pmid: keep.pmid ?? others.find((o) => o.pmid)?.pmid ?? null,
      included: labels.length ? labels.includes(true) : null,
    });
    for (const other of others) dropped.add(other.id);
  }
  return records.filter((record) => !dropped.has(record.id)).map((record) => merged.get(record.id) ?? record);
}
