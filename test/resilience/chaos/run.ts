import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, formatReport, type CheckResult } from "./checker";
import { MongoRelay, startCluster } from "./cluster";
import { History, type FaultKind } from "./history";
import { Nemesis } from "./nemesis";
import { startChaosProvider } from "./provider";
import { Workload } from "./workload";
import { WriteProbe } from "./write-probe";
import { TEST_API_KEY } from "../../support/stack";
import { MIRROR_STALENESS_MS } from "@litrev/jobs/client";

/**
 * One chaos run: a cluster, the fake provider, the workload and the nemesis until both targets are
 * met (or the time limit), then heal, let every job end, read every job twice, read back (on a NATS
 * cluster) every write the write probe had acknowledged, and check.
 */

export interface ChaosOptions {
  /** Accepted jobs to reach before the run winds down. */
  jobs: number;
  /** Healed faults to reach before the run winds down (0: no nemesis, a clean run). */
  faults: number;
  /** Gives up on the targets after this long (the checker still runs on what happened). */
  maxMs: number;
  /**
   * Stops the nemesis (and heals) after this many faults even if the jobs target is not met yet,
   * so a run slowed by its faults is not buried under more of them (default: no cap).
   */
  maxFaults?: number;
  projects: number;
  seed: number;
  /** Keep the run directory (logs, history.jsonl) even when the history is valid. */
  keep?: boolean;
  /**
   * Against three clustered nats-servers with NATS_REPLICAS=3 (the production topology): the
   * nemesis kills meta and stream leaders and pauses servers instead of restarting the one server
   * and partitioning processes.
   */
  natsCluster?: boolean;
  log?: (line: string) => void;
}

export interface ChaosRun {
  result: CheckResult;
  report: string;
  /** Where the logs and history.jsonl are (removed when valid unless `keep`). */
  dir: string;
  jobs: number;
  faults: number;
  /** Why a fault kind did not run, e.g. mongo-stop without MONGO_URL. */
  skipped: string[];
  /** Most faults in progress at one moment. */
  maxOverlap: number;
  /** Stale runs that logged finding their job taken over by another worker (split leases fenced out). */
  takeovers: number;
  wallMs: number;
}

// The job machinery's knobs for a run: short ack wait (a pause longer than it gets the job
// redelivered), one provider call in flight per job (a fault can repeat at most one checkpoint
// unit), enough attempts that the nemesis alone cannot exhaust them.
const ACK_WAIT_MS = 4_000;
const LABEL_BATCH = 5;
/** A second owner beside API_KEY's `default`: half the projects are theirs. */
const SECOND_OWNER = { owner: "chaos-b", key: "chaos-second-owner-key-0123456789" };

