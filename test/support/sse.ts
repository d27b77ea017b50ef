import { request as httpRequest } from "node:http";
import { TEST_API_KEY } from "./stack";

/** A server-sent event as a client reads it off the wire (comment lines are counted, not kept). */
export interface SseEvent {
  event: string;
  id: string | undefined;
  data: string;
}

export interface SseRead {
  status: number;
  headers: Headers;
  events: SseEvent[];
  /** Comment lines (heartbeats) seen. */
  comments: number;
  /** The server closed the stream (rather than the reader stopping). */
  closedByServer: boolean;
  /** The body when the answer was not an event stream. */
  body: string;
}

export interface SseReadOptions {
  headers?: Record<string, string>;
  lastEventId?: string;
  /** Stop reading (and disconnect) once this returns true for the events so far. */
  until?: (events: SseEvent[]) => boolean;
  /** Called with each event as it arrives. */
  onEvent?: (event: SseEvent) => void;
  timeoutMs?: number;
  /** Disconnects when aborted; the read then resolves with what it had. */
  signal?: AbortSignal;
}

/** Parses complete events off the front of `buffer`; returns what is left (an incomplete event). */
export function parseSse(buffer: string, onEvent: (event: SseEvent) => void, onComment: () => void): string {
  let rest = buffer;
  for (;;) {
    const end = rest.search(/\r?\n\r?\n/);
    if (end < 0) return rest;
    const block = rest.slice(0, end);
    rest = rest.slice(end + (rest[end] === "\r" ? 4 : 2));
    let event = "message";
    let id: string | undefined;
    const data: string[] = [];
    let fields = 0;
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) {
        onComment();
        continue;
      }
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      fields++;
      if (name === "event") event = value;
      else if (name === "id") id = value;
      else if (name === "data") data.push(value);
    }
    if (fields > 0 && data.length > 0) onEvent({ event, id, data: data.join("\n") });
  }
}

/**
 * Reads a job's event stream the way `curl -N` shows it, with the test key unless headers say
 * otherwise: one plain HTTP/1.1 connection per stream (no pool), closed when the reader stops.
 */
export function readEventStream(url: string, options: SseReadOptions = {}): Promise<SseRead> {
  const headers: Record<string, string> = { "x-api-key": TEST_API_KEY, accept: "text/event-stream", ...(options.headers ?? {}) };
  if (options.lastEventId !== undefined) headers["last-event-id"] = options.lastEventId;
  const timeoutMs = options.timeoutMs ?? 90_000;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers, agent: false });
    let result: SseRead | undefined;
    let settled = false;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", leave);
      if (error || !result) reject(error ?? new Error("the stream closed before an answer"));
      else resolve(result);
    };
    const timer = setTimeout(() => {
      req.destroy();
      settle(new Error(`event stream not finished within ${timeoutMs} ms`));
    }, timeoutMs);
    const leave = () => {
      req.destroy();
      settle();
    };
    if (options.signal?.aborted) return leave();
    options.signal?.addEventListener("abort", leave, { once: true });
    req.on("error", (error) => settle(result ? undefined : error));
    req.on("response", (res) => {
      const responseHeaders = new Headers();
      for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(", ") : value);
      const read: SseRead = { status: res.statusCode ?? 0, headers: responseHeaders, events: [], comments: 0, closedByServer: false, body: "" };
      result = read;
      const isStream = responseHeaders.get("content-type")?.startsWith("text/event-stream") ?? false;
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (settled) return;
        if (!isStream) {
          read.body += chunk;
          return;
        }
        buffer = parseSse(
          buffer + chunk,
          (event) => {
            read.events.push(event);
            options.onEvent?.(event);
          },
          () => read.comments++,
        );
        if (options.until?.(read.events)) leave();
      });
      res.on("end", () => {
        if (isStream && !settled) read.closedByServer = true;
        settle();
      });
      res.on("close", () => settle());
    });
    req.end();
  });
}
