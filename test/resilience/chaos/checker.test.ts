import { describe, expect, it } from "vitest";
import { check, formatReport, type CheckOptions, type Invariant } from "./checker";
import type { Entry, EntryFields, EntryType, FaultKind, JobStatus, Listed, Service } from "./history";

/** Hand-made histories: each operation given with its invoke and completion times (ms). */
class Hist {
  readonly list: Omit<Entry, "index">[] = [];

  op(process: string, fields: EntryFields, [start, end]: [number, number], type: Exclude<EntryType, "invoke">, done: EntryFields = { f: fields.f }) {
    this.list.push({ time: start, process, type: "invoke", ...fields });
    this.list.push({ time: end, process, type, service: fields.service, project: fields.project, job: fields.job, ...done });
    return this;
  }
  create(process: string, service: Service, project: number, key: string, n: number, span: [number, number], answer: { job: string } | { named: string } | "info", owner = "default") {
    const fields: EntryFields = { f: "create", service, project, key, units: units(key, n), owner };
    if (answer === "info") return this.op(process, fields, span, "info", { f: "create", http: 503, error: "timeout" });
    if ("named" in answer) return this.op(process, fields, span, "fail", { f: "create", http: 409, named: answer.named });
    return this.op(process, fields, span, "ok", { f: "create", http: 200, job: answer.job, status: "pending", progress: 0 });
  }
  poll(process: string, service: Service, job: string, span: [number, number], status: JobStatus | 404, extra: EntryFields = { f: "poll" }, f: "poll" | "read" = "poll") {
    if (status === 404) return this.op(process, { f, service, job }, span, "fail", { f, http: 404 });
    return this.op(process, { f, service, job }, span, "ok", { http: 200, status, ...extra, f });
  }
  reads(service: Service, job: string, from: number, status: JobStatus = "completed", results?: string[]) {
    this.poll(`final-${job}`, service, job, [from, from + 2], status, { f: "read", results }, "read");
    return this.poll(`final-${job}`, service, job, [from + 10, from + 12], status, { f: "read", results }, "read");
  }
  active(process: string, project: number, span: [number, number], job: string | null, status?: JobStatus) {
    return this.op(process, { f: "active", service: "screening", project }, span, "ok", { f: "active", http: 200, ...(job ? { job, status } : {}) });
  }
  listing(owner: string, service: Service, span: [number, number], listed: [job: string, status: JobStatus, project?: number][], limit = 100) {
    const items: Listed[] = listed.map(([job, status, project], i) => ({ job, status, ...(project !== undefined ? { project } : {}), created: span[0] - i }));
    return this.op(`list-${owner}`, { f: "list", service, owner, limit }, span, "ok", { f: "list", http: 200, listed: items });
  }
  fault(kind: FaultKind, role: "screening" | "indexer" | "gateway" | "nats", span: [number, number]) {
    return this.op("nemesis", { f: "fault", fault: { kind, role, target: `${role}-0` } }, span, "ok");
  }
  call(kind: "label" | "extract", ids: string[], time: number) {
    this.list.push({ time, process: "provider", type: "ok", f: "call", call: kind, units: ids, http: 200 });
    return this;
  }
  entries(): Entry[] {
    return [...this.list].sort((a, b) => a.time - b.time).map((e, index) => ({ ...e, index }));
  }
}

const units = (key: string, n: number) => Array.from({ length: n }, (_, i) => `${key}.${i + 1}`);
const done = (key: string, n: number): EntryFields => ({ f: "poll", progress: 1, results: units(key, n) });

