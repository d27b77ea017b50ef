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

export function findDuplicates(records: readonly ImportedRecord[]): DuplicateGroup[] {
  const parent = records.map((_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i]!]!;
    return i;
  };
  const links: { a: number; b: number; key: DuplicateKey; value: string }[] = [];
  const match = keyIndex(records);
  records.forEach((record, b) => {
    const linked = new Set<string>();
    for (const { index: a, key, value } of match(record)) {
      // One link per key value, to the earliest record carrying it: enough to join the group.
      if (a >= b || linked.has(`${key}:${value}`)) continue;
      linked.add(`${key}:${value}`);
      links.push({ a, b, key, value });
      const [ra, rb] = [root(a), root(b)];
      if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
    }
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