export async function runChaos(options: ChaosOptions): Promise<ChaosRun> {
  const log = options.log ?? ((line: string) => console.log(line));
  const began = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "litrev-chaos-"));
  const history = new History();
  const skipped: string[] = [];
  const all: FaultKind[] = options.natsCluster
    ? ["kill", "kill", "pause", "pause", "meta-leader-kill", "stream-leader-kill", "nats-pause"]
    : ["kill", "kill", "pause", "pause", "nats-restart", "partition", "partition", "split-lease"];
  const kinds: FaultKind[] = options.faults > 0 ? all : [];
  const mongoUrl = process.env.MONGO_URL || undefined;
  const unrelayable = mongoUrl ? MongoRelay.unsupported(mongoUrl) : "needs a MongoDB server (set MONGO_URL)";
  if (unrelayable) skipped.push(`mongo-stop: skipped, ${unrelayable}`);
  else if (kinds.length) kinds.push("mongo-stop");

  const provider = await startChaosProvider(history, 200);
  const cluster = await startCluster({
    dir,
    gateways: 2,
    screening: 2,
    indexer: 2,
    mongoUrl: unrelayable ? undefined : mongoUrl,
    natsCluster: options.natsCluster ?? false,
    env: {
      API_KEYS: `${SECOND_OWNER.owner}:use:${SECOND_OWNER.key}`,
      OPENAI_API_KEY: "sk-chaos",
      OPENAI_BASE_URL: provider.provider.url,
      RPC_TIMEOUT_MS: "8000",
      JOB_CONCURRENCY: "2",
      JOB_ACK_WAIT_MS: String(ACK_WAIT_MS),
      JOB_ORPHAN_LEASE_MS: "5000",
      // A creation cut off before queueing its job leaves an orphan: swept within the run's follow-ups.
      JOB_ORPHAN_SWEEP_MS: "2000",
      JOB_MAX_ATTEMPTS: "50",
      SCREENING_LABEL_BATCH: String(LABEL_BATCH),
      SCREENING_CALL_CONCURRENCY: "1",
      INDEXER_JOB_RECORD_CONCURRENCY: "1",
    },
  }).catch(async (error: unknown) => {
    await provider.close();
    throw error;
  });
  log(`[chaos] cluster up in ${((Date.now() - began) / 1000).toFixed(1)} s: 2 gateways, 2 screening, 2 indexer${options.natsCluster ? ", 3 clustered nats-servers (NATS_REPLICAS=3)" : " (each through its own relay to NATS), nats-server"}; logs in ${dir}; seed ${options.seed}`);
  for (const line of skipped) log(`[chaos] ${line}`);
  if (cluster.startRetries) log(`[chaos] ${cluster.startRetries} process start(s) retried after an exit at start-up (see the logs)`);

  const base = 1_000 + (options.seed % 1_000) * 100;
  const workload = new Workload({
    history,
    gatewayUrls: cluster.gatewayUrls,
    projects: Array.from({ length: options.projects }, (_, i) => base + i),
    owners: [{ owner: "default", key: TEST_API_KEY }, SECOND_OWNER],
    listLimit: 1_000,
    listEveryMs: 1_500,
    screeningClients: 2,
    indexerClients: 1,
    papers: 15,
    records: 8,
    repetitions: 2,
    pollMs: 250,
    jobTimeoutMs: 60_000,
    requestTimeoutMs: 15_000,
    thinkMs: 300,
  });
  const nemesis = new Nemesis({
    cluster,
    history,
    kinds,
    seed: options.seed,
    lanes: 2,
    gapMs: [500, 2_000],
    pauseMs: [1_000, 7_000],
    downMs: [300, 1_500],
    partitionMs: [1_000, 3_000],
    // Healed while the job's new run is usually still at work: both runs alive, one of them stale.
    splitLeaseMs: [ACK_WAIT_MS + 500, ACK_WAIT_MS + 3_000],
    log,
  });

  let result: CheckResult;
  let probe: WriteProbe | undefined;
  try {
    // On the cluster, where a leader elected without acknowledged writes would lose them (a lone
    // server SIGKILLed may lose the writes it had not flushed yet: not promised without `sync_interval: always`).
    if (options.natsCluster) probe = await WriteProbe.start(history, cluster.natsUrl, 3);
    const runStart = Date.now();
    workload.start();
    nemesis.start();
    let lastNote = Date.now();
    let capped = false;
    while (Date.now() - runStart < options.maxMs && (workload.accepted < options.jobs || nemesis.faults < options.faults)) {
      await new Promise((r) => setTimeout(r, 250));
      if (!capped && options.maxFaults !== undefined && nemesis.faults >= options.maxFaults) {
        capped = true;
        log(`[chaos] ${nemesis.faults} faults (the cap): the nemesis stops while the workload reaches ${options.jobs} jobs`);
        await nemesis.stop();
        await cluster.heal();
      }
      if (Date.now() - lastNote >= 15_000) {
        lastNote = Date.now();
        log(`[chaos] t+${((Date.now() - runStart) / 1000).toFixed(0)} s: ${workload.accepted} jobs accepted, ${nemesis.faults} faults`);
      }
    }
    log(`[chaos] winding down after ${((Date.now() - runStart) / 1000).toFixed(1)} s: ${workload.accepted} jobs accepted, ${nemesis.faults} faults`);
    await nemesis.stop();
    await cluster.heal();
    await probe?.stop();
    await workload.stop();
    await workload.settle();
    await workload.finalListings();
    await workload.finalReads(2, 1_000);
    await probe?.readBack();
    provider.drain();
    result = check(history.entries, {
      minCompletedRatio: 0.8,
      finalReads: 2,
      // One call in flight per job, and (its slot freed once the call returns: libs/jobs unit-loop)
      // the unit before it still saving: a fault can cost both, as a takeover found in 4 of 20 runs.
      unitsPerFault: { screening: 2, indexer: 2 },
      unitSize: { screening: LABEL_BATCH, indexer: 1 },
      // What the service promises for reads of running jobs (docs/jobs.md), nothing more.
      stalenessMs: MIRROR_STALENESS_MS,
    });
  } finally {
    await probe?.close();
    await cluster.stop().catch(() => undefined);
    await provider.close();
  }
  // What a post-mortem needs is the logs and the history, not nats-server's store.
  rmSync(join(dir, "nats"), { recursive: true, force: true });
  writeFileSync(join(dir, "history.jsonl"), history.entries.map((e) => JSON.stringify(e)).join("\n"));
  const report = formatReport(result);
  if (result.valid && !options.keep) rmSync(dir, { recursive: true, force: true });
  const takeovers = cluster.nodes.reduce((sum, n) => sum + n.takeovers, 0);
  return { result, report, dir, jobs: workload.accepted, faults: nemesis.faults, skipped, maxOverlap: nemesis.maxOverlap, takeovers, wallMs: Date.now() - began };
}
