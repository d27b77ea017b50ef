import type { z } from "zod";

type Issue = z.core.$ZodIssue;

/** A JSON number written as a string: what lax validators accept for number fields ("42", "0.5", "-1e3"). */
const NUMERIC = /^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

/** A numeric string as its number; anything else unchanged. */
export function laxNumber(value: unknown): unknown {
  return typeof value === "string" && NUMERIC.test(value) ? Number(value) : value;
}

/** `"true"`/`"false"` (any case), `"1"`/`"0"` and `1`/`0` as booleans; anything else unchanged. */
function laxBoolean(value: unknown): unknown {
  const text = typeof value === "string" ? value.trim().toLowerCase() : value;
  if (text === "true" || text === "1" || text === 1) return true;
  if (text === "false" || text === "0" || text === 0) return false;
  return value;
}

const LAX: Record<string, (value: unknown) => unknown> = { number: laxNumber, int: laxNumber, boolean: laxBoolean };

/** What a failed parse's wrong-type issue expected, if a lax reading could give it (also inside a union's branches). */
function expectedOf(issue: Issue): string | undefined {
  if (issue.code === "invalid_type") return LAX[issue.expected] ? issue.expected : undefined;
  if (issue.code !== "invalid_union") return undefined;
  for (const branch of issue.errors) {
    const root = branch.find((inner) => inner.path.length === 0 && inner.code === "invalid_type" && LAX[inner.expected]);
    if (root?.code === "invalid_type") return root.expected;
  }
  return undefined;
}

/**
 * The original system validated its bodies laxly (numeric strings for numbers, "true"/"false"
 * and 0/1 for booleans), and its clients send them. Each issue of a failed parse that such a
 * reading would fix is fixed in `data`, in place (a freshly parsed body, not shared); returns
 * whether anything changed, so the caller parses again. Anything else is left for the 400.
 */
export function coerceLaxly(data: unknown, issues: readonly Issue[]): boolean {
  let changed = false;
  for (const issue of issues) {
    const expected = expectedOf(issue);
    const key = issue.path.at(-1);
    if (!expected || key === undefined) continue;
    let parent = data;
    for (const step of issue.path.slice(0, -1)) parent = parent !== null && typeof parent === "object" ? (parent as Record<PropertyKey, unknown>)[step] : undefined;
    if (parent === null || typeof parent !== "object") continue;
    const holder = parent as Record<PropertyKey, unknown>;
    const value = holder[key];
    const lax = (LAX[expected] as (value: unknown) => unknown)(value);
    if (lax === value) continue;
    holder[key] = lax;
    changed = true;
  }
  return changed;
}
