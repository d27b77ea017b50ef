import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Readable } from "node:stream";
import { createGzip } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { importReferences, MAX_IMPORT_BYTES, ReferenceImportError } from "@litrev/references";
import { readReferenceFile } from "@litrev/references/node";

/**
 * Reference files an attacker shapes to stall or exhaust whatever imports them (`npm run import`, the
 * console's page): many records sharing one DOI, PMID, title or source id, and a gzip bomb.
 * The work is counted, not timed (speed lives in `npm run bench -- import`): the lookups the
 * import makes in its sets and maps must grow like the records, not like their square.
 */

/** N RIS records, all with the same accession number (source id), DOI and PMID, titles apart. */
function sharedIdentifiers(n: number): string {
  let text = "";
  for (let i = 0; i < n; i++) text += `TY  - JOUR\r\nAN  - 12345\r\nDO  - 10.1000/shared\r\nM1  - 999\r\nTI  - A distinct title number ${i} about something\r\nAB  - Abstract ${i}\r\nER  - \r\n`;
  return text;
}

/** N RIS records sharing one long title and nothing else. */
function sharedTitle(n: number): string {
  let text = "";
  for (let i = 0; i < n; i++) text += `TY  - JOUR\r\nTI  - The one title every record of this file carries\r\nAB  - Abstract ${i}\r\nER  - \r\n`;
  return text;
}

/** Set and Map lookups made while `run` runs: the import's work, independent of the machine's speed. */
function lookups(run: () => void): number {
  const originals = { setHas: Set.prototype.has, mapGet: Map.prototype.get, mapHas: Map.prototype.has };
  let count = 0;
  Set.prototype.has = function (this: Set<unknown>, value: unknown) {
    count++;
    return originals.setHas.call(this, value);
  };
  Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
    count++;
    return originals.mapGet.call(this, key);
  };
  Map.prototype.has = function (this: Map<unknown, unknown>, key: unknown) {
    count++;
    return originals.mapHas.call(this, key);
  };
  try {
    run();
  } finally {
    Set.prototype.has = originals.setHas;
    Map.prototype.get = originals.mapGet;
    Map.prototype.has = originals.mapHas;
  }
  return count;
}

describe("reference import bounds", () => {
  const dir = mkdtempSync(join(tmpdir(), "import-bounds-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("records sharing one DOI, PMID and source id: linear work, one duplicate group, unique ids", () => {
    const small = sharedIdentifiers(2_000);
    const large = sharedIdentifiers(4_000);
    const work = (text: string) => lookups(() => importReferences([{ name: "shared.ris", text }], { mergeDuplicates: true }));
    const [a, b] = [work(small), work(large)];
    // Twice the records, about twice the work (quadratic work would be four times).
    expect(b / a).toBeLessThan(2.5);
    const result = importReferences([{ name: "shared.ris", text: large }]);
    expect(result.duplicates).toHaveLength(1);
    expect(result.duplicates[0]!.ids).toHaveLength(4_000);
    expect(new Set(result.records.map((r) => r.id)).size).toBe(4_000);
  });

  it("records sharing one title: linear work, one group", () => {
    const work = (n: number) => lookups(() => importReferences([{ name: "title.ris", text: sharedTitle(n) }]));
    expect(work(4_000) / work(2_000)).toBeLessThan(2.5);
    expect(importReferences([{ name: "title.ris", text: sharedTitle(3_000) }]).duplicates[0]!.ids).toHaveLength(3_000);
  });

  it("a gzip bomb is refused while it decompresses, with a message naming the cap", async () => {
    const path = join(dir, "bomb.ris.gz");
    // A small cap keeps the test cheap; the default (MAX_IMPORT_BYTES) goes through the same check.
    const cap = 8 << 20;
    expect(MAX_IMPORT_BYTES).toBeGreaterThan(cap);
    const chunk = Buffer.alloc(1 << 20, 0x20);
    const chunks = 4 * (cap >> 20);
    await pipeline(
      Readable.from((function* () {
        for (let i = 0; i < chunks; i++) yield chunk;
      })()),
      createGzip({ level: 1 }),
      createWriteStream(path),
    );
    expect(() => readReferenceFile(path, cap)).toThrow(ReferenceImportError);
    expect(() => readReferenceFile(path, cap)).toThrow(/bomb\.ris\.gz: decompresses to more than 8 MiB \(the import's cap\)/);
    // Under the cap it reads.
    expect(readReferenceFile(path, 64 << 20).text.length).toBe(chunks << 20);
  });

  it("more text than one import takes is refused with a message, before any record is read", () => {
    const text = "x".repeat(64);
    expect(() => importReferences([{ name: "big.csv", text }], { maxBytes: 32 })).toThrow(/more than 32 bytes of references/);
  });

  it("more records than one import takes is refused with a message naming the cap", () => {
    expect(() => importReferences([{ name: "many.ris", text: sharedTitle(11) }], { maxRecords: 10 })).toThrow(/more than 10 records/);
  });
});