/** Two screening jobs of project 1 one after the other, a conflict in between, an indexer job, a fault. */
function passing(): Hist {
  return new Hist()
    .create("s1", "screening", 1, "sA", 3, [0, 10], { job: "A" })
    .create("s2", "screening", 1, "sX", 3, [12, 18], { named: "A" })
    .poll("s1", "screening", "A", [20, 25], "running", { f: "poll", progress: 0.3 })
    .active("s2", 1, [21, 23], "A", "running")
    .fault("kill", "screening", [22, 30])
    .call("label", units("sA", 3), 21)
    .call("label", units("sA", 3), 31) // repeated after the kill: 3 items, one unit
    .poll("s1", "screening", "A", [40, 45], "completed", done("sA", 3))
    .create("s2", "screening", 1, "sB", 2, [50, 55], { job: "B" })
    .call("label", units("sB", 2), 56)
    .poll("s2", "screening", "B", [60, 65], "completed", done("sB", 2))
    .active("s1", 1, [70, 72], null)
    .create("i1", "indexer", 1, "iC", 2, [0, 5], { job: "C" })
    .call("extract", ["iC.1"], 6)
    .call("extract", ["iC.2"], 7)
    .poll("i1", "indexer", "C", [8, 9], "running", { f: "poll", progress: 0.5 })
    .poll("i1", "indexer", "C", [20, 21], "completed", done("iC", 2))
    .reads("screening", "A", 100, "completed", units("sA", 3))
    .reads("screening", "B", 100, "completed", units("sB", 2))
    .reads("indexer", "C", 100, "completed", units("iC", 2));
}

const only = (invariant: Invariant, h: Hist, options: CheckOptions = {}) => {
  const result = check(h.entries(), options);
  expect(result.violations.map((v) => v.invariant)).toEqual([invariant]);
  expect(result.valid).toBe(false);
  return result;
};

