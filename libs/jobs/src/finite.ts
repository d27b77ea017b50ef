/**
 * A copy of `value` with every NaN and ±Infinity replaced by null (spec: such values are stored as
 * null). JSON does this on its own; BSON does not, so everything bound for MongoDB goes through here.
 */
export function finiteOrNull<T>(value: T): T {
  return clean(value) as T;
}

function clean(value: unknown): unknown {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (Array.isArray(value)) return value.map(clean);
  if (value && typeof value === "object" && (value as object).constructor === Object) {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = clean(inner);
    return out;
  }
  return value;
}
