import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { stripHtml } from "@litrev/references";
import { builtInNames, loadBuiltIn, loadCriteriaFile, loadRecords, loadReferenceFiles, ROOT, sampleRecords } from "./datasets";

const dir = mkdtempSync(join(tmpdir(), "eval-datasets-"));
const write = (name: string, content: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

describe("labelled datasets", () => {
  it("loads every built-in review with the counts reviews.json states", () => {
    const meta = JSON.parse(readFileSync(resolve(ROOT, "data/synergy/reviews.json"), "utf8")) as { name: string; records: number; included: number }[];
    expect(builtInNames()).toEqual(meta.map((m) => m.name));
    for (const m of meta) {
      const review = loadBuiltIn(m.name);
      expect(review.records).toHaveLength(m.records);
      expect(review.records.filter((r) => r.included)).toHaveLength(m.included);
      expect(review.criteria.criteria).toHaveLength(1);
      expect(review.criteria.criteria[0]!.type).toBe("include");
      expect(review.criteria.questions).toHaveLength(1);
    }
  });

  it("reads gzipped or plain JSON Lines and names the bad line", () => {
    const lines = [{ id: "a", title: "T", abstract: null, included: true }, { id: 2, title: "U", abstract: "x", included: false }].map((r) => JSON.stringify(r)).join("\n");
    expect(loadRecords(write("ok.jsonl.gz", gzipSync(lines)))).toEqual([
      { id: "a", title: "T", abstract: "", included: true },
      { id: 2, title: "U", abstract: "x", included: false },
    ]);
    expect(loadRecords(write("ok.jsonl", `${lines}\n\n`))).toHaveLength(2);
    expect(() => loadRecords(write("bad.jsonl", `${lines}\n{"id":"c","title":"V","abstract":""}`))).toThrow(/bad\.jsonl:3: .*included/s);
    expect(() => loadRecords(write("dup.jsonl", `${lines}\n${lines}`))).toThrow(/:3: duplicate id a/);
  });

  it("reads CSV with ASReview's columns, comma or semicolon, quoted cells and all, gzipped or plain, and names a bad row", () => {
    const csv = [
      "record_id,title,abstract,label_included,label_abstract_screening",
      '7,"Reminders, audits and ""nudges""","Line one\r\nline two",1,1',
      "8,A <i>second</i> title,,0,0",
      "",
    ].join("\r\n");
    const expected = [
      { id: "7", title: 'Reminders, audits and "nudges"', abstract: "Line one line two", included: true },
      { id: "8", title: "A second title", abstract: "", included: false },
    ];
    expect(loadRecords(write("asreview.csv", `\uFEFF${csv}`))).toEqual(expected);
    expect(loadRecords(write("asreview.csv.gz", gzipSync(csv)))).toEqual(expected);
    // What Excel saves where the decimal mark is a comma.
    const semicolon = '\uFEFFrecord_id;title;abstract;label_included\r\n7;"Reminders, audits and ""nudges""";"Line one\r\nline two";1\r\n8;A <i>second</i> title;;0\r\n';
    expect(loadRecords(write("excel.csv", semicolon))).toEqual(expected);
    // Without an id column, the file's name and the row number make the id.
    expect(loadRecords(write("noid.csv", "title,abstract,label_included\nT,A,1\nU,B,0\n")).map((r) => r.id)).toEqual(["noid-1", "noid-2"]);
    expect(() => loadRecords(write("nolabel.csv", "title,abstract\nT,A\n"))).toThrow(/1 of 1 records in .*nolabel\.csv have no label/);
    expect(() => loadRecords(write("badlabel.csv", "title,label_included\nT,1\nU,maybe\n"))).toThrow(/row 3: label_included is "maybe"/);
  });

  it("labels RIS and NBIB exports by a list of the included studies, matched by DOI, PMID or title", () => {
    const fixtures = resolve(ROOT, "libs/references/fixtures");
    const included = write(
      "included.ris",
      [
        "TY  - JOUR\nTI  - Whatever\nDO  - 10.1002/hipo.22328\nER  - ", // a DOI of pubmed.ris
        `TY  - JOUR\nAN  - 10000003\nDB  - PubMed\nTI  - x\nER  - `, // a PMID of pubmed.nbib
        "TY  - JOUR\nTI  - A study nobody screened at all\nER  - ",
      ].join("\n"),
    );
    const { records, summary } = loadReferenceFiles([resolve(fixtures, "pubmed.ris"), resolve(fixtures, "pubmed.nbib")], { included: [included] });
    expect(records).toHaveLength(274 + 202);
    // The DOI's record and its planted duplicate, and the PMID's record.
    expect(records.filter((r) => r.included).map((r) => r.id)).toEqual(["21000111", "pubmed:21000111", "10000003"]);
    expect(summary).toMatchObject({ duplicates: 5, duplicate_groups: 5, merged: false, included_from: { studies: 3, matched: 2, unmatched: ["included-3"] } });
    expect(summary.files.map((f) => f.format)).toEqual(["ris", "medline"]);

    const merged = loadReferenceFiles([resolve(fixtures, "pubmed.ris")], { included: [included], mergeDuplicates: true });
    expect(merged.records).toHaveLength(271);
    expect(merged.records.filter((r) => r.included).map((r) => r.id)).toEqual(["21000111"]);
    expect(() => loadReferenceFiles([resolve(fixtures, "pubmed.ris")])).toThrow(/274 of 274 records .* have no label: .*--included FILE/);
    expect(() => loadReferenceFiles([resolve(fixtures, "scopus.ris")], { included: [included] })).toThrow(/none of the 3 studies/);
  });

  it("loads the repository's example CSV (data/nagtegaal_2019.csv.gz) with its labels, and strips its HTML", () => {
    const records = loadRecords(resolve(ROOT, "data/nagtegaal_2019.csv.gz"));
    expect(records).toHaveLength(2019);
    expect(records.filter((r) => r.included)).toHaveLength(101);
    expect(records.filter((r) => !r.abstract.trim())).toHaveLength(169);
    expect(records.some((r) => /<\/?[a-z][a-z0-9]*[^<>]*>/i.test(r.title + r.abstract))).toBe(false);
  });

  it("strips HTML tags and entities but leaves comparisons alone", () => {
    expect(stripHtml("Effect of <i>nudges</i> on <sup>2</sup>H &amp; <b class='x'>care</b>&nbsp;&#8211; a&#x2019;s")).toBe("Effect of nudges on 2H & care – a’s"); // inline tags go without a space (²H, CO₂)
    expect(stripHtml("p < 0.05 and a<b, x > y")).toBe("p < 0.05 and a<b, x > y");
    expect(stripHtml("Line<br/>break")).toBe("Line break");
    expect(stripHtml("&unknown; stays")).toBe("&unknown; stays");
  });

  it("reads criteria as JSON (object or bare array) or as prose", () => {
    const criteria = [{ name: "Population", type: "include", value: "Adults" }];
    expect(loadCriteriaFile(write("c.json", JSON.stringify({ criteria, questions: ["Q?"] })))).toEqual({ criteria, questions: ["Q?"] });
    expect(loadCriteriaFile(write("bare.json", JSON.stringify(criteria)))).toEqual({ criteria, questions: [] });
    expect(loadCriteriaFile(write("c.txt", "  Adults with asthma.\n"))).toEqual({ criteria: [{ name: "Eligibility criteria", type: "include", value: "Adults with asthma." }], questions: [] });
    expect(() => loadCriteriaFile(write("wrong.json", JSON.stringify([{ type: "maybe", value: "x" }])))).toThrow(/wrong\.json/);
  });

  it("samples a fixed subset keeping the share of inclusions", () => {
    const records = loadBuiltIn("Nelson_2002").records; // 366 records, 80 included
    const sample = sampleRecords(records, 100);
    expect(sample).toHaveLength(100);
    expect(sample.filter((r) => r.included)).toHaveLength(Math.round((100 * 80) / 366));
    expect(sampleRecords(records, 100)).toEqual(sample);
    expect(sampleRecords(records, 1000)).toBe(records);
    expect(sampleRecords(records, 2).filter((r) => r.included)).toHaveLength(1);
  });
});
