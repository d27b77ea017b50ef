import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { IMPORT_USAGE, runImport } from "./import-command";
import { ROOT } from "./launch";

const FIXTURES = join(ROOT, "libs/references/fixtures");
const dir = mkdtempSync(join(tmpdir(), "import-command-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[]) {
  const io = { out: "", err: [] as string[] };
  const code = runImport(args, { stdout: (text) => (io.out += text), stderr: (line) => io.err.push(line) });
  return { code, ...io };
}

describe("npm run import", () => {
  it("turns several files into screening papers as JSON Lines, counts on stderr", () => {
    const out = join(dir, "papers.jsonl");
    const { code, err } = run([join(FIXTURES, "pubmed.nbib"), join(FIXTURES, "asreview-semicolon.csv"), "--out", out, "--duplicates", join(dir, "dups.json")]);
    expect(code).toBe(0);
    const lines = readFileSync(out, "utf8").trimEnd().split("\n");
    expect(lines).toHaveLength(406);
    const papers = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    // The bibliographic fields each record came with follow (docs/import.md): an NBIB record has no DOI or URL.
    expect(Object.keys(papers[0]!)).toEqual(["id", "title", "abstract", "authors", "year", "journal", "volume", "issue", "pages", "pmid", "accession", "database", "keywords"]);
    expect(papers[0]!.authors).toEqual(expect.arrayContaining([expect.stringMatching(/^[^,]+, /)]));
    expect(new Set(papers.map((p) => p.id)).size).toBe(406);
    expect(err.join("\n")).toMatch(/records: 406 read, 6 duplicates in 6 groups \(kept; --merge-duplicates keeps one of each\), 406 written to .*papers\.jsonl/);
    expect(err.join("\n")).toMatch(/without abstract: \d+; without title: 0/);
    expect(err.join("\n")).toMatch(/duplicates 10000021, pubmed:10000021 \(same pmid 10000021, title\)/);
    expect((JSON.parse(readFileSync(join(dir, "dups.json"), "utf8")) as unknown[]).length).toBe(6);
  });

  it("merges on request and writes indexer records to standard output", () => {
    const { code, out, err } = run([join(FIXTURES, "scopus.ris"), "--merge-duplicates", "--indexer"]);
    expect(code).toBe(0);
    const records = out.trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toHaveLength(250);
    expect(Object.keys(records[0]!).slice(0, 6)).toEqual(["ID", "Title", "Abstract", "authors", "year", "journal"]);
    expect(err.join("\n")).toMatch(/253 read, 3 duplicates in 3 groups \(merged\), 250 written to standard output/);
  });

  it("prints its usage for no file or an unknown option", () => {
    expect(run([])).toMatchObject({ code: 2, err: [IMPORT_USAGE] });
    expect(run(["--bogus"]).code).toBe(2);
  });
});
