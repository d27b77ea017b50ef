import { describe, expect, it } from "vitest";
import type { ItemText } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import type { FinishedJob } from "../finished/finished-job";
import { exportBody } from "./exports";
import { sampleDownload } from "./sample-download";
import { risRecord } from "./ris";

const record = (config: Record<string, unknown>) =>
  ({ job_id: "j", status: "completed", config, model_version: "m", created_at: "", completed_at: "", duration_ms: 1, estimated_cost_usd: null, error: null }) as unknown as FinishedJob["record"];

function job(config: Record<string, unknown>, chunks: JsonRecord[][], result: JsonRecord = {}, texts?: ItemText[][]): FinishedJob & { reads: number; abstractReads: number } {
  const out = {
    record: record(config),
    result,
    reads: 0,
    abstractReads: 0,
    chunks: async function* () {
      out.reads++;
      for (const chunk of chunks) yield chunk;
    },
    ...(texts
      ? {
          titles: async function* () {
            for (const chunk of texts) yield chunk.map((t) => t.title);
          },
          abstracts: async function* () {
            out.abstractReads++;
            for (const chunk of texts) yield chunk.map((t) => t.abstract);
          },
        }
      : {}),
    ...(texts?.some((chunk) => chunk.some((t) => t.bibliography))
      ? {
          bibliography: async function* () {
            for (const chunk of texts) yield chunk.map((t) => (t.bibliography ? JSON.stringify(t.bibliography) : ""));
          },
        }
      : {}),
  };
  return out;
}

const verdicts = (...v: string[]) => v.map((verdict, i) => ({ name: `C${i}`, type: "include", verdict }));

/** The export's whole text. */
async function joined(pieces: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const piece of pieces) out += piece;
  return out;
}

