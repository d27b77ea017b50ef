import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { extractCommands, simpleCommands, type DocCommand } from "./doc-commands";
import { ROOT } from "./launch";

/**
 * Every command README.md and docs/*.md tell a reader to run works as written after `npm start` on a
 * fresh clone: the package scripts, binaries, benchmarks and files it names exist, and it does not
 * rely on a tool that is not on the reader's PATH (pnpm, vitest and tsx live in .toolchain/ and
 * node_modules/; `npm run <script> --` and `bash scripts/toolchain.sh …` reach them).
 */

const scripts = Object.keys((JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts);
const bins = new Set(readdirSync(join(ROOT, "node_modules/.bin")));
const benchmarks = new Set(readdirSync(join(ROOT, "bench")).filter((f) => f.endsWith(".ts") && f !== "run.ts").map((f) => f.slice(0, -3)));
/** Programs from outside the repository the docs may name (the reader's machine or deployment tools). */
const EXTERNAL = new Set(["curl", "docker", "git", "kubectl", "helm", "mktemp", "cat", "cp", "cd", "sed", "pipx", "echo", "export", "openssl"]);
const NOT_ON_PATH = "is not on PATH after `npm start` (it lives in .toolchain/ or node_modules/)";

/** What is wrong with one command, or undefined. `toolchain`: run through scripts/toolchain.sh (pnpm and the workspace's binaries on PATH). */
function problem(words: string[], inline: boolean, toolchain = false): string | undefined {
  const [program = "", ...args] = words;
  const missingFile = args.find((arg) => /^(scripts|test|bench|eval|libs|services|deploy)\/[\w./-]*\.(ts|sh|js|mjs)$|^\.ci\/run$/.test(arg) && !existsSync(join(ROOT, arg)));
  if (missingFile) return `names ${missingFile}, which does not exist`;
  const script = (name: string | undefined, rest: string[]) => {
    if (name?.startsWith("<")) return undefined; // a placeholder: `npm run <script> -- <arguments>`
    if (!name || !scripts.includes(name)) return `names the package script ${JSON.stringify(name)}, which package.json does not have`;
    if (name === "bench") {
      const bench = rest.filter((a) => a !== "--")[0];
      if (bench && !bench.startsWith("<") && !benchmarks.has(bench)) return `names the benchmark ${bench}, which bench/ does not have`;
    }
    return undefined;
  };
  switch (program) {
    case "env": {
      let i = 0;
      while (i < args.length && (args[i]!.startsWith("-") || /^[A-Za-z_]\w*=/.test(args[i]!))) i++;
      return problem(args.slice(i), inline, toolchain);
    }
    case "npm": {
      const [sub, name, ...rest] = args;
      if (sub === "start" || sub === "test") return script(sub, []);
      if (sub === "run" || sub === "run-script") {
        if (rest.length > 0 && rest[0] !== "--") return `passes arguments to npm run without \`--\`: npm would take them as its own`;
        return script(name, rest);
      }
      if (sub === "install" || sub === "i") return undefined; // the reader's own project (the typed-client instructions)
      if (sub === "exec") return name && bins.has(name) ? undefined : `runs ${name}, which node_modules/.bin does not have`;
      return `runs npm ${sub ?? ""}, which this check does not know`;
    }
    case "npx":
      return args[0] && bins.has(args[0]) ? undefined : `runs ${args[0]}, which node_modules/.bin does not have`;
    case "bash":
      if (!args[0] || !existsSync(join(ROOT, args[0]))) return `runs ${args[0]}, which does not exist`;
      return args[0] === "scripts/toolchain.sh" && args.length > 1 ? problem(args.slice(1), inline, true) : undefined;
    case "pnpm": {
      const [sub, ...rest] = args;
      // Prose describing pnpm's own commands (the image build's `pnpm fetch`, `pnpm … deploy`) is not an instruction.
      if (inline && sub !== undefined && sub !== "exec" && sub !== "run" && !scripts.includes(sub)) return undefined;
      if (!toolchain) return `pnpm ${NOT_ON_PATH}: write \`npm run ${sub ?? "<script>"} --\``;
      if (sub === "exec") return rest[0] && bins.has(rest[0]) ? undefined : `runs ${rest[0]}, which node_modules/.bin does not have`;
      return script(sub === "run" ? rest[0] : sub, sub === "run" ? rest.slice(1) : rest);
    }
    default:
      if (bins.has(program)) return toolchain ? undefined : `${program} ${NOT_ON_PATH}: use its package script or \`bash scripts/toolchain.sh ${program} …\``;
      if (EXTERNAL.has(program) || program.startsWith("$")) return undefined; // `$EDITOR …`: the reader's own choice
      return `runs ${program}, which is neither a package script, a binary of the workspace nor a known outside tool`;
  }
}

const files = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const commands: DocCommand[] = files.flatMap((file) => extractCommands(file, readFileSync(join(ROOT, file), "utf8")));

describe("the commands in README.md and docs/", () => {
  it("are found: the code blocks' and the inline ones", () => {
    const text = (c: DocCommand) => c.words.join(" ");
    expect(commands.some((c) => c.file === "README.md" && text(c) === "npm start" && !c.inline)).toBe(true);
    expect(commands.some((c) => c.file === "docs/resilience.md" && /^npm run bench -- chaos/.test(text(c)))).toBe(true);
    expect(commands.filter((c) => c.inline).length).toBeGreaterThan(10);
    expect(commands.length).toBeGreaterThan(50);
  });

  it("each names a package script, binary, benchmark or file that exists, reachable on a fresh clone after npm start", () => {
    const problems = commands.flatMap((c) => {
      const found = problem(c.words, c.inline);
      return found ? [`${c.file}:${c.line}: \`${c.words.join(" ")}\` ${found}`] : [];
    });
    expect(problems).toEqual([]);
  });
});

describe("the checker", () => {
  const check = (markdown: string) => extractCommands("x.md", markdown).map((c) => problem(c.words, c.inline) ?? "ok");

  it("splits command lines and drops assignments, comments and substitutions' outer words", () => {
    expect(simpleCommands(`KEY=$(cat .data/api-key)   # or the API_KEY you set`)).toEqual([["cat", ".data/api-key"]]);
    expect(simpleCommands(`A=1 B="x y" npm run eval -- screening --file 'a b.jsonl' | sed 's/#/x/' && echo done`)).toEqual([
      ["npm", "run", "eval", "--", "screening", "--file", "a b.jsonl"],
      ["sed", "s/#/x/"],
      ["echo", "done"],
    ]);
    expect(simpleCommands("for s in a b; do docker build .; done")).toEqual([["docker", "build", "."]]);
  });

  it("refuses what fails on a fresh clone and accepts what works", () => {
    expect(check("```sh\npnpm bench chaos\nnpm run bench -- chaos\nnpm run bench -- nope\nnpm run nope\nvitest run x\n```")).toEqual([
      expect.stringContaining("pnpm is not on PATH"),
      "ok",
      "names the benchmark nope, which bench/ does not have",
      'names the package script "nope", which package.json does not have',
      expect.stringContaining("vitest is not on PATH"),
    ]);
    expect(check("```sh\nX=1 \\\n  npm run eval -- screening\nbash scripts/toolchain.sh tsx bench/load.ts\nbash scripts/toolchain.sh tsx bench/nope.ts\nfrobnicate\n```")).toEqual([
      "ok",
      "ok",
      "names bench/nope.ts, which does not exist",
      expect.stringContaining("neither a package script"),
    ]);
    // Inline: this repository's tools are checked; pnpm's own commands described in prose are not.
    expect(check("Run `pnpm eval screening` or `npm run eval -- screening`; the image runs `pnpm fetch --prod`. `curl x` is prose.")).toEqual([
      expect.stringContaining("pnpm is not on PATH"),
      "ok",
      "ok",
    ]);
    // Only shell blocks: JSON or text blocks are not commands.
    expect(check("```json\n{\"pnpm\": 1}\n```\n```\npnpm bench x\n```")).toEqual([]);
  });
});
