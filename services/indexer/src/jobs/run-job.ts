import { ServiceError, type IndexerField, type IndexerRecord, type LlmUsage, type Provenance, type ServiceConfigResponse } from "@litrev/contracts";
import { cancellationOf, CostCeilingExceeded, CostMeter, jobReportExtras, PartialFailure, type JobContext, type JobHandler, type PartialRecord } from "@litrev/jobs";
import { CheckpointedStage } from "@litrev/jobs/worker";
import { addUsage, firstModel, ZERO_USAGE } from "@litrev/llm";
import { addQuotes, extractRecord, NO_QUOTES, type ExtractionPlan, type QuoteStats, type RecordOutcome, type StructuredCaller } from "../pipeline/extract-record";
import { mockExtractionCaller } from "../pipeline/mock-extraction";
import { extractionPlan } from "../pipeline/plan";
import { EXTRACTION_STAGE, IndexerJobInput, IndexerJobParams, RecordCheckpoint, type IndexerLiveExtra } from "./job-input";

export interface JobRunnerDeps {
  llm: StructuredCaller;
  config: () => ServiceConfigResponse;
  /** Provider calls in flight per job. */
  concurrency: number;
  /** The job's provenance as this run calls the model (`models_used` is filled in from the replies). */
  describe?: (input: { model: string; resolved: string; fields: IndexerField[]; plan: ExtractionPlan }) => Provenance;
}

/** Running totals for the live state, kept as records finish (restored ones included). */
class Progress {
  done = 0;
  usage: LlmUsage = ZERO_USAGE;
  quotes: QuoteStats = NO_QUOTES;
  constructor(
    readonly total: number,
    private readonly report: { provenance: Provenance | undefined; priced: boolean },
  ) {}

  add(outcome: RecordOutcome): void {
    this.done++;
    this.usage = addUsage(this.usage, outcome.usage);
    this.quotes = addQuotes(this.quotes, outcome.quotes);
  }

  get fraction(): number {
    return this.total === 0 ? 1 : this.done / this.total;
  }

  extra(): IndexerLiveExtra & Record<string, unknown> {
    const model = firstModel(this.usage);
    return {
      ...jobReportExtras(this.usage, this.report.provenance, this.report.priced),
      records_done: this.done,
      record_count: this.total,
      quotes: this.quotes,
      ...(model ? { model_version: model } : {}),
    };
  }
}

const toPartial = (o: RecordOutcome): PartialRecord => ({ record: o.record, ...(o.error ? { error: o.error } : {}) });

/** One record the run still has to extract, with its place in the input. */
interface PendingRecord {
  index: number;
  record: IndexerRecord;
}

/**
 * The records without a checkpoint, read from the stored input chunk by chunk only as call slots
 * free: one stream across the chunks, so a chunk's end never waits for its calls to drain.
 */
async function* pendingRecords(ctx: JobContext, total: number, finished: readonly unknown[]): AsyncGenerator<PendingRecord> {
  let index = 0;
  for await (const chunk of ctx.inputItems<IndexerRecord>("records")) {
    for (const record of chunk) {
      if (index >= total) return;
      if (!finished[index]) yield { index, record };
      index++;
    }
  }
}

/**
 * The indexer's job handler, run by libs/jobs' JobWorker. Every record is checkpointed the moment
 * it is done; a redelivered job (after a worker crash) loads the checkpoints and sends only the
 * records without one to the provider, so each record is paid for once and appears once. Finished
 * records also go to the job's partial items, which polls of the running job show.
 */