describe("chaos checker", () => {
  it("passes a history that keeps every promise, and counts what it saw", () => {
    const result = check(passing().entries());
    expect(result.violations).toEqual([]);
    expect(result.valid).toBe(true);
    expect(result.figures).toMatchObject({
      attempted: 4, accepted: 3, conflicts: 1, completed: 3, failed: 0, lost: 0, duplicated: 0, missing: 0, doubleActive: 0,
      faults: 1, jobsHit: 1, repeatedItems: 3, allowedRepeats: 5, providerCalls: { label: 3, extract: 2, other: 0 },
    });
    expect(formatReport(result)).toMatch(/VALID[\s\S]*accepted 3, completed 3 \(100.0 %\)/);
  });

  it("lost: an accepted job never seen terminal", () => {
    const h = passing().create("s3", "screening", 2, "sD", 2, [0, 5], { job: "D" }).poll("s3", "screening", "D", [10, 12], "running");
    // 3 of 4 completed: under the default 80 %, so the ratio is relaxed to see "lost" alone.
    expect(only("lost", h, { minCompletedRatio: 0.5 }).figures.lost).toBe(1);
  });

  it("duplicated: a paper twice in the results", () => {
    const h = passing().create("s3", "screening", 2, "sD", 2, [0, 5], { job: "D" });
    h.poll("s3", "screening", "D", [10, 12], "completed", { f: "poll", results: ["sD.1", "sD.2", "sD.2"] }).reads("screening", "D", 100);
    expect(only("duplicated", h).violations[0]!.examples[0]).toMatch(/sD\.2/);
  });

  it("missing: a record absent from the results", () => {
    const h = passing().create("i3", "indexer", 2, "iD", 3, [0, 5], { job: "D" });
    h.poll("i3", "indexer", "D", [10, 12], "completed", { f: "poll", results: ["iD.1", "iD.3"] }).reads("indexer", "D", 100);
    expect(only("missing", h).violations[0]!.examples[0]).toMatch(/1 of 3 ids missing, e\.g\. iD\.2/);
  });

  it("foreign: a result that was not in the job's input", () => {
    const h = passing().create("i3", "indexer", 2, "iD", 1, [0, 5], { job: "D" });
    h.poll("i3", "indexer", "D", [10, 12], "completed", { f: "poll", results: ["iD.1", "iZ.1"] }).reads("indexer", "D", 100);
    only("foreign", h);
  });

  it("double-active: a second job accepted while the first was certainly running", () => {
    // A is certainly active from 25 (end of its running poll) until 40 (start of... ) — here, its own later running poll at [35, 38].
    const h = passing().poll("s1", "screening", "A", [35, 38], "running", { f: "poll", progress: 0.5 }).create("s3", "screening", 1, "sE", 1, [28, 30], { job: "E" });
    h.poll("s3", "screening", "E", [80, 81], "completed", done("sE", 1)).call("label", ["sE.1"], 79).reads("screening", "E", 100, "completed", ["sE.1"]);
    const result = only("double-active", h);
    expect(result.figures.doubleActive).toBe(1);
    expect(result.violations[0]!.examples[0]).toMatch(/project 1: E seen pending at #\d+ .* while A was active/);
  });

  it("active-missed: active-job answered null while the project's job was certainly running", () => {
    const h = passing().poll("s1", "screening", "A", [35, 38], "running", { f: "poll", progress: 0.5 }).active("s3", 1, [27, 29], null);
    only("active-missed", h);
  });

  it("completed-and-failed: a job seen in both terminal states", () => {
    const h = passing();
    h.list.splice(h.list.findIndex((e) => e.process === "final-B" && e.type === "ok") + 0, 1, { time: 102, process: "final-B", type: "ok", f: "read", service: "screening", job: "B", http: 200, status: "failed", error: "unknown" });
    only("completed-and-failed", h);
  });

  it("status-backwards: running again after completed", () => {
    only("status-backwards", passing().poll("s2", "screening", "B", [66, 67], "running", { f: "poll", progress: 1 }));
  });

  it("progress-backwards: a later poll shows less progress", () => {
    only("progress-backwards", passing().poll("i1", "indexer", "C", [12, 13], "running", { f: "poll", progress: 0.2 }));
  });

  it("promised staleness: an answer within it of a newer one is not ordered after it; one beyond it is", () => {
    // Job C showed 0.5 over [8, 9]; a poll at [12, 13] showing 0.2 began 3 ms later.
    const behind = passing().poll("i1", "indexer", "C", [12, 13], "running", { f: "poll", progress: 0.2 });
    expect(check(behind.entries(), { stalenessMs: 5 }).valid).toBe(true);
    only("progress-backwards", behind, { stalenessMs: 2 });
    // B completed over [60, 65]: "running" at [68, 69] is within 5 ms, at [71, 72] beyond it.
    expect(check(passing().poll("s2", "screening", "B", [68, 69], "running", { f: "poll", progress: 1 }).entries(), { stalenessMs: 5 }).valid).toBe(true);
    only("status-backwards", passing().poll("s2", "screening", "B", [71, 72], "running", { f: "poll", progress: 1 }), { stalenessMs: 5 });
  });

  it("terminal-unreadable: a 404 after the first terminal poll, or final reads that never answered", () => {
    const h = passing().poll("s1", "screening", "A", [50, 52], 404);
    expect(only("terminal-unreadable", h).violations[0]!.examples[0]).toMatch(/completed at #\d+ .*then 404 at/);
    const noReads = passing();
    noReads.list.splice(0, noReads.list.length, ...noReads.list.filter((e) => e.process !== "final-C"));
    expect(only("terminal-unreadable", noReads).violations[0]!.examples[0]).toMatch(/0 of 2 final reads/);
  });

  it("provider-repeats: a unit paid again with no fault to explain it", () => {
    const h = passing().call("label", units("sB", 2), 57);
    const result = only("provider-repeats", h);
    expect(result.violations[0]!.examples[0]).toMatch(/2 repeated item calls .* 0 fault\(s\) allowing 0/);
  });

  it("provider-repeats on a NATS cluster: a leader kill allows the unit in flight, like any fault, and no job's saved checkpoints paid again", () => {
    const h = passing().fault("stream-leader-kill", "nats", [10, 12]).call("extract", ["iC.1", "iC.2"], 13);
    expect(only("provider-repeats", h).violations[0]!.examples[0]).toMatch(/2 repeated item calls .* 1 fault\(s\) allowing 1/);
  });

  it("write-lost: a synthetic rewind (a leader without acknowledged writes) in the probe's read-back fails the run", () => {
    const probed = (held: (seq: number) => string | undefined) => {
      const h = passing();
      for (let n = 1; n <= 4; n++) {
        h.op("probe-stream", { f: "write", probe: { store: "stream", key: String(n), value: `v${n}` } }, [n * 10, n * 10 + 2], "ok", { f: "write", probe: { store: "stream", key: String(n), value: `v${n}`, seq: n } });
      }
      // An unacknowledged write promises nothing, whether or not it landed.
      h.op("probe-stream", { f: "write", probe: { store: "stream", key: "5", value: "v5" } }, [50, 60], "info", { f: "write", error: "timeout" });
      for (let seq = 1; seq <= 5; seq++) {
        const value = held(seq);
        if (value !== undefined) h.list.push({ time: 500, process: "probe-read", type: "ok", f: "readback", probe: { store: "stream", key: String(seq), value, seq } });
      }
      h.list.push({ time: 501, process: "probe-read", type: "ok", f: "readback", readback: { store: "stream", messages: 4 } });
      return h;
    };
    const intact = check(probed((seq) => (seq <= 4 ? `v${seq}` : undefined)).entries());
    expect(intact.violations).toEqual([]);
    expect(intact.figures.writes).toEqual({ acknowledged: 4, readBack: 4, lost: 0 });

    // The new leader stopped at sequence 2: writes 3 and 4 were acknowledged, then lost.
    const rewound = only("write-lost", probed((seq) => (seq <= 2 ? `v${seq}` : undefined)));
    expect(rewound.figures.writes).toEqual({ acknowledged: 4, readBack: 2, lost: 2 });
    expect(rewound.violations[0]!.examples[0]).toMatch(/stream write 3 acknowledged at sequence 3 .* missing when read back/);
    expect(formatReport(rewound)).toMatch(/VIOLATION write-lost: 2/);

    // …and numbered its next writes from there: sequence 3 holds another write.
    const renumbered = only("write-lost", probed((seq) => (seq === 3 ? "v5" : seq <= 4 ? `v${seq}` : undefined)));
    expect(renumbered.violations[0]!.examples[0]).toMatch(/sequence 3 .* read back as 3: v5/);

    // A store that could not be read back proves nothing: every acknowledged write of it fails.
    const unread = probed(() => undefined);
    unread.list.splice(unread.list.findIndex((e) => e.readback), 1);
    unread.list.push({ time: 501, process: "probe-read", type: "fail", f: "readback", readback: { store: "stream", messages: 0 }, error: "no responders" });
    expect(only("write-lost", unread).violations[0]!.examples[0]).toMatch(/never read back \(no responders\)/);
  });

  it("too-few-completed: a run where every creation errored cannot pass, nor one where most jobs failed", () => {
    const errored = new Hist();
    for (let i = 0; i < 5; i++) errored.create(`s${i}`, "screening", i, `s${i}`, 2, [i, i + 1], "info");
    const result = only("too-few-completed", errored);
    expect(result.figures).toMatchObject({ attempted: 5, accepted: 0, completed: 0, indeterminate: 5 });

    const failing = passing();
    for (const id of ["D", "E"]) {
      failing.create(`s${id}`, "indexer", 3, `i${id}`, 1, [0, 1], { job: id });
      failing.poll(`s${id}`, "indexer", id, [5, 6], "failed", { f: "poll", error: "orphan_cleanup" }).reads("indexer", id, 100, "failed");
    }
    const mostly = only("too-few-completed", failing);
    expect(mostly.figures).toMatchObject({ accepted: 5, completed: 3, failed: 2, failedBy: { orphan_cleanup: 2 } });
  });

  it("an indeterminate creation whose job a listing found is checked like an accepted one", () => {
    const h = passing().create("s3", "screening", 2, "sR", 2, [0, 15_000], "info");
    h.listing("default", "screening", [15_100, 15_200], [["R", "running", 2], ["B", "completed", 1], ["A", "completed", 1]]);
    h.poll("adopt-R", "screening", "R", [17_000, 17_010], "completed", done("sR", 2)).call("label", units("sR", 2), 16_000).reads("screening", "R", 18_000, "completed", units("sR", 2));
    const result = check(h.entries());
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ accepted: 4, completed: 4, indeterminate: 1, recovered: 1, listings: 1, unknownNamed: 0 });

    // The same job with a paper missing: checked, so caught.
    const short = passing().create("s3", "screening", 2, "sR", 2, [0, 15_000], "info");
    short.listing("default", "screening", [15_100, 15_200], [["R", "running", 2], ["B", "completed", 1], ["A", "completed", 1]]);
    short.poll("adopt-R", "screening", "R", [17_000, 17_010], "completed", { f: "poll", results: ["sR.1"] }).reads("screening", "R", 18_000, "completed", ["sR.1"]);
    only("missing", short);
  });

  it("ghost: a listed job no client was told of, never seen terminal", () => {
    const h = passing().listing("default", "screening", [200, 210], [["Z", "pending", 1], ["B", "completed", 1], ["A", "completed", 1]]);
    h.poll("adopt-Z", "screening", "Z", [3_000, 3_010], "pending");
    const result = only("ghost", h);
    expect(result.figures.ghosts).toBe(1);
    expect(result.violations[0]!.examples[0]).toMatch(/job Z .*listed at #\d+ .* though no client was told of it/);
  });

  it("phantom: a job whose results belong to a creation that was answered with another job", () => {
    const h = passing().listing("default", "indexer", [200, 210], [["C2", "completed"], ["C", "completed"]]);
    h.poll("adopt-C2", "indexer", "C2", [3_000, 3_010], "completed", done("iC", 2)).reads("indexer", "C2", 3_100, "completed", units("iC", 2));
    expect(only("phantom", h).violations[0]!.examples[0]).toMatch(/creation iC, which answered job C/);
  });

  it("list-missing: a job seen ended is absent from its owner's later listing (unless cut off by the limit)", () => {
    const h = passing().listing("default", "screening", [80, 90], [["B", "completed", 1]]);
    expect(only("list-missing", h).violations[0]!.examples[0]).toMatch(/job A .*missing from default's listing/);
    // A listing as long as its limit whose oldest entry is newer than A's creation may leave A out.
    const full = passing().listing("default", "screening", [80, 90], [["B", "completed", 1]], 1);
    expect(check(full.entries()).violations).toEqual([]);
  });

  it("list-foreign: an owner's listing shows another owner's job", () => {
    const h = passing().create("b1", "screening", 9, "sQ", 1, [0, 5], { job: "Q" }, "bob").poll("b1", "screening", "Q", [20, 22], "completed", done("sQ", 1));
    h.call("label", ["sQ.1"], 10).reads("screening", "Q", 100, "completed", ["sQ.1"]);
    h.listing("bob", "screening", [80, 90], [["B", "completed", 1], ["Q", "completed", 9]]);
    expect(only("list-foreign", h).violations[0]!.examples[0]).toMatch(/bob's listing at #\d+ .* shows screening job B .* of default/);
  });

  it("status-backwards through listings: a row active again after the job was seen ended; a poll behind a terminal row is not", () => {
    only("status-backwards", passing().listing("default", "indexer", [80, 90], [["C", "running"]]));
    // The row is written before the live state turns terminal: a listing may see the end first.
    const h = passing().listing("default", "screening", [46, 47], [["B", "completed", 1], ["A", "completed", 1]]).poll("s2", "screening", "B", [48, 49], "running", { f: "poll", progress: 0.9 });
    expect(check(h.entries()).violations).toEqual([]);
  });

  it("work-after-end: a provider call for a job a client had already seen end", () => {
    const h = passing().call("label", units("sB", 2).slice(0, 1), 70);
    // (also one repeated item with no fault to allow it)
    expect(check(h.entries()).violations.map((v) => v.invariant).sort()).toEqual(["provider-repeats", "work-after-end"]);
    // A paused worker may send the call it had begun before the pause: one per pause that hit the job.
    const paused = passing().fault("pause", "screening", [52, 75]).call("label", units("sB", 2).slice(0, 1), 70);
    expect(check(paused.entries()).violations).toEqual([]);
  });

  it("partitioned-gateway-stale: a gateway cut off from NATS answers from an old copy; held apart from the other invariants", () => {
    // Indexer job C reached 0.5 at [8, 9]; gateway-0, partitioned over [9, 15], then answers 0.2 at [12, 13].
    const h = passing().fault("partition", "gateway", [9, 15]).poll("i1", "indexer", "C", [12, 13], "running", { f: "poll", progress: 0.2, via: "gateway-0" });
    const result = only("partitioned-gateway-stale", h);
    expect(result.figures).toMatchObject({ suspectReads: 1, staleReads: 1, progressBackwards: 0 });
    expect(result.violations[0]!.examples[0]).toMatch(/gateway-0 \(partitioned\) answered running 0.2 at #\d+ .* after progress 0.5/);
    // The same answer from the other gateway is an ordinary violation.
    only("progress-backwards", passing().fault("partition", "gateway", [9, 15]).poll("i1", "indexer", "C", [12, 13], "running", { f: "poll", progress: 0.2, via: "gateway-1" }));
    // Running again after completed, from the partitioned gateway within the grace after it healed.
    const back = passing().fault("partition", "gateway", [60, 66]).poll("s2", "screening", "B", [66.5, 67], "running", { f: "poll", progress: 1, via: "gateway-0" });
    expect(only("partitioned-gateway-stale", back).figures.statusBackwards).toBe(0);
  });
});
