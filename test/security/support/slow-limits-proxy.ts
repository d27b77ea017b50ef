import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";

/**
 * A loopback proxy in front of nats-server that delays the limits bucket's messages while a delay
 * is set (slow-limits-proxy-main.ts), run in a process of its own: the bucket answers late while
 * the rest of NATS does not, as when an attacker's load slows it.
 */
export interface SlowLimitsProxy {
  url: string;
  /** Delays the limits bucket's messages by `ms` from now on (0 passes them at once); resolves to the messages delayed so far. */
  setDelay(ms: number): Promise<number>;
  close(): Promise<void>;
}

export async function slowLimitsProxy(natsUrl: string): Promise<SlowLimitsProxy> {
  const child: ChildProcess = fork(join(import.meta.dirname, "slow-limits-proxy-main.ts"), [natsUrl], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const next = <T>(key: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (message: Record<string, T>) => {
        if (!(key in message)) return;
        child.off("exit", onExit);
        child.off("message", onMessage);
        resolve(message[key]!);
      };
      const onExit = (code: number | null) => reject(new Error(`the slow limits proxy exited (${code})`));
      child.on("message", onMessage).once("exit", onExit);
    });
  const url = await next<string>("url");
  return {
    url,
    setDelay: (ms) => {
      const delayed = next<number>("delayed");
      child.send({ delayMs: ms });
      return delayed;
    },
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill();
      }),
  };
}
