import { EventEmitter } from "node:events";
import type { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import type { JobArtifactHead, LiveJobState } from "@litrev/contracts";
import { newJobState, type JobData, type MirrorEntry, type MirrorListener } from "@litrev/jobs/client";
import { createLogger } from "@litrev/telemetry";
import { JobEventStreams, type PollJob } from "./job-events";
import type { LiveJobs } from "./live-jobs";

/** What a stream writes to, recorded (the parts of a Writable the streams use). */
class FakeResponse extends EventEmitter {
  text = "";
  writableEnded = false;
  destroyed = false;
  writableLength = 0;
  write(chunk: Buffer | string): boolean {
    this.text += chunk.toString();
    return true;
  }
  end(chunk?: Buffer | string): void {
    if (chunk) this.write(chunk);
    this.writableEnded = true;
    this.emit("close");
  }
  destroy(): void {
    this.destroyed = true;
    this.emit("close");
  }
  events(): { event: string; id?: string; data: string }[] {
    return this.text
      .split("\n\n")
      .filter((block) => block.includes("data: "))
      .map((block) => {
        const field = (name: string) => block.split("\n").find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
        return { event: field("event")!, id: field("id"), data: field("data")! };
      });
  }
}

/** A mirror holding one job, whose revisions the test pushes as the watch would. */
class FakeMirror {
  entry: MirrorEntry | null = null;
  readonly listeners = new Set<MirrorListener>();
  reads = 0;
  listen(_jobId: string, listener: MirrorListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  get(): MirrorEntry | undefined {
    return this.entry ?? undefined;
  }
  async read(): Promise<MirrorEntry | null> {
    this.reads++;
    return this.entry;
  }
  push(state: LiveJobState, revision: number): void {
    this.entry = { state, revision, seenAt: Date.now() };
    for (const listener of this.listeners) listener(this.entry);
  }
}

const logger = createLogger("job-events-test", "silent");
const base = { ...newJobState({ jobId: "job-1", service: "screening", modelVersion: "m", config: {}, estimatedCostUsd: 0.1 }), status: "running" as const };
const flush = () => new Promise((r) => setImmediate(r));

let streams: JobEventStreams | undefined;
afterEach(() => streams?.closeAll());

function setUp(options: { maxStreams?: number } = {}) {
  const mirror = new FakeMirror();
  const polls: string[] = [];
  const poll: PollJob = async (_service, jobId, owner) => {
    polls.push(owner);
    const body = Buffer.from(JSON.stringify({ job_id: jobId, status: "completed", results: [] }));
    return { finished: true, artifact: { jobId, head: { owner } as unknown as JobArtifactHead, body }, data: undefined as unknown as JobData, pieces: async function* () { yield body; }, job: () => { throw new Error("an event stream never reads the job's lists"); } };
  };
  streams = new JobEventStreams({ maxStreams: options.maxStreams ?? 10, heartbeatMs: 60_000, logger, poll });
  const jobs = { mirror, reader: undefined } as unknown as LiveJobs;
  const follow = (lastRevision = 0, key = "k") => {
    const res = new FakeResponse();
    expect(streams!.reserve()).toBe(true);
    streams!.follow("screening", jobs, "job-1", res as unknown as Writable, lastRevision, key);
    return res;
  };
  return { mirror, polls, follow, streams };
}

describe("JobEventStreams", () => {
  it("sends each visible change once per stream, newer than what the stream has, and skips heartbeat-only writes", async () => {
    const { mirror, follow } = setUp();
    mirror.push({ ...base, progress: 0.1 }, 3);
    const fresh = follow();
    const resumed = follow(5);
    await flush();
    mirror.push({ ...base, progress: 0.2 }, 6);
    mirror.push({ ...base, progress: 0.2, heartbeat_at: new Date().toISOString() }, 7); // nothing a client sees
    mirror.push({ ...base, progress: 0.2 }, 6); // an older copy arriving late
    mirror.push({ ...base, progress: 0.3, extra: { usage: { cost_usd: 0.01 } } }, 9);

    expect(fresh.events().map((e) => e.id)).toEqual(["3", "6", "9"]);
    expect(resumed.events().map((e) => e.id)).toEqual(["6", "9"]);
    expect(JSON.parse(fresh.events()[2]!.data)).toMatchObject({ job_id: "job-1", status: "running", progress: 0.3, usage: { cost_usd: 0.01 } });
  });

  it("reads the finished job once for all its streams, ends every stream with it, and frees their slots", async () => {
    const { mirror, polls, follow, streams } = setUp();
    mirror.push({ ...base, progress: 0.5 }, 4);
    const all = [follow(0, "first"), follow(0, "second"), follow(4, "third")];
    await flush();
    expect(streams.open).toBe(3);
    mirror.push({ ...base, status: "completed", progress: 1 }, 8);
    await flush();
    expect(polls).toEqual(["first"]);
    for (const res of all) {
      expect(res.writableEnded).toBe(true);
      const last = res.events().at(-1)!;
      expect(last).toEqual({ event: "end", id: "end", data: '{"job_id":"job-1","status":"completed","results":[]}' });
    }
    expect(streams.open).toBe(0);
  });

  it("ends its streams when the job's live state is removed (read from the store by the poll)", async () => {
    const { mirror, polls, follow } = setUp();
    mirror.push({ ...base }, 2);
    const res = follow();
    await flush();
    mirror.entry = null;
    for (const listener of mirror.listeners) listener(null);
    await flush();
    expect(polls).toHaveLength(1);
    expect(res.events().map((e) => e.event)).toEqual(["state", "end"]);
  });

  it("refuses streams beyond its limit, and gives a slot back when a client leaves", async () => {
    const { mirror, follow, streams } = setUp({ maxStreams: 2 });
    mirror.push({ ...base }, 2);
    const a = follow();
    follow();
    expect(streams.reserve()).toBe(false);
    a.emit("close"); // the client went away
    expect(streams.open).toBe(1);
    expect(streams.reserve()).toBe(true);
    streams.release();
  });

  it("drops a client that does not read (it resumes with Last-Event-ID) instead of buffering for it", async () => {
    const { mirror, follow, streams } = setUp();
    mirror.push({ ...base, progress: 0.1 }, 2);
    const slow = follow();
    const quick = follow();
    await flush();
    slow.writableLength = 2 << 20;
    mirror.push({ ...base, progress: 0.2 }, 3);
    expect(slow.destroyed).toBe(true);
    expect(quick.events().map((e) => e.id)).toEqual(["2", "3"]);
    expect(streams.open).toBe(1);
  });

  it("closes every stream on shutdown and accepts no new one", async () => {
    const { mirror, follow, streams } = setUp();
    mirror.push({ ...base }, 2);
    const res = [follow(), follow()];
    await flush();
    streams.closeAll();
    expect(res.every((r) => r.writableEnded)).toBe(true);
    expect(streams.open).toBe(0);
    expect(streams.reserve()).toBe(false);
    expect(mirror.listeners.size).toBe(0);
  });
});
