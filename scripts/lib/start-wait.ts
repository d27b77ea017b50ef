import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "node:net";
import { z } from "zod";

/**
 * How long `npm start` waits for its processes to listen. A busy machine can take minutes to start
 * the stack through tsx (two minutes and more on two shared cores), so the wait is a bound the user
 * sets, not a guess: STACK_START_TIMEOUT_S, 600 s (10 minutes) unless set. While it waits, a line
 * every PROGRESS_EVERY_MS says what it is waiting for and how long it has so far.
 */
export const StackStartEnv = z.object({
  STACK_START_TIMEOUT_S: z.preprocess(
    (value) => (value === "" ? undefined : value),
    z.coerce.number().int("a whole number of seconds").min(1).max(86_400).default(600),
  ),
});
export type StackStartEnv = z.infer<typeof StackStartEnv>;

/** The bound in ms, or a line saying what is wrong with the variable. */
export function startTimeoutFromEnv(env: NodeJS.ProcessEnv): number | string {
  const parsed = StackStartEnv.safeParse({ STACK_START_TIMEOUT_S: env.STACK_START_TIMEOUT_S });
  if (parsed.success) return parsed.data.STACK_START_TIMEOUT_S * 1000;
  return `STACK_START_TIMEOUT_S must be a whole number of seconds from 1 to 86400, got ${JSON.stringify(env.STACK_START_TIMEOUT_S)}`;
}

export const PROGRESS_EVERY_MS = 15_000;

/** Whether something accepts TCP connections on host:port right now. */
export function acceptsConnections(port: number, host: string): Promise<boolean> {
  return new Promise<boolean>((done) => {
    const socket = connect(port, host);
    socket.once("connect", () => (socket.destroy(), done(true)));
    socket.once("error", () => done(false));
  });
}

export interface ListenWait {
  /** What is awaited, for the progress lines (`the gateway`, `nats-server`). */
  what: string;
  port: number;
  host: string;
  timeoutMs: number;
  progressEveryMs?: number;
  /** True once waiting is pointless (the stack is stopping): the wait ends quietly. */
  abandoned?: () => boolean;
  /** Its process's state for the progress line (running, restarting, restarts so far). */
  state?: () => string;
  log?: (line: string) => void;
  probe?: (port: number, host: string) => Promise<boolean>;
}

const seconds = (ms: number) => Number((ms / 1000).toFixed(1));

/** Resolves true once the port accepts connections, false if abandoned; throws when the bound passes. */
export async function waitUntilListening(wait: ListenWait): Promise<boolean> {
  const log = wait.log ?? ((line: string) => console.log(line));
  const probe = wait.probe ?? acceptsConnections;
  const every = wait.progressEveryMs ?? PROGRESS_EVERY_MS;
  const started = Date.now();
  let nextProgress = started + every;
  for (;;) {
    if (wait.abandoned?.()) return false;
    if (await probe(wait.port, wait.host)) return true;
    const now = Date.now();
    if (now - started >= wait.timeoutMs) {
      throw new Error(`${wait.what} did not listen on ${wait.host}:${wait.port} within ${seconds(wait.timeoutMs)} s (STACK_START_TIMEOUT_S sets the bound)`);
    }
    if (now >= nextProgress) {
      nextProgress += every;
      const state = wait.state?.();
      log(`[stack] waiting for ${wait.what} to listen on ${wait.host}:${wait.port}: ${Math.round((now - started) / 1000)} s so far${state ? ` (${state})` : ""}; gives up after ${seconds(wait.timeoutMs)} s (STACK_START_TIMEOUT_S)`);
    }
    await sleep(100);
  }
}
