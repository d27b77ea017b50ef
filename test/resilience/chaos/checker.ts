import { pairOps, type Entry, type Fault, type FaultKind, type JobStatus, type Op, type ProbeStore, type Service } from "./history";

/**
 * The chaos checker: a pure function from a recorded history (history.ts) to figures and
 * violations. It trusts only what clients saw, with each operation's real-time window
 * [invoke, completion]: a job observed active by an operation was active at some moment inside that
 * window, and since a job is active over one contiguous stretch of time, one observed active by two
 * operations was certainly active from the end of the earlier to the start of the later.
 */

export type Invariant =
  | "lost"
  | "duplicated"
  | "missing"
  | "foreign"
  | "double-active"
  | "active-missed"
  | "completed-and-failed"
  | "status-backwards"
  | "progress-backwards"
  | "terminal-unreadable"
  | "provider-repeats"
  | "work-after-end"
  | "phantom"
  | "ghost"
  | "partitioned-gateway-stale"
  | "list-missing"
  | "list-foreign"
  | "too-few-completed"
  | "write-lost";

export interface Violation {
  invariant: Invariant;
  /** How many jobs (or, for double-active and active-missed, pairs/answers) violate it. */
  count: number;
  /** Up to three instances, citing history entries (#index, time since the first entry). */
  examples: string[];
}

export interface CheckOptions {
  /** Fewer completed than this share of accepted jobs fails the run (default 0.8). */
  minCompletedRatio?: number;
  /** Successful final reads each terminal job must have had (default 2). */
  finalReads?: number;
  /** Checkpoint units a worker has in flight or saving per job, i.e. may repeat after one fault (default 1). */
  unitsPerFault?: Partial<Record<Service, number>>;
  /** Items (papers or records) per checkpoint unit: screening labels 5 papers per call (default 5 / 1). */
  unitSize?: Partial<Record<Service, number>>;
  /** How long after a gateway's partition healed its answers are still held apart (default 1 s). */
  partitionGraceMs?: number;
  /**
   * The staleness the service promises for reads: an answer reflects the job's state at some moment
   * from this long before the request began until the answer (a gateway's mirror serves copies at
   * most MIRROR_STALENESS_MS behind the stream leader). Orders between answers, and the spans in
   * which a job was certainly active, allow for it (default 0: every answer is of its own interval).
   */
  stalenessMs?: number;
}

export interface Figures {
  attempted: number;
  accepted: number;
  conflicts: number;
  /** Creations whose outcome the client could not know (5xx, timeout, connection error). */
  indeterminate: number;
  completed: number;
  failed: number;
  failedBy: Record<string, number>;
  lost: number;
  /** Jobs a 409, an active-job answer or a listing named that no creation can be tied to. */
  unknownNamed: number;
  /** Jobs found by listing that no client was told of and that never ended. */
  ghosts: number;
  /** Indeterminate creations whose job was found (by listing or a 409) and tied to them by its results. */
  recovered: number;
  /** Listings answered, and listed jobs held against the history. */
  listings: number;
  listMissing: number;
  listForeign: number;
  phantoms: number;
  /** Counted provider calls for a job that began after a client saw the job end. */
  workAfterEnd: number;
  /** Answers of a gateway under partition held apart, and those among them that were stale. */
  suspectReads: number;
  staleReads: number;
  duplicated: number;
  missing: number;
  foreign: number;
  doubleActive: number;
  activeMissed: number;
  completedAndFailed: number;
  statusBackwards: number;
  progressBackwards: number;
  unreadable: number;
  providerCalls: { label: number; extract: number; other: number };
  /** Item-level repeats of counted provider calls (a repeated 5-paper labelling call counts 5). */
  repeatedItems: number;
  /** What the faults that hit the jobs allow. */
  allowedRepeats: number;
  jobsOverRepeatBound: number;
  faults: number;
  faultsBy: Partial<Record<FaultKind, number>>;
  /** Accepted jobs alive while at least one fault hit their service. */
  jobsHit: number;
  /** The write probe's writes: acknowledged by the server, found intact when read back, lost (missing, changed or never read back). */
  writes: { acknowledged: number; readBack: number; lost: number };
  ops: { ok: number; fail: number; info: number; pending: number };
  durationMs: number;
}

export interface CheckResult {
  valid: boolean;
  figures: Figures;
  violations: Violation[];
}