describe("exportBody", () => {
  it("takes the criteria columns from the first paper that has verdicts, over chunks, and keeps lost papers as rows with their error", async () => {
    const lost = { id: "p1", final_score: null, cluster_id: -1, reasoning: "", decision: "include", votes: [], criteria_verdicts: [], error: "The model never answered for this paper" };
    const done = (id: string) => ({ id, final_score: 2, cluster_id: 0, reasoning: "=cmd|' /C calc'!A0", decision: "include", votes: ["include", "exclude", "include"], criteria_verdicts: verdicts("met", "unclear") });
    const source = job({ criteria_count: 2, repetitions: 3 }, [[lost], [done("p2"), done("p3")]], { clusters: [{ cluster_id: 0, label: "Nudges", count: 2 }] });
    const text = await joined(exportBody("screening", source, "csv"));
    const lines = text.split("\r\n");
    expect(lines[0]).toBe("\uFEFFid,title,decision,final_score,include_votes,repetitions,cluster_id,cluster_label,criterion_1: C0,criterion_2: C1,reasoning,error");
    expect(lines[1]).toBe("p1,,include,,,3,-1,,,,,The model never answered for this paper");
    // The reasoning would run as a formula in a spreadsheet: neutralised.
    expect(lines[2]).toBe("p2,,include,2,2,3,0,Nudges,met,unclear,'=cmd|' /C calc'!A0,");
    expect(lines).toHaveLength(5); // three rows and the final CRLF
    expect(source.reads).toBe(2); // the columns showed in the second chunk: the rows read the items again
  });

  it("needs no look-ahead when the job has no criteria, and writes one JSON object per line", async () => {
    const items = [{ id: 1, decision: "exclude", votes: ["exclude"], criteria_verdicts: [], cluster_id: 0 }];
    const source = job({ criteria_count: 0, repetitions: 1 }, [items]);
    expect((await joined(exportBody("screening", source, "csv", "plain"))).split("\r\n")[0]).toBe("id,title,decision,final_score,include_votes,repetitions,cluster_id,cluster_label,reasoning,error");
    expect(source.reads).toBe(1);
    const jsonl = await joined(exportBody("screening", source, "jsonl"));
    expect(jsonl).toBe(`${JSON.stringify({ id: 1, title: "", ...items[0], cluster_label: null })}\n`);
  });

  it("writes an indexer field's value, confidence and quotes", async () => {
    const item = { ID: "r1", indexing_status: "ok", n: { value: 120, confidence: 0.9, evidence: [{ quote: "120 adults" }, { quote: "n = 120" }] }, tags: { value: ["a", "b"], confidence: 0.5, evidence: [] } };
    const text = await joined(exportBody("indexer", job({ fields_count: 2 }, [[item]]), "csv", "plain"));
    expect(text).toBe("ID,title,indexing_status,n,n_confidence,n_evidence,tags,tags_confidence,tags_evidence\r\nr1,,ok,120,0.9,120 adults; n = 120,a; b,0.5,\r\n");
  });

  const paper = (id: string | number, decision: string, verdict: string) => ({
    id,
    decision,
    final_score: decision === "include" ? 2 : 0,
    cluster_id: 0,
    reasoning: "-2 votes \nsaid so",
    votes: decision === "include" ? ["include", "include"] : ["exclude", "exclude"],
    criteria_verdicts: [{ name: "Adults", type: "include", verdict }],
  });
  // Texts in other chunk sizes than the items: they are read line for line beside them.
  const titled = () =>
    job({ criteria_count: 1, repetitions: 2, threshold: 1 }, [[paper("-2", "include", "met"), paper(7, "exclude", "not_met")], [paper("=1", "exclude", "met")]], {}, [
      [{ title: "Zoë and α ≥ β", abstract: "An abstract\u2028\nover lines" }],
      [{ title: "=HYPERLINK(\"x\")", abstract: "" }, { title: "Third", abstract: "Text" }],
    ]);

  it("gives every row its title; a spreadsheet CSV guards every text cell, the id too (a plain-number id stays as it is), a plain one writes values as they are", async () => {
    const source = titled();
    const sheet = (await joined(exportBody("screening", source, "csv"))).split("\r\n");
    // The first paper shows the criteria columns: the rows go on from the same read of the items.
    expect(source.reads).toBe(1);
    expect(sheet[0]!.startsWith("\uFEFFid,title,")).toBe(true);
    expect(sheet[1]!.startsWith("-2,Zoë and α ≥ β,include,2,2,2,")).toBe(true);
    expect(sheet[2]!.startsWith(`7,"'=HYPERLINK(""x"")",exclude,`)).toBe(true);
    expect(sheet[3]!.startsWith("'=1,Third,exclude,")).toBe(true);
    const plain = await joined(exportBody("screening", titled(), "csv", "plain"));
    expect(plain.startsWith("id,title,")).toBe(true);
    expect(plain).toContain(`7,"=HYPERLINK(""x"")",exclude,`);
    expect(plain).not.toContain("'");
  });

  it("writes one RIS record per paper: id, title, abstract on one line, the decision and reasons in KW and N1", async () => {
    const ris = await joined(exportBody("screening", titled(), "ris"));
    const records = ris.split("ER  - \r\n").filter(Boolean);
    expect(ris.endsWith("ER  - \r\n")).toBe(true);
    expect(records).toHaveLength(3);
    expect(records[0]).toBe(
      [
        "TY  - JOUR",
        "ID  - -2",
        "TI  - Zoë and α ≥ β",
        "NS  - -2",
        "AB  - An abstract over lines",
        "KW  - litrev: include",
        "KW  - litrev theme: ",
        "",
      ].join("\r\n").replace("KW  - litrev theme: \r\n", "") +
        "N1  - litrev screening decision: include (2 of 2 votes for include; threshold 1).\r\nN1  - Reasoning: -2 votes said so\r\nN1  - Criteria: Adults (include): met.\r\n",
    );
    expect(records[1]).toContain("KW  - litrev: exclude\r\nKW  - litrev reason: Adults\r\n");
    expect(records[1]).not.toContain("AB  - ");
    // A title cannot end its record or start another: line breaks inside a value become spaces.
    const forged = risRecord({ id: "1", title: "T\r\nER  - \r\nTY  - JOUR\nTI  - forged", abstract: "", keywords: [], notes: [] });
    expect(forged.match(/^TY {2}- /gm)).toHaveLength(1);
    expect(forged).toContain("TI  - T ER  - TY  - JOUR TI  - forged\r\n");
  });

  it("writes back the bibliographic fields a paper came with (RIS tags, CSV and JSON Lines columns) and cleans markup one way in every format", async () => {
    const bibliography = {
      authors: ["Müller, Zoë", "Ødegård, Å"],
      year: "2019",
      journal: "Lancet",
      volume: "393",
      issue: "10",
      pages: "12-19",
      doi: "10.1016/s0140-6736(19)30001-1",
      pmid: "30123456",
      accession: "WOS:000123456700001",
      database: "Web of Science",
      url: "https://example.org/1",
      keywords: ["nudge", "prescribing"],
    };
    const source = () =>
      job({ criteria_count: 1, repetitions: 2, threshold: 1 }, [[paper("a", "include", "met"), paper("b", "exclude", "not_met")]], {}, [
        [
          { title: "Remicade&reg; <i>in vivo</i> CO<sub>2</sub>", abstract: "<jats:p>Text &amp; more</jats:p>", bibliography },
          { title: "Plain", abstract: "" },
        ],
      ]);
    const ris = await joined(exportBody("screening", source(), "ris"));
    const [first, second] = ris.split("ER  - \r\n");
    expect(first).toBe(
      [
        "TY  - JOUR", "ID  - a", "TI  - Remicade® in vivo CO2", "AU  - Müller, Zoë", "AU  - Ødegård, Å", "PY  - 2019", "T2  - Lancet", "VL  - 393", "IS  - 10",
        "SP  - 12", "EP  - 19", "DO  - 10.1016/s0140-6736(19)30001-1", "AN  - WOS:000123456700001", "DB  - Web of Science", "C2  - 30123456",
        "UR  - https://example.org/1", "NS  - a", "AB  - Text & more", "KW  - nudge", "KW  - prescribing", "KW  - litrev: include",
      ].join("\r\n") + "\r\n" + first!.slice(first!.indexOf("N1  - ")),
    );
    expect(second).toMatch(/^\r?\n?TY {2}- JOUR\r\nID {2}- b\r\nTI {2}- Plain\r\nNS {2}- b\r\nKW {2}- litrev: exclude/);

    const csv = (await joined(exportBody("screening", source(), "csv", "plain"))).split("\r\n");
    const columns = ["authors", "year", "journal", "volume", "issue", "pages", "doi", "pmid", "accession", "database", "url", "keywords"];
    expect(csv[0]!.endsWith(`,reasoning,error,${columns.join(",")}`)).toBe(true);
    expect(csv[1]!.startsWith("a,Remicade® in vivo CO2,include,")).toBe(true);
    expect(csv[1]!.endsWith(',"Müller, Zoë; Ødegård, Å",2019,Lancet,393,10,12-19,10.1016/s0140-6736(19)30001-1,30123456,WOS:000123456700001,Web of Science,https://example.org/1,nudge; prescribing')).toBe(true);
    expect(csv[2]!.endsWith(",,,,,,,,,,,,")).toBe(true);

    const [line1, line2] = (await joined(exportBody("screening", source(), "jsonl"))).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(line1).toMatchObject({ id: "a", title: "Remicade® in vivo CO2", ...bibliography });
    expect(line2).toMatchObject({ id: "b", title: "Plain", authors: null, year: null, doi: null });
    // A job whose papers came with none: the exports are as before, no empty columns.
    expect((await joined(exportBody("screening", titled(), "csv", "plain"))).split("\r\n")[0]!.endsWith(",reasoning,error")).toBe(true);
  });

  it("names a bibliographic column that an extraction field already uses `_<name>`", async () => {
    const item = { ID: "r1", indexing_status: "ok", year: { value: 2001, confidence: 0.9, evidence: [] } };
    const source = job({ fields_count: 1 }, [[item]], {}, [[{ title: "T", abstract: "", bibliography: { year: "2002", authors: ["X"] } }]]);
    const [header, row] = (await joined(exportBody("indexer", source, "csv", "plain"))).split("\r\n");
    expect(header).toBe("ID,title,indexing_status,year,year_confidence,year_evidence,authors,_year,journal,volume,issue,pages,doi,pmid,accession,database,url,keywords");
    expect(row).toBe("r1,T,ok,2001,0.9,,X,2002,,,,,,,,,,");
    const line = JSON.parse((await joined(exportBody("indexer", source, "jsonl"))).trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ ID: "r1", _year: "2002", authors: ["X"] });
  });

  it("writes titles into JSON Lines next to the id", async () => {
    const [first] = (await joined(exportBody("screening", titled(), "jsonl"))).trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(Object.keys(first!).slice(0, 2)).toEqual(["id", "title"]);
    expect(first!.title).toBe("Zoë and α ≥ β");
  });

  it("reads the abstracts only for RIS and the sample download: CSV and JSON Lines read the titles alone", async () => {
    for (const format of ["csv", "jsonl"] as const) {
      const source = titled();
      expect(await joined(exportBody("screening", source, format))).toContain("Third");
      expect(source.abstractReads).toBe(0);
    }
    const ris = titled();
    expect(await joined(exportBody("screening", ris, "ris"))).toContain("AB  - Text");
    expect(ris.abstractReads).toBe(1);
    const sample = titled();
    const download = await joined(sampleDownload(sample, ["=1", 7], "csv", "plain"));
    expect(download.split("\r\n").slice(1, 3)).toEqual(["1,=1,Third,Text,", '2,7,"=HYPERLINK(""x"")",,']);
    expect(sample.abstractReads).toBe(1);
  });

  it("streams a validation sample in its own order, holding at most a window of its texts (a pass over the job per window)", async () => {
    const items = Array.from({ length: 40 }, (_, i) => ({ id: `p${i}`, decision: "exclude", votes: ["exclude"], criteria_verdicts: [], cluster_id: 0 }));
    const texts = items.map((_, i) => ({ title: `Title ${i}`, abstract: "x".repeat(1_000 + i) }));
    const chunks = [items.slice(0, 15), items.slice(15, 30), items.slice(30)];
    const textChunks = [texts.slice(0, 15), texts.slice(15, 30), texts.slice(30)];
    const order = [39, 3, 17, 0, 25, 8, 31, 12, 2, 36].map((i) => `p${i}`);
    const whole = job({ criteria_count: 0, repetitions: 1 }, chunks, {}, textChunks);
    const expected = await joined(sampleDownload(whole, order, "csv", "plain"));
    const windowed = job({ criteria_count: 0, repetitions: 1 }, chunks, {}, textChunks);
    // About three papers' texts per window: four passes for ten papers, the same bytes.
    expect(await joined(sampleDownload(windowed, order, "csv", "plain", 3_100))).toBe(expected);
    expect(windowed.abstractReads).toBe(4);
    const rows = expected.split("\r\n").slice(1, -1);
    expect(rows.map((row) => row.split(",").slice(0, 3).join(","))).toEqual(order.map((id, i) => `${i + 1},${id},Title ${id.slice(1)}`));
  });

  it("gives a large chunk's rows in pieces of about 64 KiB, not the chunk's text at once", async () => {
    const items = Array.from({ length: 4_000 }, (_, i) => ({ id: `p${i}`, decision: "exclude", votes: ["exclude"], criteria_verdicts: [], cluster_id: 0 }));
    const titles = items.map((_, i) => ({ title: `A title long enough to count, number ${i}`.padEnd(120, "."), abstract: "" }));
    const pieces: string[] = [];
    for await (const piece of exportBody("screening", job({ criteria_count: 0, repetitions: 1 }, [items], {}, [titles]), "jsonl")) pieces.push(piece);
    expect(pieces.join("").split("\n")).toHaveLength(items.length + 1);
    expect(pieces.length).toBeGreaterThan(5);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(64 * 1024 + 1_000);
  });
});
