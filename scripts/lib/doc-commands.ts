/**
 * The shell commands a reader is told to run: every line of a ```sh/```bash block of a Markdown file,
 * and inline code that starts with a command of this repository's own tools (`npm run …`, `npx …`,
 * `pnpm …`, `vitest …`, `tsx …`). docs-commands.test.ts checks that each names something that exists.
 */

export interface DocCommand {
  file: string;
  line: number;
  /** One simple command: its words, leading `VAR=value` assignments and shell keywords removed. */
  words: string[];
  /** Whether it came from inline code in prose rather than a code block. */
  inline: boolean;
}

const SHELL_BLOCK = /^\s*```(sh|bash|shell|console)\s*$/;
const FENCE = /^\s*```/;
const INLINE_TOOL = /^(npm|npx|pnpm|vitest|tsx)\s/;
const KEYWORDS = new Set(["do", "then", "else", "!", "time"]);
const SKIPPED = new Set(["for", "done", "fi", "if", "while"]);

export function extractCommands(file: string, markdown: string): DocCommand[] {
  const commands: DocCommand[] = [];
  const lines = markdown.split("\n");
  let inShell = false;
  let inOther = false;
  let pending = "";
  let pendingLine = 0;
  lines.forEach((text, index) => {
    const line = index + 1;
    if (!inOther && SHELL_BLOCK.test(text) && !inShell) {
      inShell = true;
      return;
    }
    if (FENCE.test(text)) {
      if (inShell) inShell = false;
      else inOther = !inOther;
      return;
    }
    if (inShell) {
      // A trailing backslash continues the command on the next line.
      if (!pending) pendingLine = line;
      const joined = pending + text;
      if (/\\\s*$/.test(joined)) {
        pending = joined.replace(/\\\s*$/, " ");
        return;
      }
      pending = "";
      for (const words of simpleCommands(joined)) commands.push({ file, line: pendingLine, words, inline: false });
      return;
    }
    if (inOther) return;
    for (const match of text.matchAll(/`([^`]+)`/g)) {
      const code = match[1]!.trim();
      if (!INLINE_TOOL.test(code)) continue;
      for (const words of simpleCommands(code)) commands.push({ file, line, words, inline: true });
    }
  });
  return commands;
}

/** Splits a command line into simple commands (at `&&`, `||`, `|`, `;`, parentheses and `$(`), without comments. */
export function simpleCommands(commandLine: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word = "";
  let quote: string | undefined;
  const endWord = () => {
    if (word) words.push(word);
    word = "";
  };
  const endCommand = () => {
    endWord();
    const cleaned = clean(words);
    if (cleaned.length > 0) commands.push(cleaned);
    words = [];
  };
  for (let i = 0; i < commandLine.length; i++) {
    const c = commandLine[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      continue;
    }
    if (c === "#" && word === "") break;
    if (c === "$" && commandLine[i + 1] === "(") {
      // The substitution is a command of its own; what it leaves in this word does not matter here.
      word += "$";
      endCommand();
      i++;
      continue;
    }
    if (/\s/.test(c)) {
      endWord();
      continue;
    }
    if (c === ";" || c === "|" || c === "&" || c === "(" || c === ")") {
      endCommand();
      continue;
    }
    word += c;
  }
  endCommand();
  return commands;
}

/** Drops leading assignments (`VAR=value`) and shell keywords; a `for …` header is not a command. */
function clean(words: string[]): string[] {
  let start = 0;
  while (start < words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[start]!) || KEYWORDS.has(words[start]!))) start++;
  const rest = words.slice(start);
  return rest.length > 0 && SKIPPED.has(rest[0]!) ? [] : rest;
}