type Seen = JobStatus | "absent" | "active";
interface Obs {
  op: Op;
  start: number;
  end: number;
  seen: Seen;
  progress?: number | undefined;
  results?: string[] | undefined;
  final: boolean;
  /** Seen in a listing (the store of record's row) rather than a poll or the live state. */
  listing?: boolean;
  /** Answered by a gateway while its own path to NATS was partitioned (or just after). */
  suspect?: boolean;
}
interface Job {
  id: string;
  service: Service;
  project: number | undefined;
  key: string | undefined;
  units: string[] | undefined;
  owner: string | undefined;
  accepted: Op | undefined;
  /** Accepted through an indeterminate creation its results were tied to. */
  recovered?: boolean;
  obs: Obs[];
}

const ACTIVE = new Set<Seen>(["pending", "running", "active"]);
const TERMINAL = new Set<Seen>(["completed", "failed"]);

export function check(entries: readonly Entry[], options: CheckOptions = {}): CheckResult {
  const ops = pairOps(entries);
  const t0 = entries[0]?.time ?? 0;
  const at = (op: Op, edge: "start" | "end" = "end") => {
    const entry = edge === "start" ? op.invoke : (op.complete ?? op.invoke);
    return `#${entry.index} (t+${((entry.time - t0) / 1000).toFixed(1)} s)`;
  };
  const staleness = options.stalenessMs ?? 0;
  /** `a` certainly reflects an earlier moment than `b` (see CheckOptions.stalenessMs). */
  const before = (a: Obs, b: Obs) => a.end + staleness < b.start;
  const jobs = new Map<string, Job>();
  const jobOf = (id: string, service: Service, project: number | undefined): Job => {
    let job = jobs.get(id);
    if (!job) jobs.set(id, (job = { id, service, project, key: undefined, units: undefined, owner: undefined, accepted: undefined, obs: [] }));
    job.project ??= project;
    return job;
  };
  const observe = (job: Job, op: Op, seen: Seen, extra: Partial<Obs> = {}) =>
    job.obs.push({ op, start: op.start, end: op.end, seen, final: op.f === "read", ...extra });

  const figures: Figures = {
    attempted: 0, accepted: 0, conflicts: 0, indeterminate: 0, completed: 0, failed: 0, failedBy: {}, lost: 0, unknownNamed: 0,
    recovered: 0, ghosts: 0, suspectReads: 0, staleReads: 0, listings: 0, listMissing: 0, listForeign: 0, phantoms: 0, workAfterEnd: 0,
    duplicated: 0, missing: 0, foreign: 0, doubleActive: 0, activeMissed: 0, completedAndFailed: 0, statusBackwards: 0,
    progressBackwards: 0, unreadable: 0, providerCalls: { label: 0, extract: 0, other: 0 }, repeatedItems: 0, allowedRepeats: 0,
    jobsOverRepeatBound: 0, faults: 0, faultsBy: {}, jobsHit: 0, writes: { acknowledged: 0, readBack: 0, lost: 0 }, ops: { ok: 0, fail: 0, info: 0, pending: 0 },
    durationMs: entries.length ? entries[entries.length - 1]!.time - t0 : 0,
  };
  const nullAnswers: Op[] = [];
  const faults: { start: number; end: number; fault: Fault }[] = [];
  // Provider calls per job key, per item id, and when each call was received.
  const calls = new Map<string, Map<string, number>>();
  const callTimes = new Map<string, { time: number; op: Op }[]>();
  // Creations by the client's key (each attempt has its own), and the projects each owner created in.
  const creations = new Map<string, Op>();
  const projectsOf = new Map<string, Set<number>>();
  const listings: Op[] = [];
  // The write probe: acknowledged writes, each store's messages as read back, and stores not readable.
  const acknowledged: { op: Op; store: ProbeStore; key: string; value: string; seq: number }[] = [];
  const heldBy = new Map<ProbeStore, Map<number, { key: string; value: string }>>();
  const readBack = new Set<ProbeStore>();
  const unreadable: Op[] = [];

  for (const op of ops) {
    const inv = op.invoke;
    const done = op.complete;
    if (op.f !== "call" && op.f !== "fault" && op.f !== "write" && op.f !== "readback") figures.ops[op.type]++;
    switch (op.f) {
      case "create": {
        figures.attempted++;
        if (inv.key) creations.set(inv.key, op);
        if (inv.owner && inv.project !== undefined) projectsOf.set(inv.owner, (projectsOf.get(inv.owner) ?? new Set()).add(inv.project));
        if (op.type === "ok" && done?.job) {
          const job = jobOf(done.job, inv.service!, inv.project);
          job.accepted = op;
          job.key = inv.key;
          job.units = inv.units;
          job.owner = inv.owner;
          observe(job, op, done.status ?? "pending");
        } else if (op.type === "fail" && done?.http === 409) {
          figures.conflicts++;
          if (done.named) observe(jobOf(done.named, inv.service!, inv.project), op, "active");
        } else if (op.type === "info" || op.type === "pending") {
          figures.indeterminate++;
        }
        break;
      }
      case "poll":
      case "read": {
        if (!inv.job || !inv.service) break;
        const job = jobOf(inv.job, inv.service, inv.project);
        if (op.type === "ok" && done?.status) observe(job, op, done.status, { progress: done.progress, results: done.results });
        else if (op.type === "fail" && done?.http === 404) observe(job, op, "absent");
        // An unknown answer (5xx, timeout) proves nothing.
        break;
      }
      case "active": {
        if (op.type !== "ok" || !inv.service) break;
        if (done?.job) observe(jobOf(done.job, inv.service, inv.project), op, done.status && TERMINAL.has(done.status) ? done.status : "active");
        else nullAnswers.push(op);
        break;
      }
      case "list": {
        if (op.type !== "ok" || !inv.service || !done?.listed) break;
        figures.listings++;
        listings.push(op);
        for (const item of done.listed) observe(jobOf(item.job, inv.service, item.project ?? undefined), op, item.status, { listing: true });
        break;
      }
      case "fault": {
        if (!inv.fault) break;
        figures.faults++;
        figures.faultsBy[inv.fault.kind] = (figures.faultsBy[inv.fault.kind] ?? 0) + 1;
        faults.push({ start: op.start, end: op.end, fault: inv.fault });
        break;
      }
      case "call": {
        const kind = inv.call ?? "other";
        figures.providerCalls[kind]++;
        if (kind === "other") break;
        for (const unit of inv.units ?? []) {
          const key = unit.slice(0, unit.lastIndexOf("."));
          const perJob = calls.get(key) ?? new Map<string, number>();
          calls.set(key, perJob.set(unit, (perJob.get(unit) ?? 0) + 1));
        }
        const keys = new Set((inv.units ?? []).map((unit) => unit.slice(0, unit.lastIndexOf("."))));
        for (const key of keys) callTimes.set(key, [...(callTimes.get(key) ?? []), { time: op.start, op }]);
        break;
      }
      case "write": {
        const probe = done?.probe;
        if (op.type === "ok" && probe?.seq !== undefined) acknowledged.push({ op, store: probe.store, key: probe.key, value: probe.value, seq: probe.seq });
        break;
      }
      case "readback": {
        if (inv.probe?.seq !== undefined) {
          const held = heldBy.get(inv.probe.store) ?? new Map<number, { key: string; value: string }>();
          heldBy.set(inv.probe.store, held.set(inv.probe.seq, { key: inv.probe.key, value: inv.probe.value }));
        } else if (inv.readback) {
          if (op.type === "ok") readBack.add(inv.readback.store);
          else unreadable.push(op);
        }
        break;
      }
    }
  }

  const violations = new Map<Invariant, Violation>();
  const violate = (invariant: Invariant, example: string, count = 1) => {
    const v = violations.get(invariant) ?? { invariant, count: 0, examples: [] };
    v.count += count;
    if (v.examples.length < 3) v.examples.push(example);
    violations.set(invariant, v);
  };
  const finalReads = options.finalReads ?? 2;
  const label = (job: Job) => `${job.service} job ${job.id}${job.project !== undefined ? ` (project ${job.project})` : ""}`;

  // A gateway cut off from NATS (its relay severed or stalled) may answer from what it last knew.
  // Its answers during the partition and for a moment after are held apart: they do not count
  // toward status, progress or exclusivity, and any that contradict the rest of the history are
  // reported on their own (partitioned-gateway-stale).
  const graceMs = options.partitionGraceMs ?? 1_000;
  const cutOff = faults.filter((f) => f.fault.role === "gateway" && f.fault.kind === "partition");
  for (const job of jobs.values()) {
    for (const o of job.obs) {
      const via = o.op.complete?.via;
      if (via && cutOff.some((f) => f.fault.target === via && o.start <= f.end + graceMs && o.end >= f.start)) o.suspect = true;
      if (o.suspect) figures.suspectReads++;
    }
  }
  const stale = (job: Job, o: Obs, why: string) => {
    figures.staleReads++;
    violate("partitioned-gateway-stale", `${label(job)}: ${o.op.complete?.via} (partitioned) answered ${o.seen}${o.progress !== undefined ? ` ${o.progress}` : ""} at ${at(o.op)} ${why}`);
  };

  // A job no client was told of (a 409, an active-job answer or a listing named it) is tied to its
  // creation by its results' ids: an indeterminate creation is then accepted after all; one that was
  // answered with another job or refused explains nothing.
  for (const job of jobs.values()) {
    if (job.accepted) continue;
    const ids = job.obs.flatMap((o) => o.results ?? []);
    const key = ids.length ? ids[0]!.slice(0, ids[0]!.lastIndexOf(".")) : undefined;
    const creation = key !== undefined ? creations.get(key) : undefined;
    if (creation && (creation.type === "info" || creation.type === "pending") && creation.invoke.service === job.service) {
      job.accepted = creation;
      job.recovered = true;
      job.key = key;
      job.units = creation.invoke.units;
      job.owner = creation.invoke.owner;
      job.project ??= creation.invoke.project;
      figures.recovered++;
    } else if (key !== undefined) {
      figures.phantoms++;
      violate("phantom", `${label(job)}: its results are those of creation ${key}, which ${creation ? `answered ${creation.type === "ok" ? `job ${creation.complete?.job}` : creation.complete?.http}` : "never happened"}`);
    }
  }

  for (const job of jobs.values()) {
    job.obs.sort((a, b) => a.start - b.start || a.end - b.end);
    const terminal = job.obs.filter((o) => TERMINAL.has(o.seen));
    if (!job.accepted) {
      // Listed, so it exists: it must end like any other job.
      const listed = job.obs.find((o) => o.listing);
      if (listed && terminal.length === 0) {
        figures.ghosts++;
        violate("ghost", `${label(job)} listed at ${at(listed.op)} though no client was told of it (its creation's answer was lost), never seen terminal; last seen ${job.obs.at(-1)!.seen}`);
      }
      figures.unknownNamed++;
      continue;
    }
    figures.accepted++;
    if (terminal.length === 0) {
      figures.lost++;
      const last = job.obs.at(-1)!;
      violate("lost", `${label(job)} accepted at ${at(job.accepted)}, never seen terminal; last seen ${last.seen} at ${at(last.op)}`);
      continue;
    }
    const earliest = (list: Obs[]) => list.reduce((a, b) => (b.end < a.end ? b : a));
    const first = earliest(terminal);
    if (first.seen === "completed") figures.completed++;
    else {
      figures.failed++;
      const category = first.op.complete?.error ?? "unknown";
      figures.failedBy[category] = (figures.failedBy[category] ?? 0) + 1;
    }
    const statuses = new Set(terminal.map((o) => o.seen));
    if (statuses.size > 1) {
      figures.completedAndFailed++;
      const other = terminal.find((o) => o.seen !== first.seen)!;
      violate("completed-and-failed", `${label(job)} ${first.seen} at ${at(first.op)}, ${other.seen} at ${at(other.op)}`);
    }
    // After the first terminal answer, nothing may show it active again or forget it. The store of
    // record is written before the live state turns terminal, so a terminal row may precede a poll
    // that still shows the job running: a listing's terminal row binds later listings only.
    const later = job.obs.filter((o) => o.start > first.end);
    const liveTerminal = terminal.filter((o) => !o.listing);
    const firstLive = liveTerminal.length ? earliest(liveTerminal) : undefined;
    const backwards = (o: Obs) => ACTIVE.has(o.seen) && (o.listing ? before(first, o) : firstLive !== undefined && before(firstLive, o));
    const back = job.obs.find((o) => !o.suspect && backwards(o));
    const staleBack = job.obs.find((o) => o.suspect && backwards(o));
    if (staleBack) stale(job, staleBack, `after the job was seen ${first.seen} at ${at(first.op)}`);
    if (back) {
      figures.statusBackwards++;
      violate("status-backwards", `${label(job)} ${first.seen} at ${at(first.op)}, then ${back.seen} at ${at(back.op)}`);
    }
    const gone = later.find((o) => o.seen === "absent");
    const reads = later.filter((o) => o.final && TERMINAL.has(o.seen)).length;
    // (a terminal row listed before the first poll saw the end counts as the end: the reads follow it)
    if (gone || reads < finalReads) {
      figures.unreadable++;
      violate(
        "terminal-unreadable",
        gone
          ? `${label(job)} ${first.seen} at ${at(first.op)}, then 404 at ${at(gone.op)}`
          : `${label(job)} ${first.seen} at ${at(first.op)}, ${reads} of ${finalReads} final reads answered`,
      );
    }
    // Progress never goes down between operations that did not overlap.
    const withProgress = job.obs.filter((o) => o.progress !== undefined && o.seen !== "absent");
    const drops = withProgress.flatMap((b) => withProgress.filter((a) => before(a, b) && a.progress! > b.progress! + 1e-9).map((a) => [a, b] as const));
    const drop = drops.find(([a, b]) => !a.suspect && !b.suspect);
    const staleDrop = drops.find(([a, b]) => a.suspect || b.suspect);
    if (staleDrop) {
      const [a, b] = staleDrop;
      if (b.suspect) stale(job, b, `after progress ${a.progress} at ${at(a.op)}`);
      else stale(job, a, `before progress ${b.progress} at ${at(b.op)}`);
    }
    if (drop) {
      figures.progressBackwards++;
      violate("progress-backwards", `${label(job)} progress ${drop[0].progress} at ${at(drop[0].op)}, then ${drop[1].progress} at ${at(drop[1].op)}`);
    }
    // Every paper or record exactly once in each completed answer.
    for (const o of terminal.filter((t) => t.seen === "completed" && !t.listing)) {
      const expected = new Set(job.units ?? []);
      const counts = new Map<string, number>();
      for (const id of o.results ?? []) counts.set(id, (counts.get(id) ?? 0) + 1);
      const dup = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
      const miss = [...expected].filter((id) => !counts.has(id));
      const foreign = job.units ? [...counts.keys()].filter((id) => !expected.has(id)) : [];
      if (dup.length) {
        figures.duplicated++;
        violate("duplicated", `${label(job)} at ${at(o.op)}: ${dup.length} ids more than once, e.g. ${dup[0]}`);
      }
      if (miss.length) {
        figures.missing++;
        violate("missing", `${label(job)} at ${at(o.op)}: ${miss.length} of ${expected.size} ids missing, e.g. ${miss[0]}`);
      }
      if (foreign.length) {
        figures.foreign++;
        violate("foreign", `${label(job)} at ${at(o.op)}: ${foreign.length} ids not in its input, e.g. ${foreign[0]}`);
      }
      if (dup.length || miss.length || foreign.length) break;
    }
    // Provider calls: each item once, plus at most one checkpoint unit per fault that hit the job.
    const lifeEnd = first.end;
    const hits = faults.filter((f) => f.start <= lifeEnd && f.end >= job.accepted!.start && (f.fault.role === job.service || f.fault.role === "nats" || f.fault.role === "mongo"));
    if (hits.length) figures.jobsHit++;
    // No run may call the provider for a job once a client saw it end: a run that lost its lease
    // stops at its next fenced step, and a call under way was received before the end was visible.
    const ended = firstLive ?? first;
    // A paused worker may send a call it had begun just before its pause: one per pause that hit the job.
    const afterEnd = (job.key ? callTimes.get(job.key) : undefined)?.filter((c) => c.time > ended.end) ?? [];
    if (afterEnd.length > hits.filter((f) => f.fault.kind === "pause").length) {
      figures.workAfterEnd += afterEnd.length;
      violate("work-after-end", `${label(job)} ${ended.seen} at ${at(ended.op)}, then ${afterEnd.length} provider call(s) for it, the first at ${at(afterEnd[0]!.op)}`);
    }
    const perItem = job.key ? calls.get(job.key) : undefined;
    if (perItem) {
      const repeated = [...perItem.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);
      const allowed = hits.length * (options.unitsPerFault?.[job.service] ?? 1) * (options.unitSize?.[job.service] ?? (job.service === "screening" ? 5 : 1));
      figures.repeatedItems += repeated;
      figures.allowedRepeats += allowed;
      if (repeated > allowed) {
        figures.jobsOverRepeatBound++;
        const [item, n] = [...perItem].reduce((a, b) => (b[1] > a[1] ? b : a));
        violate("provider-repeats", `${label(job)}: ${repeated} repeated item calls (${item} called ${n}×) with ${hits.length} fault(s) allowing ${allowed}`);
      }
    }
  }

  // One active screening job per project, at every moment the clients could pin down.
  const byProject = new Map<number, Job[]>();
  for (const job of jobs.values()) {
    if (job.service !== "screening" || job.project === undefined) continue;
    byProject.set(job.project, [...(byProject.get(job.project) ?? []), job]);
  }
  const certain = (job: Job): [number, number] | undefined => {
    const active = job.obs.filter((o) => ACTIVE.has(o.seen) && !o.suspect);
    if (active.length < 2) return undefined;
    // The last active answer may reflect a moment up to `staleness` before it began.
    const from = Math.min(...active.map((o) => o.end));
    const to = Math.max(...active.map((o) => o.start)) - staleness;
    return from < to ? [from, to] : undefined;
  };
  for (const [project, list] of byProject) {
    const spans = list.map((job) => ({ job, span: certain(job) }));
    const reported = new Set<string>();
    for (const { job: k, span } of spans) {
      if (!span) continue;
      for (const j of list) {
        if (j === k) continue;
        const pair = [j.id, k.id].sort().join("|");
        if (reported.has(pair)) continue;
        const inside = j.obs.find((o) => ACTIVE.has(o.seen) && !o.suspect && o.start - staleness >= span[0] && o.end <= span[1]);
        const jSpan = certain(j);
        const overlap = jSpan && Math.max(jSpan[0], span[0]) < Math.min(jSpan[1], span[1]);
        if (!inside && !overlap) continue;
        reported.add(pair);
        figures.doubleActive++;
        const kFirst = k.obs.find((o) => ACTIVE.has(o.seen) && o.end === span[0])!;
        violate(
          "double-active",
          inside
            ? `project ${project}: ${j.id} seen ${inside.seen} at ${at(inside.op)} while ${k.id} was active from ${at(kFirst.op)} to its later active answer at t+${((span[1] - t0) / 1000).toFixed(1)} s`
            : `project ${project}: ${j.id} and ${k.id} both certainly active around t+${((Math.max(jSpan![0], span[0]) - t0) / 1000).toFixed(1)} s`,
        );
      }
    }
    const cutOffAnswer = (a: Op) => cutOff.some((f) => f.fault.target === a.complete?.via && a.start <= f.end + graceMs && a.end >= f.start);
    for (const answer of nullAnswers.filter((a) => a.invoke.project === project && a.invoke.service === "screening" && !cutOffAnswer(a))) {
      const holder = spans.find(({ span }) => span && span[0] <= answer.start - staleness && answer.end <= span[1]);
      if (holder) {
        figures.activeMissed++;
        violate("active-missed", `project ${project}: active-job answered null at ${at(answer)} while ${holder.job.id} was certainly active`);
      }
    }
  }

  // Listings against the history: an owner's listing shows only that owner's jobs, and every job of
  // theirs that a client had seen end before the listing began (its row is written before its live
  // state turns terminal). A listing as long as its limit may have cut off older jobs: only jobs
  // created after its oldest entry are then required.
  for (const list of listings) {
    const owner = list.invoke.owner;
    const listed = list.complete!.listed!;
    const ids = new Set(listed.map((l) => l.job));
    const full = listed.length >= (list.invoke.limit ?? Infinity);
    const oldest = listed.length ? Math.min(...listed.map((l) => l.created)) : -Infinity;
    for (const item of listed) {
      const job = jobs.get(item.job);
      const theirs = job?.owner !== undefined ? job.owner === owner : item.project === null || item.project === undefined || (owner !== undefined && projectsOf.get(owner)?.has(item.project));
      if (!theirs) {
        figures.listForeign++;
        violate("list-foreign", `${owner}'s listing at ${at(list)} shows ${job ? label(job) : item.job} of ${job?.owner ?? `project ${item.project}`}`);
      }
    }
    for (const job of jobs.values()) {
      if (job.service !== list.invoke.service || job.owner !== owner || !job.accepted || ids.has(job.id)) continue;
      const ended = job.obs.filter((o) => TERMINAL.has(o.seen) && !o.listing && o.end < list.start);
      if (!ended.length || (full && job.accepted.start <= oldest)) continue;
      figures.listMissing++;
      violate("list-missing", `${label(job)} seen ${ended[0]!.seen} at ${at(ended[0]!.op)}, missing from ${owner}'s listing at ${at(list)}`);
    }
  }

  // Every write the server acknowledged is there when read back, unchanged: a leader elected without
  // some of them (a rewind) fails the run, whatever the jobs made of it.
  for (const write of acknowledged) {
    figures.writes.acknowledged++;
    const held = readBack.has(write.store) ? heldBy.get(write.store)?.get(write.seq) : undefined;
    if (held && held.key === write.key && held.value === write.value) {
      figures.writes.readBack++;
      continue;
    }
    figures.writes.lost++;
    const what = `${write.store} write ${write.key} acknowledged at sequence ${write.seq} at ${at(write.op)}`;
    violate(
      "write-lost",
      !readBack.has(write.store)
        ? `${what}, never read back (${unreadable.find((u) => u.invoke.readback?.store === write.store)?.invoke.error ?? "no read-back of its store"})`
        : held
          ? `${what}, read back as ${held.key}: ${held.value}`
          : `${what}, missing when read back`,
    );
  }

  const minRatio = options.minCompletedRatio ?? 0.8;
  if (figures.accepted === 0 || figures.completed < minRatio * figures.accepted) {
    violate("too-few-completed", `${figures.completed} of ${figures.accepted} accepted jobs completed (need ≥ ${Math.round(minRatio * 100)} %)`);
  }
  const list = [...violations.values()];
  return { valid: list.length === 0, figures, violations: list };
}

