import { describe, expect, it } from "vitest";
import type { JsonRecord } from "../store/job-store";
import { exportBody, type FinishedJob } from "./exports";

const record = (config: Record<string, unknown>) =>
  ({ job_id: "j", status: "completed", config, model_version: "m", created_at: "", completed_at: "", duration_ms: 1, estimated_cost_usd: null, error: null }) as unknown as FinishedJob["record"];

function job(config: Record<string, unknown>, chunks: JsonRecord[][], result: JsonRecord = {}): FinishedJob & { reads: number } {
  const out = {
    record: record(config),
    result,
    reads: 0,
    chunks: async function* () {
      out.reads++;
      for (const chunk of chunks) yield chunk;
    },
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
    expect(lines[0]).toBe("id,decision,final_score,include_votes,repetitions,cluster_id,cluster_label,criterion_1: C0,criterion_2: C1,reasoning,error");
    expect(lines[1]).toBe("p1,include,,,3,-1,,,,,The model never answered for this paper");
    // The reasoning would run as a formula in a spreadsheet: neutralised.
    expect(lines[2]).toBe("p2,include,2,2,3,0,Nudges,met,unclear,'=cmd|' /C calc'!A0,");
    expect(lines).toHaveLength(5); // three rows and the final CRLF
  });

  it("needs no look-ahead when the job has no criteria, and writes one JSON object per line", async () => {
    const items = [{ id: 1, decision: "exclude", votes: ["exclude"], criteria_verdicts: [], cluster_id: 0 }];
    const source = job({ criteria_count: 0, repetitions: 1 }, [items]);
    expect((await joined(exportBody("screening", source, "csv"))).split("\r\n")[0]).toBe("id,decision,final_score,include_votes,repetitions,cluster_id,cluster_label,reasoning,error");
    expect(source.reads).toBe(1);
    const jsonl = await joined(exportBody("screening", source, "jsonl"));
    expect(jsonl).toBe(`${JSON.stringify({ ...items[0], cluster_label: null })}\n`);
  });

  it("writes an indexer field's value, confidence and quotes", async () => {
    const item = { ID: "r1", indexing_status: "ok", n: { value: 120, confidence: 0.9, evidence: [{ quote: "120 adults" }, { quote: "n = 120" }] }, tags: { value: ["a", "b"], confidence: 0.5, evidence: [] } };
    const text = await joined(exportBody("indexer", job({ fields_count: 2 }, [[item]]), "csv"));
    expect(text).toBe("ID,indexing_status,n,n_confidence,n_evidence,tags,tags_confidence,tags_evidence\r\nr1,ok,120,0.9,120 adults; n = 120,a; b,0.5,\r\n");
  });
});
