import { describe, expect, it } from "vitest";
import { decodeReferenceBytes, detectFormat, importReferences, medlineToRis, parseCsvRows, ReferenceImportError, toIndexerRecord, toScreeningPaper } from "./index";

const ovid = [
  "\uFEFFTY  - JOUR",
  "DB  - Embase",
  "AN  - 621234567",
  "T1  - Effect of nudges on prescribing:",
  "a randomised trial",
  "A1  - Smith J.",
  "Y1  - 2018//",
  "N2  - Background: we tested",
  "things over two lines.",
  "JF  - BMJ Open",
  "DO  - http://dx.doi.org/10.1136/bmjopen-2017-012345",
  "ER  - ",
  "",
].join("\r\n");

describe("RIS", () => {
  it("reads Ovid's old tags, a byte-order mark, CRLF and wrapped values", () => {
    const [record] = importReferences([{ name: "embase.ris", text: ovid }]).records;
    expect(record).toMatchObject({
      id: "621234567",
      title: "Effect of nudges on prescribing: a randomised trial",
      abstract: "Background: we tested things over two lines.",
      doi: "10.1136/bmjopen-2017-012345",
      pmid: null,
      origin: { file: "embase.ris", format: "ris", index: 0 },
    });
  });

  it("takes the PMID from a PubMed or MEDLINE accession, the Scopus EID and its PubMed id, the WoS accession", () => {
    const text = [
      "TY  - JOUR\nDB  - Ovid MEDLINE(R)\nAN  - 30123456\nTI  - One\nER  - ",
      "TY  - JOUR\nTI  - Two\nDO  - 10.1016/j.x.2019.01.002\nC2  - 30999999\nUR  - https://www.scopus.com/inward/record.uri?eid=2-s2.0-85012345678&partnerID=40\nDB  - Scopus\nER  - ",
      "TY  - JOUR\nAN  - WOS:000123456700001\nTI  - Three\nAB  - Text\nER  - ",
      "TY  - JOUR\nID  - 17\nTI  - Four\nUR  - https://doi.org/10.1000/ABC.def.\nER  - ",
    ].join("\n\n");
    const records = importReferences([{ name: "mixed.ris", text }]).records;
    expect(records.map((r) => [r.id, r.pmid, r.doi])).toEqual([
      ["30123456", "30123456", null],
      ["2-s2.0-85012345678", "30999999", "10.1016/j.x.2019.01.002"],
      ["WOS:000123456700001", null, null],
      ["17", null, "10.1000/abc.def"],
    ]);
  });

  it("keeps a value that holds two spaces before a dash (the reader splits lines at '  - ')", () => {
    const text = "TY  - JOUR\nTI  - Outcomes  - a cohort study\nAB  - Before  - after\nER  - \n";
    expect(importReferences([{ name: "a.ris", text }]).records[0]).toMatchObject({ title: "Outcomes - a cohort study", abstract: "Before - after" });
  });

  it("strips HTML the database left in titles and abstracts", () => {
    const text = "TY  - JOUR\nTI  - Effect of <i>nudges</i> &amp; CO<sub>2</sub>\nAB  - p < 0.05\nER  - \n";
    expect(importReferences([{ name: "a.ris", text }]).records[0]).toMatchObject({ title: "Effect of nudges & CO2", abstract: "p < 0.05" });
  });

  it("reads the bibliographic fields: authors, year, journal, volume, issue, pages, accession, database, URL, keywords", () => {
    const [record] = importReferences([{ name: "embase.ris", text: ovid }]).records;
    expect(record).toMatchObject({ authors: ["Smith J."], year: "2018", journal: "BMJ Open", accession: "621234567", database: "Embase", keywords: [] });
    const text = "TY  - JOUR\nAU  - Müller, Zoë\nAU  - Ødegård, Å\nPY  - 2019\nT2  - Lancet\nVL  - 393\nIS  - 10\nSP  - 12\nEP  - 19\nC2  - 30123456\nUR  - https://x.org/1\nKW  - nudge\nKW  - prescribing\nTI  - T\nER  - \n";
    expect(importReferences([{ name: "a.ris", text }]).records[0]).toMatchObject({
      authors: ["Müller, Zoë", "Ødegård, Å"],
      year: "2019",
      journal: "Lancet",
      volume: "393",
      issue: "10",
      pages: "12-19",
      pmid: "30123456",
      url: "https://x.org/1",
      keywords: ["nudge", "prescribing"],
    });
  });
});