/** The figures and violations as the lines a run prints. */
export function formatReport(result: CheckResult, title = "chaos"): string {
  const f = result.figures;
  const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(1)} %` : "n/a");
  const by = (record: Record<string, number | undefined>) => Object.entries(record).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
  const lines = [
    `[${title}] ${result.valid ? "VALID" : "INVALID"}: ${(f.durationMs / 1000).toFixed(1)} s of history`,
    `[${title}] jobs: attempted ${f.attempted}, accepted ${f.accepted}, completed ${f.completed} (${pct(f.completed, f.accepted)}), failed ${f.failed} (${by(f.failedBy)}), lost ${f.lost}`,
    `[${title}] creations: ${f.conflicts} × 409, ${f.indeterminate} indeterminate (${f.recovered} of them found accepted by listing or a 409 and checked); ${f.unknownNamed} job(s) named by a 409/active-job/listing that no creation explains; phantoms ${f.phantoms}, ghosts ${f.ghosts}`,
    `[${title}] answers of partitioned gateways held apart: ${f.suspectReads}, stale among them ${f.staleReads}`,
    `[${title}] listings: ${f.listings} answered; acknowledged jobs missing ${f.listMissing}, other owners' jobs shown ${f.listForeign}`,
    `[${title}] results: duplicated ${f.duplicated}, missing ${f.missing}, foreign ${f.foreign}`,
    `[${title}] double-active ${f.doubleActive}, active-job missed ${f.activeMissed}, completed-and-failed ${f.completedAndFailed}, status backwards ${f.statusBackwards}, progress backwards ${f.progressBackwards}, terminal unreadable ${f.unreadable}`,
    `[${title}] faults: ${f.faults} (${by(f.faultsBy)}); ${f.jobsHit} jobs hit`,
    `[${title}] provider: ${f.providerCalls.label} labelling + ${f.providerCalls.extract} extraction calls (+${f.providerCalls.other} other); repeated items ${f.repeatedItems} (allowed by faults ${f.allowedRepeats}), jobs over the bound ${f.jobsOverRepeatBound}; calls after the job ended ${f.workAfterEnd}`,
    `[${title}] acknowledged writes to NATS read back: ${f.writes.readBack} of ${f.writes.acknowledged} intact, lost ${f.writes.lost}`,
    `[${title}] operations: ${f.ops.ok} ok, ${f.ops.fail} fail, ${f.ops.info} info, ${f.ops.pending} unfinished`,
  ];
  for (const v of result.violations) {
    lines.push(`[${title}] VIOLATION ${v.invariant}: ${v.count}`);
    for (const e of v.examples) lines.push(`[${title}]   e.g. ${e}`);
  }
  return lines.join("\n");
}
