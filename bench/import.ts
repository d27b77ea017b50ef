/**
 * `npm run import` on records that all share one DOI (and one PMID and accession number) against
 * the same number of distinct records, in the same run, alternating the two: duplicate finding and
 * id assignment must stay linear however many records share an identifier (issue 40: 8,000 records
 * sharing one id took 66× the time of distinct ones). Target: shared ≤ 2× distinct.
 *
 *   npm run bench -- import     (knobs: BENCH_RECORDS=50000, BENCH_ROUNDS=3)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../scripts/lib/launch";
import { knob } from "./support/knobs";

const RECORDS = knob("BENCH_RECORDS", 50_000);
const ROUNDS = knob("BENCH_ROUNDS", 3);
const work = mkdtempSync(join(tmpdir(), "litrev-import-bench-"));

/** RIS records with the same fields and sizes either way; `shared` gives them one DOI, PMID and accession number. */
function risFile(shared: boolean): string {
  const parts: string[] = [];
  for (let i = 0; i < RECORDS; i++) {
    const id = shared ? "10.1000/one-doi" : `10.1000/doi-${i}`;
    const pmid = shared ? "31000000" : String(31_000_000 + i);
    parts.push(`TY  - JOUR\r\nAN  - ${pmid}\r\nDO  - ${id}\r\nTI  - Randomised trial number ${i} of an intervention for condition ${i % 97}\r\nAB  - Background: abstract ${i}. Methods: a trial. Results: an effect. Conclusions: more research.\r\nER  - \r\n`);
  }
  return parts.join("");
}

const files = { distinct: join(work, "distinct.ris"), shared: join(work, "shared-doi.ris") };
writeFileSync(files.distinct, risFile(false));
writeFileSync(files.shared, risFile(true));

/** Wall time of `npm run import -- FILE --out …` (the script through tsx, as `npm run import` runs it). */
function timeImport(file: string): number {
  const started = performance.now();
  const run = spawnSync(process.execPath, ["--import", "tsx", join(ROOT, "scripts/import-references.ts"), file, "--out", join(work, "out.jsonl")], { cwd: ROOT, encoding: "utf8", maxBuffer: 16 << 20 });
  if (run.status !== 0) throw new Error(`import failed: ${run.stderr}`);
  return performance.now() - started;
}

const times: Record<keyof typeof files, number[]> = { distinct: [], shared: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of (round % 2 ? ["shared", "distinct"] : ["distinct", "shared"]) as (keyof typeof files)[]) times[kind].push(timeImport(files[kind]));
    console.log(`round ${round + 1}: distinct ${(times.distinct.at(-1)! / 1000).toFixed(2)} s, one shared DOI ${(times.shared.at(-1)! / 1000).toFixed(2)} s`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const [distinct, shared] = [median(times.distinct), median(times.shared)];
console.log(`\n${RECORDS} records, median of ${ROUNDS}: distinct ${(distinct / 1000).toFixed(2)} s, all sharing one DOI ${(shared / 1000).toFixed(2)} s: ${(shared / distinct).toFixed(2)}× (target ≤ 2×)`);
if (shared > 2 * distinct) process.exitCode = 1;
