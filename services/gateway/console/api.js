// The console's calls to the gateway: the service key (this tab's sessionStorage only), JSON
// calls, and a job's event stream read with fetch() (EventSource cannot send a header).

const KEY_ITEM = "litrev.console.apiKey";

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

class ApiError extends Error {
  constructor(status, body) {
    const detail = body?.detail;
    const message = typeof detail === "string" ? detail : detail?.message ?? (Array.isArray(detail) ? detail.map((d) => d.msg).join("; ") : `HTTP ${status}`);
    super(message);
    this.status = status;
    this.body = body;
  }
}

const apiKey = () => sessionStorage.getItem(KEY_ITEM);

let keyRefused = () => {};
/** What the page does once the key is dropped (console.js shows the login form): set by the page, so that this module imports none. */
function onSignOut(handler) {
  keyRefused = handler;
}

function signOut(reason) {
  sessionStorage.removeItem(KEY_ITEM);
  keyRefused(reason);
}

async function api(path, { method = "GET", body, signal } = {}) {
  const headers = { "X-API-Key": apiKey() ?? "" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { detail: text };
  }
  if (res.status === 401) {
    signOut("The service key was refused.");
    throw new ApiError(401, parsed);
  }
  if (!res.ok) throw new ApiError(res.status, parsed);
  return parsed;
}

/** Splits complete server-sent events off the front of `buffer`; returns the rest. */
function parseEvents(buffer, onEvent) {
  let rest = buffer;
  for (;;) {
    const end = rest.search(/\r?\n\r?\n/);
    if (end < 0) return rest;
    const block = rest.slice(0, end);
    rest = rest.slice(end + (rest[end] === "\r" ? 4 : 2));
    const event = { event: "message", id: undefined, data: [] };
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue; // heartbeat
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (name === "event") event.event = value;
      else if (name === "id") event.id = value;
      else if (name === "data") event.data.push(value);
    }
    if (event.data.length) onEvent({ ...event, data: event.data.join("\n") });
  }
}

/**
 * Follows a job's event stream until its end event: `onState` with each state, `onEnd` with the
 * finished job's poll body. A dropped connection is resumed with Last-Event-ID (no repeats).
 */
async function followJob(kind, jobId, { onState, onEnd, onProblem, signal }) {
  let lastId;
  for (let attempt = 0; attempt < 30 && !signal.aborted; attempt++) {
    try {
      const headers = { "X-API-Key": apiKey() ?? "", Accept: "text/event-stream" };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const res = await fetch(`/v1/${kind}/jobs/${encodeURIComponent(jobId)}/events`, { headers, signal });
      if (res.status === 204) return;
      if (res.status === 401) return signOut("The service key was refused.");
      if (!res.ok) {
        const body = await res.json().catch(() => null);
        onProblem?.(new ApiError(res.status, body));
        if (res.status !== 503) return;
      } else {
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        let ended = false;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer = parseEvents(buffer + value, (event) => {
            if (event.id) lastId = event.id;
            const data = JSON.parse(event.data);
            if (event.event === "state") onState(data);
            else if (event.event === "end") {
              ended = true;
              onEnd(data);
            } else if (event.event === "error") {
              ended = true;
              onProblem?.(new ApiError(500, data));
            }
          });
        }
        if (ended) return;
      }
    } catch (error) {
      if (signal.aborted) return;
      onProblem?.(error);
    }
    await sleep(2_000, signal); // the gateway went away or is full: try again (any replica will do)
  }
}

/** A GET with the key (a plain link cannot send it): the Response, thrown as an ApiError when not ok. */
async function fetchWithKey(path, signal) {
  const res = await fetch(path, { headers: { "X-API-Key": apiKey() ?? "" }, signal });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  return res;
}

/** Fetches a route with the key and saves the answer as a file. */
async function download(path, filename, signal) {
  const url = URL.createObjectURL(await (await fetchWithKey(path, signal)).blob());
  const a = Object.assign(document.createElement("a"), { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A finished job's items from its JSON Lines export (a failed or cancelled job's: those that finished); empty when it has none. */
async function exportItems(kind, jobId, signal) {
  const res = await fetch(`/v1/${kind}/jobs/${encodeURIComponent(jobId)}/export?format=jsonl`, { headers: { "X-API-Key": apiKey() ?? "" }, signal });
  if (!res.ok) return [];
  return (await res.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

export { ApiError, KEY_ITEM, api, apiKey, download, exportItems, fetchWithKey, followJob, onSignOut, signOut, sleep };
