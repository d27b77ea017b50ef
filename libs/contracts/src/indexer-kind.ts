import { defineJobContract, jsonArray as asArray, jsonRecord as asRecord } from "./job-contract";
import {
  CreateIndexerJobRequest,
  CreateIndexerJobResponse,
  IndexerEstimateRequest,
  IndexerEstimateResponse,
  IndexerJob,
  IndexerJobListItem,
  toIndexerJob,
  toIndexerJobListItem,
} from "./indexer";
import { indexerFieldsLimits, indexerJobLimits, PAPER_JSON_BYTES } from "./limits";

/** The indexer (extraction) kind, declared once (docs/jobs.md); its pipeline is services/indexer's `indexerJobKind`. */

type Json = Record<string, unknown>;

/** An indexer record's own keys, not extracted fields. */
const RESERVED = new Set(["ID", "indexing_status"]);

/** A running indexer job's finished record as its handler appends it: the output record and, when it failed, its error. */
export type PartialRecord = Json & { record: Json; error?: string };

export const indexerKind = defineJobContract({
  name: "indexer",
  title: "Indexer",
  jobNoun: "extraction job",
  description: "AutoIndexer: evidence-backed extraction of typed fields from titles and abstracts, synchronously or as jobs, with helpers.",
  // The spec calls the indexer's configuration `extraction`.
  configId: "extraction",
  schemas: {
    create: CreateIndexerJobRequest,
    created: CreateIndexerJobResponse,
    job: IndexerJob,
    listItem: IndexerJobListItem,
    estimate: IndexerEstimateRequest,
    estimated: IndexerEstimateResponse,
  },
  limits: { create: indexerJobLimits, estimate: indexerFieldsLimits, largestCreation: (l) => l.MAX_INDEXER_JOB_RECORDS * PAPER_JSON_BYTES + l.MAX_INDEXER_FIELDS * 2_000 },
  list: "records",
  exclusiveProject: false,
  itemsField: "partial_results",
  inputKeys: { id: "ID", title: "Title", abstract: "Abstract" },
  view: (record, results, partial) => {
    if (results) return toIndexerJob(record, { items: results.items, errors: asArray(results.result.errors) as string[] });
    const finished = partial as readonly PartialRecord[];
    return toIndexerJob(record, { items: finished.map((p) => p.record), errors: finished.flatMap((p) => (p.error ? [p.error] : [])) });
  },
  listItem: (record) => toIndexerJobListItem(record),
  export: {
    needsSample: (record) => Number(record.config.fields_count ?? 1) > 0,
    isSample: (item) => Object.keys(item).some((key) => !RESERVED.has(key)),
    table(_record, _result, sample) {
      const fields = Object.keys(sample ?? {}).filter((key) => !RESERVED.has(key));
      return {
        header: ["ID", "indexing_status", ...fields.flatMap((f) => [f, `${f}_confidence`, `${f}_evidence`])],
        row(item) {
          return [
            item.ID,
            item.indexing_status,
            ...fields.flatMap((f) => {
              const value = asRecord(item[f]);
              return [value.value, value.confidence, asArray(value.evidence).map((e) => String(asRecord(e).quote ?? ""))];
            }),
          ];
        },
      };
    },
    line: () => (item) => item,
    ris: () => (item) => {
      const fields = Object.keys(item).filter((key) => !RESERVED.has(key));
      return {
        keywords: [`litrev: ${String(item.indexing_status)}`],
        notes: fields.map((f) => {
          const value = asRecord(item[f]);
          const shown = Array.isArray(value.value) ? value.value.join("; ") : String(value.value ?? "none");
          return `${f}: ${shown} (confidence ${String(value.confidence ?? "none")})`;
        }),
      };
    },
  },
  report: {
    title(n, config, provenance) {
      const fields = provenance?.fields?.length ?? Number(config.fields_count ?? 0);
      return `Data extraction of ${fields} ${fields === 1 ? "field" : "fields"} from ${n} ${n === 1 ? "record" : "records"}`;
    },
    methods(report, { when, tool, settings, plural }) {
      const p = report.prisma;
      const fields = report.asked?.fields ?? null;
      return [
        `Data were extracted from the titles and abstracts of ${plural(p?.records_in ?? report.outcomes.items, "record", "records")} on ${when} with ${tool}, ${fields ? `for ${plural(fields.length, "field", "fields")} (${fields.map((f) => f.name).join(", ")})` : "for fields not recorded by the job"}; each value came with the model's confidence and quotes checked verbatim against the record.`,
        ...(settings ? [`Sampling settings: ${settings}.`] : []),
        ...(p ? [`${plural(p.results, "record was", "records were")} processed; ${p.errored} ended without extracted values` + (p.without_abstract !== null ? ` (${p.without_abstract} had no abstract).` : ".")] : []),
      ];
    },
    task: "Extraction of typed fields from titles and abstracts, each value with a confidence and quotes the service verified against the record",
    limitations: [
      "Values rest on titles and abstracts only; the full texts were not read.",
      "Confidence is the model's own figure, lowered by the service when a quote could not be verified; it is not a calibrated probability.",
      "Quotes are checked against the record's text; the values drawn from them are not.",
    ],
    noun: "records",
    outcomeField: "indexing_status",
    failedOutcome: "error",
    votes: false,
    exclusionReasons: () => [],
    countField: "record_count",
  },
});
