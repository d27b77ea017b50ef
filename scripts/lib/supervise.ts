import type { ChildProcess } from "node:child_process";
import { EXIT_CONFIG } from "../../libs/telemetry/src/exit-codes";
import { stopProcess } from "./launch";

/**
 * Keeps one child process running for `npm start`: a child that exits on its own is started again
 * after an exponential backoff (capped; back to the first delay once a run lasted `stableMs`), and
 * every restart is logged with the exit code or signal. A run that exits with EXIT_CONFIG (78: it
 * cannot run as configured) is not restarted, since the next run would fail the same way: it is
 * logged and reported to `onConfigExit`. `stop()` cancels a pending restart and stops the child, so
 * Ctrl-C never races a restart.
 */

export interface BackoffOptions {
  /** Delay before the first restart (default 500 ms). */
  initialDelayMs?: number;
  /** Largest delay (default 30 s). */
  maxDelayMs?: number;
  /** Growth per consecutive crash (default 2). */
  factor?: number;
}

export interface SuperviseOptions extends BackoffOptions {
  name: string;
  /** Starts one run of the process. */
  start: () => ChildProcess;
  /** A run that lasted this long resets the backoff (default 60 s). */
  stableMs?: number;
  log?: (line: string) => void;
  /** Called once the process exited with EXIT_CONFIG and so will not be restarted. */
  onConfigExit?: () => void;
}

export interface Supervised {
  readonly name: string;
  /** The current run; undefined while a restart is pending. */
  readonly child: ChildProcess | undefined;
  /** Restarts so far. */
  readonly restarts: number;
  /** Cancels any pending restart and stops the current run (SIGTERM, then SIGKILL after `graceMs`). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

/** Delay before restart number `attempt` (0-based) of an unbroken series of crashes. */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const initial = options.initialDelayMs ?? 500;
  const max = options.maxDelayMs ?? 30_000;
  const factor = options.factor ?? 2;
  return Math.min(max, initial * factor ** Math.min(attempt, 64));
}

/** `code 1`, `signal SIGKILL`: how a run ended, for the log. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `code ${code ?? "?"}`;
}

export function supervise(options: SuperviseOptions): Supervised {
  const log = options.log ?? ((line: string) => console.error(line));
  const stableMs = options.stableMs ?? 60_000;
  let child: ChildProcess | undefined;
  let startedAt = 0;
  let attempt = 0;
  let restarts = 0;
  let stopping = false;
  let pending: NodeJS.Timeout | undefined;

  const run = () => {
    pending = undefined;
    if (stopping) return;
    const current = options.start();
    child = current;
    startedAt = Date.now();
    let ended = false;
    const onEnd = (code: number | null, signal: NodeJS.Signals | null, error?: Error) => {
      if (ended) return;
      ended = true;
      if (child === current) child = undefined;
      if (stopping) return;
      const ranMs = Date.now() - startedAt;
      if (code === EXIT_CONFIG) {
        log(`[stack] ${options.name} exited (code ${code}: its configuration) after ${(ranMs / 1000).toFixed(1)} s; not restarted`);
        options.onConfigExit?.();
        return;
      }
      if (ranMs >= stableMs) attempt = 0;
      const delay = backoffDelay(attempt++, options);
      restarts++;
      const why = error ? `failed to start (${error.message})` : `exited (${describeExit(code, signal)})`;
      log(`[stack] ${options.name} ${why} after ${(ranMs / 1000).toFixed(1)} s; restart #${restarts} in ${delay} ms`);
      pending = setTimeout(run, delay);
    };
    current.once("exit", (code, signal) => onEnd(code, signal));
    // A spawn failure emits "error" and may never emit "exit".
    current.once("error", (error) => {
      if (current.pid === undefined) onEnd(null, null, error);
    });
  };
  run();

  return {
    name: options.name,
    get child() {
      return child;
    },
    get restarts() {
      return restarts;
    },
    async stop(signal = "SIGTERM", graceMs = 10_000) {
      stopping = true;
      if (pending) clearTimeout(pending);
      pending = undefined;
      if (child) await stopProcess(child, signal, graceMs);
    },
  };
}
