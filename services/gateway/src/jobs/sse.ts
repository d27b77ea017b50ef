import { TERMINAL_EVENT_ID } from "@litrev/contracts";

/** The wire format of server-sent events (WHATWG HTML, "Server-sent events"). */

export interface SseFrame {
  event?: string;
  id?: string;
  data: string;
}

/** One event: a multi-line payload becomes one `data:` line per line, as the format requires. */
export function sseFrame({ event, id, data }: SseFrame): string {
  let out = "";
  if (event) out += `event: ${event}\n`;
  if (id !== undefined) out += `id: ${id}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** A comment line: ignored by clients, keeps proxies and idle timers from closing the stream. */
export const SSE_HEARTBEAT = Buffer.from(": keep-alive\n\n");

/** Sent first: how long a client waits before it reconnects (with Last-Event-ID). */
export const sseRetry = (ms: number) => `retry: ${ms}\n\n`;

export type LastEventId =
  | { kind: "none" }
  /** The client saw the state event of this revision: send only newer ones. */
  | { kind: "revision"; revision: number }
  /** The client saw the end event: nothing is left to send. */
  | { kind: "end" }
  | { kind: "invalid" };

/** The `Last-Event-ID` request header, as this gateway's event ids define it (a revision, or `end`). */
export function parseLastEventId(value: string | string[] | undefined): LastEventId {
  if (value === undefined) return { kind: "none" };
  const text = (Array.isArray(value) ? value.at(-1) ?? "" : value).trim();
  if (text === "") return { kind: "none" };
  if (text === TERMINAL_EVENT_ID) return { kind: "end" };
  if (!/^\d{1,15}$/.test(text)) return { kind: "invalid" };
  return { kind: "revision", revision: Number(text) };
}
