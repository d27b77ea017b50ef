import pLimit from "p-limit";
import type { IndexerRecord, LlmUsage } from "@litrev/contracts";
import { accumulateUsage, firstModel } from "@litrev/llm";
import { addQuotes, extractRecord, NO_QUOTES, notProcessed, type ExtractionPlan, type QuoteStats, type RecordOutcome, type StructuredCaller } from "./extract-record";

export interface RunOptions {
  /** Provider calls in flight for this request (spec `max_workers`). */
  concurrency: number;
  /** Records per delivered batch (spec `batch_size`): `onBatch` fires once per completed batch, in order. */
  batchSize: number;
  signal?: AbortSignal | undefined;
  /** Completed batches in input order. */
  onBatch?: ((outcomes: RecordOutcome[], firstIndex: number) => Promise<void> | void) | undefined;
  /**
   * Time budget of a synchronous run: when it is spent, calls in flight are cancelled and the
   * records not done are returned as `not_processed`, so the caller gets an answer in time.
   */
  deadlineMs?: number | undefined;
}

export interface RunSummary {
  outcomes: RecordOutcome[];
  usage: LlmUsage;
  modelVersion: string | undefined;
  quotes: QuoteStats;
}

/**
 * Extracts `records` with at most `concurrency` provider calls in flight. The next record starts
 * as soon as any call finishes (no batch barrier, so one slow call never idles the rest);
 * results are still delivered in input order, a batch at a time. A fatal error (bad key, no
 * quota, rate limit beyond retries) cancels the calls in flight and rejects the run.
 */
export async function runExtraction(
  llm: StructuredCaller,
  plan: ExtractionPlan,
  records: readonly IndexerRecord[],
  options: RunOptions,
): Promise<RunSummary> {
  const outcomes: (RecordOutcome | undefined)[] = Array.from({ length: records.length }, () => undefined);
  const cancel = new AbortController();
  const onOuterAbort = () => cancel.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onOuterAbort, { once: true });
  let delivered = 0;
  let delivering: Promise<void> = Promise.resolve();
  let failure: unknown;
  let outOfTime = false;
  const deadline =
    options.deadlineMs === undefined
      ? undefined
      : setTimeout(() => {
          outOfTime = true;
          cancel.abort(new Error("deadline"));
        }, options.deadlineMs);

  const deliver = () => {
    // Chain deliveries so that batches reach onBatch one at a time and in order.
    delivering = delivering.then(async () => {
      while (delivered < records.length) {
        const end = Math.min(records.length, delivered + options.batchSize);
        for (let i = delivered; i < end; i++) if (!outcomes[i]) return;
        const batch = outcomes.slice(delivered, end) as RecordOutcome[];
        const first = delivered;
        delivered = end;
        await options.onBatch?.(batch, first);
      }
    });
    return delivering;
  };

  // One task per record, started in input order; a task that finds the run failed or cancelled
  // starts no call.
  const extractOne = async (index: number) => {
    if (failure !== undefined || cancel.signal.aborted) return;
    try {
      outcomes[index] = await extractRecord(llm, plan, records[index] as IndexerRecord, cancel.signal);
    } catch (error) {
      if (outOfTime) return;
      failure ??= error;
      cancel.abort(error);
      return;
    }
    await deliver().catch((error: unknown) => {
      failure ??= error;
      cancel.abort(error);
    });
  };

  try {
    const run = pLimit(Math.max(1, options.concurrency));
    await Promise.all(records.map((_, index) => run(() => extractOne(index))));
    if (outOfTime && failure === undefined) {
      records.forEach((record, i) => (outcomes[i] ??= notProcessed(record, plan.specs, options.deadlineMs as number)));
      await deliver();
    }
    await delivering;
  } finally {
    clearTimeout(deadline);
    options.signal?.removeEventListener("abort", onOuterAbort);
  }
  if (failure !== undefined) throw failure;
  if (cancel.signal.aborted && !outOfTime) throw cancel.signal.reason;

  return summarize(outcomes as RecordOutcome[]);
}

/** Usage, model version and quote counts summed over record outcomes. */
function summarize(outcomes: readonly RecordOutcome[]): RunSummary {
  const usage = accumulateUsage(outcomes.map((o) => o.usage));
  const quotes = outcomes.reduce((sum, o) => addQuotes(sum, o.quotes), NO_QUOTES);
  return { outcomes: [...outcomes], usage, modelVersion: firstModel(usage), quotes };
}
