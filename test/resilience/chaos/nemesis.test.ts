import { describe, expect, it } from "vitest";
import type { Cluster } from "./cluster";
import { History } from "./history";
import type { NatsCluster } from "./nats-cluster";
import { Nemesis } from "./nemesis";

/**
 * The nemesis without processes: a stand-in cluster whose leader look-ups take a moment, as the
 * monitoring endpoint's do, and which counts the NATS faults under way.
 */
function fakeCluster(lookupMs: number) {
  let now = 0;
  let most = 0;
  const strike = async (ms: number) => {
    most = Math.max(most, ++now);
    await new Promise((r) => setTimeout(r, ms));
    now--;
  };
  const lookup = <T>(value: T) => new Promise<T>((r) => setTimeout(() => r(value), lookupMs));
  const peers = ["nats-0", "nats-1", "nats-2"].map((name) => ({ name, port: 0, monitorPort: 0, paused: false, alive: () => true }));
  const natsCluster = {
    peers,
    metaLeader: () => lookup("nats-0"),
    streamLeaders: () => lookup([{ stream: "S", leader: "nats-1" }]),
    restart: (_name: string, _signal: NodeJS.Signals, downMs: number) => strike(downMs),
    pause: () => undefined,
    resume: () => undefined,
  } as unknown as NatsCluster;
  const cluster = { nodes: [], natsCluster, heal: async () => undefined } as unknown as Cluster;
  return { cluster, most: () => most };
}

describe("chaos nemesis", () => {
  it("never has two NATS faults under way at once, however its lanes interleave", async () => {
    const fake = fakeCluster(30);
    const nemesis = new Nemesis({
      cluster: fake.cluster,
      history: new History(),
      kinds: ["meta-leader-kill", "stream-leader-kill"],
      seed: 7,
      lanes: 2,
      gapMs: [0, 5],
      pauseMs: [10, 20],
      downMs: [10, 20],
    });
    nemesis.start();
    await new Promise((r) => setTimeout(r, 1_500));
    await nemesis.stop();
    expect(nemesis.faults).toBeGreaterThan(10);
    expect(fake.most(), "NATS faults under way at once").toBe(1);
  });
});
