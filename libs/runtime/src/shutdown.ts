import type { Logger } from "@litrev/telemetry";
import { stopTelemetry } from "@litrev/telemetry";

type Step = () => Promise<unknown> | unknown;

/**
 * Runs registered shutdown steps in reverse order of registration on SIGTERM/SIGINT, bounded by
 * a timeout so a stuck dependency cannot keep a process alive; telemetry is flushed last.
 */
export class Shutdown {
  readonly #steps: { name: string; run: Step }[] = [];
  #started = false;

  constructor(private readonly logger: Logger, private readonly timeoutMs: number) {}

  add(name: string, run: Step): void {
    this.#steps.push({ name, run });
  }

  listen(): void {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => void this.run(signal).then(() => process.exit(0)));
    }
  }

  async run(reason: string): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.logger.info({ reason }, "shutting down");
    const timer = setTimeout(() => {
      this.logger.error({ timeoutMs: this.timeoutMs }, "shutdown timed out; exiting");
      process.exit(1);
    }, this.timeoutMs);
    timer.unref();
    for (const step of [...this.#steps].reverse()) {
      try {
        await step.run();
      } catch (error) {
        this.logger.warn({ err: error, step: step.name }, "shutdown step failed");
      }
    }
    await stopTelemetry();
    clearTimeout(timer);
  }
}