describe("PubMed NBIB/MEDLINE", () => {
  const nbib = [
    "PMID- 31234567",
    "OWN - NLM",
    "TI  - Nudging clinicians towards guideline-concordant prescribing: a cluster",
    "      randomised trial.",
    "LID - S0140-6736(19)30001-1 [pii]",
    "LID - 10.1016/S0140-6736(19)30001-1 [doi]",
    "AB  - BACKGROUND: Wrapped text",
    "      goes on. FAU - is not a tag here.",
    "FAU - Doe, Jane",
    "      Continued",
    "",
    "PMID- 31234568",
    "TI  - A second record without abstract.",
    "",
  ].join("\n");

  it("reads records, wrapped values and the DOI among the LIDs", () => {
    const result = importReferences([{ name: "pubmed.nbib", text: nbib }]);
    expect(result.records.map((r) => ({ id: r.id, pmid: r.pmid, title: r.title, abstract: r.abstract, doi: r.doi }))).toEqual([
      {
        id: "31234567",
        pmid: "31234567",
        title: "Nudging clinicians towards guideline-concordant prescribing: a cluster randomised trial.",
        abstract: "BACKGROUND: Wrapped text goes on. FAU - is not a tag here.",
        doi: "10.1016/s0140-6736(19)30001-1",
      },
      { id: "31234568", pmid: "31234568", title: "A second record without abstract.", abstract: "", doi: null },
    ]);
    expect(result.counts.withoutAbstract).toBe(1);
  });

  it("is renamed into RIS tags, other tags kept as notes so their wrapped lines stay with them", () => {
    expect(medlineToRis("PMID- 1\nAD  - Dept of X,\n      Continued\nTI  - T\nFAU - Doe, Jane\n")).toBe("TY  - JOUR\nDB  - PubMed\nAN  - 1\nN1  - AD: Dept of X,\n      Continued\nTI  - T\nAU  - Doe, Jane\nER  - ");
  });
});

describe("Web of Science, BibTeX and EndNote XML", () => {
  it("reads a Web of Science plain-text record: one author a line, wrapped title, keywords, pages, UT", () => {
    const text = [
      "FN Clarivate Analytics Web of Science",
      "VR 1.0",
      "PT J",
      "AU Müller, Z",
      "   Ødegård, Å",
      "AF Müller, Zoë",
      "   Ødegård, Åse",
      "TI Effect of <i>nudges</i> on prescribing:",
      "   a randomised trial",
      "SO BMJ OPEN",
      "DE nudge; prescribing",
      "AB Background &amp; aims.",
      "PY 2019",
      "VL 9",
      "IS 2",
      "BP 12",
      "EP 19",
      "DI 10.1136/X",
      "PM 30123456",
      "UT WOS:000123456700001",
      "ER",
      "",
      "EF",
    ].join("\r\n");
    expect(importReferences([{ name: "savedrecs.txt", text }]).records[0]).toMatchObject({
      id: "WOS:000123456700001",
      title: "Effect of nudges on prescribing: a randomised trial",
      abstract: "Background & aims.",
      authors: ["Müller, Zoë", "Ødegård, Åse"],
      year: "2019",
      journal: "BMJ OPEN",
      volume: "9",
      issue: "2",
      pages: "12-19",
      doi: "10.1136/x",
      pmid: "30123456",
      accession: "WOS:000123456700001",
      database: "Web of Science",
      keywords: ["nudge", "prescribing"],
      origin: { format: "wos" },
    });
  });

  it("reads BibTeX through citation-js: LaTeX accents and markup, names, pages, keywords", () => {
    const text = '@article{smith2018,\n  author = {Smith, John and M{\\"u}ller, Zo{\\"e}},\n  title = {{Effect of \\textit{nudges} \\& CO\\textsubscript{2}}},\n  journal = {BMJ Open},\n  year = {2018},\n  pages = {12--19},\n  doi = {10.1136/bmjopen-2017-012345},\n  keywords = {nudge, prescribing},\n}\n';
    expect(importReferences([{ name: "refs.bib", text }]).records[0]).toMatchObject({
      id: "smith2018",
      title: "Effect of nudges & CO2",
      authors: ["Smith, John", "Müller, Zoë"],
      year: "2018",
      journal: "BMJ Open",
      pages: "12-19",
      doi: "10.1136/bmjopen-2017-012345",
      keywords: ["nudge", "prescribing"],
      origin: { format: "bibtex" },
    });
  });

  it("reads EndNote XML with values split over styles, and refuses a DOCTYPE", () => {
    const text =
      '<?xml version="1.0" encoding="UTF-8" ?><xml><records><record><rec-number>7</rec-number><contributors><authors><author><style face="normal">Doe, Jane</style></author></authors></contributors>' +
      '<titles><title><style face="normal">Effect of </style><style face="italic">nudges</style><style face="normal"> &amp;lt;b&amp;gt;now&amp;lt;/b&amp;gt; &amp;reg;</style></title><secondary-title><style>Lancet</style></secondary-title></titles>' +
      "<dates><year><style>2020</style></year></dates><accession-num><style>31234567</style></accession-num><remote-database-name><style>PubMed</style></remote-database-name>" +
      "<electronic-resource-num><style>10.1000/ABC</style></electronic-resource-num></record></records></xml>";
    expect(importReferences([{ name: "lib.xml", text }]).records[0]).toMatchObject({
      id: "31234567",
      title: "Effect of nudges now ®",
      authors: ["Doe, Jane"],
      year: "2020",
      journal: "Lancet",
      doi: "10.1000/abc",
      pmid: "31234567",
      database: "PubMed",
      origin: { format: "endnote-xml" },
    });
    const bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><xml><records><record><titles><title>&a;</title></titles></record></records></xml>';
    expect(() => importReferences([{ name: "bomb.xml", text: bomb }])).toThrow(/DOCTYPE/);
  });
});

