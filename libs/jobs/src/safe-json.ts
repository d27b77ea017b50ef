/** A KV entry's or a JetStream message's JSON body, or undefined when it is not JSON (anyone can publish garbage). */
export function safeJson(source: { json<T = unknown>(): T }): unknown {
  try {
    return source.json();
  } catch {
    return undefined;
  }
}