export function indexerJobHandler(deps: JobRunnerDeps): JobHandler {
  return async (ctx: JobContext) => {
    const { head, count: total } = await ctx.inputHead("records");
    const settings = IndexerJobInput.omit({ records: true }).parse(head);
    const params = IndexerJobParams.parse(ctx.params);
    const config = deps.config();
    // Pinned at admission: a remapped alias applies to new jobs only.
    const plan: ExtractionPlan = { ...extractionPlan(settings, config, ctx.providerKey), resolvedModel: params.model_resolved, background: true };
    const provenance = deps.describe?.({ model: settings.model, resolved: params.model_resolved ?? settings.model, fields: settings.fields, plan });

    // Dense, not `new Array(total)`: array methods skip the holes of a sparse array.
    // Per record only what the result needs (its output and error); usage and quote counts are summed in `progress`.
    const finished: (PartialRecord | undefined)[] = Array.from({ length: total }, () => undefined);
    // A mock job (canned values, no provider call) has no bill.
    const progress = new Progress(total, { provenance, priced: params.priced !== false && !settings.mock });
    const caller = settings.mock ? mockExtractionCaller(plan.specs) : deps.llm;
    // A capped job stops once the provider-reported cost of its records (restored ones included) exceeds the ceiling.
    const meter = CostMeter.of(ctx.params);
    const where = () => `after ${progress.done} of ${total} records`;
    const stage = await CheckpointedStage.open<RecordOutcome>(ctx, EXTRACTION_STAGE);
    // A checkpoint holds the record's whole outcome: all of them are restored before any call, so
    // a failed run keeps every record it paid for and the ceiling judges them first.
    for (const [unit, saved] of stage.takeSaved()) {
      const index = Number(unit);
      const checkpoint = RecordCheckpoint.safeParse(saved);
      if (!checkpoint.success || !Number.isInteger(index) || index < 0 || index >= total || finished[index]) continue;
      finished[index] = toPartial(checkpoint.data);
      progress.add(checkpoint.data);
      meter.count(checkpoint.data.usage);
    }
    if (progress.done > 0) ctx.logger.info({ restored: progress.done, total }, "resuming from checkpoints");
    await ctx.partials.append(finished.flatMap((c) => (c ? [c] : [])));
    await ctx.report({ stage: EXTRACTION_STAGE, progress: progress.fraction, extra: progress.extra() });

    try {
      meter.check(where);
      await stage.run<PendingRecord>({
        units: pendingRecords(ctx, total, finished),
        concurrency: deps.concurrency,
        settleInSlot: ctx.params.cost_ceiling !== undefined, // the ceiling is checked in settle
        key: (unit) => String(unit.index),
        // The loop's signal fires at a fatal provider error or the ceiling: the calls in flight stop unpaid.
        run: (unit, signal) => extractRecord(caller, plan, unit.record, signal),
        settle: async (unit, outcome) => {
          const record = toPartial(outcome);
          finished[unit.index] = record;
          progress.add(outcome);
          await ctx.partials.append([record]);
          // Throttled by the worker; progress never goes backwards there either.
          void ctx.report({ progress: progress.fraction, extra: progress.extra() }).catch(() => undefined);
          meter.add(outcome.usage, where);
        },
      });
    } catch (error) {
      // A cancelled job keeps what it finished, like a failed one; any other abort (a hand-back, a lost lease) is the worker's.
      const cancelled = cancellationOf(ctx.signal);
      if (ctx.signal.aborted && !cancelled) throw error;
      // A failed job keeps what it finished: polls show it as partial results.
      const partial = collect(finished);
      const failure = cancelled ?? (error instanceof CostCeilingExceeded ? error.failure("the finished records are kept.") : ServiceError.from(error));
      throw new PartialFailure(failure, { items: partial.items, result: { errors: partial.errors, partial: true }, extra: progress.extra() });
    }

    const all = collect(finished);
    return { items: all.items, result: { errors: all.errors }, extra: progress.extra() };
  };
}

function collect(finished: readonly (PartialRecord | undefined)[]) {
  const done = finished.filter((c): c is PartialRecord => c !== undefined);
  return {
    items: done.map((c) => c.record),
    errors: done.flatMap((c) => (c.error ? [c.error] : [])),
  };
}