describe("CSV", () => {
  it("detects a semicolon and reads ASReview's columns and labels", () => {
    const text = '\uFEFFrecord_id;title;abstract;label_included\r\n1;"Nudges; a trial";"Line one\nline two, with ""quotes""";1\r\n2;Other;;0\r\n3;Third;x;\r\n';
    const records = importReferences([{ name: "export.csv", text }]).records;
    expect(records.map((r) => [r.id, r.title, r.abstract, r.included])).toEqual([
      ["1", "Nudges; a trial", 'Line one line two, with "quotes"', true],
      ["2", "Other", "", false],
      ["3", "Third", "x", null],
    ]);
  });

  it("parses rows with the delimiter detected or given, and names an unclosed quote's row", () => {
    // Decimal commas inside a semicolon file: only the semicolon splits every row alike.
    expect(parseCsvRows("id;score;note\n1;2,5;x\n2;3;y, z\n")).toEqual([["id", "score", "note"], ["1", "2,5", "x"], ["2", "3", "y, z"]]);
    expect(parseCsvRows("a;b,c\n1;2,3\n", { delimiter: "," })).toEqual([["a;b", "c"], ["1;2", "3"]]);
    expect(() => parseCsvRows('title\n"open\n', { file: "x.csv" })).toThrow(/x\.csv: row \d+: /);
  });

  it("reads Rayyan's and Covidence's column names", () => {
    const rayyan = 'key,title,authors,abstract,doi,pmid\nrayyan-1,A title,X,An abstract,https://doi.org/10.1000/XYZ,123\n';
    const covidence = '"Covidence #","Title","Authors","Abstract","Published Year","DOI","Accession Number"\n"#12","B title","Y","B abstract","2020","",""\n';
    const records = importReferences([
      { name: "rayyan.csv", text: rayyan },
      { name: "covidence.csv", text: covidence },
    ]).records;
    expect(records.map((r) => [r.id, r.title, r.abstract, r.doi, r.pmid])).toEqual([
      ["rayyan-1", "A title", "An abstract", "10.1000/xyz", "123"],
      ["12", "B title", "B abstract", null, null],
    ]);
  });

  it("names the file and the row of a bad label, and a file without a title column", () => {
    expect(() => importReferences([{ name: "a.csv", text: "title,label_included\nX,maybe\n" }])).toThrow(/a\.csv: row 2: label_included is "maybe"/);
    expect(() => importReferences([{ name: "b.csv", text: "name,text\nX,Y\n" }])).toThrow(ReferenceImportError);
  });
});

