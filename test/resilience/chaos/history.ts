/**
 * The history of a chaos run, in the style of Jepsen: every client operation is an `invoke` entry
 * followed by its completion from the same process — `ok` (it happened), `fail` (it definitely did
 * not: a 404, a 409, a 400) or `info` (unknown: a 5xx, a timeout, a connection error). The nemesis
 * records each fault the same way (invoke when it strikes, ok once healed), and the fake provider's
 * chat calls are single `ok` entries. The write probe (write-probe.ts) records each write to NATS with
 * the sequence the server acknowledged, and what it read back at the end. The checker (checker.ts)
 * reads nothing else.
 */

export type Service = "screening" | "indexer";
export type EntryType = "invoke" | "ok" | "fail" | "info";
/** create/poll/active/list: the workload; read: the final reads; fault: the nemesis; call: the provider; write/readback: the write probe. */
export type EntryF = "create" | "poll" | "active" | "list" | "read" | "fault" | "call" | "write" | "readback";
/** Where the write probe writes: a stream (as commands and checkpoints are) or a KV bucket (as job states and rows are). */
export type ProbeStore = "stream" | "kv";

/** One probe write (its sequence once acknowledged), or one message read back at the end. */
export interface ProbeWrite {
  store: ProbeStore;
  /** The write's number within its store (its subject's last token or KV key). */
  key: string;
  value: string;
  seq?: number;
}
export type JobStatus = "pending" | "running" | "completed" | "failed";
/** partition: one process's TCP path to NATS severed or stalled; split-lease: a worker's, for longer than the ack wait. */
export type FaultKind = "kill" | "pause" | "nats-restart" | "mongo-stop" | "partition" | "split-lease" | NatsClusterFault;
/** Against three clustered nats-servers: SIGKILL (and restart) of the JetStream meta leader or of a stream's leader; SIGSTOP of a server. */
export type NatsClusterFault = "meta-leader-kill" | "stream-leader-kill" | "nats-pause";

export interface Fault {
  kind: FaultKind;
  /** The process or resource hit, e.g. `screening-1`, `nats-server`. */
  target: string;
  /** What the target runs: a job service (its jobs are hit), the gateway, or shared infrastructure. */
  role: Service | "gateway" | "nats" | "mongo";
  /** How a partition cut the path (`sever`: connections dropped; `stall`: no byte moves) and for how long. */
  detail?: string;
}

export interface Entry {
  index: number;
  /** Wall-clock ms (Date.now()), the same clock as the provider's `receivedAt`. */
  time: number;
  process: string;
  type: EntryType;
  f: EntryF;
  service?: Service;
  project?: number;
  /** The job operated on (poll/read), created (create ok), or answered (active ok). */
  job?: string;
  /** create invoke: the client's key of the job (it prefixes every unit id). */
  key?: string;
  /** create invoke: ids of the job's papers or records; call: the ids a provider call carried. */
  units?: string[];
  /** The gateway that answered a client's request (`gateway-<i>`). */
  via?: string;
  /** The HTTP status the client saw. */
  http?: number;
  /** The job status the client saw. */
  status?: JobStatus;
  progress?: number;
  /** A terminal poll's result ids (screening `results[].id`, indexer `partial_results[].ID`). */
  results?: string[];
  /** Why an operation failed or is unknown, or a failed job's error category. */
  error?: string;
  /** A 409's detail names this job. */
  named?: string;
  fault?: Fault;
  /** create, list: the owner whose service key the client used. */
  owner?: string;
  /** list invoke: the `limit` asked for. */
  limit?: number;
  /** list ok: what the listing showed, newest first (`project` only where the listing carries it). */
  listed?: Listed[];
  /** call: which kind of provider call (only these two are counted per unit). */
  call?: "label" | "extract" | "other";
  /** write: the probe's write; readback ok: one message read back. */
  probe?: ProbeWrite;
  /** readback: a store read back in full (`messages` held), or (fail) not readable. */
  readback?: { store: ProbeStore; messages: number };
}

export interface Listed {
  job: string;
  status: JobStatus;
  project?: number | null;
  /** created_at, as ms since the epoch. */
  created: number;
}

export type EntryFields = Omit<Entry, "index" | "time" | "process" | "type">;

export class History {
  readonly entries: Entry[] = [];

  add(process: string, type: EntryType, fields: EntryFields, time = Date.now()): Entry {
    const entry: Entry = { index: this.entries.length, time, process, type, ...fields };
    this.entries.push(entry);
    return entry;
  }

  /** Records the invocation; the returned function records its completion (once). */
  invoke(process: string, fields: EntryFields): (type: Exclude<EntryType, "invoke">, fields?: Partial<EntryFields>) => Entry {
    this.add(process, "invoke", fields);
    let done = false;
    return (type, completion = {}) => {
      if (done) throw new Error(`operation of ${process} completed twice`);
      done = true;
      return this.add(process, type, { service: fields.service, project: fields.project, job: fields.job, ...completion, f: fields.f });
    };
  }
}

/** An invocation paired with its completion (a call or a lone entry is its own pair). */
export interface Op {
  process: string;
  f: EntryF;
  type: Exclude<EntryType, "invoke"> | "pending";
  start: number;
  end: number;
  invoke: Entry;
  complete: Entry | undefined;
}

/**
 * Pairs each invoke with the next entry of the same process. An invoke without a completion is an
 * op of type `pending` that may have taken effect any time after it started (end = Infinity).
 */
export function pairOps(entries: readonly Entry[]): Op[] {
  const open = new Map<string, Entry>();
  const ops: Op[] = [];
  for (const entry of entries) {
    if (entry.type === "invoke") {
      const previous = open.get(entry.process);
      if (previous) ops.push({ process: previous.process, f: previous.f, type: "pending", start: previous.time, end: Infinity, invoke: previous, complete: undefined });
      open.set(entry.process, entry);
      continue;
    }
    const invoke = open.get(entry.process);
    if (invoke) {
      open.delete(entry.process);
      ops.push({ process: entry.process, f: invoke.f, type: entry.type, start: invoke.time, end: entry.time, invoke, complete: entry });
    } else {
      ops.push({ process: entry.process, f: entry.f, type: entry.type, start: entry.time, end: entry.time, invoke: entry, complete: entry });
    }
  }
  for (const invoke of open.values()) ops.push({ process: invoke.process, f: invoke.f, type: "pending", start: invoke.time, end: Infinity, invoke, complete: undefined });
  return ops.sort((a, b) => a.start - b.start || a.invoke.index - b.invoke.index);
}
