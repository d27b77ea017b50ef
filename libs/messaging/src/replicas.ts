/**
 * How many copies JetStream keeps of every stream, bucket and object store this system creates:
 * 1 on one host, 3 on a NATS cluster (R3) so a node can be lost without losing a job. Read from
 * NATS_REPLICAS, which each process's environment schema has already validated at start-up.
 */
export function streamReplicas(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env.NATS_REPLICAS);
  return Number.isInteger(value) && value >= 1 && value <= 5 ? value : 1;
}