describe("several files", () => {
  it("detects each file's format by its content", () => {
    expect(detectFormat({ name: "export.txt", text: "PMID- 1\nTI  - x" })).toBe("medline");
    expect(detectFormat({ name: "export.txt", text: "\uFEFFTY  - JOUR\r\nER  - " })).toBe("ris");
    expect(detectFormat({ name: "export.txt", text: "title,abstract\n" })).toBe("csv");
    expect(detectFormat({ name: "savedrecs.txt", text: "FN Clarivate Analytics Web of Science\nVR 1.0\nPT J\n" })).toBe("wos");
    expect(detectFormat({ name: "refs", text: "% from JabRef\n@Article{key1,\n title={x}}" })).toBe("bibtex");
    expect(detectFormat({ name: "lib", text: '<?xml version="1.0" encoding="UTF-8" ?><xml><records><record>' })).toBe("endnote-xml");
    for (const name of ["empty.ris", "refs.bib", "refs.xml", "refs.nbib"]) {
      expect(() => detectFormat({ name, text: "" })).toThrow(/not a format the import reads; it reads RIS .*Web of Science plain text.*BibTeX.*EndNote XML.*CSV/);
    }
    expect(() => importReferences([{ name: "x.txt", text: "something else\n1\n" }])).toThrow(/no title column .*; the import reads RIS/);
  });

  it("keeps ids unique: a taken id gets its file's name, a record without one its position", () => {
    const csv = "record_id,title\n1,First paper about nudging clinicians\n";
    const result = importReferences([
      { name: "a.csv", text: csv },
      { name: "dir/b.csv", text: csv },
      { name: "c.ris", text: "TY  - JOUR\nTI  - No id here\nER  - \nTY  - JOUR\nID  - 1\nTI  - Another\nER  - \n" },
      { name: "b.csv", text: csv },
    ]);
    expect(result.records.map((r) => r.id)).toEqual(["1", "b:1", "c-1", "c:1", "b:1#2"]);
  });

  it("reports duplicates by DOI, PMID and title with the keys they share, and merges them on request", () => {
    const ris = [
      "TY  - JOUR\nAN  - E1\nDB  - Embase\nTI  - Nudging physicians to prescribe generics\nDO  - 10.1000/abc\nER  - ",
      "TY  - JOUR\nAN  - 555\nDB  - PubMed\nTI  - Nudging physicians to prescribe generics.\nAB  - The longer abstract.\nER  - ",
      "TY  - JOUR\nAN  - 556\nDB  - PubMed\nTI  - Something else entirely, at length\nDO  - 10.1000/ABC\nER  - ",
      "TY  - JOUR\nAN  - E2\nTI  - Editorial\nER  - ",
      "TY  - JOUR\nAN  - E3\nTI  - Editorial\nER  - ",
      "TY  - JOUR\nAN  - E4\nTI  - Same title but another DOI here\nDO  - 10.1000/one\nER  - ",
      "TY  - JOUR\nAN  - E5\nTI  - Same title, but another DOI here\nDO  - 10.1000/two\nER  - ",
    ].join("\n");
    const nbib = "PMID- 555\nTI  - Nudging physicians to prescribe generics\n";
    const files = [
      { name: "a.ris", text: ris },
      { name: "b.nbib", text: nbib },
    ];
    const found = importReferences(files);
    expect(found.duplicates).toEqual([
      {
        ids: ["E1", "555", "556", "b:555"],
        keys: [
          { key: "title", value: "nudging physicians to prescribe generics" },
          { key: "doi", value: "10.1000/abc" },
          { key: "pmid", value: "555" },
        ],
      },
    ]);
    expect(found.counts).toEqual({ read: 8, duplicates: 3, records: 8, withoutAbstract: 7, withoutTitle: 0 });

    const merged = importReferences(files, { mergeDuplicates: true });
    expect(merged.records.map((r) => r.id)).toEqual(["E1", "E2", "E3", "E4", "E5"]);
    expect(merged.records[0]).toMatchObject({ title: "Nudging physicians to prescribe generics", abstract: "The longer abstract.", doi: "10.1000/abc", pmid: "555" });
    expect(merged.counts).toMatchObject({ read: 8, duplicates: 3, records: 5, withoutAbstract: 4 });
  });

  it("maps to the service's screening paper and indexer record", () => {
    const [record] = importReferences([{ name: "a.ris", text: ovid }]).records;
    const bibliography = { authors: ["Smith J."], year: "2018", journal: "BMJ Open", doi: "10.1136/bmjopen-2017-012345", accession: "621234567", database: "Embase" };
    expect(toScreeningPaper(record!)).toEqual({ id: "621234567", title: "Effect of nudges on prescribing: a randomised trial", abstract: "Background: we tested things over two lines.", ...bibliography });
    expect(toIndexerRecord(record!)).toEqual({ ID: "621234567", Title: "Effect of nudges on prescribing: a randomised trial", Abstract: "Background: we tested things over two lines.", ...bibliography });
  });

  it("reads UTF-8, and Windows-1252 from older EndNote and Excel exports", () => {
    expect(decodeReferenceBytes(new TextEncoder().encode("\uFEFFZoë ≥ α"))).toBe("\uFEFFZoë ≥ α");
    expect(decodeReferenceBytes(Uint8Array.from([0x5a, 0x6f, 0xeb, 0x20, 0x96, 0x20, 0x93, 0x71, 0x94]))).toBe("Zoë – “q”");
  });

  it("refuses more records than the limit", () => {
    expect(() => importReferences([{ name: "a.ris", text: ovid }], { maxRecords: 0 })).toThrow(/more than 0 records/);
  });
});
